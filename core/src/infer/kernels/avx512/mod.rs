//! The AVX-512 kernels (x86-64 with AVX-512 F, BW, DQ, VL and VNNI, chosen at run time).
//!
//! The row sums take the input as four planes of signed bytes (x = Σ_k d_k × 2^(8k),
//! [`Vector::planes`]) and the stored weights as they are, unsigned bytes: `vpdpbusd` multiplies
//! 64 weights by 64 digits and adds each group of four products into one of sixteen 32-bit
//! lanes, so a row of 64 columns is one load of its weights and four instructions, with no
//! widening. Every plane's sum is exact in 32 bits without blocks (|Σ| ≤ 2,048 × 255 × 128 <
//! 2^26; `vpdpbusd` adds without saturation), and the row's sum is Σ_k S_k × 2^(8k) in i64: the
//! same integer as the halves' sums. Columns past a multiple of 64 are read through a mask
//! (masked-off bytes are zero and do not fault). Four rows a turn share the input's loads, and
//! their sixteen plane sums are reduced together (a transposing tree of adds, one vector of
//! sixteen sums at the end), then combined and finished (the bias, the scale, the rounding and
//! the saturation of the row product) in 64-bit lanes: taking the sums out one by one to finish
//! them as scalars had cost stories260K about a sixth of its tokens a second. Rows of at most
//! 256 columns (stories260K's) go eight a turn over the input's 16-bit halves instead
//! (`vpdpwssd`, the weights widened): two sums a row to reduce instead of four.
//!
//! A head's dot product and weighted values take eight 64-bit lanes of `vpmuldq` (exact), the
//! tails through masks.

use super::portable::BLOCK;
use super::{by_fours, Kernels, Vector};
use agrees::agrees;
use core::arch::x86_64::*;

mod agrees;

/// The AVX-512 set.
pub struct Avx512;

impl Kernels for Avx512 {
    /// The CPU's features, and (once per process) [`agrees`]: the set is taken only where it
    /// gave the portable integers on this CPU.
    #[inline]
    fn available() -> bool {
        static AGREES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AGREES.get_or_init(|| {
            std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512vnni")
                // SAFETY: the features were just detected.
                && unsafe { agrees() }
        })
    }

    #[inline(always)]
    unsafe fn enabled<T>(f: impl FnOnce() -> T) -> T {
        enabled(f)
    }

    #[inline(always)]
    unsafe fn dot(x: &Vector, w: &[u8]) -> i64 {
        planes_dot(w, x.planes)
    }

    #[inline(always)]
    unsafe fn dot4(x: &Vector, w: [&[u8]; 4]) -> [i64; 4] {
        planes_dot4(w, x.planes)
    }

    #[inline(always)]
    unsafe fn products4(x: &Vector, w: [&[u8]; 4], scales: [u32; 4], bias: i64) -> [i32; 4] {
        planes_products4(w, x.planes, scales, bias)
    }

