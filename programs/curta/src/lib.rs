//! Curta on-chain program: model accounts, weight accounts, chunked writes, the seal chain and
//! runs of sealed models: the processing. The wire format, the account layouts, the errors and
//! the trust rules are the interface crate's (`curta-interface`), re-exported here.
//!
//! `no_std` and allocation-free on chain (pinocchio for the entrypoint, account views, CPI and
//! syscalls). The entrypoint sits behind the `no-entrypoint` feature so that other crates can
//! link the program. Layouts and instructions are documented byte by byte in docs/program.md.
#![no_std]

#[cfg(not(target_os = "solana"))]
extern crate alloc;

#[cfg(all(target_os = "solana", not(feature = "no-entrypoint")))]
mod entrypoint;
pub mod processor;
pub mod run;
pub mod section_zero;

// The wire format, the layouts and the errors are the interface crate's.
pub use curta_interface::PROGRAM_ID;
pub use curta_interface::{claim, error, instruction, state};
#[cfg(not(target_os = "solana"))]
pub use curta_interface::{id, ID};
