//! The AVX2 kernels (x86-64, chosen at run time): the row sums over the input's 16-bit halves,
//! sixteen columns per `vpmaddwd` (the stored bytes widened to i16, at most 255), then eight
//! with SSE4.1, then one at a time; each [`BLOCK`]'s two 32-bit sums in another order than the
//! portable loop's (addition mod 2^32 is associative), so the same integer; four rows' sums are
//! reduced together and finished (bias, scale, rounding, saturation) in 64-bit lanes, which
//! took stories260K from about 15,600 to 18,300 tokens a second here. A head's dot
//! products and weighted values four 64-bit lanes at a time (`vpmuldq`, exact). Left to the
//! compiler, the loop over the 32 columns after a 256-column block (stories15M's 288) ran one
//! column at a time and took more than half of the time.

use super::portable::BLOCK;
use super::{Kernels, Vector};
use crate::infer::state::{cached, word};
use core::arch::x86_64::*;

/// The AVX2 set.
pub struct Avx2;

impl Kernels for Avx2 {
    #[inline]
    fn available() -> bool {
        std::is_x86_feature_detected!("avx2")
    }

    #[inline(always)]
    unsafe fn enabled<T>(f: impl FnOnce() -> T) -> T {
        enabled(f)
    }

    #[inline(always)]
    unsafe fn dot(x: &Vector, w: &[u8]) -> i64 {
        halves_dot(w, x.hi, x.lo)
    }

    #[inline(always)]
    unsafe fn dot4(x: &Vector, w: [&[u8]; 4]) -> [i64; 4] {
        halves_dot4(w, x.hi, x.lo)
    }

    #[inline(always)]
    unsafe fn products4(x: &Vector, w: [&[u8]; 4], scales: [u32; 4], bias: i64) -> [i32; 4] {
        halves_products4(w, x.hi, x.lo, scales, bias)
    }

    #[inline(always)]
    unsafe fn head_dot(_query: &[i64], q: &[u8], key: &[u8]) -> i64 {
        head_dot(q, key)
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

/// `f()` compiled with AVX2 (inlined here).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn enabled<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// Σ b × x of one row from x's halves.
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn halves_dot(weights: &[u8], hi: &[i16], lo: &[i16]) -> i64 {
    let n = weights.len();
    let (hi, lo) = (&hi[..n], &lo[..n]);
    let (w, h, l) = (weights.as_ptr(), hi.as_ptr(), lo.as_ptr());
    let mut total = 0i64;
    let mut start = 0;
    while start < n {
        let end = n.min(start + BLOCK);
        let mut i = start;
        // SAFETY (every load below): i + 16 (or i + 8) <= end <= n, the length of all three
        // slices; the loads are unaligned ones.
        let (mut acc_hi, mut acc_lo) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        while i + 16 <= end {
            let b = _mm256_cvtepu8_epi16(_mm_loadu_si128(w.add(i) as *const __m128i));
            let vh = _mm256_loadu_si256(h.add(i) as *const __m256i);
            let vl = _mm256_loadu_si256(l.add(i) as *const __m256i);
            acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(b, vh));
            acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(b, vl));
            i += 16;
        }
        let mut half_hi = _mm_add_epi32(
            _mm256_castsi256_si128(acc_hi),
            _mm256_extracti128_si256::<1>(acc_hi),
        );
        let mut half_lo = _mm_add_epi32(
            _mm256_castsi256_si128(acc_lo),
            _mm256_extracti128_si256::<1>(acc_lo),
        );
        if i + 8 <= end {
            let b = _mm_cvtepu8_epi16(_mm_loadl_epi64(w.add(i) as *const __m128i));
            let vh = _mm_loadu_si128(h.add(i) as *const __m128i);
            let vl = _mm_loadu_si128(l.add(i) as *const __m128i);
            half_hi = _mm_add_epi32(half_hi, _mm_madd_epi16(b, vh));
            half_lo = _mm_add_epi32(half_lo, _mm_madd_epi16(b, vl));
            i += 8;
        }
        // Pairs of hi's and lo's lanes, then their sums: lane 0 is hi's, lane 1 lo's.
        let pairs = _mm_hadd_epi32(half_hi, half_lo);
        let sums = _mm_hadd_epi32(pairs, pairs);
        let mut sum_hi = _mm_cvtsi128_si32(sums);
        let mut sum_lo = _mm_extract_epi32::<1>(sums);
        for j in i..end {
            sum_hi = sum_hi.wrapping_add(weights[j] as i32 * hi[j] as i32);
            sum_lo = sum_lo.wrapping_add(weights[j] as i32 * lo[j] as i32);
        }
        total += ((sum_hi as i64) << 16) + sum_lo as i64;
        start = end;
    }
    total
}