    #[inline(always)]
    unsafe fn products8(x: &Vector, w: [&[u8]; 8], scales: [u32; 8], bias: i64) -> [i32; 8] {
        if w[0].len() <= BLOCK {
            return halves_products8(w, x.hi, x.lo, scales, bias);
        }
        by_fours(w, scales, |w, s| planes_products4(w, x.planes, s, bias))
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

    #[inline(always)]
    unsafe fn scores(
        query: &[i64],
        q: &[u8],
        keys: &[u8],
        row_len: usize,
        offset: usize,
        inv_sqrt: u32,
        att: &mut [u8],
    ) -> i32 {
        // `vpmuldq` takes the scale as a signed 32-bit value.
        if inv_sqrt > i32::MAX as u32 {
            return super::portable::Portable::scores(
                query, q, keys, row_len, offset, inv_sqrt, att,
            );
        }
        scores(q, keys, row_len, offset, inv_sqrt, att)
    }

    #[inline(always)]
    unsafe fn softmax(att: &mut [u8], max: i32, exp: &[u8]) -> u64 {
        softmax(att, max, exp)
    }

    #[inline(always)]
    unsafe fn weights(exps: &[u8], reciprocal: u64, weights: &mut [u32]) {
        // `vpmuludq` takes R as an unsigned 32-bit value (R reaches 2^32 only when a single
        // exponential makes the whole sum).
        if reciprocal > u32::MAX as u64 {
            return super::portable::Portable::weights(exps, reciprocal, weights);
        }
        weights_of(exps, reciprocal as u32, weights)
    }
}

/// `f()` compiled with the set's features (inlined here).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn enabled<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// The digits of `x` (|x| ≤ 2^27) for [`Vector::planes`]: x = d0 + d1 × 2^8 + d2 × 2^16 +
/// d3 × 2^24, d0 to d2 in [−128, 128), d3 in [−8, 8]. Each digit is the low byte of what is
/// left, read as signed, so the rest stays a multiple of 2^8.
#[inline(always)]
pub fn digits(x: i32) -> [i8; 4] {
    let x = x as i64;
    let d0 = x as i8;
    let y = (x - d0 as i64) >> 8;
    let d1 = y as i8;
    let z = (y - d1 as i64) >> 8;
    let d2 = z as i8;
    let d3 = ((z - d2 as i64) >> 8) as i8;
    [d0, d1, d2, d3]
}

/// Writes the planes of `n` little-endian i32 values of `bytes` to `planes` (four planes of
/// `stride` bytes), and their 16-bit halves to `hi` and `lo` (as `Input::new` splits them for
/// the other sets, for [`halves_products8`]), sixteen values per turn.
///
/// # Safety
/// The set's features; `bytes` holds 4n bytes, each plane `n` ≤ `stride` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
pub unsafe fn split_planes(
    bytes: &[u8],
    planes: &mut [i8],
    stride: usize,
    hi: &mut [i16],
    lo: &mut [i16],
) {
    let n = bytes.len() / 4;
    assert!(n <= stride && planes.len() >= 4 * stride && hi.len() >= n && lo.len() >= n);
    let whole = n / 16 * 16;
    let p = planes.as_mut_ptr();
    let mut i = 0;
    while i < whole {
        // SAFETY: values i..i + 16 < n; plane bytes i..i + 16 of each plane < stride.
        let x = _mm512_loadu_si512(bytes.as_ptr().add(4 * i) as *const _);
        // The halves as the portable split makes them: h = (x + 2^15) >> 16, lo = x − h × 2^16.
        let h = _mm512_srai_epi32::<16>(_mm512_add_epi32(x, _mm512_set1_epi32(1 << 15)));
        let l = _mm512_sub_epi32(x, _mm512_slli_epi32::<16>(h));
        _mm256_storeu_si256(
            hi.as_mut_ptr().add(i) as *mut __m256i,
            _mm512_cvtepi32_epi16(h),
        );
        _mm256_storeu_si256(
            lo.as_mut_ptr().add(i) as *mut __m256i,
            _mm512_cvtepi32_epi16(l),
        );
        // d0 = the low byte, signed; y = (x − d0) >> 8, and so on (|x| ≤ 2^27: no wrap).
        let d0 = _mm512_srai_epi32::<24>(_mm512_slli_epi32::<24>(x));
        let y = _mm512_srai_epi32::<8>(_mm512_sub_epi32(x, d0));
        let d1 = _mm512_srai_epi32::<24>(_mm512_slli_epi32::<24>(y));
        let z = _mm512_srai_epi32::<8>(_mm512_sub_epi32(y, d1));
        let d2 = _mm512_srai_epi32::<24>(_mm512_slli_epi32::<24>(z));
        let d3 = _mm512_srai_epi32::<8>(_mm512_sub_epi32(z, d2));
        for (k, d) in [d0, d1, d2, d3].into_iter().enumerate() {
            _mm_storeu_si128(
                p.add(k * stride + i) as *mut __m128i,
                _mm512_cvtepi32_epi8(d),
            );
        }
        i += 16;
    }
    for (j, v) in bytes.chunks_exact(4).enumerate().skip(whole) {
        let x = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        for (k, &dk) in digits(x).iter().enumerate() {
            planes[k * stride + j] = dk;
        }
        (hi[j], lo[j]) = super::portable::halves(x);
    }
}

/// The mask of the first `rem` (1 to 63) bytes.
#[inline(always)]
fn tail_mask(rem: usize) -> __mmask64 {
    (!0u64) >> (64 - rem)
}

/// Σ_k S_k × 2^(8k) from the four plane sums.
#[inline(always)]
fn combine(s: [i32; 4]) -> i64 {
    s[0] as i64 + ((s[1] as i64) << 8) + ((s[2] as i64) << 16) + ((s[3] as i64) << 24)
}

/// Σ b × x of one row from the planes.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn planes_dot(w: &[u8], planes: [&[i8]; 4]) -> i64 {
    let n = w.len();
    assert!(planes.iter().all(|p| p.len() >= n));
    let x = planes.map(|p| p.as_ptr());
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut i = 0;
    // SAFETY (every load): bytes i..i + 64 (or the masked ones, i..n) of the row and planes.
    while i + 64 <= n {
        let b = _mm512_loadu_si512(w.as_ptr().add(i) as *const _);
        for k in 0..4 {
            let d = _mm512_loadu_si512(x[k].add(i) as *const _);
            acc[k] = _mm512_dpbusd_epi32(acc[k], b, d);
        }
        i += 64;
    }
    if i < n {
        let m = tail_mask(n - i);
        let b = _mm512_maskz_loadu_epi8(m, w.as_ptr().add(i) as *const i8);
        for k in 0..4 {
            let d = _mm512_maskz_loadu_epi8(m, x[k].add(i));
            acc[k] = _mm512_dpbusd_epi32(acc[k], b, d);
        }
    }
    combine(acc.map(|a| _mm512_reduce_add_epi32(a)))
}

