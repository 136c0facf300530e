//! The inner loops the backends (`backend/`) spend their time in, each target's in a file of its
//! own. The native backend's sets share one contract ([`Kernels`]):
//!
//! - [`portable`]: plain Rust, every target (the reference the others are tested against);
//! - `avx2` and `avx512` (x86-64 with std, chosen at run time by [`Path::detect`]);
//! - `simd128` (wasm32 with SIMD128, chosen at compile time: the SDK's engine).
//!
//! The SBF backend's are `sbf` (the program): row and head loops in assembly over the input
//! widened to 64 bits; in the tests `sbf_stand_in.rs` takes the same names in plain Rust.
//!
//! Every kernel computes exact integers, so every path gives the same bits:
//! `backend::native::tests::every_kernel_gives_the_same_integers` runs each one this machine
//! has on the same inputs.

#[cfg(not(target_os = "solana"))]
use super::fixed::{exp_index, mul_q24, saturate, shift_round};
#[cfg(not(target_os = "solana"))]
use super::state::{get_u32, set, set_u32, word};

#[cfg(all(feature = "std", target_arch = "x86_64"))]
pub mod avx2;
// std only, so the workspace's Rust (the AVX-512 intrinsics are stable from 1.89); the no_std
// part of the crate keeps to 1.85 (lib.rs).
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[clippy::msrv = "1.95"]
pub mod avx512;
#[cfg(not(target_os = "solana"))]
pub mod portable;
#[cfg(target_os = "solana")]
pub mod sbf;
#[cfg(all(test, not(target_os = "solana")))]
#[path = "sbf_stand_in.rs"]
pub mod sbf;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd128;

/// The input vector of a matrix stage as the row kernels read it, each of its `n` values x
/// (|x| ≤ 2^27, the activations' saturation) in two forms:
/// - `hi`, `lo`: x = hi × 2^16 + lo, lo in [−2^15, 2^15) (|hi| ≤ 2^11), for the 16-bit
///   multiply-adds (`pmaddwd`, `i32x4.dot_i16x8_s`);
/// - `planes`: x = Σ_k planes[k] × 2^(8k), each digit an i8 (planes 0 to 2 in [−128, 128),
///   plane 3 in [−8, 8]), for the byte multiply-adds of AVX-512 VNNI (`vpdpbusd`: the stored
///   weight unsigned, the digit signed). Only built for the kernels that read it
///   ([`Path::planes`]); otherwise empty.
#[cfg(not(target_os = "solana"))]
#[derive(Clone, Copy)]
pub struct Vector<'a> {
    pub hi: &'a [i16],
    pub lo: &'a [i16],
    #[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))]
    pub planes: [&'a [i8]; 4],
}

/// The contract every off-chain kernel set implements: the same exact integers as
/// [`portable`]'s, whatever the order of their additions.
///
/// # Safety
/// Every function but [`Kernels::available`] requires that `available()` returned true (the
/// CPU has the set's target features).
#[cfg(not(target_os = "solana"))]
pub trait Kernels {
    /// Whether this machine runs the set.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    fn available() -> bool;

    /// `f()`, compiled with the set's target features (it is inlined into a function that
    /// enables them), so that the loops around the kernels are too.
    ///
    /// # Safety
    /// `available()`.
    unsafe fn enabled<T>(f: impl FnOnce() -> T) -> T;

    /// Σ_c w_c × x_c over one row's stored bytes `w` (at most the vector's length).
    ///
    /// # Safety
    /// `available()`.
    unsafe fn dot(x: &Vector, w: &[u8]) -> i64;

    /// [`Kernels::dot`] of four rows of the same length, the input loaded once for the four.
    ///
    /// # Safety
    /// `available()`.
    unsafe fn dot4(x: &Vector, w: [&[u8]; 4]) -> [i64; 4];

