//! The pieces of the forward pass, each over the state's regions (docs/inference.md, "The
//! forward pass"): the embedding, RMS normalization, the row product, rotary, one head's
//! attention and the feed-forward block's SiLU gate.

use super::fixed::{exp_index, mul_q24, saturate, shift_round, InvRms, RMS_EPSILON, TABLE_LAST};
use super::model::Rows;
use super::state::{get, get_u32, set, set_u32, word};
use crate::{Block, Metadata, WEIGHT_BIAS};

/// The longest input vector: the hidden dimension's limit.
pub const MAX_COLUMNS: usize = 2048;

/// Room for an input vector's 16-bit halves (off chain), or for its values widened to 64 bits
/// (on chain), made once per advance.
pub struct Scratch {
    #[cfg(not(target_os = "solana"))]
    hi: [i16; MAX_COLUMNS],
    #[cfg(not(target_os = "solana"))]
    lo: [i16; MAX_COLUMNS],
    #[cfg(target_os = "solana")]
    wide: &'static mut [i64],
}

/// On chain the scratch is the first [`SCRATCH_BYTES`] of the heap frame, which starts here
/// (the program installs no allocator, and a 4 KiB stack frame cannot hold it): 2,048 values
/// of 8 bytes. The program may use the heap past them.
pub const HEAP_START: u64 = 0x3_0000_0000;
pub const SCRATCH_BYTES: usize = 8 * MAX_COLUMNS;

impl Scratch {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Scratch {
        Scratch {
            #[cfg(not(target_os = "solana"))]
            hi: [0; MAX_COLUMNS],
            #[cfg(not(target_os = "solana"))]
            lo: [0; MAX_COLUMNS],
            // SAFETY: the heap frame is at least 32 KiB, 8-byte aligned, and nothing else uses
            // its first 16 KiB while a run advances (one Scratch per advance).
            #[cfg(target_os = "solana")]
            wide: unsafe {
                core::slice::from_raw_parts_mut(HEAP_START as usize as *mut i64, MAX_COLUMNS)
            },
        }
    }
}

/// The input vector of a matrix stage with Σ x. Off chain it is held as 16-bit halves,
/// x = hi × 2^16 + lo with lo in [−2^15, 2^15), so that the sum of stored bytes times x is
/// 2^16 Σ b × hi + Σ b × lo, both sums in 32-bit lanes the compiler vectorizes; the program
/// widens each value to 64 bits once, so that each multiply-accumulate is a byte load, a
/// multiply and an add, each value loaded once for three rows ([`rows_into`]). Both give the
/// same exact integer.
pub struct Input<'a> {
    sum: i64,
    #[cfg(not(target_os = "solana"))]
    hi: &'a [i16],
    #[cfg(not(target_os = "solana"))]
    lo: &'a [i16],
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    avx2: bool,
    #[cfg(target_os = "solana")]
    wide: &'a [i64],
}

impl<'a> Input<'a> {
    pub fn new(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
        let n = bytes.len() / 4;
        #[cfg(not(target_os = "solana"))]
        {
            for (i, v) in bytes.chunks_exact(4).enumerate() {
                let x = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                let h = (x + (1 << 15)) >> 16;
                scratch.hi[i] = h as i16;
                scratch.lo[i] = (x - (h << 16)) as i16;
            }
            let scratch: &'a Scratch = scratch;
            Input {
                sum,
                hi: &scratch.hi[..n],
                lo: &scratch.lo[..n],
                #[cfg(all(feature = "std", target_arch = "x86_64"))]
                avx2: std::is_x86_feature_detected!("avx2"),
            }
        }
        #[cfg(target_os = "solana")]
        {
            for (i, w) in scratch.wide[..n].iter_mut().enumerate() {
                *w = get(bytes, i) as i64;
            }
            Input {
                sum,
                wide: &scratch.wide[..n],
            }
        }
    }

    /// Σ stored × x over a row's weights: exact (|x| ≤ 2^27, at most 2,048 columns).
    #[cfg(not(target_os = "solana"))]
    #[inline]
    fn stored_dot(&self, weights: &[u8]) -> i64 {
        let n = weights.len();
        let (hi, lo) = (&self.hi[..n], &self.lo[..n]);
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        if self.avx2 {
            // SAFETY: `avx2` is true only where the CPU reported AVX2 (Input::new).
            return unsafe { halves_dot_avx2(weights, hi, lo) };
        }
        halves_dot(weights, hi, lo)
    }

