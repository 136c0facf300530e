//! The fixed-point coefficients and lookup tables of section zero (D3, D4). All math in f64
//! from the f32 inputs, rounded half away from zero, an error when a value does not fit.

use super::checkpoint::{Checkpoint, Tensor};
use super::{ConvertError, TWO_24};
use crate::{Config, EXP_TABLE_LEN, SILU_TABLE_LEN};

const TWO_30: f64 = (1u64 << 30) as f64;
const TWO_16: f64 = (1u64 << 16) as f64;

/// round(x) as an i32, or None when it does not fit.
pub fn fit_i32(x: f64) -> Option<i32> {
    let r = x.round();
    (r >= i32::MIN as f64 && r <= i32::MAX as f64).then_some(r as i32)
}

/// The normalization coefficients, round(w × 2^24): per layer the attention weights then the
/// feed-forward weights, then the final weights.
pub fn norm(checkpoint: &Checkpoint) -> Result<Vec<i32>, ConvertError> {
    let c = checkpoint.config;
    let d = c.dim as usize;
    let mut out = Vec::with_capacity(c.norm_len());
    let mut push = |tensor: Tensor, index: usize| -> Result<(), ConvertError> {
        let value = checkpoint.float(tensor, index) as f64 * TWO_24;
        let fixed = fit_i32(value).ok_or(ConvertError::ValueOutOfRange {
            tensor: tensor.name(),
            index: index as u64,
            field: "normalization coefficient (i32, 24 fractional bits)",
            value,
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        })?;
        out.push(fixed);
        Ok(())
    };
    for layer in 0..c.layers as usize {
        for i in 0..d {
            push(Tensor::AttentionNorm, layer * d + i)?;
        }
        for i in 0..d {
            push(Tensor::FeedForwardNorm, layer * d + i)?;
        }
    }
    for i in 0..d {
        push(Tensor::FinalNorm, i)?;
    }
    Ok(out)
}

/// The rotary coefficients: for each position, for each pair j, the cosine then the sine of
/// pos / 10000^(2j / head_size), computed in f64 (D3), times 2^24.
pub fn rotary(c: &Config) -> Vec<i32> {
    let head_size = c.head_size() as usize;
    let mut out = Vec::with_capacity(c.rotary_len());
    for pos in 0..c.context_length as usize {
        for j in 0..head_size / 2 {
            let angle = pos as f64 / 10000f64.powf((2 * j) as f64 / head_size as f64);
            // |cos|, |sin| <= 1, so the values fit.
            out.push((angle.cos() * TWO_24).round() as i32);
            out.push((angle.sin() * TWO_24).round() as i32);
        }
    }
    out
}

/// Entry i is round(e^(-i/256) × 2^30), i from 0 to 4,096 (D4).
pub fn exp_table() -> Vec<u32> {
    (0..EXP_TABLE_LEN)
        .map(|i| ((-(i as f64) / 256.0).exp() * TWO_30).round() as u32)
        .collect()
}

/// Entry i is round(silu(i/128 - 16) × 2^16), silu(x) = x / (1 + e^(-x)) (D4).
pub fn silu_table() -> Vec<i32> {
    (0..SILU_TABLE_LEN)
        .map(|i| {
            let x = i as f64 / 128.0 - 16.0;
            (x / (1.0 + (-x).exp()) * TWO_16).round() as i32
        })
        .collect()
}

/// Header byte 68: round(2^24 / sqrt(head_size)) (D4).
pub fn inv_sqrt_head_size(c: &Config) -> u32 {
    (TWO_24 / (c.head_size() as f64).sqrt()).round() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader's (and the program's) copy of the exponential table, checked at every seal,
    /// is the table the converter computes (D4), entry for entry, and its bytes are the
    /// entries little-endian. Two entries by hand: e^0 = 1 is 2^30; e^(-16) × 2^30 = 120.84.
    #[test]
    fn the_reader_s_exponential_table_is_the_converter_s() {
        assert_eq!(crate::EXP_TABLE.to_vec(), exp_table());
        let bytes: Vec<u8> = exp_table().iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(crate::EXP_TABLE_BYTES.to_vec(), bytes);
        assert_eq!(crate::EXP_TABLE[0], 1 << 30);
        assert_eq!(crate::EXP_TABLE[4096], 121);
    }

    /// The reader checks header byte 68 in integers (no sqrt in core); both paths must agree
    /// for every head size the format allows.
    #[test]
    fn inv_sqrt_head_size_agrees_with_the_integer_check() {
        for head_size in (2..=64).step_by(2) {
            let config = Config {
                dim: head_size,
                heads: 1,
                ..Config::default()
            };
            assert_eq!(
                inv_sqrt_head_size(&config),
                crate::inv_sqrt_head_size(head_size),
                "head size {head_size}"
            );
        }
        // Two values by hand: 2^24 / sqrt(4) = 2^23, 2^24 / sqrt(64) = 2^21.
        assert_eq!(crate::inv_sqrt_head_size(4), 1 << 23);
        assert_eq!(crate::inv_sqrt_head_size(64), 1 << 21);
    }
}
