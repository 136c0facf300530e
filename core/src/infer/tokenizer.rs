//! The prompt's tokens and the output's text, from section zero's tokenizer blocks, the way
//! llama2.c's `encode` and `decode` do it (docs/inference.md, "Tokens and text").

use super::state::{get_u32, set_u32, zero};
use super::RunError;
use crate::{Block, FormatError, Metadata, MAX_TOKEN_LEN};

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

/// The tokenizer's blocks read with word loads (on chain one instruction a word: section zero's
/// blocks sit at multiples of 4, docs/format.md): [`lookup`] and [`Metadata::token_text`] with
/// the same results, for [`encode_in`].
struct Words<'a> {
    section: &'a [u8],
    entries: &'a [u8],
    sorted: &'a [u8],
    strings: u64,
    vocab: u32,
}

impl<'a> Words<'a> {
    #[inline(always)]
    fn new(meta: &Metadata<'a>) -> Words<'a> {
        Words {
            section: meta.bytes(),
            entries: meta.block_bytes(Block::TokenEntries),
            sorted: meta.block_bytes(Block::SortedIds),
            strings: meta.blocks().token_strings as u64,
            vocab: meta.config().vocab_size,
        }
    }

    /// [`Metadata::token_text`]: no bytes for an entry over 128 bytes or outside the strings.
    #[inline(always)]
    fn text(&self, id: u32) -> &'a [u8] {
        let length = get_u32(self.entries, 4 * id as usize + 1) as u64;
        let offset = get_u32(self.entries, 4 * id as usize + 2) as u64;
        if length > MAX_TOKEN_LEN as u64
            || offset < self.strings
            || offset + length > self.section.len() as u64
        {
            return &[];
        }
        &self.section[offset as usize..(offset + length) as usize]
    }

    #[inline(always)]
    fn sorted_id(&self, i: u32) -> Result<u32, RunError> {
        let id = get_u32(self.sorted, i as usize);
        if id >= self.vocab {
            return Err(FormatError::SortedIdOutOfRange {
                index: i,
                id,
                vocab_size: self.vocab,
            }
            .into());
        }
        Ok(id)
    }

