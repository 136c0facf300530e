//! The state of a run as bytes (docs/inference.md, "The state buffer"): a 128-byte header,
//! then the regions below, every value little-endian. Its size is a function of the
//! configuration alone, so the program can keep a run in an account and any runner can resume
//! it from these bytes.
//!
//! ```text
//! header   128 bytes (fields in `field`)
//! tokens   (context + 1) × u32   the sequence: the prompt, then the generated tokens
//! x        dimension × i32       the residual stream
//! xb       dimension × i32       a normalized vector or the attention's output
//! q        dimension × i32       the query
//! hb       hidden × i32          the feed-forward block's hidden vector
//! att      context × i32         one head's scores, then its weights
//! logits   vocabulary × i32
//! hist     4,097 × u32           top-p: tokens per exponential-table index
//! keys     layers × context × key and value dimension × i32
//! values   layers × context × key and value dimension × i32
//! ```

#[cfg(not(target_os = "solana"))]
use crate::le::{put_u32, u32_at};
use crate::Config;

/// "CURTAS01": the first 8 bytes of a run's state.
pub const STATE_TAG: [u8; 8] = *b"CURTAS01";
pub const STATE_HEADER_LEN: usize = 128;
/// Entries of the top-p histogram, one per exponential-table index.
pub const HIST_LEN: usize = 4097;

/// Byte offsets of the header's fields.
pub mod field {
    pub const TAG: usize = 0;
    /// u32: prompt tokens (generation) or tokens to score.
    pub const PROMPT_LEN: usize = 8;
    /// u32: the most tokens to generate (0 when scoring).
    pub const STEPS: usize = 12;
    /// u32: tokens generated so far.
    pub const GENERATED: usize = 16;
    /// u32: [`super::Status`].
    pub const STATUS: usize = 20;
    /// u32: [`super::Mode`].
    pub const MODE: usize = 24;
    /// u32: the position whose token is being worked on.
    pub const POSITION: usize = 28;
    /// u32: the stage of that token's work (docs/inference.md, "Stages").
    pub const STAGE: usize = 32;
    /// u32: the next item of that stage.
    pub const ITEM: usize = 36;
    /// u32: the temperature, 16 fractional bits (0: greedy).
    pub const TEMPERATURE: usize = 40;
    /// u32: top-p, 16 fractional bits, 1 to 65,536.
    pub const TOP_P: usize = 44;
    /// u64: the xorshift64* generator's state.
    pub const RNG: usize = 48;
    /// i64: the sum of xb's values (the row product's second term).
    pub const XB_SUM: usize = 56;
    /// i64: the sum of hb's values.
    pub const HB_SUM: usize = 64;
    /// u32: the highest logit's id after the last classifier.
    pub const ARGMAX: usize = 72;
    /// 7 × u32: the model's configuration (header bytes 8 to 36 of its artifact).
    pub const CONFIG: usize = 76;
    pub const END: usize = 104;
    // Sampling's values between its items (docs/inference.md, "Sampling in items"); zero
    // between tokens.
    /// i32: the highest logit (so far, in the Max stage).
    pub const SAMPLE_MAX: usize = 104;
    /// u32: the nucleus's cut index (Cut, Draw).
    pub const SAMPLE_CUT: usize = 108;
    /// u32: the ids of the cut index still in the nucleus (Cut, Draw).
    pub const SAMPLE_TAKE: usize = 112;
    /// u64: the total weight so far (Weigh), then the drawn point less the weight walked so
    /// far (Cut, Draw).
    pub const SAMPLE_LEFT: usize = 120;
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Running = 0,
    /// The model produced token 1 or 2.
    EndToken = 1,
    /// The steps are done (generation), or every position is scored.
    Done = 2,
}

/// What a run computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The prompt, then up to `steps` sampled tokens.
    Generate = 0,
    /// Teacher forcing: the logits of every position but the last.
    Score = 1,
}

