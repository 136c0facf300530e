//! One attention head as the program computes it: the integers of
//! `forward::attention_head_on`, in loops shaped for SBF. There a head's loops, inlined into
//! a run's stage function, ran out of registers: the query, the accumulators and the loop
//! counters went to the stack on every cached position. Here the head is its own function
//! (its arguments in one struct: SBF passes five registers), every cached row is reached by
//! pointer steps, and the weighted sum of values is taken four outputs at a time with the four
//! accumulators in registers. Every sum is exact in i64, so the order of the additions does not
//! change a bit.

#[cfg(not(target_os = "solana"))]
use super::fixed::exp_index;
use super::fixed::{mul_q24, saturate, shift_round, TABLE_LAST};
use crate::layout::MAX_CONTEXT;

/// A head's inputs and outputs.
pub struct Head<'a> {
    /// The head's query: head size i32 values.
    pub query: &'a [u8],
    /// The layer's key and value caches: rows of `row_len` bytes from position 0.
    pub keys: &'a [u8],
    pub values: &'a [u8],
    pub row_len: usize,
    /// Bytes from a row's start to the head's key (and value) head.
    pub offset: usize,
    /// Cached positions attended: 0 to pos.
    pub positions: usize,
    /// Header byte 68 (1 / sqrt(head size), 24 fractional bits) and the exponential table.
    pub inv_sqrt: u32,
    pub exp: &'a [u8],
    /// Scratch for `positions` values, and the head's slice of xb.
    pub att: &'a mut [u8],
    pub out: &'a mut [u8],
}

/// The i32 at `p`, widened.
///
/// # Safety
/// Four readable bytes at `p`, which on SBF is 4-byte aligned (`state::get_u32`).
#[inline(always)]
unsafe fn load(p: *const u8) -> i64 {
    #[cfg(target_os = "solana")]
    return (p as *const i32).read() as i64;
    #[cfg(not(target_os = "solana"))]
    return (p as *const i32).read_unaligned() as i64;
}

/// A cached key or value at `p` (the caches' offset binary, `state::CACHE_OFFSET`), widened.
///
/// # Safety
/// As [`load`].
#[inline(always)]
unsafe fn load_cached(p: *const u8) -> i64 {
    (load(p) as i32 ^ i32::MIN) as i64
}

/// # Safety
/// As [`load`], writable.
#[inline(always)]
unsafe fn store(p: *mut u8, v: u32) {
    #[cfg(target_os = "solana")]
    (p as *mut u32).write(v);
    #[cfg(not(target_os = "solana"))]
    (p as *mut u32).write_unaligned(v);
}