/// Pairs (a, b) → per 128-bit lane [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn fold32(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b))
}

/// Pairs of [`fold32`]'s results → per 128-bit lane the four streams' partial sums.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn fold64(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b))
}

/// Pairs of 128-bit lanes: [a0 + a1, a2 + a3, b0 + b1, b2 + b3].
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn fold128(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(
        _mm512_shuffle_i32x4::<0b10_00_10_00>(a, b),
        _mm512_shuffle_i32x4::<0b11_01_11_01>(a, b),
    )
}

/// Lane s of the result is the sum of the lanes of `v[s]` (mod 2^32).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn sums16(v: &[__m512i; 16]) -> __m512i {
    let mut u = [_mm512_setzero_si512(); 8];
    for i in 0..8 {
        u[i] = fold32(v[2 * i], v[2 * i + 1]);
    }
    let mut w = [_mm512_setzero_si512(); 4];
    for j in 0..4 {
        w[j] = fold64(u[2 * j], u[2 * j + 1]);
    }
    // w[j]'s 128-bit lane g holds lane g's partial sums of streams 4j to 4j + 3.
    let z0 = fold128(w[0], w[1]);
    let z1 = fold128(w[2], w[3]);
    fold128(z0, z1)
}

/// [`planes_dot`] of four rows of the same length: each plane load serves the four rows.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn planes_dot4(w: [&[u8]; 4], planes: [&[i8]; 4]) -> [i64; 4] {
    let mut s = [0i32; 16];
    _mm512_storeu_si512(s.as_mut_ptr() as *mut _, plane_sums4(w, planes));
    [
        combine([s[0], s[1], s[2], s[3]]),
        combine([s[4], s[5], s[6], s[7]]),
        combine([s[8], s[9], s[10], s[11]]),
        combine([s[12], s[13], s[14], s[15]]),
    ]
}

/// The sixteen plane sums of four rows of the same length, lane 4r + k holding row r's plane
/// k (each exact in 32 bits).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn plane_sums4(w: [&[u8]; 4], planes: [&[i8]; 4]) -> __m512i {
    let n = w[0].len();
    assert!(w.iter().all(|r| r.len() == n) && planes.iter().all(|p| p.len() >= n));
    let x = planes.map(|p| p.as_ptr());
    let p = w.map(|r| r.as_ptr());
    // acc[4r + k]: row r, plane k.
    let mut acc = [_mm512_setzero_si512(); 16];
    let mut i = 0;
    // SAFETY (every load): bytes i..i + 64 (or the masked ones, i..n) of the rows and planes.
    while i + 64 <= n {
        let d = x.map(|x| _mm512_loadu_si512(x.add(i) as *const _));
        for r in 0..4 {
            let b = _mm512_loadu_si512(p[r].add(i) as *const _);
            for k in 0..4 {
                acc[4 * r + k] = _mm512_dpbusd_epi32(acc[4 * r + k], b, d[k]);
            }
        }
        i += 64;
    }
    if i < n {
        let m = tail_mask(n - i);
        let d = x.map(|x| _mm512_maskz_loadu_epi8(m, x.add(i)));
        for r in 0..4 {
            let b = _mm512_maskz_loadu_epi8(m, p[r].add(i) as *const i8);
            for k in 0..4 {
                acc[4 * r + k] = _mm512_dpbusd_epi32(acc[4 * r + k], b, d[k]);
            }
        }
    }
    sums16(&acc)
}

