//! The program entrypoint (SBF builds without the `no-entrypoint` feature): pinocchio's, with
//! no heap (nothing allocates) and its no_std panic handler.

use crate::state::MAX_SECTIONS;

/// One account more than any instruction takes (Close: 3 + 18). A transaction with more
/// accounts still shows this many, so every instruction's account count check refuses it.
const MAX_ACCOUNTS: usize = 3 + MAX_SECTIONS + 1;

pinocchio::program_entrypoint!(crate::processor::process_instruction, MAX_ACCOUNTS);
pinocchio::no_allocator!();
pinocchio::nostd_panic_handler!();
