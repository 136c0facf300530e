//! Choosing the next token from the logits (docs/inference.md, "Sampling"): greedy, or the
//! temperature's softmax through the exponential table, cut to the top-p nucleus, drawn with
//! xorshift64*.

use super::fixed::{exp_index, mul_hi_u64};
use super::state::{get, get_u32, set_u32, word, HIST_LEN};

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
/// Total for any bytes: a logit above `max` (never, when `max` is the highest) counts as
/// `max`, a temperature of 0 (never when sampling) as 1.
#[inline(always)]
fn index_of(logits: &[u8], i: usize, max: i32, temperature: u32) -> usize {
    index_of_value(get(logits, i), max, temperature)
}

#[inline(always)]
fn index_of_value(logit: i32, max: i32, temperature: u32) -> usize {
    let d = (max as i64 - logit as i64).max(0) as u64;
    exp_index((d << 16) / temperature.max(1) as u64)
}

/// A token drawn from softmax(logits / temperature) restricted to the top-p nucleus, with one
/// output of the generator, in one pass: the rule as written, which a run does in items (the
/// Max, Weigh, Cut and Draw stages: [`max_part`], [`weigh_part`], [`cut`], [`draw_part`]) with
/// the same token. `settings.temperature` is not 0. `hist` is scratch for [`HIST_LEN`]
/// counts, `exp` the exponential table's bytes (section zero's block).
pub fn sample(
    logits: &[u8],
    hist: &mut [u8],
    exp: &[u8],
    settings: &Settings,
    rng: &mut u64,
) -> u32 {
    let vocab = logits.len() / 4;
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

// The sampler split into items (docs/inference.md, "Sampling in items"): the stages Max,
// Weigh, Cut and Draw of a run call these over ranges of ids, in id order, keeping what
// passes from one range to the next in the state's header. Any split of the ids into ranges
// gives the token of [`sample`] (test `split_sampling_is_the_one_pass_sampler`).

/// The highest logit over ids `range` of `logits`, folded into `best` = (id, value): the
/// lowest id of the highest value, as [`argmax`] over the whole vector when the ranges cover
/// it in order from `best` = (0, `i32::MIN`).
#[inline(always)]
pub fn max_part(logits: &[u8], range: core::ops::Range<usize>, best: &mut (u32, i32)) {
    let part = &logits[4 * range.start..4 * range.end];
    let i = argmax(part) as usize;
    let value = get(part, i);
    if value > best.1 {
        *best = ((range.start + i) as u32, value);
    }
}

/// Step 1 of the rule over ids `range`: each id's table index counted in `hist`, its weight
/// added to `total`. `hist` is zero and `total` 0 before the first range.
#[inline(always)]
pub fn weigh_part(
    logits: &[u8],
    range: core::ops::Range<usize>,
    hist: &mut [u8],
    exp: &[u8],
    max: i32,
    temperature: u32,
    total: &mut u64,
) {
    let part = &logits[4 * range.start..4 * range.end];
    let mut sum = *total;
    for logit in part.chunks_exact(4) {
        let k = index_of_value(word(logit), max, temperature);
        set_u32(hist, k, get_u32(hist, k).wrapping_add(1));
        sum = sum.wrapping_add(get_u32(exp, k) as u64);
    }
    *total = sum;
}

/// Where the draw walks, from [`cut`]: every id of index below `cut`, the first `take` of
/// index `cut`, and the draw's point `r`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nucleus {
    pub cut: u32,
    pub take: u32,
    pub r: u64,
}

/// Steps 2 and 3 of the rule: the nucleus from the counts and the total weight, and the
/// point r drawn in its weight with one output of the generator.
pub fn cut(hist: &[u8], exp: &[u8], total: u64, top_p: u32, rng: &mut u64) -> Nucleus {
    let e = |k: usize| get_u32(exp, k) as u64;
    let bound = (top_p as u64).wrapping_mul(total);
    let (mut cut, mut take, mut kept) = (HIST_LEN, 0u64, total);
    if top_p < ONE {
        let mut below = 0u64;
        for (k, count) in hist[..4 * HIST_LEN].chunks_exact(4).enumerate() {
            let weight = (word(count) as u32 as u64).wrapping_mul(e(k));
            if below.wrapping_add(weight) << 16 > bound {
                cut = k;
                // e(k) > 0 here: a weight of 0 leaves the comparison as it was below k.
                take = (bound.wrapping_sub(below << 16) >> 16) / e(k).max(1) + 1;
                kept = below.wrapping_add(take.wrapping_mul(e(k)));
                break;
            }
            below = below.wrapping_add(weight);
        }
    }
    Nucleus {
        cut: cut as u32,
        take: take as u32,
        r: mul_hi_u64(next_random(rng), kept),
    }
}