    /// One row, eight columns per turn of the loop, at fixed offsets (about 4.6 instructions
    /// per multiply-accumulate in SBF): [`Input::row_product`]'s; the program's stages take
    /// [`rows_into`] and its kernels instead.
    #[cfg(target_os = "solana")]
    #[inline]
    fn stored_dot(&self, weights: &[u8]) -> i64 {
        let x = &self.wide[..weights.len()];
        let mut acc = 0i64;
        let mut w8 = weights.chunks_exact(8);
        let mut x8 = x.chunks_exact(8);
        for (w, x) in (&mut w8).zip(&mut x8) {
            acc += w[0] as i64 * x[0]
                + w[1] as i64 * x[1]
                + w[2] as i64 * x[2]
                + w[3] as i64 * x[3]
                + w[4] as i64 * x[4]
                + w[5] as i64 * x[5]
                + w[6] as i64 * x[6]
                + w[7] as i64 * x[7];
        }
        for (&w, &x) in w8.remainder().iter().zip(x8.remainder()) {
            acc += w as i64 * x;
        }
        acc
    }

    /// The spec's row product: (Σ stored × x − 128 × Σ x) × scale / 2^24, rounded (halves
    /// up), saturated.
    #[inline]
    pub fn row_product(&self, scale: u32, weights: &[u8]) -> i32 {
        self.finish(self.stored_dot(weights), scale)
    }

    /// The row products of two rows (scale, weights) with SIMD128: the input's halves are
    /// loaded once for both rows (the SDK's engine; the tests of sdk/ compare every run with the
    /// native engine's).
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline]
    pub fn row_products2(&self, a: (u32, &[u8]), b: (u32, &[u8])) -> (i32, i32) {
        // Two rows of one matrix, or gate and up: the same number of columns.
        assert_eq!(a.1.len(), b.1.len());
        let n = a.1.len();
        let (dot_a, dot_b) = halves_dot2(a.1, b.1, &self.hi[..n], &self.lo[..n]);
        (self.finish(dot_a, a.0), self.finish(dot_b, b.0))
    }

    #[inline(always)]
    fn finish(&self, stored_dot: i64, scale: u32) -> i32 {
        saturate(mul_q24(stored_dot - WEIGHT_BIAS as i64 * self.sum, scale))
    }
}

/// Σ b × x from x's 16-bit halves: 2^16 Σ b × hi + Σ b × lo, summed in blocks of
/// [`BLOCK`] columns. Within a block each sum is kept in 32 bits: |hi| ≤ 2^11 and |lo| ≤ 2^15,
/// so a block's sum is under 2^31 in magnitude (256 × 255 × 2^15 = 2,139,095,040) and any order
/// of its additions (mod 2^32, as vector lanes add) gives its exact value; the blocks add in
/// i64. A whole 2,048-column row in one i32 could reach 2^34 and wrap.
#[cfg(not(target_os = "solana"))]
const BLOCK: usize = 256;

/// [`block_halves`] over the whole row.
#[cfg(not(target_os = "solana"))]
#[inline(always)]
fn halves_dot(weights: &[u8], hi: &[i16], lo: &[i16]) -> i64 {
    let mut total = 0i64;
    let blocks = weights
        .chunks(BLOCK)
        .zip(hi.chunks(BLOCK))
        .zip(lo.chunks(BLOCK));
    for ((w, h), l) in blocks {
        let (sum_hi, sum_lo) = block_halves(w, h, l);
        total += ((sum_hi as i64) << 16) + sum_lo as i64;
    }
    total
}

/// One block's Σ b × hi and Σ b × lo (at most [`BLOCK`] columns).
#[cfg(not(any(
    target_os = "solana",
    all(target_arch = "wasm32", target_feature = "simd128")
)))]
#[inline(always)]
fn block_halves(weights: &[u8], hi: &[i16], lo: &[i16]) -> (i32, i32) {
    let (mut sum_hi, mut sum_lo) = (0i32, 0i32);
    for i in 0..weights.len() {
        sum_hi = sum_hi.wrapping_add(weights[i] as i32 * hi[i] as i32);
        sum_lo = sum_lo.wrapping_add(weights[i] as i32 * lo[i] as i32);
    }
    (sum_hi, sum_lo)
}