/// The head's outputs written to `out`; returns their sum. Panics (as slicing would) when a
/// slice is shorter than the positions and head size need.
#[cfg_attr(target_os = "solana", inline(never))]
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
        // On SBF a head of eight values (stories260K's) takes the assembly position loop,
        // which scores every position: none is left for the loop below (n = 0).
        #[cfg(target_os = "solana")]
        let n = if head_size == 8 {
            let q_sum = query[..8].iter().sum::<i64>();
            let constants = super::kernels::sbf::ScoreConstants::new(q_sum, h.inv_sqrt);
            max = super::kernels::sbf::scores8(qp, key, row_len, att, n, &constants);
            0
        } else {
            n
        };
        // On SBF, Σ q_j over the groups of four for kernels::sbf::dot_i32 (which sums
        // q × (k + 2^31), the cached words as they are).
        #[cfg(target_os = "solana")]
        let q_sum = query[..whole].iter().sum::<i64>();
        for t in 0..n {
            let mut dot = 0i64;
            let mut j = 0;
            #[cfg(target_os = "solana")]
            if whole != 0 {
                dot = super::kernels::sbf::dot_i32(qp, key, whole, q_sum);
                j = whole;
            }
            while j < whole {
                dot += *qp.add(j) * load_cached(key.add(4 * j))
                    + *qp.add(j + 1) * load_cached(key.add(4 * j + 4))
                    + *qp.add(j + 2) * load_cached(key.add(4 * j + 8))
                    + *qp.add(j + 3) * load_cached(key.add(4 * j + 12));
                j += 4;
            }
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
        let exp = h.exp.as_ptr();
        #[cfg(target_os = "solana")]
        let total = super::kernels::sbf::exponentials(att, n, max, exp);
        #[cfg(not(target_os = "solana"))]
        let total = {
            let mut total = 0u64;
            for t in 0..n {
                let a = att.add(4 * t);
                let index = exp_index((max - load(a)) as u64);
                let e = load(exp.add(4 * index)) as u32;
                store(a, e);
                total += e as u64;
            }
            total
        };
        let reciprocal = (1u64 << 62) / total;
        // The weights on this function's own stack (2 KiB of SBF's 4 KiB frame): the att
        // scratch keeps the exponentials, which the state holds.
        // Not zeroed (512 stores a head): weights t < n are written before they are read.
        let mut weights = core::mem::MaybeUninit::<[u32; MAX_CONTEXT as usize]>::uninit();
        let weights = weights.as_mut_ptr() as *mut u32;
        #[cfg(target_os = "solana")]
        let weight_sum = super::kernels::sbf::weights(att, n, reciprocal, weights);
        #[cfg(not(target_os = "solana"))]
        for t in 0..n {
            *weights.add(t) = ((load(att.add(4 * t)) as u32 as u64 * reciprocal) >> 32) as u32;
        }

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
            #[cfg(target_os = "solana")]
            let [a0, a1, a2, a3] = super::kernels::sbf::weighted4(
                values.add(4 * j),
                row_len,
                weights as *const u32,
                last,
                weight_sum,
            );
            #[cfg(not(target_os = "solana"))]
            let (mut a0, mut a1, mut a2, mut a3) = (0i64, 0i64, 0i64, 0i64);
            #[cfg(not(target_os = "solana"))]
            {
                let (mut value, mut weight) = (values.add(4 * j), weights as *const u32);
                while weight != last {
                    let w = *weight as i64;
                    a0 += w * load_cached(value);
                    a1 += w * load_cached(value.add(4));
                    a2 += w * load_cached(value.add(8));
                    a3 += w * load_cached(value.add(12));
                    value = value.add(row_len);
                    weight = weight.add(1);
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::forward::{attention_head_on, Path};
    use crate::infer::next_random;

    /// The program's head and every off-chain kernel set's head this machine runs (portable,
    /// AVX2, AVX-512) give the same bytes (outputs and the att scratch) and sum: seeded random
    /// caches at the ends of the value range, head sizes 1 to 64 (whole groups of four and
    /// remainders), grouped key heads, up to 300 positions, an exponential table whose entries
    /// use all 32 bits and one that starts at 2^30 as the artifact's does (where a single
    /// position makes R = 2^32), and scales (header byte 68) below 2^24 and from 2^31 on.
    #[test]
    fn the_programs_head_is_the_portable_head() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || next_random(&mut seed);
        let table = |top: u64| -> Vec<u8> {
            (0..=TABLE_LAST as u64)
                .flat_map(|i| ((top >> (i / 128)) as u32).to_le_bytes())
                .collect()
        };
        let (wide, artifact_like) = (table(u32::MAX as u64), table(1 << 30));
        let cases = [
            (1, 1, 1),
            (8, 4, 1),
            (8, 4, 65),
            (48, 6, 256),
            (64, 2, 300),
            (6, 3, 7),
            (2, 1, 9),
            (10, 2, 33),
            (8, 4, 1),
            (16, 2, 17),
            (48, 1, 9),
        ];
        for (round, &(head_size, kv_heads, positions)) in cases.iter().enumerate() {
            let exp = if round % 2 == 0 {
                &wide
            } else {
                &artifact_like
            };
            let kv_dim = head_size * kv_heads;
            let mut value = |i: u64| -> i32 {
                match (round + i as usize) % 5 {
                    0 => 1 << 27,
                    1 => -(1 << 27),
                    _ => (next() % (1 << 28)) as i32 - (1 << 27),
                }
            };
            // The caches in their offset binary (state::CACHE_OFFSET).
            let keys: Vec<u8> = (0..(positions * kv_dim) as u64)
                .flat_map(|i| (value(i) ^ i32::MIN).to_le_bytes())
                .collect();
            let values: Vec<u8> = (0..(positions * kv_dim) as u64)
                .flat_map(|i| (value(i) ^ i32::MIN).to_le_bytes())
                .collect();
            // In odd rounds a query of 16 bits, so that the scores spread instead of saturating.
            let query: Vec<u8> = (0..head_size as u64)
                .flat_map(|i| (value(i) >> (12 * (round % 2))).to_le_bytes())
                .collect();
            let inv_sqrt = match round % 3 {
                2 => next() as u32 | 1 << 31,
                _ => (next() % (1 << 24)) as u32,
            };
            for kv_head in 0..kv_heads {
                let (mut att_a, mut out_a) = (vec![0u8; 4 * positions], vec![0u8; 4 * head_size]);
                let (mut att_b, mut out_b) = (att_a.clone(), out_a.clone());
                // The portable head and its AVX2 and AVX-512 forms take the same arguments.
                macro_rules! forward_head {
                    ($path:expr, $att:expr, $out:expr) => {
                        attention_head_on(
                            $path,
                            inv_sqrt,
                            exp,
                            &query,
                            &keys,
                            &values,
                            kv_dim,
                            kv_head * head_size,
                            positions as u32 - 1,
                            $att,
                            $out,
                        )
                    };
                }
                let portable = forward_head!(Path::Portable, &mut att_a, &mut out_a);
                let program = attention_head_rows(&mut Head {
                    query: &query,
                    keys: &keys,
                    values: &values,
                    row_len: 4 * kv_dim,
                    offset: 4 * kv_head * head_size,
                    positions,
                    inv_sqrt,
                    exp,
                    att: &mut att_b,
                    out: &mut out_b,
                });
                for path in Path::all() {
                    let (mut att_c, mut out_c) =
                        (vec![0u8; 4 * positions], vec![0u8; 4 * head_size]);
                    let sum = forward_head!(path, &mut att_c, &mut out_c);
                    let case = format!("{path:?}, case {round}, kv head {kv_head}");
                    assert_eq!(sum, portable, "sum, {case}");
                    assert_eq!(out_c, out_a, "outputs, {case}");
                    assert_eq!(att_c, att_a, "att, {case}");
                }
                assert_eq!(program, portable, "sum, case {round}, kv head {kv_head}");
                assert_eq!(out_b, out_a, "outputs, case {round}, kv head {kv_head}");
                // The scratch is state too: both leave the exponentials in it.
                assert_eq!(att_b, att_a, "att, case {round}, kv head {kv_head}");
            }
        }
    }
}