/// Step 3's walk over ids `range`, in id order: `left` is r less the weight of the nucleus's
/// ids walked so far, `take` the ids of index `cut` still in the nucleus. The id chosen, the
/// first whose weight is above what is left, or `None` past the range.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn draw_part(
    logits: &[u8],
    range: core::ops::Range<usize>,
    exp: &[u8],
    max: i32,
    temperature: u32,
    cut: u32,
    take: &mut u32,
    left: &mut u64,
) -> Option<u32> {
    let part = &logits[4 * range.start..4 * range.end];
    let cut = cut as usize;
    for (j, logit) in part.chunks_exact(4).enumerate() {
        let k = index_of_value(word(logit), max, temperature);
        if k > cut || (k == cut && *take == 0) {
            continue;
        }
        if k == cut {
            *take -= 1;
        }
        let w = get_u32(exp, k) as u64;
        if w > *left {
            return Some((range.start + j) as u32);
        }
        *left -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exp_table::EXP_TABLE_BYTES;

    /// Ranges covering 0..n in order, of random lengths (1 to `most`).
    fn ranges(n: usize, most: u64, seed: &mut u64) -> Vec<core::ops::Range<usize>> {
        let mut out = vec![];
        let mut at = 0;
        while at < n {
            let len = (1 + next_random(seed) % most) as usize;
            out.push(at..(at + len).min(n));
            at += len;
        }
        out
    }

    /// The stages' order over random ranges of ids: Max, then (when sampling) Weigh, Cut and
    /// Draw, the values between ranges kept as a run keeps them in its header.
    fn split_sample(
        logits: &[u8],
        hist: &mut [u8],
        settings: &Settings,
        rng: &mut u64,
        seed: &mut u64,
    ) -> u32 {
        let n = logits.len() / 4;
        let most = [1, 3, 16, 100, 5_000][(next_random(seed) % 5) as usize];
        let mut best = (0, i32::MIN);
        for range in ranges(n, most, seed) {
            max_part(logits, range, &mut best);
        }
        // Whatever the last token left in the counts.
        hist.fill(0);
        let mut total = 0;
        for range in ranges(n, most, seed) {
            weigh_part(
                logits,
                range,
                hist,
                &EXP_TABLE_BYTES,
                best.1,
                settings.temperature,
                &mut total,
            );
        }
        let nucleus = cut(hist, &EXP_TABLE_BYTES, total, settings.top_p, rng);
        let (mut take, mut left) = (nucleus.take, nucleus.r);
        for range in ranges(n, most, seed) {
            let drawn = draw_part(
                logits,
                range,
                &EXP_TABLE_BYTES,
                best.1,
                settings.temperature,
                nucleus.cut,
                &mut take,
                &mut left,
            );
            if let Some(id) = drawn {
                return id;
            }
        }
        panic!("the walk passed the nucleus's weight: {nucleus:?}");
    }

    /// The property: over random logits (narrow and wide spreads, ties, the extremes a
    /// classifier's saturated logits reach), temperatures, top-p and generator states, the
    /// split sampler over random ranges gives the one-pass sampler's token, leaves the same
    /// counts and draws the same generator output; the highest logit is `argmax`'s.
    #[test]
    fn split_sampling_is_the_one_pass_sampler() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut hist = vec![0u8; 4 * HIST_LEN];
        let mut hist2 = vec![0u8; 4 * HIST_LEN];
        for round in 0..3_000 {
            let n = match round % 4 {
                0 => 1 + (next_random(&mut seed) % 8) as usize,
                1 => 1 + (next_random(&mut seed) % 600) as usize,
                2 => 512,
                _ => 1 + (next_random(&mut seed) % 4_000) as usize,
            };
            let spread = [4u64, 1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28][round % 6];
            let values: Vec<i32> = (0..n)
                .map(|_| {
                    let r = next_random(&mut seed);
                    match r % 11 {
                        0 => (1 << 27) - 1,
                        1 => -(1 << 27),
                        _ => ((r >> 8) % spread) as i32 - (spread / 2) as i32,
                    }
                })
                .collect();
            let logits: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let temperature = match next_random(&mut seed) % 4 {
                0 => 1 + (next_random(&mut seed) % 256) as u32,
                1 => MAX_TEMPERATURE - (next_random(&mut seed) % 3) as u32,
                _ => 1 + (next_random(&mut seed) % MAX_TEMPERATURE as u64) as u32,
            };
            let top_p = match next_random(&mut seed) % 4 {
                0 => ONE,
                1 => 1 + (next_random(&mut seed) % 16) as u32,
                _ => 1 + (next_random(&mut seed) % ONE as u64) as u32,
            };
            let settings = Settings {
                temperature,
                top_p,
                seed: 0,
            };
            let state = next_random(&mut seed) | 1;
            let (mut a, mut b) = (state, state);
            hist2.fill(0xA5);
            let one = sample(&logits, &mut hist, &EXP_TABLE_BYTES, &settings, &mut a);
            let split = split_sample(&logits, &mut hist2, &settings, &mut b, &mut seed);
            assert_eq!(split, one, "round {round}: {settings:?}, {n} logits");
            assert_eq!(a, b, "round {round}: one output of the generator");
            assert!(hist == hist2, "round {round}: the counts");
        }
    }

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
