//! The prompt's tokens and the output's text, from section zero's tokenizer blocks, the way
//! llama2.c's `encode` and `decode` do it (docs/inference.md, "Tokens and text").

use super::state::{get_u32, set_u32, word, zero};
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
        // A vocabulary without " " takes the space prefix as its byte token, as any character.
        out[n] = lookup(meta, b" ")?.unwrap_or(b' ' as u32 + 3);
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
    /// The token whose text is token `a`'s then token `b`'s, joined in `pair`.
    #[inline(always)]
    fn lookup_pair(
        &self,
        a: u32,
        b: u32,
        pair: &mut [u8; 2 * MAX_TOKEN_LEN],
    ) -> Result<Option<u32>, RunError> {
        let (a, b) = (self.text(a), self.text(b));
        pair[..a.len()].copy_from_slice(a);
        pair[a.len()..a.len() + b.len()].copy_from_slice(b);
        self.lookup(&pair[..a.len() + b.len()])
    }

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

/// Bytes of scratch [`encode_in`] and [`Encoding::begin`] need for `text_len` bytes of text
/// (more is a pair cache, up to 32,768 bytes: see [`Encoding`]).
pub const fn encode_scratch_len(text_len: usize) -> usize {
    enc::MEMO + 4 * 256 + text_len.div_ceil(4) * 4 + 12 * (text_len + 2)
}

/// [`encode`]'s ids (or its error) with less work: [`Encoding`] run to its end in one go, the
/// ids copied to `out` (`text.len() + 2` entries). `scratch` needs [`encode_scratch_len`]
/// bytes; its contents are left undefined.
pub fn encode_in(
    meta: &Metadata,
    text: &[u8],
    out: &mut [u32],
    scratch: &mut [u8],
) -> Result<usize, RunError> {
    let needed = text.len() + 2;
    if out.len() < needed {
        return Err(RunError::TokenBuffer {
            len: out.len(),
            needed,
        });
    }
    let mut encoding = Encoding::begin(scratch, text)?;
    encoding.advance(meta, u64::MAX, |_, _| 1)?;
    Ok(encoding.ids(out))
}

/// The encoder's header words and regions in its scratch (byte offsets, all multiples of 4).
mod enc {
    /// "ENC1": the scratch holds an encoding.
    pub const TAG: usize = 0;
    pub const TAG_VALUE: u32 = u32::from_le_bytes(*b"ENC1");
    /// 0 while the characters are read, 1 while pairs are looked up and merged, 2 at the end.
    pub const PHASE: usize = 1;
    pub const TEXT_LEN: usize = 2;
    /// The next byte of the text to read (phase 0).
    pub const CURSOR: usize = 3;
    /// The tokens so far.
    pub const COUNT: usize = 4;
    /// The pairs still to look up before the next round's scan: NEW_START..NEW_END.
    pub const NEW_START: usize = 5;
    pub const NEW_END: usize = 6;
    /// The pair cache's slots (a power of two, or 0).
    pub const SLOTS: usize = 7;
    /// 1 while the space prefix is still to look up.
    pub const PREFIX: usize = 8;
    /// Where the per-byte memo starts (bytes): after 12 header words.
    pub const MEMO: usize = 48;
    pub const DONE: u32 = 2;
}

/// One item of an [`Encoding`]'s work, what its cost is counted by (a Step's budget while a run
/// is encoding: `curta_program::run::encode_cost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeItem {
    /// A binary search over the sorted ids (a character, or a pair not in the cache).
    Lookup,
    /// A character of one byte already looked up, or a pair found in the cache.
    Known,
    /// A round's scan of this many kept candidates, and its merge.
    Scan(u32),
}

impl EncodeItem {
    /// The item of a character or pair by what the memo or the cache holds for it (0: not
    /// looked up yet).
    #[inline(always)]
    fn of(held: u32) -> EncodeItem {
        match held {
            0 => EncodeItem::Lookup,
            _ => EncodeItem::Known,
        }
    }
}

