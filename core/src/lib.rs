//! The CURTAW01 weight format.
//!
//! Without the `std` feature this crate is `core`-only: the in-place reader of section zero
//! ([`Metadata`]), [`decode`] of a whole artifact and the [`weights_hash`]. The on-chain program
//! uses exactly that part. With `std` it also has the converter from llama2.c files.
#![cfg_attr(not(feature = "std"), no_std)]

mod declared;
mod decode;
mod error;
mod hash;
mod layout;
pub mod le;
mod metadata;

#[cfg(feature = "std")]
pub mod convert;

pub use declared::DeclaredError;
pub use decode::{decode, Artifact, Matrix, Row};
pub use error::FormatError;
pub use hash::{chain_chunk, chunk_count, total_chunks, weights_hash, WeightsHasher};
pub use layout::*;
pub use metadata::{
    inv_sqrt_head_size, BlockOffsets, MatrixDescriptor, Metadata, SectionEntry, TokenEntry,
};
