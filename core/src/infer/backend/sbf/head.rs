//! One attention head as the program computes it: the integers of the native backend's head,
//! in loops shaped for SBF. There a head's loops, inlined into a run's stage function, ran out
//! of registers: the query, the accumulators and the loop counters went to the stack on every
//! cached position. Here the head is its own function (its arguments in one struct: SBF passes
//! five registers), every cached row is reached by pointer steps, and the weighted sum of
//! values is taken four outputs at a time with the four accumulators in registers. Every sum
//! is exact in i64, so the order of the additions does not change a bit.

use crate::infer::backend::Head;
use crate::infer::fixed::{mul_q24, saturate, shift_round, TABLE_LAST};
use crate::infer::kernels::sbf::{self, load, store};
use crate::layout::MAX_CONTEXT;

/// A cached key or value at `p` (the caches' offset binary, `state::CACHE_OFFSET`), widened.
///
/// # Safety
/// As `kernels::sbf::load`.
#[inline(always)]
unsafe fn load_cached(p: *const u8) -> i64 {
    (load(p) as i32 ^ i32::MIN) as i64
}

/// The head's outputs written to `out`; returns their sum. Panics (as slicing would) when a
/// slice is shorter than the positions and head size need.
#[inline(never)]
pub fn attention_head_rows(h: &mut Head) -> i64 {
    let head_size = h.query.len() / 4;
    let (n, row_len) = (h.positions, h.row_len);
    assert!((1..=64).contains(&head_size) && (1..=MAX_CONTEXT as usize).contains(&n));
    let span = (n - 1) * row_len + h.offset + 4 * head_size;
    assert!(h.keys.len() >= span && h.values.len() >= span);
    assert!(h.att.len() >= 4 * n && h.out.len() >= 4 * head_size);
    assert!(h.exp.len() >= 4 * (TABLE_LAST + 1));
    let whole = head_size & !3;
    // SAFETY: every pointer below stays within the spans checked above: key and value rows
    // t < n at `offset` + 4j, j < head size; att values t < n; exp entries ≤ TABLE_LAST.
    unsafe {
        let mut query = [0i64; 64];
        for (j, v) in query[..head_size].iter_mut().enumerate() {
            *v = load(h.query.as_ptr().add(4 * j));
        }
        let qp = query.as_ptr();
        let att = h.att.as_mut_ptr();

        // Scores: q · k, rounded to 16 fractional bits, times header byte 68, saturated.
        let mut max = i32::MIN as i64;
        let mut key = h.keys.as_ptr().add(h.offset);
        // A head of eight values (stories260K's) takes the position loop of `scores8`, which
        // scores every position: none is left for the loop below (n = 0).
        let n = if head_size == 8 {
            let q_sum = query[..8].iter().sum::<i64>();
            let constants = sbf::ScoreConstants::new(q_sum, h.inv_sqrt);
            max = sbf::scores8(qp, key, row_len, att, n, &constants);
            0
        } else {
            n
        };
        // Σ q_j over the groups of four for `dot_i32` (which sums q × (k + 2^31), the cached
        // words as they are).
        let q_sum = query[..whole].iter().sum::<i64>();
        for t in 0..n {
            let mut dot = 0i64;
            if whole != 0 {
                dot = sbf::dot_i32(qp, key, whole, q_sum);
            }
            let mut j = whole;
            while j < head_size {
                dot += *qp.add(j) * load_cached(key.add(4 * j));
                j += 1;
            }
            let score = saturate(mul_q24(shift_round(dot, 16), h.inv_sqrt));
            store(att.add(4 * t), score as u32);
            max = max.max(score as i64);
            key = key.add(row_len);
        }

        // Softmax: e_t = exp[round((max − score) / 2^8)], written over the scores; with
        // R = floor(2^62 / Σ e), the weights are floor(e_t × R / 2^32), each at most 2^30.
        let n = h.positions;
        let total = sbf::exponentials(att, n, max, h.exp.as_ptr());
        let reciprocal = (1u64 << 62) / total;
        // The weights on this function's own stack (2 KiB of SBF's 4 KiB frame): the att
        // scratch keeps the exponentials, which the state holds.
        // Not zeroed (512 stores a head): weights t < n are written before they are read.
        let mut weights = core::mem::MaybeUninit::<[u32; MAX_CONTEXT as usize]>::uninit();
        let weights = weights.as_mut_ptr() as *mut u32;
        let weight_sum = sbf::weights(att, n, reciprocal, weights);

        // Σ_t weight × value, four outputs at a time, rounded from 30 fractional bits.
        let mut sum = 0i64;
        let out = h.out.as_mut_ptr();
        let values = h.values.as_ptr().add(h.offset);
        let mut emit = |j: usize, acc: i64| {
            let v = saturate(shift_round(acc, 30));
            store(out.add(4 * j), v as u32);
            sum += v as i64;
        };
        let last = weights.add(n) as *const u32;
        let mut j = 0;
        while j < whole {
            let value = values.add(4 * j);
            let [a0, a1, a2, a3] = sbf::weighted4(value, row_len, weights, last, weight_sum);
            emit(j, a0);
            emit(j + 1, a1);
            emit(j + 2, a2);
            emit(j + 3, a3);
            j += 4;
        }
        while j < head_size {
            let mut acc = 0i64;
            let (mut value, mut weight) = (values.add(4 * j), weights as *const u32);
            while weight != last {
                acc += *weight as i64 * load_cached(value);
                value = value.add(row_len);
                weight = weight.add(1);
            }
            emit(j, acc);
            j += 1;
        }
        sum
    }
}
