//! The sampling stages' items.

use super::Stage;
use crate::infer::sample::{cut, draw_part, max_part, weigh_part};
use crate::infer::state::{field, get_u32, set_u32, zero};

/// Items `ids` of a sampling stage (docs/inference.md, "Sampling in items"), its values between
/// items in the header's words (word loads on chain: the header is 8-byte aligned); `Some(n)`
/// when the draw reached its token at the n-th id of the range.
#[inline(always)]
pub(super) fn sampling(
    stage: Stage,
    header: &mut [u8],
    logits: &[u8],
    hist: &mut [u8],
    exp: &[u8],
    ids: core::ops::Range<usize>,
) -> Option<u32> {
    let at = |h: &[u8], offset: usize| get_u32(h, offset / 4);
    let at64 = |h: &[u8], offset: usize| at(h, offset) as u64 | (at(h, offset + 4) as u64) << 32;
    let put = |h: &mut [u8], offset: usize, v: u32| set_u32(h, offset / 4, v);
    let put64 = |h: &mut [u8], offset: usize, v: u64| {
        put(h, offset, v as u32);
        put(h, offset + 4, (v >> 32) as u32);
    };
    let first = ids.start == 0;
    let max = at(header, field::SAMPLE_MAX) as i32;
    let temperature = at(header, field::TEMPERATURE);
    match stage {
        Stage::Max => {
            let mut best = match first {
                true => (0, i32::MIN),
                false => (at(header, field::ARGMAX), max),
            };
            max_part(logits, ids, &mut best);
            put(header, field::ARGMAX, best.0);
            put(header, field::SAMPLE_MAX, best.1 as u32);
        }
        Stage::Weigh => {
            let mut total = match first {
                true => {
                    zero(hist);
                    0
                }
                false => at64(header, field::SAMPLE_LEFT),
            };
            weigh_part(logits, ids, hist, exp, max, temperature, &mut total);
            put64(header, field::SAMPLE_LEFT, total);
        }
        Stage::Cut => {
            let total = at64(header, field::SAMPLE_LEFT);
            let mut rng = at64(header, field::RNG);
            let nucleus = cut(hist, exp, total, at(header, field::TOP_P), &mut rng);
            put64(header, field::RNG, rng);
            put(header, field::SAMPLE_CUT, nucleus.cut);
            put(header, field::SAMPLE_TAKE, nucleus.take);
            put64(header, field::SAMPLE_LEFT, nucleus.r);
        }
        _ => {
            let start = ids.start as u32;
            let cut = at(header, field::SAMPLE_CUT);
            let mut take = at(header, field::SAMPLE_TAKE);
            let mut left = at64(header, field::SAMPLE_LEFT);
            let drawn = draw_part(
                logits,
                ids,
                exp,
                max,
                temperature,
                cut,
                &mut take,
                &mut left,
            );
            put(header, field::SAMPLE_TAKE, take);
            put64(header, field::SAMPLE_LEFT, left);
            // Past the last id without a token (never: r is below the nucleus's weight, which
            // the walk sums), the highest logit's id stays chosen.
            if let Some(id) = drawn {
                put(header, field::ARGMAX, id);
                return Some(id - start + 1);
            }
        }
    }
    None
}
