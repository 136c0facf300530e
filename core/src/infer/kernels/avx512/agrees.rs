//! The AVX-512 set's known-answer check ([`agrees`]): every kernel against exact sums and the
//! portable kernels, on this CPU, before the set is first taken.

use super::*;
use crate::infer::fixed::{mul_q24, saturate};
use crate::infer::kernels::portable::{self, Portable};
use crate::infer::state::word;
use std::vec::Vec;

/// A known-answer check of every kernel of the set against exact sums and the portable
/// kernels, run once before the set is first taken (about a million multiply-accumulates):
/// every column count from 1 to 130 and 172, 288, 2,048 at the activations' extremes and on
/// seeded values ([`rows_agree`]); heads of 1 to 17, 48 and 64 values ([`head_agrees`]). The
/// tests assert the same on every machine that has the features (`forward::tests`,
/// `head::tests`); this check keeps a machine the tests never ran on from taking the set if it
/// disagreed there.
///
/// # Safety
/// The set's features.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
pub(super) unsafe fn agrees() -> bool {
    let mut seed = 0x853C_49E6_748F_EA9Bu64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let lengths = (1..=130).chain([172, 288, 2048]);
    for (round, n) in lengths.enumerate() {
        if !rows_agree(round, n, &mut next) {
            return false;
        }
    }
    for head_size in (1..=17).chain([48, 64]) {
        if !head_agrees(head_size, &mut next) {
            return false;
        }
    }
    true
}

/// The row kernels on `n` columns: an input at the activations' extremes (every seventh value,
/// from `round`) and on seeded values, four rows (the first all 255); [`planes_dot`],
/// [`planes_dot4`], [`planes_products4`] and, up to [`BLOCK`] columns, [`halves_products8`]
/// against the exact sums and the row product's rule.
///
/// # Safety
/// The set's features.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
unsafe fn rows_agree(round: usize, n: usize, next: &mut impl FnMut() -> u64) -> bool {
    let x: Vec<i32> = (0..n)
        .map(|i| match (round + i) % 7 {
            0 => 1 << 27,
            1 => -(1 << 27),
            _ => (next() % (1 << 28)) as i32 - (1 << 27),
        })
        .collect();
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut planes = std::vec![0i8; 4 * n];
    let (mut hi, mut lo) = (std::vec![0i16; n], std::vec![0i16; n]);
    split_planes(&bytes, &mut planes, n, &mut hi, &mut lo);
    let plane: [&[i8]; 4] = core::array::from_fn(|k| &planes[k * n..(k + 1) * n]);
    let rows: Vec<Vec<u8>> = (0..4)
        .map(|r| {
            (0..n)
                .map(|i| {
                    if r == 0 {
                        255
                    } else {
                        (next() >> (i % 8)) as u8
                    }
                })
                .collect()
        })
        .collect();
    let exact: Vec<i64> = rows
        .iter()
        .map(|w| w.iter().zip(&x).map(|(&w, &v)| w as i64 * v as i64).sum())
        .collect();
    let four = planes_dot4([&rows[0], &rows[1], &rows[2], &rows[3]], plane);
    if four[..] != exact[..]
        || rows
            .iter()
            .zip(&exact)
            .any(|(w, &e)| planes_dot(w, plane) != e)
    {
        return false;
    }
    // Scales across the whole u32 range, and biases of either sign.
    let scales = [1, next() as u32, (next() as u32) | 1 << 31, u32::MAX];
    let bias = (next() % (1 << 40)) as i64 - (1 << 39);
    let products = planes_products4(
        [&rows[0], &rows[1], &rows[2], &rows[3]],
        plane,
        scales,
        bias,
    );
    if (0..4).any(|r| products[r] != saturate(mul_q24(exact[r] - bias, scales[r]))) {
        return false;
    }
    if n <= BLOCK {
        let rows8: [&[u8]; 8] = core::array::from_fn(|r| &rows[r % 4][..]);
        let scales8: [u32; 8] = core::array::from_fn(|r| scales[(r + 1) % 4]);
        let eight = halves_products8(rows8, &hi, &lo, scales8, bias);
        let rule = |r: usize| saturate(mul_q24(exact[r % 4] - bias, scales8[r]));
        if (0..8).any(|r| eight[r] != rule(r)) {
            return false;
        }
    }
    true
}

