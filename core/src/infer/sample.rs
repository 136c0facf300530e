//! Choosing the next token from the logits (docs/inference.md, "Sampling"): greedy, or the
//! temperature's softmax through the exponential table, cut to the top-p nucleus, drawn with
//! xorshift64*.

use super::fixed::{exp_index, mul_hi_u64};
use super::state::{get, get_u32, set_u32, word, HIST_LEN};
use crate::{Block, Metadata};

/// 1.0 with 16 fractional bits: top-p of 1.0 keeps every token.
pub const ONE: u32 = 1 << 16;
/// The highest temperature accepted: 16.0.
pub const MAX_TEMPERATURE: u32 = 16 << 16;

/// How a run samples. Temperature and top-p have 16 fractional bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// 0 is greedy; otherwise 1 to [`MAX_TEMPERATURE`].
    pub temperature: u32,
    /// 1 to [`ONE`].
    pub top_p: u32,
    /// The generator's first state; not 0 when sampling (0 is xorshift's fixed point).
    pub seed: u64,
}

impl Settings {
    /// The highest logit every time.
    pub const fn greedy() -> Settings {
        Settings {
            temperature: 0,
            top_p: ONE,
            seed: 0,
        }
    }
}

/// xorshift64* (Vigna, 2016; llama2.c's `random_u32` before its final shift):
/// s ^= s >> 12; s ^= s << 25; s ^= s >> 27; output s × 0x2545F4914F6CDD1D mod 2^64.
pub fn next_random(state: &mut u64) -> u64 {
    let mut s = *state;
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    *state = s;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// The id of the highest logit, the lowest id among equals.
pub fn argmax(logits: &[u8]) -> u32 {
    // Four logits per turn, their highest first compared with the best so far (on SBF about
    // 6 units a logit, against 16 one by one: the greedy step of a 32,000-token vocabulary).
    let (mut best, mut best_value) = (0, i32::MIN);
    let mut blocks = logits.chunks_exact(16);
    for (b, block) in (&mut blocks).enumerate() {
        let v = [
            word(&block[0..4]),
            word(&block[4..8]),
            word(&block[8..12]),
            word(&block[12..16]),
        ];
        let top = v[0].max(v[1]).max(v[2].max(v[3]));
        if top > best_value {
            best_value = top;
            best = 4 * b + v.iter().position(|&x| x == top).unwrap_or(0);
        }
    }
    let whole = 4 * (logits.len() / 16);
    for (i, v) in blocks.remainder().chunks_exact(4).enumerate() {
        let v = word(v);
        if v > best_value {
            best = whole + i;
            best_value = v;
        }
    }
    best as u32
}

/// The exponential table's index of logit `i`: round((max − logit) × 2^16 / temperature / 2^8).
#[inline]
fn index_of(logits: &[u8], i: usize, max: i32, temperature: u32) -> usize {
    let d = (max as i64 - get(logits, i) as i64) as u64;
    exp_index((d << 16) / temperature as u64)
}

/// A token drawn from softmax(logits / temperature) restricted to the top-p nucleus, with one
/// output of the generator. `settings.temperature` is not 0.
/// `hist` is scratch for [`HIST_LEN`] counts.
pub fn sample(
    logits: &[u8],
    hist: &mut [u8],
    meta: &Metadata,
    settings: &Settings,
    rng: &mut u64,
) -> u32 {
    let vocab = logits.len() / 4;
    let exp = meta.block_bytes(Block::Exp);
    let e = |k: usize| get_u32(exp, k) as u64;
    let max = get(logits, argmax(logits) as usize);
    let t = settings.temperature;

    // Tokens and total weight per table index.
    super::state::zero(hist);
    let mut total = 0u64;
    for i in 0..vocab {
        let k = index_of(logits, i, max, t);
        set_u32(hist, k, get_u32(hist, k) + 1);
        total += e(k);
    }

    // The nucleus: the heaviest tokens (lowest index first, then lowest id) until their weight
    // exceeds top_p × total: every token below index `cut`, and the first `take` at `cut`.
    let bound = settings.top_p as u64 * total;
    let (mut cut, mut take, mut kept) = (HIST_LEN, 0u64, total);
    if settings.top_p < ONE {
        let mut below = 0u64;
        for k in 0..HIST_LEN {
            let count = get_u32(hist, k) as u64;
            if (below + count * e(k)) << 16 > bound {
                cut = k;
                take = ((bound - (below << 16)) >> 16) / e(k) + 1;
                kept = below + take * e(k);
                break;
            }
            below += count * e(k);
        }
    }

    // Draw r in [0, kept) and walk the nucleus in id order.
    let r = mul_hi_u64(next_random(rng), kept);
    let mut acc = 0u64;
    let mut at_cut = 0u64;
    let mut last = 0;
    for i in 0..vocab {
        let k = index_of(logits, i, max, t);
        if k > cut || (k == cut && at_cut == take) {
            continue;
        }
        if k == cut {
            at_cut += 1;
        }
        acc += e(k);
        last = i;
        if acc > r {
            return i as u32;
        }
    }
    last as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked argmax is the first index of the highest value, as a plain scan finds it:
    /// ties inside and across blocks, every length from 1 to 40 logits, the extremes.
    #[test]
    fn argmax_is_the_lowest_id_of_the_highest_logit() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for n in 1..=40usize {
            for round in 0..50 {
                let values: Vec<i32> = (0..n)
                    .map(|_| {
                        let r = next_random(&mut seed);
                        match round % 3 {
                            0 => (r % 4) as i32 - 2,
                            1 => [i32::MIN, i32::MAX, 0][(r % 3) as usize],
                            _ => r as i32,
                        }
                    })
                    .collect();
                let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                let top = *values.iter().max().unwrap();
                let first = values.iter().position(|&v| v == top).unwrap();
                assert_eq!(argmax(&bytes), first as u32, "{values:?}");
            }
        }
    }
}
