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
use crate::le::{f32_at, i32_at, u32_at};
use crate::{Config, MatrixKind};
use rayon::prelude::*;

/// The seven configuration fields, as i32.
pub const HEADER_LEN: usize = 4 * Config::FIELD_NAMES.len();

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

    /// The matrix a matrix tensor holds (for each layer, for a layer's matrix).
    fn matrix(self) -> Option<MatrixKind> {
        Some(match self {
            Tensor::TokenEmbedding => MatrixKind::TokenEmbedding,
            Tensor::Query => MatrixKind::Query,
            Tensor::Key => MatrixKind::Key,
            Tensor::Value => MatrixKind::Value,
            Tensor::AttentionOutput => MatrixKind::AttentionOutput,
            Tensor::Gate => MatrixKind::FeedForwardGate,
            Tensor::Down => MatrixKind::FeedForwardDown,
            Tensor::Up => MatrixKind::FeedForwardUp,
            Tensor::Classifier => MatrixKind::Classifier,
            Tensor::AttentionNorm
            | Tensor::FeedForwardNorm
            | Tensor::FinalNorm
            | Tensor::Rotary => return None,
        })
    }

    /// The tensor that holds the matrices of `kind`.
    pub fn holding(kind: MatrixKind) -> Tensor {
        let holds = |tensor: &&Tensor| tensor.matrix() == Some(kind);
        *Tensor::ALL
            .iter()
            .find(holds)
            .expect("every matrix has a tensor")
    }

    /// Normalization weights (the other tensors are matrices or the rotary tables).
    pub fn is_norm(self) -> bool {
        matches!(
            self,
            Tensor::AttentionNorm | Tensor::FeedForwardNorm | Tensor::FinalNorm
        )
    }

    /// Float count of the tensor (zero for a shared classifier).
    pub fn len(self, c: &Config, tied: bool) -> u64 {
        let (d, l) = (c.dim as u64, c.layers as u64);
        let Some(kind) = self.matrix() else {
            return match self {
                Tensor::FinalNorm => d,
                Tensor::Rotary => c.rotary_len() as u64,
                // The attention and feed-forward normalization weights.
                _ => l * d,
            };
        };
        let (rows, columns) = kind.shape(c);
        let count = match kind {
            MatrixKind::Classifier if tied => 0,
            MatrixKind::TokenEmbedding | MatrixKind::Classifier => 1,
            _ => l,
        };
        count * rows as u64 * columns as u64
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
            let value = i32_at(bytes, 4 * i);
            if i == Config::VOCAB_FIELD {
                // The sign of the vocabulary alone decides tied or untied (D10).
                tied = value > 0;
                *field = value.unsigned_abs();
            } else if value < 0 {
                return Err(ConvertError::NegativeField {
                    field: Config::FIELD_NAMES[i],
                    offset: 4 * i as u64,
                    value,
                });
            } else {
                *field = value as u32;
            }
        }
        let config = Config::from_fields(fields);
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
        f32_at(self.tensor(tensor), 4 * index)
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
                    bits: u32_at(data, 4 * index),
                });
            }
        }
        Ok(())
    }
}

fn finite(f: &[u8]) -> bool {
    // Exponent bits all ones: infinity or NaN.
    u32_at(f, 0) & 0x7f80_0000 != 0x7f80_0000
}
