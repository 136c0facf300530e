//! The llama2.c checkpoint (the legacy format `run.c` reads).
//!
//! ```text
//! header    7 × i32   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
//!                     (vocab_size > 0: the classifier is the embedding; < 0: it follows at the end)
//! floats    f32 LE    token_embedding_table   vocab × dim
//!                     rms_att_weight          layers × dim
//!                     wq                      layers × dim × dim
//!                     wk                      layers × kv_dim × dim
//!                     wv                      layers × kv_dim × dim
//!                     wo                      layers × dim × dim
//!                     rms_ffn_weight          layers × dim
//!                     w1 (gate)               layers × hidden × dim
//!                     w2 (down)               layers × dim × hidden
//!                     w3 (up)                 layers × hidden × dim
//!                     rms_final_weight        dim
//!                     freq_cis_real, _imag    seq_len × head_size / 2 each (skipped)
//!                     wcls                    vocab × dim, only when vocab_size < 0
//! ```
//! The file ends with the last tensor.

use super::plan::Plan;
use super::ConvertError;
use crate::Config;
use rayon::prelude::*;

pub const HEADER_LEN: usize = 28;

const FIELDS: [&str; 7] = [
    "dimension",
    "hidden dimension",
    "layers",
    "heads",
    "key and value heads",
    "vocabulary",
    "context",
];

/// The checkpoint's tensors, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tensor {
    TokenEmbedding,
    AttentionNorm,
    Query,
    Key,
    Value,
    AttentionOutput,
    FeedForwardNorm,
    Gate,
    Down,
    Up,
    FinalNorm,
    Rotary,
    Classifier,
}

impl Tensor {
    pub const ALL: [Tensor; 13] = [
        Tensor::TokenEmbedding,
        Tensor::AttentionNorm,
        Tensor::Query,
        Tensor::Key,
        Tensor::Value,
        Tensor::AttentionOutput,
        Tensor::FeedForwardNorm,
        Tensor::Gate,
        Tensor::Down,
        Tensor::Up,
        Tensor::FinalNorm,
        Tensor::Rotary,
        Tensor::Classifier,
    ];

    /// The spec's name of the tensor ("What convert reads").
    pub fn name(self) -> &'static str {
        match self {
            Tensor::TokenEmbedding => "token embedding",
            Tensor::AttentionNorm => "attention normalization weights",
            Tensor::Query => "query matrices",
            Tensor::Key => "key matrices",
            Tensor::Value => "value matrices",
            Tensor::AttentionOutput => "attention output matrices",
            Tensor::FeedForwardNorm => "feed-forward normalization weights",
            Tensor::Gate => "feed-forward gate matrices",
            Tensor::Down => "feed-forward down matrices",
            Tensor::Up => "feed-forward up matrices",
            Tensor::FinalNorm => "final normalization weights",
            Tensor::Rotary => "rotary tables",
            Tensor::Classifier => "classifier",
        }
    }

    /// Float count of the tensor (zero for a shared classifier).
    fn len(self, c: &Config, tied: bool) -> u64 {
        let (d, h, k, l) = (
            c.dim as u64,
            c.hidden_dim as u64,
            c.kv_dim() as u64,
            c.layers as u64,
        );
        let v = c.vocab_size as u64;
        match self {
            Tensor::TokenEmbedding => v * d,
            Tensor::AttentionNorm | Tensor::FeedForwardNorm => l * d,
            Tensor::Query | Tensor::AttentionOutput => l * d * d,
            Tensor::Key | Tensor::Value => l * k * d,
            Tensor::Gate | Tensor::Down | Tensor::Up => l * h * d,
            Tensor::FinalNorm => d,
            Tensor::Rotary => c.context_length as u64 * c.head_size() as u64,
            Tensor::Classifier if tied => 0,
            Tensor::Classifier => v * d,
        }
    }
}

