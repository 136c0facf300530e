//! `kernels::sbf` in the tests: the names and the integers of the program's assembly loops
//! (sbf.rs) in plain Rust, so that the SBF backend's loops around them run natively against
//! the other backends. The assembly itself runs in the program's tests, in the SBF VM.

use crate::infer::fixed::{exp_index, mul_q24, saturate, shift_round};
use crate::infer::forward::MAX_COLUMNS;

/// The widened input's room (the heap frame on chain): a fresh one, leaked.
pub fn wide_scratch() -> &'static mut [i64] {
    std::vec![0i64; MAX_COLUMNS].leak()
}

/// The i32 at `p`, widened.
///
/// # Safety
/// Four readable bytes at `p`.
pub unsafe fn load(p: *const u8) -> i64 {
    (p as *const i32).read_unaligned() as i64
}

/// Stores `v` at `p`.
///
/// # Safety
/// Four writable bytes at `p`.
pub unsafe fn store(p: *mut u8, v: u32) {
    (p as *mut u32).write_unaligned(v)
}

/// Σ_k row_k × x_k over `n` columns.
unsafe fn dot(row: *const u8, x: *const i64, n: usize) -> i64 {
    (0..n).map(|k| *row.add(k) as i64 * *x.add(k)).sum()
}

/// # Safety
/// As sbf.rs's.
pub unsafe fn dot1(a: *const u8, x: *const i64, n: usize) -> i64 {
    dot(a, x, n)
}

/// # Safety
/// As sbf.rs's.
pub unsafe fn dot2(a: *const u8, b: *const u8, x: *const i64, n: usize) -> (i64, i64) {
    (dot(a, x, n), dot(b, x, n))
}

/// # Safety
/// As sbf.rs's.
pub unsafe fn dot3(
    a: *const u8,
    b: *const u8,
    c: *const u8,
    x: *const i64,
    n: usize,
) -> (i64, i64, i64) {
    (dot(a, x, n), dot(b, x, n), dot(c, x, n))
}

/// The cached word at `p` as stored, v + 2^31, zero-extended (as SBF's word load reads it).
unsafe fn stored(p: *const u8) -> i64 {
    (p as *const u32).read_unaligned() as i64
}

/// Σ_t w_t × v_t,j for four outputs j, summed over the stored words and corrected once.
///
/// # Safety
/// As sbf.rs's.
pub unsafe fn weighted4(
    values: *const u8,
    row_len: usize,
    weights: *const u32,
    last: *const u32,
    weight_sum: u64,
) -> [i64; 4] {
    let mut acc = [0i64; 4];
    let (mut value, mut weight) = (values, weights);
    while weight != last {
        for (j, a) in acc.iter_mut().enumerate() {
            *a = a.wrapping_add(*weight as i64 * stored(value.add(4 * j)));
        }
        value = value.add(row_len);
        weight = weight.add(1);
    }
    acc.map(|a| a.wrapping_sub((weight_sum << 31) as i64))
}

/// Σ_j q_j × k_j over `n` values, summed over the stored words and corrected once.
///
/// # Safety
/// As sbf.rs's.
pub unsafe fn dot_i32(q: *const i64, key: *const u8, n: usize, q_sum: i64) -> i64 {
    let dot = (0..n).fold(0i64, |d, j| {
        d.wrapping_add(*q.add(j) * stored(key.add(4 * j)))
    });
    dot.wrapping_sub(q_sum << 31)
}

/// What `scores8` needs besides its pointers.
pub struct ScoreConstants {
    q_sum: i64,
    scale: u32,
}

impl ScoreConstants {
    pub fn new(q_sum: i64, inv_sqrt: u32) -> ScoreConstants {
        ScoreConstants {
            q_sum,
            scale: inv_sqrt,
        }
    }
}

/// The scores of a head of eight values at `n` cached positions; returns their maximum.
///
/// # Safety
/// As sbf.rs's.
pub unsafe fn scores8(
    q: *const i64,
    key: *const u8,
    row_len: usize,
    att: *mut u8,
    n: usize,
    constants: &ScoreConstants,
) -> i64 {
    let mut max = i32::MIN as i64;
    for t in 0..n {
        let dot = dot_i32(q, key.add(t * row_len), 8, constants.q_sum);
        let score = saturate(mul_q24(shift_round(dot, 16), constants.scale));
        store(att.add(4 * t), score as u32);
        max = max.max(score as i64);
    }
    max
}

/// The softmax's exponentials over `n` scores, written over them; returns Σ e.
///
/// # Safety
/// As sbf.rs's.
pub unsafe fn exponentials(att: *mut u8, n: usize, max: i64, exp: *const u8) -> u64 {
    let mut total = 0u64;
    for t in 0..n {
        let a = att.add(4 * t);
        let e = load(exp.add(4 * exp_index((max - load(a)) as u64))) as u32;
        store(a, e);
        total += e as u64;
    }
    total
}

/// The weights floor(e_t × `reciprocal` / 2^32) of `n` exponentials; returns their sum.
///
/// # Safety
/// As sbf.rs's.
pub unsafe fn weights(att: *const u8, n: usize, reciprocal: u64, weights: *mut u32) -> u64 {
    let mut sum = 0u64;
    for t in 0..n {
        let w = ((load(att.add(4 * t)) as u32 as u64 * reciprocal) >> 32) as u32;
        *weights.add(t) = w;
        sum += w as u64;
    }
    sum
}