    /// The spec's row products of four rows of the same length: (Σ stored × x − `bias`) ×
    /// scale / 2^24, rounded (halves up), saturated, `bias` = 128 × Σ x and `scales` the rows'.
    /// By default [`Kernels::dot4`] finished a row at a time.
    ///
    /// # Safety
    /// `available()`.
    #[inline(always)]
    unsafe fn products4(x: &Vector, w: [&[u8]; 4], scales: [u32; 4], bias: i64) -> [i32; 4] {
        let dots = Self::dot4(x, w);
        [0, 1, 2, 3].map(|k| saturate(mul_q24(dots[k] - bias, scales[k])))
    }

    /// [`Kernels::products4`] of eight rows of the same length. By default two fours.
    ///
    /// # Safety
    /// `available()`.
    #[inline(always)]
    unsafe fn products8(x: &Vector, w: [&[u8]; 8], scales: [u32; 8], bias: i64) -> [i32; 8] {
        by_fours(w, scales, |w, s| Self::products4(x, w, s, bias))
    }

    /// Σ_j q_j × k_j over one head: `query` holds q widened to i64, `q` the same values as
    /// little-endian i32 bytes, `key` the cached key's slice (at least as long as `q`).
    ///
    /// # Safety
    /// `available()`.
    unsafe fn head_dot(query: &[i64], q: &[u8], key: &[u8]) -> i64;

    /// acc_j += Σ_t weights_t × u_t,j over a chunk of positions, u the cached word as it is
    /// stored, an unsigned v + 2^31 (`state::CACHE_OFFSET`: the caller takes 2^31 × Σ weights
    /// off once, and unsigned products need no correction per value): `rows` holds their
    /// cached rows (`row_len` bytes each), the head's values from byte `offset`; a weight is 0
    /// to 2^30, and their sum over a head at most 2^30 (every sum below 2^62).
    ///
    /// # Safety
    /// `available()`; every row's slice [offset, offset + 4 × acc.len()) lies in `rows`
    /// (`offset + 4 × acc.len() ≤ row_len`, `rows.len() ≥ weights.len() × row_len`).
    unsafe fn accumulate(
        acc: &mut [i64],
        weights: &[u32],
        rows: &[u8],
        row_len: usize,
        offset: usize,
    );

    /// A head's scores: att_t = q · k_t, rounded to 16 fractional bits, times header byte 68
    /// (`inv_sqrt`), saturated, for each of the `att.len() / 4` cached positions (`keys` holds
    /// their rows, `row_len` bytes each, the head's key from byte `offset`); returns the
    /// highest. `query` and `q` as in [`Kernels::head_dot`]. By default one position at a time.
    ///
    /// # Safety
    /// `available()`.
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
        let head = offset..offset + q.len();
        let mut max = i32::MIN;
        for (k, a) in keys.chunks_exact(row_len).zip(att.chunks_exact_mut(4)) {
            let dot = Self::head_dot(query, q, &k[head.clone()]);
            let score = saturate(mul_q24(shift_round(dot, 16), inv_sqrt));
            set(a, 0, score);
            max = max.max(score);
        }
        max
    }

    /// The softmax's exponentials, in place of the scores `att`: e_t = exp[round((max −
    /// score) / 2^8)] from the table `exp`; returns R = floor(2^62 / Σ e), so that the weights
    /// floor(e_t × R / 2^32) sum to at most 2^30.
    ///
    /// # Safety
    /// `available()`.
    #[inline(always)]
    unsafe fn softmax(att: &mut [u8], max: i32, exp: &[u8]) -> u64 {
        let mut total = 0u64;
        for a in att.chunks_exact_mut(4) {
            let score = word(a);
            let e = get_u32(exp, exp_index((max as i64 - score as i64) as u64));
            set_u32(a, 0, e);
            total += e as u64;
        }
        (1u64 << 62) / total
    }

    /// weights_t = floor(e_t × R / 2^32) for the exponentials `exps` (u32 each) and R =
    /// `reciprocal` (as [`Kernels::softmax`] returned it).
    ///
    /// # Safety
    /// `available()`; `weights` at least as long as `exps` has values.
    #[inline(always)]
    unsafe fn weights(exps: &[u8], reciprocal: u64, weights: &mut [u32]) {
        for (w, e) in weights.iter_mut().zip(exps.chunks_exact(4)) {
            *w = ((get_u32(e, 0) as u64 * reciprocal) >> 32) as u32;
        }
    }
}