    /// [`lookup`].
    #[inline(always)]
    fn lookup(&self, text: &[u8]) -> Result<Option<u32>, RunError> {
        let (mut lo, mut hi) = (0u32, self.vocab);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.text(self.sorted_id(mid)?) < text {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo < self.vocab {
            let id = self.sorted_id(lo)?;
            if self.text(id) == text {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

/// Bytes of scratch [`encode_in`] needs for `text_len` bytes of text.
pub const fn encode_scratch_len(text_len: usize) -> usize {
    4 * 256 + 8 * (text_len + 2)
}

/// [`encode`]'s ids (or its error) with less work, for the program's StartRun: each adjacent
/// pair is looked up once when it appears (at the start, or beside a merge) instead of in every
/// round, its candidate (the merged token's score key and id) kept in `scratch` between rounds,
/// and each single-byte character is looked up once. A round is then a scan of the kept
/// candidates (the highest key, the leftmost among equals, as in [`encode`]) and at most two
/// lookups. `scratch` needs [`encode_scratch_len`] bytes (its words are read with word loads
/// on chain: 4-byte aligned there); its contents are left undefined.
pub fn encode_in(
    meta: &Metadata,
    text: &[u8],
    out: &mut [u32],
    scratch: &mut [u8],
) -> Result<usize, RunError> {
    let needed = text.len() + 2;
    if out.len() < needed || scratch.len() < encode_scratch_len(text.len()) {
        return Err(RunError::TokenBuffer {
            len: out.len().min(scratch.len() / 8),
            needed,
        });
    }
    let (memo, rest) = scratch.split_at_mut(4 * 256);
    let (keys, rest) = rest.split_at_mut(4 * needed);
    let (ids, rest) = rest.split_at_mut(4 * needed);
    // The rest, up to 4,096 slots of 8 bytes (a power of two), caches pairs by their ids:
    // word 2s the pair (a × 2^16 + b: ids are below 65,536), word 2s + 1 0 for an empty
    // slot, 1 for no token, id + 2.
    let mut slots = 4096;
    while slots > rest.len() / 8 {
        slots /= 2;
    }
    let cache = &mut rest[..8 * slots];
    zero(cache);
    // Per byte value: 0 not looked up yet, 1 no token, id + 2.
    zero(memo);
    let words = Words::new(meta);
    let mut n = 0;
    out[n] = BOS;
    n += 1;
    // The space prefix (for a non-empty text), then the characters: one lookup site (on SBF
    // each inlined lookup is code), single bytes looked up once.
    let mut prefix = !text.is_empty();
    let mut start = 0;
    while prefix || start < text.len() {
        let mut end = start + 1;
        while !prefix && end < text.len() && text[end] & 0xC0 == 0x80 && end - start < 4 {
            end += 1;
        }
        let chars = match prefix {
            true => &b" "[..],
            false => &text[start..end],
        };
        let known = match chars {
            [b] => get_u32(memo, *b as usize),
            _ => 0,
        };
        let found = match known {
            0 => words.lookup(chars)?,
            1 => None,
            id => Some(id - 2),
        };
        if let [b] = chars {
            set_u32(memo, *b as usize, found.map_or(1, |id| id + 2));
        }
        match found {
            Some(id) => {
                out[n] = id;
                n += 1;
            }
            None if prefix => return Err(RunError::NoSpaceToken),
            None => {
                for &b in chars {
                    out[n] = b as u32 + BYTE_TOKENS;
                    n += 1;
                }
            }
        }
        if !prefix {
            start = end;
        }
        prefix = false;
    }
    // Pair i's candidate: ids[i] = 0 when the pair is no token, else its id + 1 and keys[i]
    // its score key.
    let mut pair = [0u8; 2 * MAX_TOKEN_LEN];
    // The pairs to look up: every pair at first, then those beside the merge.
    let mut new = 0..n.saturating_sub(1);
    loop {
        for i in new {
            candidate(&words, &mut pair, out, keys, ids, cache, i)?;
        }
        let mut best: Option<(u32, usize)> = None;
        for i in 0..n.saturating_sub(1) {
            if get_u32(ids, i) != 0 {
                let key = get_u32(keys, i);
                if best.is_none_or(|(k, _)| key > k) {
                    best = Some((key, i));
                }
            }
        }
        let Some((_, i)) = best else { break };
        out[i] = get_u32(ids, i) - 1;
        out.copy_within(i + 2..n, i + 1);
        // Pairs past the merged one move down by one; the pairs on either side are new.
        if i + 2 < n - 1 {
            keys.copy_within(4 * (i + 2)..4 * (n - 1), 4 * (i + 1));
            ids.copy_within(4 * (i + 2)..4 * (n - 1), 4 * (i + 1));
        }
        n -= 1;
        new = i.saturating_sub(1)..(i + 1).min(n - 1);
    }
    Ok(n)
}

/// [`encode_in`]'s candidate of pair `i`. Inlined: on SBF a call passes at most five
/// arguments and returns no aggregate.
#[inline(always)]
fn candidate(
    words: &Words,
    pair: &mut [u8; 2 * MAX_TOKEN_LEN],
    out: &[u32],
    keys: &mut [u8],
    ids: &mut [u8],
    cache: &mut [u8],
    i: usize,
) -> Result<(), RunError> {
    let tag = out[i] << 16 | (out[i + 1] & 0xFFFF);
    let slot = match cache.len() / 8 {
        0 => None,
        slots => Some((tag.wrapping_mul(0x9E37_79B1) >> 16) as usize & (slots - 1)),
    };
    let cached = match slot {
        Some(s) if get_u32(cache, 2 * s) == tag => get_u32(cache, 2 * s + 1),
        _ => 0,
    };
    let found = match cached {
        0 => {
            let a = words.text(out[i]);
            let b = words.text(out[i + 1]);
            pair[..a.len()].copy_from_slice(a);
            pair[a.len()..a.len() + b.len()].copy_from_slice(b);
            let found = words.lookup(&pair[..a.len() + b.len()])?;
            if let Some(s) = slot {
                set_u32(cache, 2 * s, tag);
                set_u32(cache, 2 * s + 1, found.map_or(1, |id| id + 2));
            }
            found
        }
        1 => None,
        id => Some(id - 2),
    };
    if let Some(id) = found {
        set_u32(keys, i, get_u32(words.entries, 4 * id as usize));
    }
    set_u32(ids, i, found.map_or(0, |id| id + 1));
    Ok(())
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