/// Byte offsets of the regions, from the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateLayout {
    pub tokens: usize,
    pub x: usize,
    pub xb: usize,
    pub q: usize,
    pub hb: usize,
    pub att: usize,
    pub logits: usize,
    pub hist: usize,
    pub keys: usize,
    pub values: usize,
    pub len: usize,
    /// Values per layer of the key (or value) cache: context × key and value dimension.
    pub cache_layer: usize,
    pub kv_dim: usize,
}

impl StateLayout {
    pub fn new(c: &Config) -> StateLayout {
        let (d, h, v) = (c.dim as usize, c.hidden_dim as usize, c.vocab_size as usize);
        let context = c.context_length as usize;
        let kv_dim = c.kv_dim() as usize;
        let cache_layer = context * kv_dim;
        let mut at = STATE_HEADER_LEN;
        let mut region = |words: usize| {
            let start = at;
            at += 4 * words;
            start
        };
        let tokens = region(context + 1);
        let x = region(d);
        let xb = region(d);
        let q = region(d);
        let hb = region(h);
        let att = region(context);
        let logits = region(v);
        let hist = region(HIST_LEN);
        let keys = region(c.layers as usize * cache_layer);
        let values = region(c.layers as usize * cache_layer);
        StateLayout {
            tokens,
            x,
            xb,
            q,
            hb,
            att,
            logits,
            hist,
            keys,
            values,
            len: at,
            cache_layer,
            kv_dim,
        }
    }

    /// Byte offset of the key (or, from `values`, value) vector of `layer` at `pos`.
    pub fn cache(&self, base: usize, layer: u32, pos: u32) -> usize {
        base + 4 * (layer as usize * self.cache_layer + pos as usize * self.kv_dim)
    }
}

/// The bytes a run of this configuration needs.
pub fn state_len(c: &Config) -> usize {
    StateLayout::new(c).len
}

/// Value `i` of a region of i32 values.
#[inline]
pub fn get(region: &[u8], i: usize) -> i32 {
    get_u32(region, i) as i32
}

#[inline]
pub fn set(region: &mut [u8], i: usize, v: i32) {
    set_u32(region, i, v as u32)
}

/// The i32 of a 4-byte chunk (`chunks_exact(4)`): the loops that walk a region by chunks
/// need no index and no bounds check per value.
#[inline(always)]
pub fn word(chunk: &[u8]) -> i32 {
    get(chunk, 0)
}

/// The key and value caches hold each value v as the u32 v + 2^31 (offset binary: its bits
/// are v's with the sign bit flipped), which SBF loads zero-extended and sums without
/// correcting each value (the sum is corrected once, by 2^31 times the other factors' sum).
pub const CACHE_OFFSET: u32 = 1 << 31;

/// The i32 of a 4-byte chunk of a key or value cache ([`CACHE_OFFSET`]).
#[inline(always)]
pub fn cached(chunk: &[u8]) -> i32 {
    word(chunk) ^ i32::MIN
}

/// Value `i` of a region of u32 values.
#[cfg(not(target_os = "solana"))]
#[inline]
pub fn get_u32(region: &[u8], i: usize) -> u32 {
    u32_at(region, 4 * i)
}

#[cfg(not(target_os = "solana"))]
#[inline]
pub fn set_u32(region: &mut [u8], i: usize, v: u32) {
    put_u32(region, 4 * i, v)
}

// On chain a value is one word load or store. LLVM's BPF backend splits a load it cannot prove
// aligned into four byte loads and shifts (four times the compute units), so these read through
// an i32 pointer. The program keeps the state 8-byte aligned in its run account (account data
// is 8-byte aligned and the state starts at byte 192, docs/program.md), every region starts at
// a multiple of 4, and the exponential and SiLU tables and the normalization coefficients sit
// at multiples of 4 in section zero (format.md); the SBF VM loads a word at any address.
#[cfg(target_os = "solana")]
#[inline(always)]
pub fn get_u32(region: &[u8], i: usize) -> u32 {
    let word = &region[4 * i..4 * i + 4];
    // SAFETY: four bytes in bounds (sliced above), 4-byte aligned as said above.
    unsafe { (word.as_ptr() as *const u32).read() }
}

