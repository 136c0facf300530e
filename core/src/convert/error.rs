//! What can be wrong with a checkpoint or a tokenizer. Every variant says what and where:
//! the tensor and index, the header field, the byte offset, and what was expected against
//! what was found.

use crate::FormatError;
use std::path::PathBuf;

/// A checkpoint or tokenizer that conversion refuses. Nothing is written when one occurs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConvertError {
    #[error("checkpoint is {found} bytes, shorter than its 28-byte header")]
    CheckpointHeaderTruncated { found: u64 },

    #[error(
        "checkpoint header field {field} (byte {offset}) is {value}, expected a positive value"
    )]
    NegativeField {
        field: &'static str,
        offset: u64,
        value: i32,
    },

    #[error("checkpoint header: {0}")]
    Config(FormatError),

    #[error("checkpoint is truncated: its header describes {expected} bytes, the file is {found}")]
    CheckpointTruncated { expected: u64, found: u64 },

    #[error("checkpoint is too long: its header describes {expected} bytes, the file is {found} (only the 28-byte legacy llama2.c format is accepted)")]
    CheckpointTooLong { expected: u64, found: u64 },

    #[error("checkpoint tensor {tensor}, float {index} (byte {offset}) is not finite (bits {bits:#010x})")]
    NonFinite {
        tensor: &'static str,
        index: u64,
        offset: u64,
        bits: u32,
    },

    #[error("checkpoint tensor {tensor}, float {index}: {value} does not fit a {field} ({min} to {max})")]
    ValueOutOfRange {
        tensor: &'static str,
        index: u64,
        field: &'static str,
        value: f64,
        min: i64,
        max: i64,
    },

    #[error("matrix {matrix} ({name}) row {row}: scale {scale} times 2^24 does not fit a u32")]
    ScaleOutOfRange {
        matrix: usize,
        name: &'static str,
        row: u32,
        scale: f64,
    },

    #[error("tokenizer is {found} bytes, shorter than its 4-byte longest-token length")]
    TokenizerHeaderTruncated { found: u64 },

    #[error("tokenizer longest-token length (byte 0) is {found}, expected at most {max}", max = crate::MAX_TOKEN_LEN)]
    MaxTokenLength { found: u32 },

    #[error("tokenizer has {found} tokens, expected {expected} (the vocabulary)")]
    TooFewTokens { expected: u32, found: u32 },

    #[error("tokenizer has {trailing} bytes at offset {offset} after its {expected} tokens (the vocabulary)")]
    TooManyTokens {
        expected: u32,
        offset: u64,
        trailing: u64,
    },

    #[error("tokenizer is truncated in token {token}: it needs {needed} bytes at offset {offset}, only {available} are there")]
    TokenizerTruncated {
        token: u32,
        offset: u64,
        needed: u64,
        available: u64,
    },

    #[error(
        "tokenizer token {token} (byte {offset}) is {length} bytes long, expected at most {max}",
        max = crate::MAX_TOKEN_LEN
    )]
    TokenTooLong {
        token: u32,
        offset: u64,
        length: u32,
    },

    #[error("tokenizer token {token}: score (byte {offset}) is not finite (bits {bits:#010x})")]
    NonFiniteScore { token: u32, offset: u64, bits: u32 },

    #[error("section {section} would be {length} bytes, over the limit of {max}")]
    SectionTooLong {
        section: usize,
        length: u64,
        max: u64,
    },
}

impl ConvertError {
    /// Whether the tokenizer file is at fault (otherwise the checkpoint is, or both together
    /// for a section over the limit, which the checkpoint's shape mostly decides).
    pub fn in_tokenizer(&self) -> bool {
        matches!(
            self,
            Self::TokenizerHeaderTruncated { .. }
                | Self::MaxTokenLength { .. }
                | Self::TooFewTokens { .. }
                | Self::TooManyTokens { .. }
                | Self::TokenizerTruncated { .. }
                | Self::TokenTooLong { .. }
                | Self::NonFiniteScore { .. }
        )
    }
}

/// A failed [`convert_file`](super::convert_file), naming the file at fault.
impl From<FormatError> for ConvertError {
    fn from(error: FormatError) -> Self {
        ConvertError::Config(error)
    }
}

/// The messages are whole: the path, then what was wrong (no source chain repeating it).
#[derive(Debug, thiserror::Error)]
pub enum ConvertFileError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },

    #[error("{}: {error}", path.display())]
    Convert { path: PathBuf, error: ConvertError },

    #[error("{}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl ConvertFileError {
    /// The conversion error, when the inputs (not I/O) were at fault.
    pub fn convert_error(&self) -> Option<&ConvertError> {
        match self {
            Self::Convert { error, .. } => Some(error),
            _ => None,
        }
    }
}
