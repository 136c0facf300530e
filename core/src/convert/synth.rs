//! Synthetic llama2.c files from a seed, for tests and benchmarks: a checkpoint of any shape
//! (weights uniform in [-0.5, 0.5), normalization weights in [0.5, 1.5)) and a tokenizer of
//! any vocabulary. The same seed gives the same bytes on every machine.

use super::checkpoint::{Tensor, HEADER_LEN};
use crate::Config;

/// stories15M's shape (the spec's example): dim 288, hidden 768, 6 layers, 6 heads,
/// vocabulary 32,000, context 256; its classifier is tied.
pub const STORIES15M: Config = Config {
    dim: 288,
    hidden_dim: 768,
    layers: 6,
    heads: 6,
    kv_heads: 6,
    vocab_size: 32_000,
    context_length: 256,
};

/// A grouped-query shape over 1,000,000 weights (L + 2 sections): dim 128, hidden 384,
/// 6 layers, 8 heads, 2 key and value heads, vocabulary 512, context 128.
pub const GQA: Config = Config {
    dim: 128,
    hidden_dim: 384,
    layers: 6,
    heads: 8,
    kv_heads: 2,
    vocab_size: 512,
    context_length: 128,
};

/// The smallest useful shape: dim 8, hidden 16, 1 layer, 2 heads (head size 4), 1 key and
/// value head, vocabulary 259, context 4.
pub const TINY: Config = Config {
    dim: 8,
    hidden_dim: 16,
    layers: 1,
    heads: 2,
    kv_heads: 1,
    vocab_size: 259,
    context_length: 4,
};

/// SplitMix64: small, fast and fully specified.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 24 random bits (exact in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u32 << 24) as f32
    }

    /// A value in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        self.fill(&mut out);
        out
    }
}

/// A checkpoint of shape `config`, the classifier shared (`tied`, positive vocabulary) or
/// its own tensor (negative vocabulary).
pub fn checkpoint(config: &Config, tied: bool, seed: u64) -> Vec<u8> {
    let mut header = config.fields().map(|field| field as i32);
    if !tied {
        header[Config::VOCAB_FIELD] = -header[Config::VOCAB_FIELD];
    }
    let floats: u64 = Tensor::ALL.iter().map(|t| t.len(config, tied)).sum();
    let mut out = Vec::with_capacity(HEADER_LEN + 4 * floats as usize);
    for field in header {
        out.extend_from_slice(&field.to_le_bytes());
    }
    let mut rng = Rng::new(seed);
    for tensor in Tensor::ALL {
        let norm = tensor.is_norm();
        for _ in 0..tensor.len(config, tied) {
            let x = if norm {
                0.5 + rng.unit()
            } else {
                rng.unit() - 0.5
            };
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

/// A tokenizer of `vocab_size` tokens (at least 259): `<unk>`, `<s>`, `</s>`, the 256 byte
/// tokens `<0xXX>`, then random lowercase pieces of 1 to 12 bytes, some with a leading space.
pub fn tokenizer(vocab_size: u32, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut tokens: Vec<(f32, Vec<u8>)> = vec![
        (0.0, b"<unk>".to_vec()),
        (0.0, b"<s>".to_vec()),
        (0.0, b"</s>".to_vec()),
    ];
    for byte in 0..=255u8 {
        tokens.push((0.0, format!("<0x{byte:02X}>").into_bytes()));
    }
    while tokens.len() < vocab_size as usize {
        let len = 1 + (rng.next_u64() % 12) as usize;
        let mut piece: Vec<u8> = (0..len)
            .map(|_| b'a' + (rng.next_u64() % 26) as u8)
            .collect();
        if rng.next_u64().is_multiple_of(2) {
            piece[0] = b' ';
        }
        tokens.push((-1000.0 * rng.unit(), piece));
    }
    tokens.truncate(vocab_size as usize);
    let max = tokens.iter().map(|t| t.1.len()).max().unwrap_or(0) as u32;
    let mut out = max.to_le_bytes().to_vec();
    for (score, bytes) in tokens {
        out.extend_from_slice(&score.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}
