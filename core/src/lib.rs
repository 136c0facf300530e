//! The CURTAW01 weight format.
//!
//! Without the `std` feature this crate is `core`-only: the in-place reader of section zero
//! ([`Metadata`]), [`decode`] of a whole artifact and the [`weights_hash`]. The on-chain program
//! uses exactly that part. With `std` it also has the converter from llama2.c files.
#![cfg_attr(not(feature = "std"), no_std)]
// The program's row kernel is SBF assembly (infer/kernels/sbf.rs); BPF's `asm!` is unstable.
#![cfg_attr(target_os = "solana", feature(asm_experimental_arch))]

// The no_std part builds with Rust 1.85 (Debian's rustc-web, which the program's SBF build
// may use): clippy neither suggests nor accepts newer APIs there. The converter (std) follows
// the workspace's Rust.
#[clippy::msrv = "1.85"]
mod declared;
#[clippy::msrv = "1.85"]
mod decode;
#[clippy::msrv = "1.85"]
mod error;
#[clippy::msrv = "1.85"]
mod exp_table;
#[clippy::msrv = "1.85"]
mod hash;
#[clippy::msrv = "1.85"]
pub mod header;
#[clippy::msrv = "1.85"]
pub mod infer;
#[clippy::msrv = "1.85"]
mod layout;
#[clippy::msrv = "1.85"]
pub mod le;
#[clippy::msrv = "1.85"]
mod metadata;

#[cfg(feature = "std")]
pub mod convert;

pub use declared::DeclaredError;
pub use decode::{decode, decode_head, Artifact, Matrix, Row};
pub use error::FormatError;
pub use exp_table::{EXP_TABLE, EXP_TABLE_BYTES};
pub use hash::{chain_chunk, chunk_count, sha256, total_chunks, weights_hash, WeightsHasher};
pub use header::{
    field, inv_sqrt_head_size, Block, BlockOffsets, Header, MatrixDescriptor, SectionEntry,
    DESCRIPTOR_LEN, HEADER_LEN, MATRIX_TABLE_OFFSET, SECTION_ENTRY_LEN, SECTION_TABLE_OFFSET, TAG,
};
pub use layout::*;
pub use metadata::Metadata;