/// [`block_halves`] for WebAssembly with SIMD128 (the SDK's engine, scripts/build-wasm): one
/// row as [`block_halves2`] takes two (the same row twice; the compiler computes it once).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn block_halves(weights: &[u8], hi: &[i16], lo: &[i16]) -> (i32, i32) {
    let (sum_hi, sum_lo, _, _) = block_halves2(weights, weights, hi, lo);
    (sum_hi, sum_lo)
}

/// [`halves_dot`] of two rows against the same input (SIMD128): each row's sums exactly as
/// [`halves_dot`] gives them.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn halves_dot2(a: &[u8], b: &[u8], hi: &[i16], lo: &[i16]) -> (i64, i64) {
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

/// [`block_halves`] of two rows for WebAssembly with SIMD128, eight columns per
/// `i32x4.dot_i16x8_s` (the bytes widened to i16, at most 255, so a pair's sum never leaves i32),
/// the input's halves loaded once for both rows. The same two 32-bit sums per row as the
/// portable loop, in another order (addition mod 2^32 is associative), so the same integer. The
/// SDK's tests compare every run of sdk/test/golden/run.json (tokens and state bytes) with the
/// native engine's.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn block_halves2(a: &[u8], b: &[u8], hi: &[i16], lo: &[i16]) -> (i32, i32, i32, i32) {
    use core::arch::wasm32::{
        i32x4_add, i32x4_dot_i16x8, i32x4_extract_lane, i32x4_splat, u16x8_load_extend_u8x8, v128,
        v128_load,
    };
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

/// [`halves_dot`] with AVX2: sixteen columns per `vpmaddwd` (the bytes widened to i16, at most
/// 255), then eight with SSE4.1, then one at a time; each [`BLOCK`]'s two 32-bit sums in another
/// order than the portable loop's (addition mod 2^32 is associative), so the same integer. Left
/// to the compiler, the loop over the 32 columns after a 256-column block (stories15M's 288) ran
/// one column at a time and took more than half of the time.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn halves_dot_avx2(weights: &[u8], hi: &[i16], lo: &[i16]) -> i64 {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepu8_epi16,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_setzero_si256,
        _mm_add_epi32, _mm_cvtepu8_epi16, _mm_cvtsi128_si32, _mm_extract_epi32, _mm_hadd_epi32,
        _mm_loadl_epi64, _mm_loadu_si128, _mm_madd_epi16,
    };
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

/// Σ stored × x the plain way, for the tests of [`Input`]'s halves.
pub fn stored_dot_plain(weights: &[u8], x: &[u8]) -> i64 {
    let mut acc = 0i64;
    for (&w, v) in weights.iter().zip(x.chunks_exact(4)) {
        acc += w as i64 * i32::from_le_bytes([v[0], v[1], v[2], v[3]]) as i64;
    }
    acc
}

/// Rows `rows` of matrix `m` times `input`; each result is handed to `out(row, value)`.
#[cfg(not(target_os = "solana"))]
#[inline]
pub fn matrix_rows(
    m: &Rows,
    rows: core::ops::Range<usize>,
    input: &Input,
    mut out: impl FnMut(usize, i32),
) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if m.holds(&rows) {
        // Two rows a turn: the input's halves loaded once for both (Input::row_products2).
        let mut r = rows.start;
        while r + 2 <= rows.end {
            // SAFETY: r and r + 1 are in the range `holds` accepted.
            let (a, b) = unsafe { (m.row_unchecked(r), m.row_unchecked(r + 1)) };
            let (va, vb) = input.row_products2(a, b);
            out(r, va);
            out(r + 1, vb);
            r += 2;
        }
        if r < rows.end {
            // SAFETY: as above.
            let (scale, weights) = unsafe { m.row_unchecked(r) };
            out(r, input.row_product(scale, weights));
        }
        return;
    }
    if m.holds(&rows) {
        for r in rows {
            // SAFETY: r is in the range `holds` accepted.
            let (scale, weights) = unsafe { m.row_unchecked(r) };
            out(r, input.row_product(scale, weights));
        }
    } else {
        for r in rows {
            let (scale, weights) = m.row(r);
            out(r, input.row_product(scale, weights));
        }
    }
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
    #[cfg(target_os = "solana")]
    rows_into(&mut RowsInto {
        rows: *m,
        start: rows.start,
        end: rows.end,
        input,
        out: &mut out[4 * rows.start..],
        write,
    });
    #[cfg(not(target_os = "solana"))]
    matrix_rows(m, rows, input, |i, v| match write {
        Write::Set => set(out, i, v),
        Write::Add => set(out, i, saturate(get(out, i) as i64 + v as i64)),
        Write::Gate(table) => set(out, i, gated(table, get(out, i), v)),
    });
}

