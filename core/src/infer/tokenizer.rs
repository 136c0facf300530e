//! The prompt's tokens and the output's text, from section zero's tokenizer blocks, the way
//! llama2.c's `encode` and `decode` do it (docs/inference.md, "Tokens and text").

use super::RunError;
use crate::{Metadata, MAX_TOKEN_LEN};

/// Token 1: opens every prompt; produced by the model, it ends a run.
pub const BOS: u32 = 1;
/// Token 2: produced by the model, it ends a run.
pub const EOS: u32 = 2;
/// Token `byte + 3` is the single byte `byte`.
pub const BYTE_TOKENS: u32 = 3;

/// The lowest id whose bytes are `text`: a binary search over the sorted ids (sorted by
/// bytes, equal strings by ascending id). Every token's bytes are read with
/// [`Metadata::token_text`]: an entry outside the token strings or over 128 bytes reads as no
/// bytes (D13), so only a sorted id outside the vocabulary is an error.
/// Inlined: on SBF a call returns no aggregate.
#[inline(always)]
pub fn lookup(meta: &Metadata, text: &[u8]) -> Result<Option<u32>, RunError> {
    let (mut lo, mut hi) = (0u32, meta.config().vocab_size);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if meta.token_text(meta.sorted_id(mid)?) < text {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo < meta.config().vocab_size {
        let id = meta.sorted_id(lo)?;
        if meta.token_text(id) == text {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The prompt's tokens into `out`, returning how many: token 1, then (for a non-empty text)
/// the token of " ", then one token per UTF-8 character (a byte and the continuation bytes
/// after it, at most 4), each character without a token of its own as its bytes' tokens
/// (byte + 3); then, while any adjacent pair's concatenation is a token, the pair whose token
/// has the highest score key is merged (the leftmost among equals). `out` needs
/// `text.len() + 2` entries.
pub fn encode(meta: &Metadata, text: &[u8], out: &mut [u32]) -> Result<usize, RunError> {
    let needed = text.len() + 2;
    if out.len() < needed {
        return Err(RunError::TokenBuffer {
            len: out.len(),
            needed,
        });
    }
    let mut n = 0;
    out[n] = BOS;
    n += 1;
    if !text.is_empty() {
        out[n] = lookup(meta, b" ")?.ok_or(RunError::NoSpaceToken)?;
        n += 1;
    }
    let mut start = 0;
    while start < text.len() {
        let mut end = start + 1;
        while end < text.len() && text[end] & 0xC0 == 0x80 && end - start < 4 {
            end += 1;
        }
        match lookup(meta, &text[start..end])? {
            Some(id) => {
                out[n] = id;
                n += 1;
            }
            None => {
                for &b in &text[start..end] {
                    out[n] = b as u32 + BYTE_TOKENS;
                    n += 1;
                }
            }
        }
        start = end;
    }
    let mut pair = [0u8; 2 * MAX_TOKEN_LEN];
    loop {
        let mut best: Option<(u32, usize, u32)> = None;
        for i in 0..n.saturating_sub(1) {
            let a = meta.token_text(out[i]);
            let b = meta.token_text(out[i + 1]);
            pair[..a.len()].copy_from_slice(a);
            pair[a.len()..a.len() + b.len()].copy_from_slice(b);
            if let Some(id) = lookup(meta, &pair[..a.len() + b.len()])? {
                let key = meta.token(id).score_key;
                if best.is_none_or(|(k, _, _)| key > k) {
                    best = Some((key, i, id));
                }
            }
        }
        let Some((_, i, id)) = best else { break };
        out[i] = id;
        out.copy_within(i + 2..n, i + 1);
        n -= 1;
    }
    Ok(n)
}

/// What one token adds to the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Tokens 1 and 2: nothing.
    None,
    /// A token `<0xXX>`: the one byte XX.
    Byte(u8),
    /// The token's bytes (without their leading space right after token 1).
    Bytes(&'a [u8]),
}

impl Piece<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Piece::None => &[],
            Piece::Byte(b) => core::slice::from_ref(b),
            Piece::Bytes(b) => b,
        }
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The text of `token` after `previous`: nothing for tokens 1 and 2; the byte of a token whose
/// six bytes read `<0xXX>` (two hexadecimal digits, either case); otherwise its bytes, less a
/// leading space when `previous` is token 1 (llama2.c drops the space the prompt's " " prefix
/// put there). Total for every token of the vocabulary: an entry outside the token strings or
/// over 128 bytes decodes to no bytes (D13; [`Metadata::token_text`]), so a sealed model's run
/// never stops on a token's text. Only an id outside the vocabulary (never produced by a run)
/// is an error.
pub fn decode<'a>(meta: &Metadata<'a>, previous: u32, token: u32) -> Result<Piece<'a>, RunError> {
    if token == BOS || token == EOS {
        return Ok(Piece::None);
    }
    if token >= meta.config().vocab_size {
        return Err(RunError::TokenOutOfRange {
            index: 0,
            id: token,
            vocab: meta.config().vocab_size,
        });
    }
    let bytes = meta.token_text(token);
    if let [b'<', b'0', b'x', h, l, b'>'] = *bytes {
        if let (Some(h), Some(l)) = (hex(h), hex(l)) {
            return Ok(Piece::Byte(h << 4 | l));
        }
    }
    match bytes {
        [b' ', rest @ ..] if previous == BOS => Ok(Piece::Bytes(rest)),
        _ => Ok(Piece::Bytes(bytes)),
    }
}