/// Eight rows' products as two fours, by `four` (rows 0 to 3, then 4 to 7).
#[cfg(not(target_os = "solana"))]
#[inline(always)]
pub fn by_fours(
    w: [&[u8]; 8],
    scales: [u32; 8],
    mut four: impl FnMut([&[u8]; 4], [u32; 4]) -> [i32; 4],
) -> [i32; 8] {
    let half = |k: usize| {
        (
            [w[k], w[k + 1], w[k + 2], w[k + 3]],
            [scales[k], scales[k + 1], scales[k + 2], scales[k + 3]],
        )
    };
    let ((w0, s0), (w1, s1)) = (half(0), half(4));
    let (a, b) = (four(w0, s0), four(w1, s1));
    [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
}

/// The kernel set a run takes: the widest this machine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// [`portable`] (or, on wasm32 with SIMD128, `simd128`).
    Portable,
    /// x86-64 with AVX2.
    Avx2,
    /// x86-64 with AVX-512 F, BW, DQ, VL and VNNI.
    Avx512,
}

impl Path {
    /// The widest set this machine runs (cached by std's feature detection).
    #[inline]
    pub fn detect() -> Path {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        {
            if avx512::Avx512::available() {
                return Path::Avx512;
            }
            if avx2::Avx2::available() {
                return Path::Avx2;
            }
        }
        Path::Portable
    }

    /// Every path this machine runs, narrowest first (for the tests and benchmarks).
    #[cfg(feature = "std")]
    pub fn all() -> std::vec::Vec<Path> {
        let mut paths = std::vec![Path::Portable];
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        {
            if avx2::Avx2::available() {
                paths.push(Path::Avx2);
            }
            if avx512::Avx512::available() {
                paths.push(Path::Avx512);
            }
        }
        paths
    }

    /// Whether the path's row kernels read [`Vector::planes`].
    #[inline]
    pub fn planes(self) -> bool {
        self == Path::Avx512
    }
}

/// The portable set of this target: [`portable::Portable`], or on wasm32 with SIMD128
/// `simd128::Simd128` (the same contract, chosen at compile time).
#[cfg(all(
    not(target_os = "solana"),
    not(all(target_arch = "wasm32", target_feature = "simd128"))
))]
pub type Base = portable::Portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub type Base = simd128::Simd128;

/// `f::<K>()` with K the kernel set of `path`, compiled with K's target features.
#[cfg(not(target_os = "solana"))]
macro_rules! with_path {
    ($path:expr, $k:ident => $body:expr) => {{
        use $crate::infer::kernels::Kernels as _;
        match $path {
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            $crate::infer::kernels::Path::Avx512 => {
                type $k = $crate::infer::kernels::avx512::Avx512;
                // SAFETY: the path is Avx512 only where the CPU has its features (Path::detect,
                // Path::all).
                unsafe { $k::enabled(|| $body) }
            }
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            $crate::infer::kernels::Path::Avx2 => {
                type $k = $crate::infer::kernels::avx2::Avx2;
                // SAFETY: as above, AVX2.
                unsafe { $k::enabled(|| $body) }
            }
            _ => {
                type $k = $crate::infer::kernels::Base;
                // SAFETY: the base set runs everywhere.
                unsafe { $k::enabled(|| $body) }
            }
        }
    }};
}
#[cfg(not(target_os = "solana"))]
pub(crate) use with_path;