/// The program's matrix stage: rows `start..end` of `rows` against `input`, written as `write`
/// says at `out` (a word per row, 4-byte aligned). Three rows a turn (`kernels::sbf::dot3`, each
/// input value loaded once for the three), in a function of its own so that the stage around
/// it keeps no values in the registers the kernel takes; its arguments in one struct (SBF
/// passes five registers).
#[cfg(target_os = "solana")]
pub struct RowsInto<'a> {
    pub rows: Rows<'a>,
    pub start: usize,
    pub end: usize,
    pub input: &'a Input<'a>,
    pub out: &'a mut [u8],
    pub write: Write<'a>,
}

/// Runs a [`RowsInto`]. Panics (as slicing would) when a row or the output is out of bounds.
#[cfg(target_os = "solana")]
#[inline(never)]
pub fn rows_into(job: &mut RowsInto) {
    let (m, input) = (&job.rows, job.input);
    let n = input.wide.len();
    let (start, end) = (job.start, job.end.max(job.start));
    let stride = m.row_bytes;
    // Rows::holds, without its checked multiplication (a 128-bit product on SBF).
    assert!(m.columns == n && crate::ROW_WEIGHTS_OFFSET + n <= stride);
    assert!(end <= m.bytes.len() / stride && job.out.len() >= 4 * (end - start));
    let bias = WEIGHT_BIAS as i64 * input.sum;
    let finish = |dot: i64, scale: u32| saturate(mul_q24(dot - bias, scale));
    let write = job.write;
    let emit = |o: *mut u8, v: i32| {
        // SAFETY: o is a word of `out` (the assert above); state words are 4-byte aligned.
        unsafe {
            let o = o as *mut i32;
            match write {
                Write::Set => o.write(v),
                Write::Add => o.write(saturate(o.read() as i64 + v as i64)),
                Write::Gate(table) => o.write(gated(table, o.read(), v)),
            }
        }
    };
    // SAFETY: rows start..end lie in the matrix's bytes (`holds`), each a 4-byte scale at
    // the row's start (8-byte aligned) and n weights from byte ROW_WEIGHTS_OFFSET; the input
    // has n values.
    unsafe {
        let mut row = m.bytes.as_ptr().add(start * stride);
        let mut o = job.out.as_mut_ptr();
        let x = input.wide.as_ptr();
        let mut left = end - start;
        let w = crate::ROW_WEIGHTS_OFFSET;
        while left >= 3 {
            let (a, b, c) = (row, row.add(stride), row.add(2 * stride));
            let (da, db, dc) = super::kernels::sbf::dot3(a.add(w), b.add(w), c.add(w), x, n);
            emit(o, finish(da, (a as *const u32).read()));
            emit(o.add(4), finish(db, (b as *const u32).read()));
            emit(o.add(8), finish(dc, (c as *const u32).read()));
            row = row.add(3 * stride);
            o = o.add(12);
            left -= 3;
        }
        if left == 2 {
            let b = row.add(stride);
            let (da, db) = super::kernels::sbf::dot2(row.add(w), b.add(w), x, n);
            emit(o, finish(da, (row as *const u32).read()));
            emit(o.add(4), finish(db, (b as *const u32).read()));
        } else if left == 1 {
            let da = super::kernels::sbf::dot1(row.add(w), x, n);
            emit(o, finish(da, (row as *const u32).read()));
        }
    }
}

/// x = row `token` of the embedding: (stored − 128) × scale / 2^8, rounded (halves up).
pub fn embed(x: &mut [u8], embedding: &Rows, token: usize) {
    let (scale, weights) = embedding.row(token);
    for (i, &w) in weights.iter().enumerate() {
        let q = w as i64 - WEIGHT_BIAS as i64;
        set(x, i, saturate(shift_round(q * scale as i64, 8)));
    }
}

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

