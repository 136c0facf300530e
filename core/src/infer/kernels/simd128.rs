//! The WebAssembly SIMD128 kernels (the SDK's engine, scripts/build-wasm; chosen at compile
//! time). The row sums take two rows a turn, the input's halves loaded once for both, eight
//! columns per `i32x4.dot_i16x8_s` (the bytes widened to i16, at most 255, so a pair's sum
//! never leaves i32): the same two 32-bit sums per row and block as the portable loop, in
//! another order (addition mod 2^32 is associative), so the same integer. A head's scores and
//! weighted values take `i64x2.extmul_{low,high}_i32x4_s` (exact 64-bit sums). The SDK's tests
//! compare every run of sdk/test/golden/run.json (tokens and state bytes) with the native
//! engine's.

use super::portable::BLOCK;
use super::{Kernels, Vector};
use crate::infer::state::cached;
use core::arch::wasm32::*;

/// The SIMD128 set.
pub struct Simd128;

impl Kernels for Simd128 {
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
        // The same row twice: the compiler computes it once.
        halves_dot2(w, w, x.hi, x.lo).0
    }

    #[inline(always)]
    unsafe fn dot4(x: &Vector, w: [&[u8]; 4]) -> [i64; 4] {
        let (a, b) = halves_dot2(w[0], w[1], x.hi, x.lo);
        let (c, d) = halves_dot2(w[2], w[3], x.hi, x.lo);
        [a, b, c, d]
    }

    #[inline(always)]
    unsafe fn head_dot(query: &[i64], q: &[u8], key: &[u8]) -> i64 {
        head_dot(query, q, key)
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

/// Σ b × x of two rows (the same length) against the same input, from its halves.
#[inline(always)]
fn halves_dot2(a: &[u8], b: &[u8], hi: &[i16], lo: &[i16]) -> (i64, i64) {
    assert_eq!(a.len(), b.len());
    let (mut total_a, mut total_b) = (0i64, 0i64);
    let mut start = 0;
    while start < a.len() {
        let end = a.len().min(start + BLOCK);
        let (ha, la, hb, lb) = block_halves2(
            &a[start..end],
            &b[start..end],
            &hi[start..end],
            &lo[start..end],
        );
        total_a += ((ha as i64) << 16) + la as i64;
        total_b += ((hb as i64) << 16) + lb as i64;
        start = end;
    }
    (total_a, total_b)
}

/// One block's Σ b × hi and Σ b × lo of two rows.
#[inline(always)]
fn block_halves2(a: &[u8], b: &[u8], hi: &[i16], lo: &[i16]) -> (i32, i32, i32, i32) {
    let n = a.len();
    let (b, hi, lo) = (&b[..n], &hi[..n], &lo[..n]);
    let (mut a_hi, mut a_lo, mut b_hi, mut b_lo) = (
        i32x4_splat(0),
        i32x4_splat(0),
        i32x4_splat(0),
        i32x4_splat(0),
    );
    let whole = n / 8 * 8;
    let mut i = 0;
    while i < whole {
        // SAFETY: i + 8 <= n, the length of all four slices; loads may be unaligned.
        unsafe {
            let h = v128_load(hi.as_ptr().add(i) as *const v128);
            let l = v128_load(lo.as_ptr().add(i) as *const v128);
            let wa = u16x8_load_extend_u8x8(a.as_ptr().add(i));
            let wb = u16x8_load_extend_u8x8(b.as_ptr().add(i));
            a_hi = i32x4_add(a_hi, i32x4_dot_i16x8(wa, h));
            a_lo = i32x4_add(a_lo, i32x4_dot_i16x8(wa, l));
            b_hi = i32x4_add(b_hi, i32x4_dot_i16x8(wb, h));
            b_lo = i32x4_add(b_lo, i32x4_dot_i16x8(wb, l));
        }
        i += 8;
    }
    let lanes = |v: v128| {
        i32x4_extract_lane::<0>(v)
            .wrapping_add(i32x4_extract_lane::<1>(v))
            .wrapping_add(i32x4_extract_lane::<2>(v))
            .wrapping_add(i32x4_extract_lane::<3>(v))
    };
    let (mut s_ah, mut s_al, mut s_bh, mut s_bl) =
        (lanes(a_hi), lanes(a_lo), lanes(b_hi), lanes(b_lo));
    for j in whole..n {
        s_ah = s_ah.wrapping_add(a[j] as i32 * hi[j] as i32);
        s_al = s_al.wrapping_add(a[j] as i32 * lo[j] as i32);
        s_bh = s_bh.wrapping_add(b[j] as i32 * hi[j] as i32);
        s_bl = s_bl.wrapping_add(b[j] as i32 * lo[j] as i32);
    }
    (s_ah, s_al, s_bh, s_bl)
}

/// A head's dot product: four products per `i64x2.extmul_{low,high}_i32x4_s` pair.
#[inline(always)]
fn head_dot(query: &[i64], q: &[u8], key: &[u8]) -> i64 {
    let n = query.len();
    let (q, key) = (&q[..4 * n], &key[..4 * n]);
    let whole = n / 4 * 4;
    let mut acc = i64x2_splat(0);
    let mut i = 0;
    while i < whole {
        // SAFETY: 4 × (i + 4) <= 4n, the length of both slices; loads may be unaligned.
        unsafe {
            let a = v128_load(q.as_ptr().add(4 * i) as *const v128);
            let b = v128_xor(
                v128_load(key.as_ptr().add(4 * i) as *const v128),
                i32x4_splat(i32::MIN),
            );
            acc = i64x2_add(acc, i64x2_extmul_low_i32x4(a, b));
            acc = i64x2_add(acc, i64x2_extmul_high_i32x4(a, b));
        }
        i += 4;
    }
    let mut dot = i64x2_extract_lane::<0>(acc) + i64x2_extract_lane::<1>(acc);
    for (&qj, b) in query[whole..].iter().zip(key[4 * whole..].chunks_exact(4)) {
        dot += qj * cached(b) as i64;
    }
    dot
}

/// The weighted values: each group of four outputs in two registers over the chunk's
/// positions; the weight and the cached word (v + 2^31) are both unsigned 32-bit, so each
/// product is one lane of `i64x2.extmul_{low,high}_i32x4_u`, exact (`Kernels::accumulate`).
#[inline(always)]
fn accumulate(acc: &mut [i64], weights: &[u32], rows: &[u8], row_len: usize, offset: usize) {
    let n = acc.len();
    let whole = n / 4 * 4;
    let mut j = 0;
    while j < whole {
        // SAFETY: j + 4 <= n (acc); each row's values [offset + 4j, offset + 4j + 16) lie in
        // `rows` (the caller's contract: the rows hold offset + 4n bytes of each row); loads
        // and stores may be unaligned.
        unsafe {
            let low = acc.as_mut_ptr().add(j) as *mut v128;
            let high = acc.as_mut_ptr().add(j + 2) as *mut v128;
            let (mut sum_low, mut sum_high) = (v128_load(low), v128_load(high));
            let mut p = rows.as_ptr().add(offset + 4 * j);
            for &w in weights {
                let v = v128_load(p as *const v128);
                let ws = u32x4_splat(w);
                sum_low = i64x2_add(sum_low, u64x2_extmul_low_u32x4(v, ws));
                sum_high = i64x2_add(sum_high, u64x2_extmul_high_u32x4(v, ws));
                p = p.add(row_len);
            }
            v128_store(low, sum_low);
            v128_store(high, sum_high);
        }
        j += 4;
    }
    for (j, a) in acc.iter_mut().enumerate().skip(whole) {
        for (t, &w) in weights.iter().enumerate() {
            let b = &rows[t * row_len + offset + 4 * j..][..4];
            *a += w as i64 * u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64;
        }
    }
}
