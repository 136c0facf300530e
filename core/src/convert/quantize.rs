//! Per-row int8 quantization (spec "Rows and quantization", D2).
//!
//! ```text
//! m = max |w| (f64);  m == 0: stored = 1, every q = 0
//! scale = m / 127;  q[i] = clamp(round(w[i] / scale), -127, 127)
//! stored = max(1, round(scale × 2^24)) as u32   (an error if it does not fit)
//! row = stored (u32) | 4 zero bytes | q[i] + 128 per column | 128 up to the row length
//! ```

use super::TWO_24;
use crate::le::{f32_at, put_u32};
use crate::{ROW_WEIGHTS_OFFSET, WEIGHT_BIAS};
use rayon::prelude::*;

/// A row whose scale does not fit its u32 field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaleOverflow {
    pub row: u32,
    pub scale: f64,
}

/// Quantizes one row of little-endian, finite f32 `weights` into `out` (the row length).
pub fn quantize_row(weights: &[u8], out: &mut [u8]) -> Result<(), f64> {
    let columns = weights.len() / 4;
    let floats = weights.chunks_exact(4).map(|b| f32_at(b, 0));
    // For finite floats, the bits without the sign order the way |w| does.
    let max_bits = floats
        .clone()
        .map(|w| w.to_bits() & 0x7fff_ffff)
        .max()
        .unwrap_or(0);
    let m = f32::from_bits(max_bits) as f64;
    let (head, rest) = out.split_at_mut(ROW_WEIGHTS_OFFSET);
    let (weight_bytes, padding) = rest.split_at_mut(columns);
    padding.fill(WEIGHT_BIAS as u8);
    head[4..].fill(0);
    if m == 0.0 {
        put_u32(head, 0, 1);
        weight_bytes.fill(WEIGHT_BIAS as u8);
        return Ok(());
    }
    let scale = m / 127.0;
    let stored = (scale * TWO_24).round();
    if stored > u32::MAX as f64 {
        return Err(scale);
    }
    put_u32(head, 0, (stored as u32).max(1));
    for (byte, w) in weight_bytes.iter_mut().zip(floats) {
        // |w / scale| <= 127 (plus rounding), so the integer rounding below is exact.
        let q = round_half_away((w as f64) / scale).clamp(-127, 127);
        *byte = (q + WEIGHT_BIAS) as u8;
    }
    Ok(())
}

/// `f64::round` (half away from zero) for |x| < 2^31, as an i32, in a form the compiler
/// vectorizes: `x - trunc(x)` is exact, so comparing it with ±0.5 decides the rounding exactly.
#[inline(always)]
pub fn round_half_away(x: f64) -> i32 {
    let t = x as i32;
    let f = x - t as f64;
    t + (f >= 0.5) as i32 - (f <= -0.5) as i32
}

/// Quantizes a matrix of `rows` rows of `columns` floats into `out` (rows × row length
/// bytes), rows in parallel. On failure, the first row (lowest index) whose scale overflows.
pub fn quantize_matrix(
    weights: &[u8],
    columns: usize,
    row_len: usize,
    out: &mut [u8],
) -> Result<(), ScaleOverflow> {
    let result = out
        .par_chunks_mut(row_len)
        .zip(weights.par_chunks(4 * columns))
        .with_min_len(16)
        .try_for_each(|(row_out, row_in)| quantize_row(row_in, row_out).map_err(|_| ()));
    if result.is_ok() {
        return Ok(());
    }
    // Error path: find the first failing row in order.
    let mut scratch = vec![0u8; row_len];
    for (row, row_in) in weights.chunks(4 * columns).enumerate() {
        if let Err(scale) = quantize_row(row_in, &mut scratch) {
            return Err(ScaleOverflow {
                row: row as u32,
                scale,
            });
        }
    }
    unreachable!("a row failed in parallel but not in order")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_half_away_is_f64_round() {
        let mut cases = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            126.5,
            -126.5,
            127.49999999999999,
            0.49999999999999994,
        ];
        for i in -300..=300 {
            let x = i as f64 / 2.0;
            cases.extend([x, x.next_up(), x.next_down()]);
        }
        let mut state = 1u64;
        for _ in 0..100_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            cases.push(((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 260.0);
        }
        for x in cases {
            assert_eq!(round_half_away(x) as f64, x.round(), "{x:e}");
        }
    }
}
