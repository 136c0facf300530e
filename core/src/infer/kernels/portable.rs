//! The portable kernels: plain Rust, the reference every other set is tested against.

use super::{Kernels, Vector};
use crate::infer::state::{cached, word};

/// The portable set.
pub struct Portable;

/// Columns summed in 32 bits before the sum moves to i64, in the halves' row sums. Within a
/// block each of Σ b × hi and Σ b × lo is kept in 32 bits: |hi| ≤ 2^11 and |lo| ≤ 2^15, so a
/// block's sum is under 2^31 in magnitude (256 × 255 × 2^15 = 2,139,095,040) and any order of
/// its additions (mod 2^32, as vector lanes add) gives its exact value; the blocks add in i64.
/// A whole 2,048-column row in one i32 could reach 2^34 and wrap.
pub const BLOCK: usize = 256;

impl Kernels for Portable {
    #[inline]
    fn available() -> bool {
        true
    }

    #[inline(always)]
    unsafe fn enabled<T>(f: impl FnOnce() -> T) -> T {
        f()
    }

    #[inline(always)]
    unsafe fn dot(x: &Vector, w: &[u8]) -> i64 {
        halves_dot(w, x.hi, x.lo)
    }

    #[inline(always)]
    unsafe fn dot4(x: &Vector, w: [&[u8]; 4]) -> [i64; 4] {
        w.map(|w| halves_dot(w, x.hi, x.lo))
    }

    #[inline(always)]
    unsafe fn head_dot(query: &[i64], _q: &[u8], key: &[u8]) -> i64 {
        head_dot(query, key)
    }

    #[inline(always)]
    unsafe fn accumulate(
        acc: &mut [i64],
        weights: &[u32],
        rows: &[u8],
        row_len: usize,
        offset: usize,
    ) {
        accumulate(acc, weights, rows, row_len, offset)
    }
}

/// x's 16-bit halves (x = hi × 2^16 + lo, lo in [−2^15, 2^15)), as every set's input split
/// makes them ([`super::Vector`]).
#[inline(always)]
pub fn halves(x: i32) -> (i16, i16) {
    let h = (x + (1 << 15)) >> 16;
    (h as i16, (x - (h << 16)) as i16)
}

/// Σ b × x from x's 16-bit halves: 2^16 Σ b × hi + Σ b × lo, summed in blocks of [`BLOCK`]
/// columns.
#[inline(always)]
pub fn halves_dot(weights: &[u8], hi: &[i16], lo: &[i16]) -> i64 {
    let n = weights.len();
    let (hi, lo) = (&hi[..n], &lo[..n]);
    let mut total = 0i64;
    let blocks = weights
        .chunks(BLOCK)
        .zip(hi.chunks(BLOCK))
        .zip(lo.chunks(BLOCK));
    for ((w, h), l) in blocks {
        let (mut sum_hi, mut sum_lo) = (0i32, 0i32);
        for i in 0..w.len() {
            sum_hi = sum_hi.wrapping_add(w[i] as i32 * h[i] as i32);
            sum_lo = sum_lo.wrapping_add(w[i] as i32 * l[i] as i32);
        }
        total += ((sum_hi as i64) << 16) + sum_lo as i64;
    }
    total
}

/// Σ_j q_j × k_j over one head, `query` widened to i64. Exact in i64 (|q|, |k| ≤ 2^27, at most
/// 64 terms: ≤ 2^60), so any order of the additions gives the same integer.
#[inline(always)]
pub fn head_dot(query: &[i64], key: &[u8]) -> i64 {
    let mut dot = 0i64;
    let mut q4 = query.chunks_exact(4);
    let mut k4 = key.chunks_exact(16);
    for (q, k) in (&mut q4).zip(&mut k4) {
        dot += q[0] * cached(&k[0..4]) as i64
            + q[1] * cached(&k[4..8]) as i64
            + q[2] * cached(&k[8..12]) as i64
            + q[3] * cached(&k[12..16]) as i64;
    }
    for (&qj, k) in q4.remainder().iter().zip(k4.remainder().chunks_exact(4)) {
        dot += qj * cached(k) as i64;
    }
    dot
}

/// acc_j += Σ_t weights_t × value_t,j (every partial sum ≤ 2^57: exact in i64).
#[inline(always)]
pub fn accumulate(acc: &mut [i64], weights: &[u32], rows: &[u8], row_len: usize, offset: usize) {
    let len = 4 * acc.len();
    for (row, &w) in rows.chunks_exact(row_len).zip(weights) {
        let w = w as i64;
        let value = &row[offset..offset + len];
        let mut a4 = acc.chunks_exact_mut(4);
        let mut v4 = value.chunks_exact(16);
        for (a, v) in (&mut a4).zip(&mut v4) {
            a[0] += w * word(&v[0..4]) as u32 as i64;
            a[1] += w * word(&v[4..8]) as u32 as i64;
            a[2] += w * word(&v[8..12]) as u32 as i64;
            a[3] += w * word(&v[12..16]) as u32 as i64;
        }
        let tail = a4.into_remainder().iter_mut();
        for (acc, v) in tail.zip(v4.remainder().chunks_exact(4)) {
            *acc += w * word(v) as u32 as i64;
        }
    }
}
