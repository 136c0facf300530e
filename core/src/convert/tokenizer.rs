//! The llama2.c tokenizer file (what `run.c`'s `build_tokenizer` reads).
//!
//! ```text
//! max_token_length   u32          the longest token's length, up to 128
//! per token id:      f32 score    the merge score
//!                    u32 len      the length of the token's bytes, up to 128
//!                    len bytes    the token
//! ```
//! The file ends with the last token.

use super::ConvertError;
use crate::le::u32_at;
use crate::MAX_TOKEN_LEN;

/// The file starts with the longest token's length.
const HEADER_LEN: usize = 4;
/// Each token: its score, then its length (u32 each), then its bytes.
const SCORE: usize = 0;
const LENGTH: usize = 4;
const BYTES: usize = 8;

pub struct Token<'a> {
    pub score_key: u32,
    pub bytes: &'a [u8],
}

pub struct Tokenizer<'a> {
    pub tokens: Vec<Token<'a>>,
}

impl<'a> Tokenizer<'a> {
    /// Reads exactly `vocab_size` tokens and requires the file to end there.
    pub fn parse(bytes: &'a [u8], vocab_size: u32) -> Result<Self, ConvertError> {
        if bytes.len() < HEADER_LEN {
            return Err(ConvertError::TokenizerHeaderTruncated {
                found: bytes.len() as u64,
            });
        }
        let max_token_length = u32_at(bytes, 0);
        if max_token_length as usize > MAX_TOKEN_LEN {
            return Err(ConvertError::MaxTokenLength {
                found: max_token_length,
            });
        }
        let mut tokens = Vec::with_capacity(vocab_size as usize);
        let mut at = HEADER_LEN;
        for token in 0..vocab_size {
            if at == bytes.len() {
                return Err(ConvertError::TooFewTokens {
                    expected: vocab_size,
                    found: token,
                });
            }
            let truncated = |needed: usize| ConvertError::TokenizerTruncated {
                token,
                offset: at as u64,
                needed: needed as u64,
                available: (bytes.len() - at) as u64,
            };
            if bytes.len() - at < BYTES {
                return Err(truncated(BYTES));
            }
            let bits = u32_at(bytes, at + SCORE);
            let length = u32_at(bytes, at + LENGTH);
            if !f32::from_bits(bits).is_finite() {
                return Err(ConvertError::NonFiniteScore {
                    token,
                    offset: at as u64,
                    bits,
                });
            }
            if length as usize > MAX_TOKEN_LEN {
                return Err(ConvertError::TokenTooLong {
                    token,
                    offset: (at + LENGTH) as u64,
                    length,
                });
            }
            let end = at + BYTES + length as usize;
            if end > bytes.len() {
                return Err(truncated(BYTES + length as usize));
            }
            tokens.push(Token {
                score_key: score_key(bits),
                bytes: &bytes[at + BYTES..end],
            });
            at = end;
        }
        if at != bytes.len() {
            return Err(ConvertError::TooManyTokens {
                expected: vocab_size,
                offset: at as u64,
                trailing: (bytes.len() - at) as u64,
            });
        }
        Ok(Tokenizer { tokens })
    }

    /// Every token id, sorted by its bytes as unsigned bytes (a prefix first), equal strings
    /// by ascending id (D6).
    pub fn sorted_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..self.tokens.len() as u32).collect();
        // A stable sort keeps equal strings in ascending id order.
        ids.sort_by(|&a, &b| {
            self.tokens[a as usize]
                .bytes
                .cmp(self.tokens[b as usize].bytes)
        });
        ids
    }

    /// Total length of the token strings.
    pub fn strings_len(&self) -> usize {
        self.tokens.iter().map(|t| t.bytes.len()).sum()
    }
}

/// The spec's score key: an unsigned integer that orders the way the float scores do. Sign
/// bit clear: the bits with the top bit set; sign bit set: the bits inverted (D7).
pub fn score_key(bits: u32) -> u32 {
    if bits & 0x8000_0000 == 0 {
        bits | 0x8000_0000
    } else {
        !bits
    }
}