/// [`Kernels::products4`] from the planes: the four rows' plane sums combined and finished in
/// 64-bit lanes (`mul_q24` split as the scalar one: hi = v >> 24 times the scale, `vpmullq`,
/// plus round(lo × scale / 2^24), `vpmuludq`; saturated), with no value leaving the vectors
/// before the four products.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn planes_products4(
    w: [&[u8]; 4],
    planes: [&[i8]; 4],
    scales: [u32; 4],
    bias: i64,
) -> [i32; 4] {
    let t = plane_sums4(w, planes);
    // Rows 0 and 1, then rows 2 and 3, each plane's sum shifted to its digit's place.
    let place = _mm512_set_epi64(24, 16, 8, 0, 24, 16, 8, 0);
    let low = _mm512_sllv_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(t)), place);
    let high = _mm512_sllv_epi64(
        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(t)),
        place,
    );
    // Per 128-bit lane j: [row (j / 2) × 1's pair of planes, row 2 + (j / 2)'s], then the two
    // pairs of each row added: lanes 0, 1 rows 0, 2; lanes 4, 5 rows 1, 3.
    let pairs = _mm512_add_epi64(
        _mm512_unpacklo_epi64(low, high),
        _mm512_unpackhi_epi64(low, high),
    );
    let sums = _mm512_add_epi64(pairs, _mm512_shuffle_i64x2::<0b10_11_00_01>(pairs, pairs));
    let dots = _mm512_permutexvar_epi64(_mm512_set_epi64(0, 0, 0, 0, 5, 1, 4, 0), sums);
    let scale = _mm512_cvtepu32_epi64(_mm256_zextsi128_si256(_mm_loadu_si128(
        scales.as_ptr() as *const __m128i
    )));
    let products = finish_rows(dots, scale, bias);
    let mut out = [0i32; 4];
    _mm_storeu_si128(out.as_mut_ptr() as *mut _, _mm256_castsi256_si128(products));
    out
}

/// Row products from Σ stored × x in eight 64-bit lanes and the rows' scales (each lane's low
/// 32 bits, unsigned): (v − bias) × scale / 2^24 as `mul_q24` computes it (hi = v >> 24 times the
/// scale, `vpmullq`, plus round(lo × scale / 2^24), `vpmuludq`), saturated, as eight i32.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn finish_rows(dots: __m512i, scale: __m512i, bias: i64) -> __m256i {
    let v = _mm512_sub_epi64(dots, _mm512_set1_epi64(bias));
    let hi = _mm512_mullo_epi64(_mm512_srai_epi64::<24>(v), scale);
    let lo = _mm512_mul_epu32(_mm512_and_si512(v, _mm512_set1_epi64(0xFF_FFFF)), scale);
    let product = _mm512_add_epi64(
        hi,
        _mm512_srli_epi64::<24>(_mm512_add_epi64(lo, _mm512_set1_epi64(1 << 23))),
    );
    let limit = crate::infer::fixed::ACT_LIMIT;
    let saturated = _mm512_min_epi64(
        _mm512_max_epi64(product, _mm512_set1_epi64(-limit)),
        _mm512_set1_epi64(limit),
    );
    _mm512_cvtepi64_epi32(saturated)
}