/// The lane sums of four vectors: lane r of the result is Σ lanes of `v[r]` (mod 2^32).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn sums4(v: [__m256i; 4]) -> __m128i {
    let ab = _mm256_hadd_epi32(v[0], v[1]);
    let cd = _mm256_hadd_epi32(v[2], v[3]);
    let abcd = _mm256_hadd_epi32(ab, cd);
    _mm_add_epi32(
        _mm256_castsi256_si128(abcd),
        _mm256_extracti128_si256::<1>(abcd),
    )
}

/// [`halves_dot`] of four rows of the same length: each input load serves the four rows.
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn halves_dot4(w: [&[u8]; 4], hi: &[i16], lo: &[i16]) -> [i64; 4] {
    let mut total = [0i64; 4];
    _mm256_storeu_si256(
        total.as_mut_ptr() as *mut __m256i,
        halves_totals4(w, hi, lo),
    );
    total
}

/// The four rows' Σ b × x in four 64-bit lanes: per [`BLOCK`], the rows' Σ b × hi and Σ b × lo
/// reduced together ([`sums4`]), then 2^16 Σ b × hi + Σ b × lo added in i64.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn halves_totals4(w: [&[u8]; 4], hi: &[i16], lo: &[i16]) -> __m256i {
    let n = w[0].len();
    assert!(w.iter().all(|r| r.len() == n));
    let (hi, lo) = (&hi[..n], &lo[..n]);
    let (h, l) = (hi.as_ptr(), lo.as_ptr());
    let p = w.map(|r| r.as_ptr());
    let mut total = _mm256_setzero_si256();
    let mut start = 0;
    while start < n {
        let end = n.min(start + BLOCK);
        let mut i = start;
        let mut acc_hi = [_mm256_setzero_si256(); 4];
        let mut acc_lo = [_mm256_setzero_si256(); 4];
        // SAFETY (every load below): i + 16 (or i + 8) <= end <= n, the length of every row
        // and of both halves (asserted and sliced above); unaligned loads.
        while i + 16 <= end {
            let vh = _mm256_loadu_si256(h.add(i) as *const __m256i);
            let vl = _mm256_loadu_si256(l.add(i) as *const __m256i);
            for r in 0..4 {
                let b = _mm256_cvtepu8_epi16(_mm_loadu_si128(p[r].add(i) as *const __m128i));
                acc_hi[r] = _mm256_add_epi32(acc_hi[r], _mm256_madd_epi16(b, vh));
                acc_lo[r] = _mm256_add_epi32(acc_lo[r], _mm256_madd_epi16(b, vl));
            }
            i += 16;
        }
        if i + 8 <= end {
            let vh = _mm_loadu_si128(h.add(i) as *const __m128i);
            let vl = _mm_loadu_si128(l.add(i) as *const __m128i);
            for r in 0..4 {
                let b = _mm_cvtepu8_epi16(_mm_loadl_epi64(p[r].add(i) as *const __m128i));
                let mh = _mm256_zextsi128_si256(_mm_madd_epi16(b, vh));
                let ml = _mm256_zextsi128_si256(_mm_madd_epi16(b, vl));
                acc_hi[r] = _mm256_add_epi32(acc_hi[r], mh);
                acc_lo[r] = _mm256_add_epi32(acc_lo[r], ml);
            }
            i += 8;
        }
        let (mut sum_hi, mut sum_lo) = (sums4(acc_hi), sums4(acc_lo));
        if i < end {
            let mut tail = [[0i32; 4]; 2];
            for r in 0..4 {
                for j in i..end {
                    let b = *p[r].add(j) as i32;
                    tail[0][r] = tail[0][r].wrapping_add(b * hi[j] as i32);
                    tail[1][r] = tail[1][r].wrapping_add(b * lo[j] as i32);
                }
            }
            sum_hi = _mm_add_epi32(sum_hi, _mm_loadu_si128(tail[0].as_ptr() as *const __m128i));
            sum_lo = _mm_add_epi32(sum_lo, _mm_loadu_si128(tail[1].as_ptr() as *const __m128i));
        }
        let block = _mm256_add_epi64(
            _mm256_slli_epi64::<16>(_mm256_cvtepi32_epi64(sum_hi)),
            _mm256_cvtepi32_epi64(sum_lo),
        );
        total = _mm256_add_epi64(total, block);
        start = end;
    }
    total
}

