//! Curta on-chain program: model accounts, weight accounts, chunked writes and the seal chain.
//!
//! The processing logic uses only `core` and `alloc`; the entrypoint (and the `std` it needs on
//! the host) sits behind the `no-entrypoint` feature so that the client and the tests can link
//! the crate. Layouts and instructions are documented byte by byte in docs/program.md.
#![no_std]

extern crate alloc;

#[cfg(not(feature = "no-entrypoint"))]
mod entrypoint;
pub mod error;
pub mod instruction;
pub mod processor;
pub mod state;

solana_pubkey::declare_id!("EK9jqHnajPuMkoe66Go1ASMV1KQG9RctaRcrGcgs3Qqn");
