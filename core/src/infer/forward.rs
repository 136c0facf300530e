//! The pieces of the forward pass, each over the state's bytes (docs/inference.md, "The
//! forward pass"): the embedding, RMS normalization, the row product, rotary, one head's
//! attention and the feed-forward block's SiLU gate.

use super::fixed::{exp_index, mul_q24, saturate, shift_round, InvRms, RMS_EPSILON, TABLE_LAST};
use super::model::Rows;
use super::state::{field, Fields, FieldsMut, StateLayout};
use crate::{Metadata, WEIGHT_BIAS};

/// The sum of the stored weight bytes times the activations (i32 values, little-endian).
#[inline]
pub fn stored_dot(weights: &[u8], x: &[u8]) -> i64 {
    let mut acc = 0i64;
    for (&w, v) in weights.iter().zip(x.chunks_exact(4)) {
        acc += w as i64 * i32::from_le_bytes([v[0], v[1], v[2], v[3]]) as i64;
    }
    acc
}

/// The spec's row product: (Σ stored × x − 128 × Σ x) × scale / 2^24, rounded (halves up),
/// saturated. `x_sum` is Σ x over the row's columns.
#[inline]
pub fn row_product(scale: u32, weights: &[u8], x: &[u8], x_sum: i64) -> i32 {
    let dot = stored_dot(weights, x) - WEIGHT_BIAS as i64 * x_sum;
    saturate(mul_q24(dot, scale))
}

/// Rows `rows` of matrix `m` times the vector at byte `input` (sum `input_sum`); each result
/// is handed to `out(row, value)`.
pub fn matrix_rows(
    state: &mut [u8],
    m: &Rows,
    rows: core::ops::Range<usize>,
    input: usize,
    input_sum: i64,
    mut out: impl FnMut(&mut [u8], usize, i32),
) {
    let len = 4 * m.columns;
    for r in rows {
        let (scale, weights) = m.row(r);
        let v = row_product(scale, weights, &state[input..input + len], input_sum);
        out(state, r, v);
    }
}

/// x = row `token` of the embedding: (stored − 128) × scale / 2^8, rounded (halves up).
pub fn embed(state: &mut [u8], l: &StateLayout, embedding: &Rows, token: usize) {
    let (scale, weights) = embedding.row(token);
    for (i, &w) in weights.iter().enumerate() {
        let q = w as i64 - WEIGHT_BIAS as i64;
        state.set_i32(l.x, i, saturate(shift_round(q * scale as i64, 8)));
    }
}

/// xb = rmsnorm(x) × the normalization coefficients from index `coefficients`; writes Σ xb.
pub fn rmsnorm(state: &mut [u8], l: &StateLayout, meta: &Metadata, coefficients: usize) {
    let d = meta.config().dim as usize;
    let mut squares = 0u64;
    for i in 0..d {
        let v = state.i32_value(l.x, i) as i64;
        squares += (v * v) as u64;
    }
    let rms = InvRms::of(squares / d as u64 + RMS_EPSILON);
    let mut sum = 0i64;
    for i in 0..d {
        let n = rms.apply(state.i32_value(l.x, i));
        let v = saturate(shift_round(n * meta.norm(coefficients + i) as i64, 24));
        state.set_i32(l.xb, i, v);
        sum += v as i64;
    }
    state.set_u64(field::XB_SUM, sum as u64);
}

/// Rotates each (even, odd) pair of each head of the query and of the key at `key`, by the
/// rotary coefficients of `pos`: (a, b) -> (a cos − b sin, a sin + b cos), each rounded from
/// 24 fractional bits.
pub fn rotary(state: &mut [u8], l: &StateLayout, meta: &Metadata, pos: u32, key: usize) {
    let c = meta.config();
    let head_size = c.head_size() as usize;
    let base = pos as usize * head_size;
    let rotate = |state: &mut [u8], region: usize, len: usize| {
        for i in (0..len).step_by(2) {
            let j = i % head_size;
            let cos = meta.rotary(base + j) as i64;
            let sin = meta.rotary(base + j + 1) as i64;
            let a = state.i32_value(region, i) as i64;
            let b = state.i32_value(region, i + 1) as i64;
            state.set_i32(region, i, saturate(shift_round(a * cos - b * sin, 24)));
            state.set_i32(region, i + 1, saturate(shift_round(a * sin + b * cos, 24)));
        }
    };
    rotate(state, l.q, c.dim as usize);
    rotate(state, key, l.kv_dim);
}