/// A checked checkpoint: header valid, size exact, every float finite.
pub struct Checkpoint<'a> {
    pub config: Config,
    /// A positive vocabulary: the classifier is the embedding.
    pub tied: bool,
    bytes: &'a [u8],
    /// Byte offset of each tensor, in `Tensor::ALL` order, and the end of the file.
    offsets: [usize; 14],
}

impl<'a> Checkpoint<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ConvertError> {
        if bytes.len() < HEADER_LEN {
            return Err(ConvertError::CheckpointHeaderTruncated {
                found: bytes.len() as u64,
            });
        }
        let mut fields = [0u32; 7];
        let mut tied = true;
        for (i, field) in fields.iter_mut().enumerate() {
            let value = i32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
            if i == 5 {
                // The sign of the vocabulary alone decides tied or untied (D10).
                tied = value > 0;
                *field = value.unsigned_abs();
            } else if value < 0 {
                return Err(ConvertError::NegativeField {
                    field: FIELDS[i],
                    offset: 4 * i as u64,
                    value,
                });
            } else {
                *field = value as u32;
            }
        }
        let [dim, hidden_dim, layers, heads, kv_heads, vocab_size, context_length] = fields;
        let config = Config {
            dim,
            hidden_dim,
            layers,
            heads,
            kv_heads,
            vocab_size,
            context_length,
        };
        config.validate()?;
        // A matrix section over the limit is known from the header alone (section zero,
        // which the token strings add to, is checked again once they are read).
        Plan::new(&config, tied, 0)?;

        let mut offsets = [0usize; 14];
        let mut end = HEADER_LEN as u64;
        for (i, tensor) in Tensor::ALL.iter().enumerate() {
            offsets[i] = end as usize;
            end += 4 * tensor.len(&config, tied);
        }
        offsets[13] = end as usize;
        let found = bytes.len() as u64;
        if found < end {
            return Err(ConvertError::CheckpointTruncated {
                expected: end,
                found,
            });
        }
        if found > end {
            return Err(ConvertError::CheckpointTooLong {
                expected: end,
                found,
            });
        }
        let checkpoint = Checkpoint {
            config,
            tied,
            bytes,
            offsets,
        };
        checkpoint.check_finite()?;
        Ok(checkpoint)
    }

    /// The raw little-endian floats of a tensor.
    pub fn tensor(&self, tensor: Tensor) -> &'a [u8] {
        let i = tensor as usize;
        &self.bytes[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Float `index` of a tensor.
    pub fn float(&self, tensor: Tensor, index: usize) -> f32 {
        f32_at(self.tensor(tensor), index)
    }

    /// Every float of the file is finite, the skipped rotary tables included (D10). The first
    /// non-finite float in file order is the one reported.
    fn check_finite(&self) -> Result<(), ConvertError> {
        const BLOCK: usize = 16 * 1024;
        for tensor in Tensor::ALL {
            let data = self.tensor(tensor);
            let bad_block = data
                .par_chunks(BLOCK)
                .position_first(|block| !block.chunks_exact(4).all(finite));
            if let Some(block) = bad_block {
                let start = block * BLOCK / 4;
                let index = start
                    + data[block * BLOCK..]
                        .chunks_exact(4)
                        .position(|f| !finite(f))
                        .unwrap();
                return Err(ConvertError::NonFinite {
                    tensor: tensor.name(),
                    index: index as u64,
                    offset: (self.offsets[tensor as usize] + 4 * index) as u64,
                    bits: f32_at(data, index).to_bits(),
                });
            }
        }
        Ok(())
    }
}

fn finite(f: &[u8]) -> bool {
    // Exponent bits all ones: infinity or NaN.
    u32::from_le_bytes([f[0], f[1], f[2], f[3]]) & 0x7f80_0000 != 0x7f80_0000
}

/// Float `index` of little-endian f32 bytes.
pub fn f32_at(bytes: &[u8], index: usize) -> f32 {
    f32::from_le_bytes(bytes[4 * index..4 * index + 4].try_into().unwrap())
}
