//! The weights hash: h = 32 zero bytes; for each section in order, for each 65,536-byte chunk
//! of it (the last chunk of a section ends where the section ends), h = SHA-256(h || chunk).

use crate::CHUNK_LEN;
use sha2::{Digest, Sha256};

/// The number of chunks the weights hash takes a section of `section_len` bytes in.
pub const fn chunk_count(section_len: u64) -> u64 {
    section_len.div_ceil(CHUNK_LEN as u64)
}

/// The number of chunks in the whole chain over sections of these lengths (the seal cursor's
/// end). At most 18 sections of at most 160 chunks each, so it never overflows.
pub fn total_chunks(section_lengths: &[u32]) -> u32 {
    section_lengths
        .iter()
        .map(|&length| chunk_count(length as u64) as u32)
        .sum()
}

/// One step of the chain: SHA-256 of the previous hash followed by the chunk.
pub fn chain_chunk(prev: &[u8; 32], chunk: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(prev);
    hasher.update(chunk);
    hasher.finalize().into()
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The weights hash of the sections, in order.
pub fn weights_hash<'a>(sections: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut hasher = WeightsHasher::new();
    for section in sections {
        hasher.section(section);
    }
    hasher.finish()
}

/// The chain, fed one section at a time (e.g. as sections arrive from accounts).
#[derive(Clone, Debug, Default)]
pub struct WeightsHasher {
    hash: [u8; 32],
}

impl WeightsHasher {
    pub fn new() -> Self {
        Self { hash: [0; 32] }
    }

    /// Chains every chunk of one whole section.
    pub fn section(&mut self, section: &[u8]) {
        for chunk in section.chunks(CHUNK_LEN) {
            self.hash = chain_chunk(&self.hash, chunk);
        }
    }

    pub fn finish(self) -> [u8; 32] {
        self.hash
    }
}
