//! Curta on-chain program: model accounts, weight accounts, chunked writes, the seal chain and
//! runs of sealed models.
//!
//! `no_std` and allocation-free on chain (pinocchio for the entrypoint, account views, CPI and
//! syscalls). Off chain (any target but `solana`) the crate also offers what the client and the
//! tests use: the instruction builders, the decoded accounts and the address derivations, on the
//! Solana SDK's types. The entrypoint sits behind the `no-entrypoint` feature so that other
//! crates can link the program. Layouts and instructions are documented byte by byte in
//! docs/program.md.
#![no_std]

#[cfg(not(target_os = "solana"))]
extern crate alloc;

#[cfg(all(target_os = "solana", not(feature = "no-entrypoint")))]
mod entrypoint;
pub mod error;
pub mod instruction;
pub mod processor;
pub mod run;
pub mod section_zero;
pub mod state;

#[cfg(not(target_os = "solana"))]
solana_pubkey::declare_id!("EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn");