/// Rotates each (even, odd) pair of each head of `q` and `key`, by the rotary coefficients of
/// `pos`: (a, b) -> (a cos − b sin, a sin + b cos), each rounded from 24 fractional bits.
pub fn rotary(q: &mut [u8], key: &mut [u8], meta: &Metadata, pos: u32) {
    let head_size = meta.config().head_size() as usize;
    let start = 4 * pos as usize * head_size;
    let coefficients = &meta.block_bytes(Block::Rotary)[start..start + 4 * head_size];
    for v in [q, key] {
        for i in (0..v.len() / 4).step_by(2) {
            let j = i % head_size;
            let cos = get(coefficients, j) as i64;
            let sin = get(coefficients, j + 1) as i64;
            let a = get(v, i) as i64;
            let b = get(v, i + 1) as i64;
            set(v, i, saturate(shift_round(a * cos - b * sin, 24)));
            set(v, i + 1, saturate(shift_round(a * sin + b * cos, 24)));
        }
    }
}

/// One head's attention at `pos`. `q` is the head's query, `keys` and `values` the layer's
/// caches (rows of `kv_dim` values from position 0), `kv_offset` the head's key and value
/// head × head size, `att` scratch for pos + 1 values, `out` the head's slice of xb. Returns
/// the sum of the head's outputs.
#[allow(clippy::too_many_arguments)]
pub fn attention_head(
    meta: &Metadata,
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    kv_dim: usize,
    kv_offset: usize,
    pos: u32,
    att: &mut [u8],
    out: &mut [u8],
) -> i64 {
    let (inv_sqrt, exp) = (meta.inv_sqrt_head_size(), meta.block_bytes(Block::Exp));
    #[cfg(target_os = "solana")]
    return super::head::attention_head_rows(&mut super::head::Head {
        query: q,
        keys,
        values,
        row_len: 4 * kv_dim,
        offset: 4 * kv_offset,
        positions: pos as usize + 1,
        inv_sqrt,
        exp,
        att,
        out,
    });
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU reported AVX2.
        return unsafe {
            attention_head_avx2(
                inv_sqrt, exp, q, keys, values, kv_dim, kv_offset, pos, att, out,
            )
        };
    }
    #[cfg(not(target_os = "solana"))]
    attention_head_any::<false>(
        inv_sqrt, exp, q, keys, values, kv_dim, kv_offset, pos, att, out,
    )
}

/// [`attention_head`] with AVX2: the loops compiled for it, the dot and the weighted sum in
/// 64-bit lanes (`vpmuldq`).
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn attention_head_avx2(
    inv_sqrt: u32,
    exp: &[u8],
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    kv_dim: usize,
    kv_offset: usize,
    pos: u32,
    att: &mut [u8],
    out: &mut [u8],
) -> i64 {
    attention_head_any::<true>(
        inv_sqrt, exp, q, keys, values, kv_dim, kv_offset, pos, att, out,
    )
}

/// One head's attention, portable. `AVX2` (true only inlined into [`attention_head_avx2`])
/// takes the AVX2 forms of the dot and the weighted sum.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(target_os = "solana", allow(dead_code))]
#[inline(always)]
pub(super) fn attention_head_any<const AVX2: bool>(
    inv_sqrt: u32,
    exp: &[u8],
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    kv_dim: usize,
    kv_offset: usize,
    pos: u32,
    att: &mut [u8],
    out: &mut [u8],
) -> i64 {
    let head_size = q.len() / 4;
    let positions = pos as usize + 1;
    let mut query = [0i64; 64];
    for (j, v) in query[..head_size].iter_mut().enumerate() {
        *v = get(q, j) as i64;
    }
    let query = &query[..head_size];
    let head = 4 * kv_offset..4 * (kv_offset + head_size);
    let row_len = 4 * kv_dim;

    // Scores: q · k, rounded to 16 fractional bits, times header byte 68, saturated.
    let mut max = i32::MIN;
    for (k, a) in keys
        .chunks_exact(row_len)
        .take(positions)
        .zip(att.chunks_exact_mut(4))
    {
        let dot = head_dot_in::<AVX2>(query, q, &k[head.clone()]);
        let score = saturate(mul_q24(shift_round(dot, 16), inv_sqrt));
        set(a, 0, score);
        max = max.max(score);
    }
    // Softmax: e_t = exp[round((max − score) / 2^8)]; with R = floor(2^62 / Σ e), the weights
    // are floor(e_t × R / 2^32), so that Σ weights ≤ 2^30.
    let mut total = 0u64;
    for a in att[..4 * positions].chunks_exact_mut(4) {
        let score = word(a);
        let e = get_u32(exp, exp_index((max as i64 - score as i64) as u64));
        set_u32(a, 0, e);
        total += e as u64;
    }
    let reciprocal = (1u64 << 62) / total;
    // Σ_t weight × value, rounded from 30 fractional bits. Every partial sum is bounded by
    // Σ weights ≤ 2^30 times |value| ≤ 2^27. The positions go in chunks: a chunk's weights are
    // computed once, then summed against its cached values (exact i64 sums: any order).
    let mut acc = [0i64; 64];
    let mut weights = [0u32; WEIGHTS_CHUNK];
    let mut start = 0;
    while start < positions {
        let n = WEIGHTS_CHUNK.min(positions - start);
        let exps = att[4 * start..4 * (start + n)].chunks_exact(4);
        for (w, e) in weights[..n].iter_mut().zip(exps) {
            *w = ((get_u32(e, 0) as u64 * reciprocal) >> 32) as u32;
        }
        let rows = &values[start * row_len..(start + n) * row_len];
        accumulate_in::<AVX2>(
            &mut acc[..head_size],
            &weights[..n],
            rows,
            row_len,
            head.start,
        );
        start += n;
    }
    let mut sum = 0i64;
    for (j, &a) in acc[..head_size].iter().enumerate() {
        let v = saturate(shift_round(a, 30));
        set(out, j, v);
        sum += v as i64;
    }
    sum
}