/// `Kernels::products8` for rows of at most [`BLOCK`] columns (stories260K's), from the
/// halves: eight rows a turn, each with two accumulators (Σ b × hi, Σ b × lo) that `vpdpwssd`
/// feeds with the weights widened to 16 bits, 32 columns a turn (the tail through a mask); the
/// sixteen sums reduced together, then 2^16 Σ b × hi + Σ b × lo and the finish in eight 64-bit
/// lanes. Half the reduction a row of [`planes_products4`], where short rows spend most of
/// their time. Within a block each sum is exact mod 2^32 and below 2^31 ([`BLOCK`]).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn halves_products8(
    w: [&[u8]; 8],
    hi: &[i16],
    lo: &[i16],
    scales: [u32; 8],
    bias: i64,
) -> [i32; 8] {
    let n = w[0].len();
    assert!(n <= BLOCK && w.iter().all(|r| r.len() == n) && hi.len() >= n && lo.len() >= n);
    let p = w.map(|r| r.as_ptr());
    // acc[r]: row r's Σ b × hi; acc[8 + r]: its Σ b × lo.
    let mut acc = [_mm512_setzero_si512(); 16];
    let mut i = 0;
    // SAFETY (every load): columns i..i + 32 (or the masked ones, i..n) of the rows and halves.
    while i + 32 <= n {
        let h = _mm512_loadu_si512(hi.as_ptr().add(i) as *const _);
        let l = _mm512_loadu_si512(lo.as_ptr().add(i) as *const _);
        for r in 0..8 {
            let b = _mm512_cvtepu8_epi16(_mm256_loadu_si256(p[r].add(i) as *const __m256i));
            acc[r] = _mm512_dpwssd_epi32(acc[r], b, h);
            acc[8 + r] = _mm512_dpwssd_epi32(acc[8 + r], b, l);
        }
        i += 32;
    }
    if i < n {
        let m: __mmask32 = (1u32 << (n - i)) - 1;
        let h = _mm512_maskz_loadu_epi16(m, hi.as_ptr().add(i));
        let l = _mm512_maskz_loadu_epi16(m, lo.as_ptr().add(i));
        for r in 0..8 {
            let b = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, p[r].add(i) as *const i8));
            acc[r] = _mm512_dpwssd_epi32(acc[r], b, h);
            acc[8 + r] = _mm512_dpwssd_epi32(acc[8 + r], b, l);
        }
    }
    let t = sums16(&acc);
    let sum_hi = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(t));
    let sum_lo = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(t));
    let dots = _mm512_add_epi64(_mm512_slli_epi64::<16>(sum_hi), sum_lo);
    let scale = _mm512_cvtepu32_epi64(_mm256_loadu_si256(scales.as_ptr() as *const __m256i));
    let mut out = [0i32; 8];
    _mm256_storeu_si256(
        out.as_mut_ptr() as *mut __m256i,
        finish_rows(dots, scale, bias),
    );
    out
}

/// The mask of the first `rem` (0 to 8) 32-bit values.
#[inline(always)]
fn mask8(rem: usize) -> __mmask8 {
    ((1u32 << rem) - 1) as __mmask8
}

/// A head's dot product: eight products per `vpmuldq` (each value's low 32 bits, signed, to a
/// 64-bit product), exact in i64, the values past a multiple of eight through a mask.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn head_dot(q: &[u8], key: &[u8]) -> i64 {
    let n = q.len() / 4;
    let key = &key[..4 * n];
    let (qp, kp) = (q.as_ptr() as *const i32, key.as_ptr() as *const i32);
    // The cache's offset binary (state::CACHE_OFFSET) back to i32s.
    let sign = _mm256_set1_epi32(i32::MIN);
    let mut acc = _mm512_setzero_si512();
    let mut i = 0;
    // SAFETY: values i..i + 8 (or the masked ones, i..n) of both slices; unaligned loads.
    while i + 8 <= n {
        let a = _mm512_cvtepi32_epi64(_mm256_loadu_si256(qp.add(i) as *const __m256i));
        let b = _mm256_xor_si256(_mm256_loadu_si256(kp.add(i) as *const __m256i), sign);
        let b = _mm512_cvtepi32_epi64(b);
        acc = _mm512_add_epi64(acc, _mm512_mul_epi32(a, b));
        i += 8;
    }
    if i < n {
        let m = mask8(n - i);
        let a = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(m, qp.add(i)));
        let b = _mm256_xor_si256(_mm256_maskz_loadu_epi32(m, kp.add(i)), sign);
        let b = _mm512_cvtepi32_epi64(b);
        acc = _mm512_add_epi64(acc, _mm512_mul_epi32(a, b));
    }
    _mm512_reduce_add_epi64(acc)
}

