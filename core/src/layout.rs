//! The fixed numbers of the format, the model configuration and what it decides: the
//! matrices in tensor order, their shapes and sections, rows and token entries.

use crate::le::{put_u32, u32_at};
use crate::FormatError;

/// A Solana account's 10,485,760 bytes less the 2,048-byte header of a weight account.
pub const MAX_SECTION_LEN: usize = 10_483_712;
/// The weights hash takes each section this many bytes at a time.
pub const CHUNK_LEN: usize = 65_536;
pub const MIN_SECTIONS: usize = 2;
pub const MAX_SECTIONS: usize = 18;
/// Tokenizer entry: score key, length, offset, zero (4 × u32).
pub const TOKEN_ENTRY_LEN: usize = 16;
pub const MAX_TOKEN_LEN: usize = 128;
pub const EXP_TABLE_LEN: usize = 4097;
pub const SILU_TABLE_LEN: usize = 4097;
/// At this many matrix weights or more, every layer gets a section of its own.
pub const MULTI_SECTION_WEIGHTS: u64 = 1_000_000;
/// Fixed-point fractional bits of scales, normalization and rotary coefficients.
pub const SCALE_BITS: u32 = 24;
/// Matrices, their rows and the end of section zero fall on multiples of eight bytes.
pub const ALIGNMENT: usize = 8;
/// A row: its u32 scale, four zero bytes, then from this byte one byte per column.
pub const ROW_WEIGHTS_OFFSET: usize = 8;
/// Each stored weight byte is the int8 weight plus this (so the row's padding bytes, 128,
/// are weights of zero).
pub const WEIGHT_BIAS: i32 = 128;

/// The spec's largest context length (positions a run attends).
pub const MAX_CONTEXT: u32 = 512;

/// The model's shape: the first seven fields of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Config {
    pub dim: u32,
    pub hidden_dim: u32,
    pub layers: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub vocab_size: u32,
    pub context_length: u32,
}

fn check_range(field: &'static str, value: u32, min: u32, max: u32) -> Result<(), FormatError> {
    if value < min || value > max {
        return Err(FormatError::FieldOutOfRange {
            field,
            value: value as u64,
            min: min as u64,
            max: max as u64,
        });
    }
    Ok(())
}

/// `field` (name, value) must divide `of` (name, value).
fn check_divides(field: (&'static str, u32), of: (&'static str, u32)) -> Result<(), FormatError> {
    if of.1 % field.1 != 0 {
        return Err(FormatError::NotADivisor {
            field: field.0,
            value: field.1,
            of: of.0,
            of_value: of.1,
        });
    }
    Ok(())
}

impl Config {
    /// The seven fields' names, in [`Config::fields`] order.
    pub const FIELD_NAMES: [&'static str; 7] = [
        "dimension",
        "hidden dimension",
        "layers",
        "heads",
        "key and value heads",
        "vocabulary",
        "context",
    ];
    /// The vocabulary's index in [`Config::fields`].
    pub const VOCAB_FIELD: usize = 5;

    /// The spec's ranges, and D10: heads divide the dimension, key and value heads divide the
    /// heads, the head size is even and at most 64.
    pub fn validate(&self) -> Result<(), FormatError> {
        let [dim, hidden_dim, layers, heads, kv_heads, vocab_size, context_length] =
            Self::FIELD_NAMES;
        check_range(dim, self.dim, 1, 512)?;
        check_range(hidden_dim, self.hidden_dim, 1, 2048)?;
        check_range(layers, self.layers, 1, 16)?;
        check_range(heads, self.heads, 1, 16)?;
        check_divides((heads, self.heads), (dim, self.dim))?;
        check_range(kv_heads, self.kv_heads, 1, self.heads)?;
        check_divides((kv_heads, self.kv_heads), (heads, self.heads))?;
        check_range(vocab_size, self.vocab_size, 259, 65_536)?;
        check_range(context_length, self.context_length, 1, MAX_CONTEXT)?;
        let head_size = self.head_size();
        if head_size % 2 != 0 || head_size > 64 {
            return Err(FormatError::HeadSize { head_size });
        }
        Ok(())
    }

    /// The seven fields in header order (dimension, hidden dimension, layers, heads, key and
    /// value heads, vocabulary, context), as stored at header bytes 8 to 36.
    pub const fn fields(&self) -> [u32; 7] {
        [
            self.dim,
            self.hidden_dim,
            self.layers,
            self.heads,
            self.kv_heads,
            self.vocab_size,
            self.context_length,
        ]
    }