/// [`head_dot`], or with `AVX2` (only where the CPU has it) [`head_dot_avx2`].
#[cfg_attr(target_os = "solana", allow(dead_code))]
#[inline(always)]
fn head_dot_in<const AVX2: bool>(query: &[i64], q: &[u8], key: &[u8]) -> i64 {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if AVX2 {
        // SAFETY: AVX2 is true only in attention_head_avx2, called where the CPU has AVX2.
        return unsafe { head_dot_avx2(q, key) };
    }
    head_dot(query, q, key)
}

/// Positions whose attention weights [`attention_head_any`] computes at a time: their cached
/// values (a head's slice of 64 rows) stay in the first-level cache while each group of outputs
/// sums over them.
const WEIGHTS_CHUNK: usize = 64;

/// [`accumulate`], or with `AVX2` (only where the CPU has it) [`accumulate_avx2`].
#[cfg_attr(target_os = "solana", allow(dead_code))]
#[inline(always)]
fn accumulate_in<const AVX2: bool>(
    acc: &mut [i64],
    weights: &[u32],
    rows: &[u8],
    row_len: usize,
    offset: usize,
) {
    // Every row's slice [offset, offset + 4 × outputs) lies in `rows`: the loops below read
    // them unchecked.
    assert!(offset + 4 * acc.len() <= row_len && rows.len() >= weights.len() * row_len);
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if AVX2 {
        // SAFETY: as in head_dot_in; the rows as asserted.
        return unsafe { accumulate_avx2(acc, weights, rows, row_len, offset) };
    }
    accumulate(acc, weights, rows, row_len, offset)
}

/// [`head_dot`] with AVX2: four products per `vpmuldq` (each value's low 32 bits, signed, to a
/// 64-bit product), exact in i64 like the portable loop, so the same integer in any order.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn head_dot_avx2(q: &[u8], key: &[u8]) -> i64 {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi64, _mm256_cvtepi32_epi64, _mm256_mul_epi32,
        _mm256_setzero_si256, _mm256_storeu_si256, _mm_loadu_si128,
    };
    let n = q.len() / 4;
    let key = &key[..4 * n];
    let whole = n / 4 * 4;
    let mut acc = _mm256_setzero_si256();
    let mut i = 0;
    while i < whole {
        // SAFETY: 4 × (i + 4) <= 4n, the length of both slices; the loads are unaligned ones.
        let a = _mm256_cvtepi32_epi64(_mm_loadu_si128(q.as_ptr().add(4 * i) as *const __m128i));
        let b = _mm256_cvtepi32_epi64(_mm_loadu_si128(key.as_ptr().add(4 * i) as *const __m128i));
        acc = _mm256_add_epi64(acc, _mm256_mul_epi32(a, b));
        i += 4;
    }
    let mut lanes = [0i64; 4];
    _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc);
    let mut dot = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for j in whole..n {
        dot += word(&q[4 * j..4 * j + 4]) as i64 * word(&key[4 * j..4 * j + 4]) as i64;
    }
    dot
}