/// [`encode`] made resumable: its whole working state (the text, the tokens so far, each
/// adjacent pair's candidate, a per-byte memo, a pair cache and where it stands) lives in a
/// caller's scratch, so that the work can be cut anywhere ([`Encoding::advance`] with a budget)
/// and continued later from the bytes alone, with the same ids as [`encode`] however it is cut.
///
/// The work, in items: the space prefix and then each UTF-8 character looked up (single bytes
/// once, by the memo); then every adjacent pair's candidate (the merged token's score key and
/// id) looked up once when it appears (at the start, or beside a merge; the cache of up to
/// 4,096 pairs by their ids spares repeated lookups); a round is a scan of the kept candidates
/// for the highest key (the leftmost among equals, as [`encode`]) and its merge, then the
/// lookups of the two new pairs beside it.
///
/// The scratch: 12 header words ([`enc`]), the memo (256 words: per byte value 0 not looked
/// up yet, 1 no token, id + 2), the text (rounded up to 4 bytes), the tokens, the keys and the
/// ids (`text_len + 2` words each: ids[i] = 0 when pair i is no token, else its id + 1, and
/// keys[i] its score key), then the cache: the rest, at most 4,096 slots of 8 bytes (a power of
/// two): word 2s the pair (a × 2^16 + b: ids are below 65,536), word 2s + 1 0 for an empty
/// slot, 1 for no token, id + 2. On chain its words are read with word loads: the scratch is
/// 4-byte aligned there.
pub struct Encoding<'s> {
    s: &'s mut [u8],
}

