//! Curta's interface crate: what clients and other programs need to speak to the Curta program
//! without re-deriving its wire format (the p-token pattern: interface here, processing in
//! `curta-program`).
//!
//! - [`instruction`]: the instructions ([`instruction::CurtaInstruction`], parsed in place; off
//!   chain also packed) and, off chain, the builders.
//! - [`describe`]: the contract as data (instructions, account layouts, defined types, the model
//!   PDA), which `idl/` renders as the Codama IDL.
//! - [`state`]: the model and weight account layouts, read in place; the model PDA and the
//!   weight seeds.
//! - [`run`]: the run account's layout, its seed address, the seed's source and derivation.
//! - [`claim`]: the claim account's layout, its seed address and the answer hash.
//! - [`cost`]: the estimated compute units of a step's items and of a prompt's encoding, which
//!   StartRun and Step count against their budgets (a run's state after each step depends on it).
//! - [`trust`]: [`trust::trusted_sealed_model`] and [`trust::trusted_run`], the rules a
//!   consumer applies before it relies on a model or a run (docs/program.md, "Trusting a run").
//! - [`error`]: the program's error codes.
//!
//! `no_std` and allocation-free on chain; off chain (any target but `solana`) the builders and
//! decoded accounts use `alloc` and the Solana SDK's types. docs/program.md documents every
//! byte.
#![no_std]

#[cfg(not(target_os = "solana"))]
extern crate alloc;

pub mod claim;
pub mod cost;
pub mod describe;
pub mod error;
pub mod instruction;
pub mod run;
pub mod state;
pub mod trust;

/// The program id's bytes, for code without the Solana SDK's types (on chain); equal to
/// [`id()`] (a test checks it).
pub const PROGRAM_ID: [u8; 32] = [
    197, 206, 67, 231, 127, 73, 81, 247, 201, 58, 7, 209, 192, 121, 75, 214, 179, 253, 243, 243,
    86, 50, 82, 23, 23, 69, 117, 158, 6, 88, 117, 89,
];

#[cfg(not(target_os = "solana"))]
solana_pubkey::declare_id!("EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn");

#[cfg(test)]
mod tests {
    #[test]
    fn id_bytes_are_the_program_id() {
        assert_eq!(super::PROGRAM_ID, super::id().to_bytes());
    }
}