    /// The configuration from its seven fields in header order.
    pub const fn from_fields(f: [u32; 7]) -> Config {
        Config {
            dim: f[0],
            hidden_dim: f[1],
            layers: f[2],
            heads: f[3],
            kv_heads: f[4],
            vocab_size: f[5],
            context_length: f[6],
        }
    }

    /// Dimension divided by heads.
    pub fn head_size(&self) -> u32 {
        self.dim / self.heads
    }

    /// Dimension times key and value heads divided by heads.
    pub fn kv_dim(&self) -> u32 {
        self.dim * self.kv_heads / self.heads
    }

    /// 2 + 7 × layers.
    pub fn matrix_count(&self) -> usize {
        MatrixKind::VOCABULARY.len() + MatrixKind::LAYER.len() * self.layers as usize
    }

    /// d × v + L × (2 × d × d + 2 × d × k + 3 × d × h): the embedding counted once.
    pub fn weight_count(&self) -> u64 {
        let count = |kind: MatrixKind| {
            let (rows, columns) = kind.shape(self);
            rows as u64 * columns as u64
        };
        let layer: u64 = MatrixKind::LAYER.into_iter().map(count).sum();
        count(MatrixKind::TokenEmbedding) + self.layers as u64 * layer
    }

    /// Two sections under 1,000,000 matrix weights, L + 2 from there on.
    pub fn section_count(&self) -> usize {
        if self.weight_count() < MULTI_SECTION_WEIGHTS {
            2
        } else {
            self.layers as usize + 2
        }
    }

    /// The section that holds matrix `index`: section one holds every matrix of a two-section
    /// file and the two vocabulary matrices of a larger one, section 2 + l layer l's seven.
    pub fn matrix_section(&self, index: usize) -> u32 {
        match MatrixKind::of(index) {
            (_, Some(layer)) if self.section_count() > 2 => 2 + layer,
            _ => 1,
        }
    }

    /// (rows, columns) of matrix `index` in the spec's tensor order.
    pub fn matrix_shape(&self, index: usize) -> (u32, u32) {
        MatrixKind::of(index).0.shape(self)
    }

    /// The spec's name of matrix `index`.
    pub fn matrix_name(index: usize) -> &'static str {
        MatrixKind::of(index).0.name()
    }

    /// Normalization coefficients: (2 × layers + 1) × dimension i32 values.
    pub fn norm_len(&self) -> usize {
        (2 * self.layers as usize + 1) * self.dim as usize
    }

    /// Rotary coefficients: context × head size i32 values (cosine, sine pairs).
    pub fn rotary_len(&self) -> usize {
        self.context_length as usize * self.head_size() as usize
    }
}

/// Row length in bytes: columns plus eight, rounded up to a multiple of eight.
pub const fn row_length(columns: u32) -> u32 {
    (columns + ROW_WEIGHTS_OFFSET as u32).div_ceil(ALIGNMENT as u32) * ALIGNMENT as u32
}

/// The matrices in the spec's tensor order: the two vocabulary matrices at indices 0 and 1,
/// then for layer l the seven of [`MatrixKind::LAYER`] at 2 + 7l onwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixKind {
    TokenEmbedding,
    Classifier,
    Query,
    Key,
    Value,
    AttentionOutput,
    FeedForwardGate,
    FeedForwardDown,
    FeedForwardUp,
}

impl MatrixKind {
    pub const VOCABULARY: [MatrixKind; 2] = [MatrixKind::TokenEmbedding, MatrixKind::Classifier];
    pub const LAYER: [MatrixKind; 7] = [
        MatrixKind::Query,
        MatrixKind::Key,
        MatrixKind::Value,
        MatrixKind::AttentionOutput,
        MatrixKind::FeedForwardGate,
        MatrixKind::FeedForwardDown,
        MatrixKind::FeedForwardUp,
    ];

    /// Matrix `index`: what it is, and its layer (`None` for the vocabulary matrices).
    pub fn of(index: usize) -> (MatrixKind, Option<u32>) {
        match index.checked_sub(Self::VOCABULARY.len()) {
            None => (Self::VOCABULARY[index], None),
            Some(i) => (
                Self::LAYER[i % Self::LAYER.len()],
                Some((i / Self::LAYER.len()) as u32),
            ),
        }
    }