impl<'s> Encoding<'s> {
    /// Starts the encoding of `text` in `scratch` (no lookup yet): `scratch` needs
    /// [`encode_scratch_len`] bytes, else [`RunError::TokenBuffer`] (`needed` is the text's
    /// ids, `len` the ids the scratch would hold).
    pub fn begin(scratch: &'s mut [u8], text: &[u8]) -> Result<Encoding<'s>, RunError> {
        let len = text.len();
        if scratch.len() < encode_scratch_len(len) {
            return Err(RunError::TokenBuffer {
                len: scratch.len().saturating_sub(enc::MEMO + 4 * 256) / 13,
                needed: len + 2,
            });
        }
        let rest = scratch.len() - encode_scratch_len(len);
        let mut slots = 4096;
        while slots > rest / 8 {
            slots /= 2;
        }
        zero(&mut scratch[..enc::MEMO + 4 * 256]);
        let mut e = Encoding { s: scratch };
        for (at, value) in [
            (enc::TAG, enc::TAG_VALUE),
            (enc::TEXT_LEN, len as u32),
            (enc::SLOTS, slots as u32),
            (enc::PREFIX, !text.is_empty() as u32),
        ] {
            e.set(at, value);
        }
        let at = e.text_at();
        e.s[at..at + len].copy_from_slice(text);
        let tokens = e.tokens_at();
        set_u32(&mut e.s[tokens..], 0, BOS);
        e.set(enc::COUNT, 1);
        let cache = e.cache_at();
        zero(&mut e.s[cache..cache + 8 * slots]);
        if text.is_empty() {
            e.set(enc::PHASE, enc::DONE);
        }
        Ok(e)
    }

    /// The encoding `scratch` holds ([`Encoding::begin`]'s bytes, advanced any number of
    /// times), or `None` when its header does not read as one that fits it.
    pub fn resume(scratch: &'s mut [u8]) -> Option<Encoding<'s>> {
        if scratch.len() < enc::MEMO {
            return None;
        }
        let e = Encoding { s: scratch };
        let len = e.get(enc::TEXT_LEN) as usize;
        let fits = e.get(enc::TAG) == enc::TAG_VALUE
            && len <= e.s.len()
            && encode_scratch_len(len) + 8 * e.get(enc::SLOTS) as usize <= e.s.len()
            && e.get(enc::COUNT) as usize <= len + 2
            && e.get(enc::COUNT) >= 1
            && e.get(enc::CURSOR) as usize <= len
            && e.get(enc::NEW_END) <= e.get(enc::COUNT)
            && e.get(enc::SLOTS).is_power_of_two() | (e.get(enc::SLOTS) == 0);
        fits.then_some(e)
    }

    /// Whether the encoding ended: [`Encoding::ids`] are `encode`'s.
    pub fn done(&self) -> bool {
        self.get(enc::PHASE) == enc::DONE
    }

    /// The text's length in bytes.
    pub fn text_len(&self) -> usize {
        self.get(enc::TEXT_LEN) as usize
    }

    /// The text being encoded.
    pub fn text(&self) -> &[u8] {
        let at = self.text_at();
        &self.s[at..at + self.text_len()]
    }

    /// The tokens so far (the ids once [`Encoding::done`]) into `out`, returning how many
    /// (at most `out.len()`).
    pub fn ids(&self, out: &mut [u32]) -> usize {
        let n = (self.get(enc::COUNT) as usize).min(out.len());
        let tokens = &self.s[self.tokens_at()..];
        for (i, slot) in out[..n].iter_mut().enumerate() {
            *slot = get_u32(tokens, i);
        }
        n
    }

    /// Where the encoding stands, for comparing two encodings of one text by their point of
    /// progress: the phase, then the characters read or the tokens left (fewer is later), then
    /// the pairs looked up.
    pub fn point(&self) -> (u32, u32, u32) {
        match self.get(enc::PHASE) {
            0 => (0, self.get(enc::CURSOR) + 1 - self.get(enc::PREFIX), 0),
            phase => (
                phase,
                u32::MAX - self.get(enc::COUNT),
                self.get(enc::NEW_START),
            ),
        }
    }

    #[inline(always)]
    fn get(&self, at: usize) -> u32 {
        get_u32(self.s, at)
    }

    #[inline(always)]
    fn set(&mut self, at: usize, value: u32) {
        set_u32(self.s, at, value)
    }

    #[inline(always)]
    fn text_at(&self) -> usize {
        enc::MEMO + 4 * 256
    }

    #[inline(always)]
    fn tokens_at(&self) -> usize {
        self.text_at() + self.text_len().div_ceil(4) * 4
    }

    #[inline(always)]
    fn keys_at(&self) -> usize {
        self.tokens_at() + 4 * (self.text_len() + 2)
    }

    #[inline(always)]
    fn ids_at(&self) -> usize {
        self.keys_at() + 4 * (self.text_len() + 2)
    }

    #[inline(always)]
    fn cache_at(&self) -> usize {
        self.ids_at() + 4 * (self.text_len() + 2)
    }

    /// Does items of work while their costs (`cost(item, vocab size)`) fit `budget`, at least
    /// one (none once done). Returns the cost of what it did. Any cut gives the same ids.
    pub fn advance(
        &mut self,
        meta: &Metadata,
        budget: u64,
        cost: impl Fn(EncodeItem, u32) -> u64,
    ) -> Result<u64, RunError> {
        let words = Words::new(meta);
        let len = self.text_len();
        let slots = self.get(enc::SLOTS) as usize;
        // The regions apart: the memo, the text, the tokens, the keys, the ids and the cache.
        let (head, rest) = self.s.split_at_mut(enc::MEMO);
        let (memo, rest) = rest.split_at_mut(4 * 256);
        let (text, rest) = rest.split_at_mut(len.div_ceil(4) * 4);
        let text = &text[..len];
        let (out, rest) = rest.split_at_mut(4 * (len + 2));
        let (keys, rest) = rest.split_at_mut(4 * (len + 2));
        let (ids, rest) = rest.split_at_mut(4 * (len + 2));
        let cache = &mut rest[..8 * slots];
        let mut used = 0u64;
        let mut pair = [0u8; 2 * MAX_TOKEN_LEN];
        loop {
            let n = get_u32(head, enc::COUNT) as usize;
            match get_u32(head, enc::PHASE) {
                0 => {
                    // The space prefix, then the characters: one lookup site (on SBF each
                    // inlined lookup is code), single bytes looked up once.
                    let prefix = get_u32(head, enc::PREFIX) == 1;
                    let (chars, end) = next_chars(text, get_u32(head, enc::CURSOR), prefix);
                    let known = match chars {
                        [b] => get_u32(memo, *b as usize),
                        _ => 0,
                    };
                    if !take(&mut used, cost(EncodeItem::of(known), words.vocab), budget) {
                        return Ok(used);
                    }
                    let found = match known {
                        0 => words.lookup(chars)?,
                        1 => None,
                        id => Some(id - 2),
                    };
                    if let [b] = chars {
                        set_u32(memo, *b as usize, found.map_or(1, |id| id + 2));
                    }
                    let n = put_tokens(out, n, found, chars);
                    moved_past(head, n, prefix, end, len);
                }
                1 => {
                    let i = get_u32(head, enc::NEW_START) as usize;
                    if i < get_u32(head, enc::NEW_END) as usize {
                        // Pair i's candidate.
                        let (a, b) = (get_u32(out, i), get_u32(out, i + 1));
                        let tag = a << 16 | (b & 0xFFFF);
                        let (slot, cached) = cached_pair(cache, slots, tag);
                        if !take(&mut used, cost(EncodeItem::of(cached), words.vocab), budget) {
                            return Ok(used);
                        }
                        let found = match cached {
                            0 => {
                                let found = words.lookup_pair(a, b, &mut pair)?;
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
                        set_u32(head, enc::NEW_START, i as u32 + 1);
                        continue;
                    }
                    // A round: the highest key, the leftmost among equals, merged.
                    let pairs = n.saturating_sub(1);
                    if !take(
                        &mut used,
                        cost(EncodeItem::Scan(pairs as u32), words.vocab),
                        budget,
                    ) {
                        return Ok(used);
                    }
                    if !merge_best(head, out, keys, ids, n) {
                        return Ok(used);
                    }
                }
                _ => return Ok(used),
            }
        }
    }
}

/// Token `found` at word `n` of `out`, or else the tokens of `chars`' bytes; returns the count
/// of words after them.
#[inline(always)]
fn put_tokens(out: &mut [u8], mut n: usize, found: Option<u32>, chars: &[u8]) -> usize {
    match found {
        Some(id) => {
            set_u32(out, n, id);
            n += 1;
        }
        None => {
            for &b in chars {
                set_u32(out, n, b as u32 + BYTE_TOKENS);
                n += 1;
            }
        }
    }
    n
}

/// The pairs' cache slot of `tag` (none when the cache has no slots) and what it holds for
/// it: 0 when not cached, 1 when the pair is no token, id + 2 otherwise.
#[inline(always)]
fn cached_pair(cache: &[u8], slots: usize, tag: u32) -> (Option<usize>, u32) {
    let slot = match slots {
        0 => None,
        _ => Some((tag.wrapping_mul(0x9E37_79B1) >> 16) as usize & (slots - 1)),
    };
    let cached = match slot {
        Some(s) if get_u32(cache, 2 * s) == tag => get_u32(cache, 2 * s + 1),
        _ => 0,
    };
    (slot, cached)
}

/// A round of the merges: the highest key among the `n` − 1 kept candidates, the leftmost
/// among equals, merged into its pair's first token; false (the encoding done) when no pair is
/// a token.
#[inline(always)]
fn merge_best(head: &mut [u8], out: &mut [u8], keys: &mut [u8], ids: &mut [u8], n: usize) -> bool {
    let pairs = n.saturating_sub(1);
    // The kept candidates walked by chunks (no index or bounds check per pair
    // on SBF), keys widened so that -1 is below every key.
    let (mut best_key, mut best) = (-1i64, usize::MAX);
    let candidates = ids[..4 * pairs].chunks_exact(4);
    for (i, (id, key)) in candidates
        .zip(keys[..4 * pairs].chunks_exact(4))
        .enumerate()
    {
        if word(id) != 0 {
            let key = word(key) as u32 as i64;
            if key > best_key {
                (best_key, best) = (key, i);
            }
        }
    }
    let (i, mut n) = (best, n);
    if i == usize::MAX {
        set_u32(head, enc::PHASE, enc::DONE);
        return false;
    }
    set_u32(out, i, get_u32(ids, i) - 1);
    out.copy_within(4 * (i + 2)..4 * n, 4 * (i + 1));
    // Pairs past the merged one move down by one; the pairs on either side are
    // new.
    if i + 2 < n - 1 {
        keys.copy_within(4 * (i + 2)..4 * (n - 1), 4 * (i + 1));
        ids.copy_within(4 * (i + 2)..4 * (n - 1), 4 * (i + 1));
    }
    n -= 1;
    set_u32(head, enc::COUNT, n as u32);
    set_u32(head, enc::NEW_START, i.saturating_sub(1) as u32);
    set_u32(head, enc::NEW_END, (i + 1).min(n - 1) as u32);
    true
}

/// The space prefix, or the character of the text at `cursor` (up to four bytes of UTF-8), and
/// the index past it.
#[inline(always)]
fn next_chars(text: &[u8], cursor: u32, prefix: bool) -> (&[u8], usize) {
    let (start, len) = (cursor as usize, text.len());
    let mut end = start + 1;
    while !prefix && end < len && text[end] & 0xC0 == 0x80 && end - start < 4 {
        end += 1;
    }
    match prefix {
        true => (&b" "[..], end),
        false => (&text[start..end], end),
    }
}

/// The header after a character (or the prefix) put `n` tokens out: the cursor past it, and
/// after the text's last character the pairs' phase, every pair new.
#[inline(always)]
fn moved_past(head: &mut [u8], n: usize, prefix: bool, end: usize, len: usize) {
    set_u32(head, enc::COUNT, n as u32);
    match prefix {
        true => set_u32(head, enc::PREFIX, 0),
        false => set_u32(head, enc::CURSOR, end as u32),
    }
    if !prefix && end >= len {
        set_u32(head, enc::PHASE, 1);
        set_u32(head, enc::NEW_START, 0);
        set_u32(head, enc::NEW_END, n as u32 - 1);
    }
}

/// Counts an item's `cost` into `used` when it fits `budget`: the first item of an advance
/// always does (every advance does at least one).
#[inline(always)]
fn take(used: &mut u64, cost: u64, budget: u64) -> bool {
    let fits = *used == 0 || used.saturating_add(cost) <= budget;
    if fits {
        *used = used.saturating_add(cost);
    }
    fits
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