/// [`accumulate`] with AVX2: each group of four outputs in one register over the chunk's
/// positions; a weight fits an i32 (at most 2^30), so each product is one 64-bit lane of
/// `vpmuldq`, exact.
///
/// # Safety
/// AVX2; every row's slice [offset, offset + 4 × acc.len()) inside `rows` (accumulate_in).
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn accumulate_avx2(
    acc: &mut [i64],
    weights: &[u32],
    rows: &[u8],
    row_len: usize,
    offset: usize,
) {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi64, _mm256_cvtepi32_epi64, _mm256_loadu_si256,
        _mm256_mul_epi32, _mm256_set1_epi64x, _mm256_storeu_si256, _mm_loadu_si128,
    };
    let n = acc.len();
    let whole = n / 4 * 4;
    let mut j = 0;
    while j < whole {
        let a = acc.as_mut_ptr().add(j) as *mut __m256i;
        let mut sum = _mm256_loadu_si256(a);
        let mut p = rows.as_ptr().add(offset + 4 * j);
        for &w in weights {
            let v = _mm256_cvtepi32_epi64(_mm_loadu_si128(p as *const __m128i));
            sum = _mm256_add_epi64(sum, _mm256_mul_epi32(v, _mm256_set1_epi64x(w as i64)));
            p = p.add(row_len);
        }
        _mm256_storeu_si256(a, sum);
        j += 4;
    }
    for (j, a) in acc.iter_mut().enumerate().skip(whole) {
        for (t, &w) in weights.iter().enumerate() {
            let at = t * row_len + offset + 4 * j;
            *a += w as i64 * word(&rows[at..at + 4]) as i64;
        }
    }
}

/// Σ_j q_j × k_j over one head: `query` holds q widened to i64, `q` the same values as
/// little-endian i32 bytes, `key` the cached key's slice. Exact in i64 (|q|, |k| ≤ 2^27, at most
/// 64 terms: ≤ 2^60), so any order of the additions gives the same integer.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[cfg_attr(target_os = "solana", allow(dead_code))]
#[inline(always)]
fn head_dot(query: &[i64], _q: &[u8], key: &[u8]) -> i64 {
    // Four values per turn (on SBF the loop's own work, an index and a bound kept on the
    // stack, cost as much as the multiply-accumulates).
    let mut dot = 0i64;
    let mut q4 = query.chunks_exact(4);
    let mut k4 = key.chunks_exact(16);
    for (q, k) in (&mut q4).zip(&mut k4) {
        dot += q[0] * word(&k[0..4]) as i64
            + q[1] * word(&k[4..8]) as i64
            + q[2] * word(&k[8..12]) as i64
            + q[3] * word(&k[12..16]) as i64;
    }
    for (&qj, k) in q4.remainder().iter().zip(k4.remainder().chunks_exact(4)) {
        dot += qj * word(k) as i64;
    }
    dot
}

/// [`head_dot`] with SIMD128: four products per `i64x2.extmul_{low,high}_i32x4_s` pair.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn head_dot(query: &[i64], q: &[u8], key: &[u8]) -> i64 {
    use core::arch::wasm32::{
        i64x2_add, i64x2_extmul_high_i32x4, i64x2_extmul_low_i32x4, i64x2_extract_lane,
        i64x2_splat, v128, v128_load,
    };
    let n = query.len();
    let (q, key) = (&q[..4 * n], &key[..4 * n]);
    let whole = n / 4 * 4;
    let mut acc = i64x2_splat(0);
    let mut i = 0;
    while i < whole {
        // SAFETY: 4 × (i + 4) <= 4n, the length of both slices; loads may be unaligned.
        unsafe {
            let a = v128_load(q.as_ptr().add(4 * i) as *const v128);
            let b = v128_load(key.as_ptr().add(4 * i) as *const v128);
            acc = i64x2_add(acc, i64x2_extmul_low_i32x4(a, b));
            acc = i64x2_add(acc, i64x2_extmul_high_i32x4(a, b));
        }
        i += 4;
    }
    let mut dot = i64x2_extract_lane::<0>(acc) + i64x2_extract_lane::<1>(acc);
    for (&qj, b) in query[whole..].iter().zip(key[4 * whole..].chunks_exact(4)) {
        dot += qj * i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64;
    }
    dot
}

