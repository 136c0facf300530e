//! The program entrypoint (SBF builds without the `no-entrypoint` feature): pinocchio's, with
//! no heap (nothing allocates) and a panic handler that formats nothing.

use crate::state::MAX_SECTIONS;

/// One account more than any instruction takes (Close: 3 + 18). A transaction with more
/// accounts still shows this many, so every instruction's account count check refuses it.
const MAX_ACCOUNTS: usize = 3 + MAX_SECTIONS + 1;

pinocchio::program_entrypoint!(crate::processor::process_instruction, MAX_ACCOUNTS);
pinocchio::no_allocator!();

/// A panic (a bug: every check returns a named error first) stops the program with the
/// `sol_panic_` syscall naming the program, not a source location: neither the message nor the
/// location is read, so no formatting code and no source path is linked into the binary.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    const WHERE: &str = "curta-program";
    // SAFETY: the syscall reads WHERE's bytes and never returns.
    unsafe { pinocchio::syscalls::sol_panic_(WHERE.as_ptr(), WHERE.len() as u64, 0, 0) }
}
