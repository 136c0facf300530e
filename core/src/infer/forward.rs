//! The forward pass over the state's regions (docs/inference.md, "The forward pass"), top to
//! bottom as llama2.c's run.c `forward()` reads:
//!
//! ```text
//! x = embedding row of the token                          embed
//! for each layer:
//!     xb = rmsnorm(x)                                     rmsnorm
//!     q, k, v = query, key, value × xb                    write_rows (the matmul)
//!     rotate q and k                                      rotary
//!     per head: scores q·k, softmax, Σ weights × values   attention_heads
//!     x += output × xb                                    write_rows, Write::Add
//!     xb = rmsnorm(x)                                     rmsnorm
//!     hb = SiLU(gate × xb) × (up × xb)                    write_products, Write::Gate (silu)
//!     x += down × hb                                      write_rows, Write::Add
//! xb = rmsnorm(x); logits = classifier × xb               rmsnorm, write_rows
//! ```
//!
//! The stages of `run/advance.rs` call these pieces in that order, a bounded number of items at
//! a time. The matmul and one head's attention are the target's backend's (`backend/`: one per
//! target behind one face), their inner loops the kernels of `kernels/`.

pub use super::backend::Product;
use super::backend::{Backend, Layer, Target};
use super::fixed::{saturate, shift_round, InvRms, RMS_EPSILON, TABLE_LAST};
pub use super::kernels::Path;
use super::model::Rows;
use super::state::{get, set, set_u32, CACHE_OFFSET};
use crate::{Block, Metadata, WEIGHT_BIAS};

/// The longest input vector: the hidden dimension's limit.
pub const MAX_COLUMNS: usize = 2048;

/// On chain the backend's scratch is the first [`SCRATCH_BYTES`] of the heap frame, which
/// starts here (the program installs no allocator, and a 4 KiB stack frame cannot hold it):
/// 2,048 values of 8 bytes. The program may use the heap past them.
pub const HEAP_START: u64 = 0x3_0000_0000;
pub const SCRATCH_BYTES: usize = 8 * MAX_COLUMNS;

/// This target's scratch and input vector (`backend::Backend`).
pub type Scratch = super::backend::Scratch;
pub type Input<'a> = <Target as Backend>::Input<'a>;

// ---------------------------------------------------------------------------------------------
// The embedding

/// x = row `token` of the embedding: (stored − 128) × scale / 2^8, rounded (halves up).
pub fn embed(x: &mut [u8], embedding: &Rows, token: usize) {
    let (scale, weights) = embedding.row(token);
    for (i, &w) in weights.iter().enumerate() {
        let q = w as i64 - WEIGHT_BIAS as i64;
        set(x, i, saturate(shift_round(q * scale as i64, 8)));
    }
}

// ---------------------------------------------------------------------------------------------
// RMS normalization

/// xb = rmsnorm(x) × the normalization coefficients from index `coefficients`; returns Σ xb.
pub fn rmsnorm(x: &[u8], xb: &mut [u8], meta: &Metadata, coefficients: usize) -> i64 {
    let d = meta.config().dim as usize;
    let weights = &meta.block_bytes(Block::Norm)[4 * coefficients..4 * (coefficients + d)];
    let mut squares = 0u64;
    for i in 0..d {
        let v = get(x, i) as i64;
        squares += (v * v) as u64;
    }
    let rms = InvRms::of(squares / d as u64 + RMS_EPSILON);
    let mut sum = 0i64;
    for i in 0..d {
        let n = rms.apply(get(x, i));
        let v = saturate(shift_round(n * get(weights, i) as i64, 24));
        set(xb, i, v);
        sum += v as i64;
    }
    sum
}

// ---------------------------------------------------------------------------------------------
// The matmul: a matrix's rows times the input vector, by the backend

/// The input `bytes` (little-endian i32 values, |x| ≤ 2^27) with Σ x = `sum`, in `scratch`.
#[inline(always)]
pub fn input<'a>(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
    Target::input(bytes, sum, scratch)
}

/// Rows `rows` of matrix `m` times `input`, each product v of row r written to word r of `out`
/// as `write` says.
#[inline]
pub fn write_rows(
    m: &Rows,
    rows: core::ops::Range<usize>,
    input: &Input,
    out: &mut [u8],
    write: Write,
) {
    Target::write_rows(m, rows, input, out, write)
}

/// Every product's matrices times `input` (off chain in one split across threads).
#[inline(always)]
pub fn write_products(products: &mut [Product], input: &Input) {
    Target::write_products(products, input)
}

