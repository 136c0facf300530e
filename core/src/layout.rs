//! The fixed numbers of the format and the model configuration they are derived from.

use crate::FormatError;

/// The format's tag, the first 8 bytes of the file.
pub const TAG: [u8; 8] = *b"CURTAW01";
/// The header at the start of section zero.
pub const HEADER_LEN: usize = 4096;
/// A Solana account's 10,485,760 bytes less the 2,048-byte header of a weight account.
pub const MAX_SECTION_LEN: usize = 10_483_712;
/// The weights hash takes each section this many bytes at a time.
pub const CHUNK_LEN: usize = 65_536;
pub const MIN_SECTIONS: usize = 2;
pub const MAX_SECTIONS: usize = 18;
/// Section table: entry i is 16 bytes at 128 + 16 × i.
pub const SECTION_TABLE_OFFSET: usize = 128;
pub const SECTION_ENTRY_LEN: usize = 16;
/// Matrix table: descriptor i is 24 bytes at 512 + 24 × i.
pub const MATRIX_TABLE_OFFSET: usize = 512;
pub const DESCRIPTOR_LEN: usize = 24;
/// Tokenizer entry: score key, length, offset, zero (4 × u32).
pub const TOKEN_ENTRY_LEN: usize = 16;
pub const MAX_TOKEN_LEN: usize = 128;
pub const EXP_TABLE_LEN: usize = 4097;
pub const SILU_TABLE_LEN: usize = 4097;
/// At this many matrix weights or more, every layer gets a section of its own.
pub const MULTI_SECTION_WEIGHTS: u64 = 1_000_000;
/// Fixed-point fractional bits of scales, normalization and rotary coefficients.
pub const SCALE_BITS: u32 = 24;

/// Header field offsets (all u32).
pub mod field {
    pub const DIM: usize = 8;
    pub const HIDDEN_DIM: usize = 12;
    pub const LAYERS: usize = 16;
    pub const HEADS: usize = 20;
    pub const KV_HEADS: usize = 24;
    pub const VOCAB_SIZE: usize = 28;
    pub const CONTEXT_LENGTH: usize = 32;
    pub const SECTION_COUNT: usize = 36;
    pub const NORM_OFFSET: usize = 40;
    pub const ROTARY_OFFSET: usize = 44;
    pub const EXP_OFFSET: usize = 48;
    pub const SILU_OFFSET: usize = 52;
    pub const TOKEN_ENTRIES_OFFSET: usize = 56;
    pub const SORTED_IDS_OFFSET: usize = 60;
    pub const TOKEN_STRINGS_OFFSET: usize = 64;
    pub const INV_SQRT_HEAD_SIZE: usize = 68;
}

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

/// The matrices of one layer, in index order after the two vocabulary matrices.
pub const LAYER_MATRICES: [&str; 7] = [
    "query",
    "key",
    "value",
    "attention output",
    "feed-forward gate",
    "feed-forward down",
    "feed-forward up",
];

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

impl Config {
    /// The spec's ranges, and D10: heads divide the dimension, key and value heads divide the
    /// heads, the head size is even and at most 64.
    pub fn validate(&self) -> Result<(), FormatError> {
        check_range("dimension", self.dim, 1, 512)?;
        check_range("hidden dimension", self.hidden_dim, 1, 2048)?;
        check_range("layers", self.layers, 1, 16)?;
        check_range("heads", self.heads, 1, 16)?;
        if !self.dim.is_multiple_of(self.heads) {
            return Err(FormatError::NotADivisor {
                field: "heads",
                value: self.heads,
                of: "dimension",
                of_value: self.dim,
            });
        }
        check_range("key and value heads", self.kv_heads, 1, self.heads)?;
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(FormatError::NotADivisor {
                field: "key and value heads",
                value: self.kv_heads,
                of: "heads",
                of_value: self.heads,
            });
        }
        check_range("vocabulary", self.vocab_size, 259, 65_536)?;
        check_range("context", self.context_length, 1, 512)?;
        let head_size = self.head_size();
        if !head_size.is_multiple_of(2) || head_size > 64 {
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
        2 + 7 * self.layers as usize
    }

    /// d × v + L × (2 × d × d + 2 × d × k + 3 × d × h): the embedding counted once.
    pub fn weight_count(&self) -> u64 {
        let (d, h, k) = (
            self.dim as u64,
            self.hidden_dim as u64,
            self.kv_dim() as u64,
        );
        d * self.vocab_size as u64 + self.layers as u64 * (2 * d * d + 2 * d * k + 3 * d * h)
    }

    /// Two sections under 1,000,000 matrix weights, L + 2 from there on.
    pub fn section_count(&self) -> usize {
        if self.weight_count() < MULTI_SECTION_WEIGHTS {
            2
        } else {
            self.layers as usize + 2
        }
    }

    /// The section that holds matrix `index` in this configuration's layout.
    pub fn matrix_section(&self, index: usize) -> u32 {
        if self.section_count() == 2 || index < 2 {
            1
        } else {
            2 + ((index - 2) / 7) as u32
        }
    }

    /// (rows, columns) of matrix `index` in the spec's tensor order.
    pub fn matrix_shape(&self, index: usize) -> (u32, u32) {
        let (d, h, k, v) = (self.dim, self.hidden_dim, self.kv_dim(), self.vocab_size);
        match index {
            0 | 1 => (v, d),
            _ => match (index - 2) % 7 {
                0 | 3 => (d, d),
                1 | 2 => (k, d),
                4 | 6 => (h, d),
                _ => (d, h),
            },
        }
    }

    /// The spec's name of matrix `index`.
    pub fn matrix_name(index: usize) -> &'static str {
        match index {
            0 => "token embedding",
            1 => "classifier",
            _ => LAYER_MATRICES[(index - 2) % 7],
        }
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
    (columns + 8).div_ceil(8) * 8
}