/// The weighted values: each group of eight outputs in one register over the chunk's
/// positions (the weight and the cached word, v + 2^31, are both unsigned 32-bit: each product
/// is one 64-bit lane of `vpmuludq`, exact, `Kernels::accumulate`); outputs past a multiple of
/// eight through a mask.
///
/// # Safety
/// The set's features; every row's slice [offset, offset + 4 × acc.len()) inside `rows`.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn accumulate(
    acc: &mut [i64],
    weights: &[u32],
    rows: &[u8],
    row_len: usize,
    offset: usize,
) {
    let n = acc.len();
    let mut j = 0;
    while j < n {
        let m = mask8((n - j).min(8));
        let a = acc.as_mut_ptr().add(j);
        let mut sum = _mm512_maskz_loadu_epi64(m, a);
        let mut p = rows.as_ptr().add(offset + 4 * j) as *const i32;
        for &w in weights {
            let v = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(m, p));
            sum = _mm512_add_epi64(sum, _mm512_mul_epu32(v, _mm512_set1_epi64(w as i64)));
            p = p.byte_add(row_len);
        }
        _mm512_mask_storeu_epi64(a, m, sum);
        j += 8;
    }
}

/// Eight vectors of eight i64 lanes → one vector whose lane i is the sum of `v[i]`'s lanes (a
/// transposing tree of adds: pairs within 128-bit lanes, then across them twice).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn sums8(v: &[__m512i; 8]) -> __m512i {
    // Per 128-bit lane L: [Σ of a's lane pair L, Σ of b's].
    let pair = |a, b| _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    // [a.L0 + a.L1, a.L2 + a.L3, b.L0 + b.L1, b.L2 + b.L3] by 128-bit lanes.
    let across = |a, b| {
        _mm512_add_epi64(
            _mm512_shuffle_i64x2::<0b10_00_10_00>(a, b),
            _mm512_shuffle_i64x2::<0b11_01_11_01>(a, b),
        )
    };
    let low = across(pair(v[0], v[1]), pair(v[2], v[3]));
    let high = across(pair(v[4], v[5]), pair(v[6], v[7]));
    across(low, high)
}

/// The scores of eight positions from their dot products (i64 lanes): round to 16 fractional
/// bits, times `scale` (header byte 68, below 2^31) as `mul_q24` does (hi × scale + round(lo ×
/// scale / 2^24), hi = v >> 24 within ±2^20 for |dot| < 2^60), saturated.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
unsafe fn finish_scores(dots: __m512i, scale: __m512i) -> __m512i {
    let v = _mm512_srai_epi64::<16>(_mm512_add_epi64(dots, _mm512_set1_epi64(1 << 15)));
    let hi = _mm512_mul_epi32(_mm512_srai_epi64::<24>(v), scale);
    let lo = _mm512_mul_epu32(_mm512_and_si512(v, _mm512_set1_epi64(0xFF_FFFF)), scale);
    let lo = _mm512_srli_epi64::<24>(_mm512_add_epi64(lo, _mm512_set1_epi64(1 << 23)));
    let limit = crate::infer::fixed::ACT_LIMIT;
    let v = _mm512_add_epi64(hi, lo);
    _mm512_min_epi64(
        _mm512_max_epi64(v, _mm512_set1_epi64(-limit)),
        _mm512_set1_epi64(limit),
    )
}