/// Σ stored × x the plain way, for the tests of the kernels.
pub fn stored_dot_plain(weights: &[u8], x: &[u8]) -> i64 {
    let mut acc = 0i64;
    for (&w, v) in weights.iter().zip(x.chunks_exact(4)) {
        acc += w as i64 * i32::from_le_bytes([v[0], v[1], v[2], v[3]]) as i64;
    }
    acc
}

/// What [`write_rows`] does with row r's product v, at word r of its output.
#[derive(Clone, Copy)]
pub enum Write<'t> {
    /// out = v.
    Set,
    /// out = out + v, saturated (the residual of the output and down projections).
    Add,
    /// out = SiLU(out) × v by the SiLU table (the hidden stage: out holds the gate's product).
    Gate(&'t [u8]),
}

// ---------------------------------------------------------------------------------------------
// Rotary position embedding

/// Rotates each (even, odd) pair of each head of `q` and `key`, by the rotary coefficients of
/// `pos`: (a, b) -> (a cos − b sin, a sin + b cos), each rounded from 24 fractional bits; the
/// rotated key (the position's row of the key cache) is stored in the caches' offset binary
/// ([`CACHE_OFFSET`]), as the value stage stored the value row.
pub fn rotary(q: &mut [u8], key: &mut [u8], meta: &Metadata, pos: u32) {
    let head_size = meta.config().head_size() as usize;
    let start = 4 * pos as usize * head_size;
    let coefficients = &meta.block_bytes(Block::Rotary)[start..start + 4 * head_size];
    rotate(q, coefficients, head_size, 0);
    rotate(key, coefficients, head_size, CACHE_OFFSET);
}

/// [`rotary`]'s rotation of one vector, each value's bits XORed with `offset` as stored.
#[inline(always)]
fn rotate(v: &mut [u8], coefficients: &[u8], head_size: usize, offset: u32) {
    for i in (0..v.len() / 4).step_by(2) {
        let j = i % head_size;
        let cos = get(coefficients, j) as i64;
        let sin = get(coefficients, j + 1) as i64;
        let a = get(v, i) as i64;
        let b = get(v, i + 1) as i64;
        set_u32(
            v,
            i,
            saturate(shift_round(a * cos - b * sin, 24)) as u32 ^ offset,
        );
        set_u32(
            v,
            i + 1,
            saturate(shift_round(a * sin + b * cos, 24)) as u32 ^ offset,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Attention: one head's scores, their softmax, the weighted sum of the values

/// Heads `heads` of a layer's attention (head h reading key and value head h / `group`), their
/// outputs at their spans of `xb`; returns the sum of their outputs. `att` is left holding the
/// last head's exponentials.
#[allow(clippy::too_many_arguments)]
pub fn attention_heads(
    meta: &Metadata,
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    group: usize,
    pos: u32,
    heads: core::ops::Range<usize>,
    att: &mut [u8],
    xb: &mut [u8],
    scratch: &Scratch,
) -> i64 {
    let c = meta.config();
    let layer = Layer {
        q,
        keys,
        values,
        group,
        head_size: c.head_size() as usize,
        kv_dim: (c.kv_heads * c.head_size()) as usize,
        pos,
        inv_sqrt: meta.inv_sqrt_head_size(),
        exp: meta.block_bytes(Block::Exp),
    };
    Target::attention_heads(&layer, heads, att, xb, scratch)
}

// ---------------------------------------------------------------------------------------------
// The feed-forward block's gate

/// SiLU of `v` (16 fractional bits) from its table: the identity from 16 on, zero below −16,
/// otherwise linear interpolation between entries i and i + 1 where i = floor((v + 16) × 128),
/// from the 9 bits of the fraction f: round((T[i] × (512 − f) + T[i+1] × f) / 2^9), halves up.
pub fn silu(table: &[u8], v: i32) -> i64 {
    let v = v as i64;
    if v >= 16 << 16 {
        return v;
    }
    if v < -(16 << 16) {
        return 0;
    }
    let u = (v + (16 << 16)) as u64;
    let i = (u >> 9) as usize;
    debug_assert!(i < TABLE_LAST);
    let f = (u & 511) as i64;
    let a = get(table, i) as i64;
    let b = get(table, i + 1) as i64;
    shift_round(a * (512 - f) + b * f, 9)
}

/// hb[i] = SiLU(gate) × up, rounded from 32 to 16 fractional bits, saturated.
#[inline]
pub fn gated(silu_table: &[u8], gate: i32, up: i32) -> i32 {
    saturate(shift_round(silu(silu_table, gate) * up as i64, 16))
}