/// `Kernels::products4` from the halves: the four totals ([`halves_totals4`]) finished in
/// 64-bit lanes as `mul_q24` finishes one (hi = v >> 24 times the scale, plus round(lo × scale
/// / 2^24); AVX2 multiplies 32-bit values only: hi's low 32 bits unsigned times the scale, less
/// scale × 2^32 where v is negative), then saturated (compares and blends).
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn halves_products4(
    w: [&[u8]; 4],
    hi: &[i16],
    lo: &[i16],
    scales: [u32; 4],
    bias: i64,
) -> [i32; 4] {
    let v = _mm256_sub_epi64(halves_totals4(w, hi, lo), _mm256_set1_epi64x(bias));
    let scale = _mm256_set_epi64x(
        scales[3] as i64,
        scales[2] as i64,
        scales[1] as i64,
        scales[0] as i64,
    );
    // |v| < 2^47 (2,048 columns: |Σ b × x| ≤ 2^46, 128 × |Σ x| ≤ 2^45), so hi = v >> 24 is
    // within ±2^23 and its low 32 bits hold it.
    let negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), v);
    let whole = _mm256_sub_epi64(
        _mm256_mul_epu32(_mm256_srli_epi64::<24>(v), scale),
        _mm256_and_si256(negative, _mm256_slli_epi64::<32>(scale)),
    );
    let part = _mm256_mul_epu32(_mm256_and_si256(v, _mm256_set1_epi64x(0xFF_FFFF)), scale);
    let product = _mm256_add_epi64(
        whole,
        _mm256_srli_epi64::<24>(_mm256_add_epi64(part, _mm256_set1_epi64x(1 << 23))),
    );
    let limit = crate::infer::fixed::ACT_LIMIT;
    let (top, bottom) = (_mm256_set1_epi64x(limit), _mm256_set1_epi64x(-limit));
    let product = _mm256_blendv_epi8(product, top, _mm256_cmpgt_epi64(product, top));
    let product = _mm256_blendv_epi8(product, bottom, _mm256_cmpgt_epi64(bottom, product));
    let low = _mm256_permutevar8x32_epi32(product, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    let mut out = [0i32; 4];
    _mm_storeu_si128(
        out.as_mut_ptr() as *mut __m128i,
        _mm256_castsi256_si128(low),
    );
    out
}

/// A head's dot product: four products per `vpmuldq` (each value's low 32 bits, signed, to a
/// 64-bit product), exact in i64 like the portable loop, so the same integer in any order.
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn head_dot(q: &[u8], key: &[u8]) -> i64 {
    let n = q.len() / 4;
    let key = &key[..4 * n];
    let whole = n / 4 * 4;
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    while i < whole {
        // SAFETY: 4 × (i + 4) <= 4n, the length of both slices; the loads are unaligned ones.
        let a = _mm256_cvtepi32_epi64(_mm_loadu_si128(q.as_ptr().add(4 * i) as *const __m128i));
        let b = _mm_loadu_si128(key.as_ptr().add(4 * i) as *const __m128i);
        let b = _mm256_cvtepi32_epi64(_mm_xor_si128(b, _mm_set1_epi32(i32::MIN)));
        acc = _mm256_add_epi64(acc, _mm256_mul_epi32(a, b));
        i += 4;
    }
    let mut lanes = [0i64; 4];
    _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc);
    let mut dot = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for j in whole..n {
        dot += word(&q[4 * j..4 * j + 4]) as i64 * cached(&key[4 * j..4 * j + 4]) as i64;
    }
    dot
}

/// The weighted values: each group of four outputs in one register over the chunk's
/// positions; the weight and the cached word (v + 2^31) are both unsigned 32-bit, so each
/// product is one 64-bit lane of `vpmuludq`, exact, the words zero-extended as loaded
/// (`Kernels::accumulate`). Outputs past a multiple of four one at a time.
///
/// # Safety
/// AVX2; every row's slice [offset, offset + 4 × acc.len()) inside `rows`.
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn accumulate(
    acc: &mut [i64],
    weights: &[u32],
    rows: &[u8],
    row_len: usize,
    offset: usize,
) {
    let n = acc.len();
    let whole = n / 4 * 4;
    let mut j = 0;
    while j < whole {
        accumulate4(
            acc.as_mut_ptr().add(j),
            weights,
            rows,
            row_len,
            offset + 4 * j,
        );
        j += 4;
    }
    tail(acc, whole, weights, rows, row_len, offset);
}

/// Four outputs of [`accumulate`], at `a`, from byte `at` of each row.
///
/// # Safety
/// AVX2; four i64 at `a`; 16 bytes at `at` of every row in `rows`.
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn accumulate4(a: *mut i64, weights: &[u32], rows: &[u8], row_len: usize, at: usize) {
    let a = a as *mut __m256i;
    let mut sum = _mm256_loadu_si256(a);
    let mut p = rows.as_ptr().add(at);
    for &w in weights {
        let v = _mm256_cvtepu32_epi64(_mm_loadu_si128(p as *const __m128i));
        sum = _mm256_add_epi64(sum, _mm256_mul_epu32(v, _mm256_set1_epi64x(w as i64)));
        p = p.add(row_len);
    }
    _mm256_storeu_si256(a, sum);
}

/// Outputs `from..` of [`accumulate`], one at a time.
#[inline(always)]
pub fn tail(
    acc: &mut [i64],
    from: usize,
    weights: &[u32],
    rows: &[u8],
    row_len: usize,
    offset: usize,
) {
    for (j, a) in acc.iter_mut().enumerate().skip(from) {
        for (t, &w) in weights.iter().enumerate() {
            let at = t * row_len + offset + 4 * j;
            *a += w as i64 * word(&rows[at..at + 4]) as u32 as i64;
        }
    }
}