    /// The spec's name of the matrix.
    pub const fn name(self) -> &'static str {
        match self {
            MatrixKind::TokenEmbedding => "token embedding",
            MatrixKind::Classifier => "classifier",
            MatrixKind::Query => "query",
            MatrixKind::Key => "key",
            MatrixKind::Value => "value",
            MatrixKind::AttentionOutput => "attention output",
            MatrixKind::FeedForwardGate => "feed-forward gate",
            MatrixKind::FeedForwardDown => "feed-forward down",
            MatrixKind::FeedForwardUp => "feed-forward up",
        }
    }

    /// (rows, columns) in a model of this configuration.
    pub fn shape(self, c: &Config) -> (u32, u32) {
        let (d, h, k, v) = (c.dim, c.hidden_dim, c.kv_dim(), c.vocab_size);
        match self {
            MatrixKind::TokenEmbedding | MatrixKind::Classifier => (v, d),
            MatrixKind::Query | MatrixKind::AttentionOutput => (d, d),
            MatrixKind::Key | MatrixKind::Value => (k, d),
            MatrixKind::FeedForwardGate | MatrixKind::FeedForwardUp => (h, d),
            MatrixKind::FeedForwardDown => (d, h),
        }
    }
}

/// Byte offsets within a tokenizer entry (the fourth u32 is zero).
pub mod token_entry {
    pub const SCORE_KEY: usize = 0;
    pub const LENGTH: usize = 4;
    pub const OFFSET: usize = 8;
}

/// Tokenizer entry `id`: 16 bytes at the token entries' offset + 16 × id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenEntry {
    pub score_key: u32,
    pub length: u32,
    pub offset: u32,
}

impl TokenEntry {
    /// The byte of section zero where entry `id` starts, for token entries at `entries`.
    pub const fn at(entries: u32, id: u32) -> usize {
        entries as usize + TOKEN_ENTRY_LEN * id as usize
    }

    /// The entry that starts at byte `at` of section zero.
    pub fn read(section_zero: &[u8], at: usize) -> TokenEntry {
        TokenEntry {
            score_key: u32_at(section_zero, at + token_entry::SCORE_KEY),
            length: u32_at(section_zero, at + token_entry::LENGTH),
            offset: u32_at(section_zero, at + token_entry::OFFSET),
        }
    }

    pub fn write(&self, section_zero: &mut [u8], at: usize) {
        put_u32(section_zero, at + token_entry::SCORE_KEY, self.score_key);
        put_u32(section_zero, at + token_entry::LENGTH, self.length);
        put_u32(section_zero, at + token_entry::OFFSET, self.offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's tensor order and D8's sections, for stories15M (8 sections) and a model
    /// under 1,000,000 weights (2 sections).
    #[test]
    fn matrix_index_decides_kind_layer_shape_and_section() {
        let big = Config::from_fields([288, 768, 6, 6, 6, 32_000, 256]);
        let small = Config::from_fields([64, 172, 5, 8, 4, 512, 512]);
        assert_eq!((big.matrix_count(), big.section_count()), (44, 8));
        assert_eq!((small.matrix_count(), small.section_count()), (37, 2));
        // (index, kind, layer, rows × columns in stories15M, section there)
        let cases = [
            (0, MatrixKind::TokenEmbedding, None, (32_000, 288), 1),
            (1, MatrixKind::Classifier, None, (32_000, 288), 1),
            (2, MatrixKind::Query, Some(0), (288, 288), 2),
            (7, MatrixKind::FeedForwardDown, Some(0), (288, 768), 2),
            (8, MatrixKind::FeedForwardUp, Some(0), (768, 288), 2),
            (9, MatrixKind::Query, Some(1), (288, 288), 3),
            (43, MatrixKind::FeedForwardUp, Some(5), (768, 288), 7),
        ];
        for (index, kind, layer, shape, section) in cases {
            assert_eq!(MatrixKind::of(index), (kind, layer), "matrix {index}");
            assert_eq!(big.matrix_shape(index), shape, "matrix {index}");
            assert_eq!(big.matrix_section(index), section, "matrix {index}");
            assert_eq!(small.matrix_section(index), 1, "matrix {index}");
        }
        assert_eq!(Config::matrix_name(5), "attention output");
        // Key and value are k × d with k = 64 × 4 / 8 = 32.
        assert_eq!(small.matrix_shape(3), (32, 64));
        assert_eq!(
            small.weight_count(),
            64 * 512 + 5 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 172)
        );
    }
}