#[cfg(target_os = "solana")]
#[inline(always)]
pub fn set_u32(region: &mut [u8], i: usize, v: u32) {
    let word = &mut region[4 * i..4 * i + 4];
    // SAFETY: as in `get_u32`.
    unsafe { (word.as_mut_ptr() as *mut u32).write(v) }
}

/// The state cut into its regions, each its own slice, so that a stage reads one while it
/// writes another.
pub struct Regions<'a> {
    pub header: &'a mut [u8],
    pub tokens: &'a mut [u8],
    pub x: &'a mut [u8],
    pub xb: &'a mut [u8],
    pub q: &'a mut [u8],
    pub hb: &'a mut [u8],
    pub att: &'a mut [u8],
    pub logits: &'a mut [u8],
    pub hist: &'a mut [u8],
    pub keys: &'a mut [u8],
    pub values: &'a mut [u8],
}

impl StateLayout {
    /// `state` (at least `len` bytes) cut at the region boundaries.
    pub fn split<'a>(&self, state: &'a mut [u8]) -> Regions<'a> {
        let (header, rest) = state.split_at_mut(self.tokens);
        let (tokens, rest) = rest.split_at_mut(self.x - self.tokens);
        let (x, rest) = rest.split_at_mut(self.xb - self.x);
        let (xb, rest) = rest.split_at_mut(self.q - self.xb);
        let (q, rest) = rest.split_at_mut(self.hb - self.q);
        let (hb, rest) = rest.split_at_mut(self.att - self.hb);
        let (att, rest) = rest.split_at_mut(self.logits - self.att);
        let (logits, rest) = rest.split_at_mut(self.hist - self.logits);
        let (hist, rest) = rest.split_at_mut(self.keys - self.hist);
        let (keys, rest) = rest.split_at_mut(self.values - self.keys);
        let values = &mut rest[..self.len - self.values];
        Regions {
            header,
            tokens,
            x,
            xb,
            q,
            hb,
            att,
            logits,
            hist,
            keys,
            values,
        }
    }
}

/// Sets every byte of `bytes` to zero with one `memset` (on SBF the `sol_memset_` syscall, a
/// unit per 250 bytes): `fill(0)` becomes a byte loop in LLVM's BPF backend, two units a byte,
/// which for a 679,480-byte state is most of a transaction.
#[inline(always)]
pub fn zero(bytes: &mut [u8]) {
    // SAFETY: writes exactly the slice's bytes.
    unsafe { core::ptr::write_bytes(bytes.as_mut_ptr(), 0, bytes.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout written out by hand for stories15M's shape (288, 768, 6 layers, 6 heads,
    /// 32,000 tokens, context 256).
    #[test]
    fn stories15m_layout() {
        let c = Config::from_fields([288, 768, 6, 6, 6, 32_000, 256]);
        let l = StateLayout::new(&c);
        assert_eq!(l.tokens, 128);
        assert_eq!(l.x, 128 + 257 * 4);
        assert_eq!(l.xb, l.x + 288 * 4);
        assert_eq!(l.q, l.xb + 288 * 4);
        assert_eq!(l.hb, l.q + 288 * 4);
        assert_eq!(l.att, l.hb + 768 * 4);
        assert_eq!(l.logits, l.att + 256 * 4);
        assert_eq!(l.hist, l.logits + 32_000 * 4);
        assert_eq!(l.keys, l.hist + 4097 * 4);
        assert_eq!(l.values, l.keys + 6 * 256 * 288 * 4);
        assert_eq!(l.len, l.values + 6 * 256 * 288 * 4);
        assert_eq!(l.len, 3_692_040);
        assert_eq!(l.cache(l.keys, 1, 2), l.keys + 4 * (256 * 288 + 2 * 288));
    }
}