/// acc_j += Σ_t weights_t × value_t,j over a chunk of positions: `rows` holds their cached rows
/// (`row_len` bytes each), the head's values from byte `offset` (a weight is 0 to 2^30; every
/// partial sum ≤ 2^57).
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[cfg_attr(target_os = "solana", allow(dead_code))]
#[inline(always)]
fn accumulate(acc: &mut [i64], weights: &[u32], rows: &[u8], row_len: usize, offset: usize) {
    let len = 4 * acc.len();
    for (row, &w) in rows.chunks_exact(row_len).zip(weights) {
        let w = w as i64;
        let value = &row[offset..offset + len];
        let mut a4 = acc.chunks_exact_mut(4);
        let mut v4 = value.chunks_exact(16);
        for (a, v) in (&mut a4).zip(&mut v4) {
            a[0] += w * word(&v[0..4]) as i64;
            a[1] += w * word(&v[4..8]) as i64;
            a[2] += w * word(&v[8..12]) as i64;
            a[3] += w * word(&v[12..16]) as i64;
        }
        let tail = a4.into_remainder().iter_mut();
        for (acc, v) in tail.zip(v4.remainder().chunks_exact(4)) {
            *acc += w * word(v) as i64;
        }
    }
}

/// [`accumulate`] with SIMD128: each group of four outputs in two registers over the chunk's
/// positions; a weight fits an i32 (at most 2^30), so each product is one lane of
/// `i64x2.extmul_{low,high}_i32x4_s`, exact.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn accumulate(acc: &mut [i64], weights: &[u32], rows: &[u8], row_len: usize, offset: usize) {
    use core::arch::wasm32::{
        i32x4_splat, i64x2_add, i64x2_extmul_high_i32x4, i64x2_extmul_low_i32x4, v128, v128_load,
        v128_store,
    };
    let n = acc.len();
    let whole = n / 4 * 4;
    let mut j = 0;
    while j < whole {
        // SAFETY: j + 4 <= n (acc); each row's values [offset + 4j, offset + 4j + 16) lie in
        // `rows` (accumulate_in asserts the rows hold offset + 4n bytes of each row); loads and
        // stores may be unaligned.
        unsafe {
            let low = acc.as_mut_ptr().add(j) as *mut v128;
            let high = acc.as_mut_ptr().add(j + 2) as *mut v128;
            let (mut sum_low, mut sum_high) = (v128_load(low), v128_load(high));
            let mut p = rows.as_ptr().add(offset + 4 * j);
            for &w in weights {
                let v = v128_load(p as *const v128);
                let ws = i32x4_splat(w as i32);
                sum_low = i64x2_add(sum_low, i64x2_extmul_low_i32x4(v, ws));
                sum_high = i64x2_add(sum_high, i64x2_extmul_high_i32x4(v, ws));
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
            *a += w as i64 * i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64;
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// The halves (plain and AVX2) and the program's i32 loop give the same exact sum, at the
    /// extremes of the ranges and on seeded random rows of every length up to 2,048.
    #[test]
    fn every_path_of_the_row_sum_is_the_same_integer() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let extremes = [1 << 27, -(1 << 27), (1 << 27) - 1, -32_769, 32_768, 0];
        for n in [
            1usize, 7, 8, 15, 16, 17, 23, 24, 25, 31, 32, 33, 64, 172, 255, 256, 257, 263, 264,
            272, 279, 288, 768, 2048,
        ] {
            for round in 0..5 {
                let weights: Vec<u8> = (0..n)
                    .map(|i| {
                        if round == 0 || round == 4 {
                            255
                        } else {
                            (next() >> (i % 8)) as u8
                        }
                    })
                    .collect();
                let x: Vec<i32> = (0..n)
                    .map(|i| match round {
                        0 => 1 << 27,
                        1 => -(1 << 27),
                        2 => extremes[i % extremes.len()],
                        // Every low half at −2^15: Σ b × lo of a whole row leaves i32.
                        4 => -32_768,
                        _ => (next() % (1 << 28)) as i32 - (1 << 27),
                    })
                    .collect();
                let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let mut scratch = Scratch::new();
                let input = Input::new(&bytes, 0, &mut scratch);
                let expected: i64 = weights
                    .iter()
                    .zip(&x)
                    .map(|(&w, &v)| w as i64 * v as i64)
                    .sum();
                assert_eq!(stored_dot_plain(&weights, &bytes), expected, "plain, {n}");
                assert_eq!(
                    halves_dot(&weights, input.hi, input.lo),
                    expected,
                    "halves, {n}"
                );
                assert_eq!(input.stored_dot(&weights), expected, "dispatched, {n}");
            }
        }
    }
}