/// The head kernels on a head of `head_size` values over nine positions: [`head_dot`] and
/// [`accumulate`] against the portable set's, then [`scores_agree`].
///
/// # Safety
/// The set's features.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
unsafe fn head_agrees(head_size: usize, next: &mut impl FnMut() -> u64) -> bool {
    let (positions, row_len) = (9, 4 * head_size + 8);
    // Words within the contract's ±2^27 (the query, the keys and the values of a state):
    // wider ones overflow the portable sums' i64, which a debug build refuses.
    // The caches' offset binary (state::CACHE_OFFSET); the query plain.
    let values: Vec<u8> = (0..positions * row_len / 4)
        .flat_map(|_| (((next() % (1 << 28)) as i32 - (1 << 27)) ^ i32::MIN).to_le_bytes())
        .collect();
    let q: Vec<u8> = values[..4 * head_size]
        .chunks_exact(4)
        .flat_map(|v| crate::infer::state::cached(v).to_le_bytes())
        .collect();
    let q = &q[..];
    let query: Vec<i64> = q.chunks_exact(4).map(|v| word(v) as i64).collect();
    let key = &values[row_len + 4..row_len + 4 + 4 * head_size];
    if head_dot(q, key) != portable::head_dot(&query, key) {
        return false;
    }
    // Softmax weights: each at most 2^30, their sum too (the contract's bound).
    let weights: Vec<u32> = (0..positions)
        .map(|_| (next() % (1 << 30) / positions as u64) as u32)
        .collect();
    let (mut a, mut b) = (std::vec![3i64; head_size], std::vec![3i64; head_size]);
    accumulate(&mut a, &weights, &values, row_len, 8);
    portable::accumulate(&mut b, &weights, &values, row_len, 8);
    a == b && scores_agree(q, &values, row_len, next)
}

/// [`scores`], [`softmax`] and [`weights_of`] against the portable set's, over `values` as
/// the cached keys (rows of `row_len` bytes, the head's key from byte 8): the query as given
/// (most scores saturate) and narrowed to 16 bits (the scores spread), the artifact's
/// exponential table (`EXP_TABLE_BYTES`).
///
/// # Safety
/// The set's features.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
unsafe fn scores_agree(
    q: &[u8],
    values: &[u8],
    row_len: usize,
    next: &mut impl FnMut() -> u64,
) -> bool {
    let exp = &crate::EXP_TABLE_BYTES;
    let positions = values.len() / row_len;
    for shift in [0, 12] {
        let q: Vec<u8> = q
            .chunks_exact(4)
            .flat_map(|v| (word(v) >> shift).to_le_bytes())
            .collect();
        let query: Vec<i64> = q.chunks_exact(4).map(|v| word(v) as i64).collect();
        let inv_sqrt = (next() % (1 << 24)) as u32;
        let (mut a, mut b) = (std::vec![0u8; 4 * positions], std::vec![0u8; 4 * positions]);
        let max = scores(&q, values, row_len, 8, inv_sqrt, &mut a);
        if max != Portable::scores(&query, &q, values, row_len, 8, inv_sqrt, &mut b) || a != b {
            return false;
        }
        let reciprocal = softmax(&mut a, max, exp);
        if reciprocal != Portable::softmax(&mut b, max, exp) || a != b {
            return false;
        }
        let (mut wa, mut wb) = (std::vec![0u32; positions], std::vec![0u32; positions]);
        weights_of(&a, reciprocal as u32, &mut wa);
        Portable::weights(&a, reciprocal, &mut wb);
        if wa != wb {
            return false;
        }
    }
    true
}