/// [`Kernels::scores`] eight positions a turn: each position's products in eight 64-bit lanes
/// per eight values of the head (`vpmuldq`, the query loaded once), the eight positions' sums
/// reduced together ([`sums8`]), finished and stored together. `inv_sqrt` below 2^31.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn scores(
    q: &[u8],
    keys: &[u8],
    row_len: usize,
    offset: usize,
    inv_sqrt: u32,
    att: &mut [u8],
) -> i32 {
    let n = q.len() / 4;
    let positions = att.len() / 4;
    assert!((1..=64).contains(&n) && positions >= 1 && inv_sqrt <= i32::MAX as u32);
    assert!((positions - 1) * row_len + offset + 4 * n <= keys.len());
    let groups = n.div_ceil(8);
    let masks: [__mmask8; 8] = core::array::from_fn(|g| mask8(n.saturating_sub(8 * g).min(8)));
    let mut query = [_mm512_setzero_si512(); 8];
    for g in 0..groups {
        let p = q.as_ptr().add(32 * g) as *const i32;
        query[g] = _mm512_cvtepi32_epi64(_mm256_maskz_loadu_epi32(masks[g], p));
    }
    let scale = _mm512_set1_epi64(inv_sqrt as i64);
    let mut max = _mm512_set1_epi64(i32::MIN as i64);
    let key = |t: usize| keys.as_ptr().add(t * row_len + offset) as *const i32;
    let dot = |k: *const i32| {
        let mut acc = _mm512_setzero_si512();
        for g in 0..groups {
            let v = _mm256_maskz_loadu_epi32(masks[g], k.add(8 * g));
            // The cache's offset binary (state::CACHE_OFFSET) back to i32s.
            let v = _mm512_cvtepi32_epi64(_mm256_xor_si256(v, _mm256_set1_epi32(i32::MIN)));
            acc = _mm512_add_epi64(acc, _mm512_mul_epi32(query[g], v));
        }
        acc
    };
    let out = att.as_mut_ptr() as *mut i32;
    let mut t = 0;
    // SAFETY (every key load): position t's head lies in `keys` (the assert above); att holds
    // `positions` values.
    while t < positions {
        let m = mask8((positions - t).min(8));
        let mut products = [_mm512_setzero_si512(); 8];
        for (i, p) in products.iter_mut().enumerate() {
            if m & (1 << i) != 0 {
                *p = dot(key(t + i));
            }
        }
        let s = finish_scores(sums8(&products), scale);
        max = _mm512_mask_max_epi64(max, m, max, s);
        _mm512_mask_cvtepi64_storeu_epi32(out.add(t), m, s);
        t += 8;
    }
    _mm512_reduce_max_epi64(max) as i32
}

/// [`Kernels::softmax`] sixteen positions a turn: the index of each exponential in 32-bit
/// lanes (max − score ≤ 2^28), the table read by a gather, the sum in 64-bit lanes.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn softmax(att: &mut [u8], max: i32, exp: &[u8]) -> u64 {
    let positions = att.len() / 4;
    let last = crate::infer::fixed::TABLE_LAST;
    assert!(exp.len() >= 4 * (last + 1));
    let p = att.as_mut_ptr() as *mut i32;
    let (top, half, end) = (
        _mm512_set1_epi32(max),
        _mm512_set1_epi32(128),
        _mm512_set1_epi32(last as i32),
    );
    let mut total = _mm512_setzero_si512();
    let mut t = 0;
    // SAFETY: values t..t + 16 of att, masked at the end; every index is at most TABLE_LAST.
    while t < positions {
        let rem = positions - t;
        let m: __mmask16 = if rem >= 16 { !0 } else { (1 << rem) - 1 };
        let score = _mm512_maskz_loadu_epi32(m, p.add(t));
        let d = _mm512_add_epi32(_mm512_sub_epi32(top, score), half);
        let index = _mm512_min_epu32(_mm512_srli_epi32::<8>(d), end);
        let e = _mm512_mask_i32gather_epi32::<4>(
            _mm512_setzero_si512(),
            m,
            index,
            exp.as_ptr() as *const i32,
        );
        _mm512_mask_storeu_epi32(p.add(t), m, e);
        let low = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(e));
        let high = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(e));
        total = _mm512_add_epi64(total, _mm512_add_epi64(low, high));
        t += 16;
    }
    (1u64 << 62) / _mm512_reduce_add_epi64(total) as u64
}

/// [`Kernels::weights`] eight a turn (`vpmuludq`: e × R in 64 bits, R below 2^32).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[inline]
pub unsafe fn weights_of(exps: &[u8], reciprocal: u32, weights: &mut [u32]) {
    let n = exps.len() / 4;
    assert!(weights.len() >= n);
    let (e, w) = (
        exps.as_ptr() as *const i32,
        weights.as_mut_ptr() as *mut i32,
    );
    let r = _mm512_set1_epi64(reciprocal as i64);
    let mut t = 0;
    // SAFETY: values t..t + 8 of both, masked at the end.
    while t < n {
        let m = mask8((n - t).min(8));
        let v = _mm512_cvtepu32_epi64(_mm256_maskz_loadu_epi32(m, e.add(t)));
        let product = _mm512_srli_epi64::<32>(_mm512_mul_epu32(v, r));
        _mm512_mask_cvtepi64_storeu_epi32(w.add(t), m, product);
        t += 8;
    }
}
