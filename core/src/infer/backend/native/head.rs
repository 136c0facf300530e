//! One attention head by a kernel set: the scores, their softmax, the weighted values.

use crate::infer::backend::Head;
use crate::infer::fixed::{saturate, shift_round};
use crate::infer::kernels::{with_path, Kernels, Path};
use crate::infer::state::{get, set};

/// The head `h` by the kernels of `path` (a path this machine runs).
pub(crate) fn attention_head_on(path: Path, h: &mut Head) -> i64 {
    // SAFETY: with_path picks a set the CPU runs.
    with_path!(path, K => attention_head_with::<K>(h))
}

/// One head's attention with the kernel set `K`.
///
/// # Safety
/// `K::available()`.
#[inline(always)]
unsafe fn attention_head_with<K: Kernels>(h: &mut Head) -> i64 {
    let head_size = h.query.len() / 4;
    let (positions, row_len) = (h.positions, h.row_len);
    let mut query = [0i64; 64];
    for (j, v) in query[..head_size].iter_mut().enumerate() {
        *v = get(h.query, j) as i64;
    }
    let query = &query[..head_size];
    let att = &mut h.att[..4 * positions];
    let keys = &h.keys[..positions * row_len];
    let max = K::scores(query, h.query, keys, row_len, h.offset, h.inv_sqrt, att);
    let reciprocal = K::softmax(att, max, h.exp);
    let values = &h.values[..positions * row_len];
    weighted_values::<K>(att, reciprocal, values, row_len, h.offset, h.out, head_size)
}

/// Positions whose attention weights [`weighted_values`] computes at a time: their cached
/// values (a head's slice of 64 rows) stay in the first-level cache while each group of outputs
/// sums over them.
const WEIGHTS_CHUNK: usize = 64;

/// out_j = Σ_t weight_t × value_t,j, rounded from 30 fractional bits, saturated; returns Σ out.
/// Every partial sum is bounded by Σ weights ≤ 2^30 times |value| ≤ 2^27. The positions go in
/// chunks: a chunk's weights are computed once, then summed against its cached values (exact
/// i64 sums: any order).
///
/// # Safety
/// `K::available()`.
#[inline(always)]
unsafe fn weighted_values<K: Kernels>(
    att: &[u8],
    reciprocal: u64,
    values: &[u8],
    row_len: usize,
    offset: usize,
    out: &mut [u8],
    head_size: usize,
) -> i64 {
    let positions = values.len() / row_len;
    // Every row's slice [offset, offset + 4 × head size) lies in `values`: the kernels read
    // them unchecked.
    assert!(offset + 4 * head_size <= row_len && head_size <= 64);
    let mut acc = [0i64; 64];
    let mut weights = [0u32; WEIGHTS_CHUNK];
    let mut weight_sum = 0i64;
    let mut start = 0;
    while start < positions {
        let n = WEIGHTS_CHUNK.min(positions - start);
        K::weights(
            &att[4 * start..4 * (start + n)],
            reciprocal,
            &mut weights[..n],
        );
        weight_sum += weights[..n].iter().map(|&w| w as i64).sum::<i64>();
        let rows = &values[start * row_len..(start + n) * row_len];
        K::accumulate(&mut acc[..head_size], &weights[..n], rows, row_len, offset);
        start += n;
    }
    // The kernels summed the cached words, v + 2^31 each.
    let back = weight_sum << 31;
    let mut sum = 0i64;
    for (j, &a) in acc[..head_size].iter().enumerate() {
        let v = saturate(shift_round(a - back, 30));
        set(out, j, v);
        sum += v as i64;
    }
    sum
}