/// Head `head` of the attention at `pos` in `layer`: scores against every cached key from 0 to
/// `pos`, softmax through the exponential table, the weighted sum of the cached values into
/// xb. Returns the sum of the head's outputs.
pub fn attention_head(
    state: &mut [u8],
    l: &StateLayout,
    meta: &Metadata,
    layer: u32,
    pos: u32,
    head: usize,
) -> i64 {
    let c = meta.config();
    let head_size = c.head_size() as usize;
    let kv_head = head / (c.heads / c.kv_heads) as usize;
    let inv_sqrt = meta.inv_sqrt_head_size();
    let q = l.q + 4 * head * head_size;
    let positions = pos as usize + 1;

    // Scores: q · k, rounded to 16 fractional bits, times header byte 68, saturated.
    let mut max = i32::MIN;
    for t in 0..positions {
        let k = l.cache(l.keys, layer, t as u32) + 4 * kv_head * head_size;
        let mut dot = 0i64;
        for j in 0..head_size {
            dot += state.i32_value(q, j) as i64 * state.i32_value(k, j) as i64;
        }
        let score = saturate(mul_q24(shift_round(dot, 16), inv_sqrt));
        state.set_i32(l.att, t, score);
        max = max.max(score);
    }
    // Softmax: e_t = exp[round((max − score) / 2^8)], weights floor(e_t × 2^30 / Σ e).
    let mut total = 0u64;
    for t in 0..positions {
        let e = meta.exp(exp_index(
            (max as i64 - state.i32_value(l.att, t) as i64) as u64,
        ));
        state.set_u32(l.att + 4 * t, e);
        total += e as u64;
    }
    for t in 0..positions {
        let e = state.u32_field(l.att + 4 * t) as u64;
        state.set_u32(l.att + 4 * t, ((e << 30) / total) as u32);
    }
    // Σ_t weight × value, rounded from 30 fractional bits. Every partial sum is bounded by
    // Σ weights ≤ 2^30 times |value| ≤ 2^27.
    let mut acc = [0i64; 64];
    for t in 0..positions {
        let w = state.u32_field(l.att + 4 * t) as i64;
        let v = l.cache(l.values, layer, t as u32) + 4 * kv_head * head_size;
        for (j, a) in acc[..head_size].iter_mut().enumerate() {
            *a += w * state.i32_value(v, j) as i64;
        }
    }
    let out = l.xb + 4 * head * head_size;
    let mut sum = 0i64;
    for (j, &a) in acc[..head_size].iter().enumerate() {
        let v = saturate(shift_round(a, 30));
        state.set_i32(out, j, v);
        sum += v as i64;
    }
    sum
}

/// SiLU of `v` (16 fractional bits) from its table: the identity from 16 on, zero below −16,
/// otherwise linear interpolation between entries i and i + 1 where i = floor((v + 16) × 128),
/// rounded (halves up) from the 9 bits of the fraction.
pub fn silu(meta: &Metadata, v: i32) -> i64 {
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
    let a = meta.silu(i) as i64;
    let b = meta.silu(i + 1) as i64;
    shift_round(a * (512 - f) + b * f, 9)
}

/// hb[i] = SiLU(gate) × up, rounded from 32 to 16 fractional bits, saturated.
pub fn gated(meta: &Metadata, gate: i32, up: i32) -> i32 {
    saturate(shift_round(silu(meta, gate) * up as i64, 16))
}
