//! The fixed-point arithmetic of a run (docs/inference.md, "Numbers"). Every activation is an
//! i32 with 16 fractional bits, saturated to ±2^27 (±2,048.0). No signed division and no i128
//! anywhere: the SBF backend compiles neither, so products stay inside 64 bits by these ranges
//! and divisions are of unsigned magnitudes.

/// Fractional bits of every activation.
pub const ACT_BITS: u32 = 16;
/// Activations are saturated to [-ACT_LIMIT, ACT_LIMIT] (±2,048.0).
pub const ACT_LIMIT: i64 = 1 << 27;
/// RMS normalization's epsilon, 1e-5, in the units of a mean of squares (32 fractional bits):
/// round(1e-5 × 2^32).
pub const RMS_EPSILON: u64 = 42_950;
/// Entries of the exponential and SiLU tables: 0 to 4,096.
pub const TABLE_LAST: usize = 4096;

/// `v` saturated to the activation range.
#[inline]
pub fn saturate(v: i64) -> i32 {
    v.clamp(-ACT_LIMIT, ACT_LIMIT) as i32
}

/// round(v / 2^n), halves rounded up (towards +infinity): (v + 2^(n-1)) >> n, an arithmetic
/// shift. `n` is 1 to 62 and |v| < 2^62.
#[inline]
pub fn shift_round(v: i64, n: u32) -> i64 {
    (v + (1i64 << (n - 1))) >> n
}

/// round(v × scale / 2^24), exactly, halves up, for |v| < 2^55: v is split into
/// hi = v >> 24 and lo = v & (2^24 - 1), so that v × scale = hi × scale × 2^24 + lo × scale
/// and neither product leaves 64 bits.
#[inline]
pub fn mul_q24(v: i64, scale: u32) -> i64 {
    let hi = v >> 24;
    let lo = v & 0xFF_FFFF;
    hi * scale as i64 + ((lo * scale as i64 + (1 << 23)) >> 24)
}

/// floor(sqrt(v)), digit by digit (two bits of `v` per step, no division).
pub fn isqrt(v: u64) -> u64 {
    let mut rem = v;
    let mut root = 0u64;
    let mut bit = 1u64 << 62;
    while bit > v {
        bit >>= 2;
    }
    while bit != 0 {
        if rem >= root + bit {
            rem -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    root
}

/// The reciprocal square root of a mean of squares `v` (32 fractional bits, at least
/// [`RMS_EPSILON`], below 2^58), as a multiplier and a shift: for an activation x,
/// round(x × inv / 2^shift) is x / sqrt(v / 2^32) with 16 fractional bits.
///
/// v is normalized by an even shift 2t into [2^60, 2^62), s = floor(sqrt(v × 4^t)) is in
/// [2^30, 2^31), inv = floor(2^61 / s) and shift = 45 − t.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvRms {
    pub inv: u64,
    pub shift: u32,
}

impl InvRms {
    pub fn of(v: u64) -> InvRms {
        let bits = 64 - v.leading_zeros();
        let t = (62 - bits) / 2;
        let s = isqrt(v << (2 * t));
        InvRms {
            inv: (1u64 << 61) / s,
            shift: 45 - t,
        }
    }

    /// x / rms with 16 fractional bits (|x| ≤ 2^27, so x × inv < 2^58).
    #[inline]
    pub fn apply(&self, x: i32) -> i64 {
        shift_round(x as i64 * self.inv as i64, self.shift)
    }
}

/// The exponential table's index for a difference `d` >= 0 (16 fractional bits) below the
/// maximum: the nearest step of 1/256, round(d / 2^8) halves up, clamped at 4,096.
#[inline]
pub fn exp_index(d: u64) -> usize {
    let i = (d + 128) >> 8;
    if i > TABLE_LAST as u64 {
        TABLE_LAST
    } else {
        i as usize
    }
}

/// floor(a × b / 2^64), from 32-bit halves.
pub fn mul_hi_u64(a: u64, b: u64) -> u64 {
    let (ah, al) = (a >> 32, a & 0xFFFF_FFFF);
    let (bh, bl) = (b >> 32, b & 0xFFFF_FFFF);
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let hh = ah * bh;
    let mid = (ll >> 32) + (lh & 0xFFFF_FFFF) + (hl & 0xFFFF_FFFF);
    hh + (lh >> 32) + (hl >> 32) + (mid >> 32)
}

/// A decimal number (digits, optionally a point and at most 12 more digits; no sign, no
/// exponent) with 16 fractional bits: round(value × 2^16), halves up, computed exactly on the
/// digits. `None` for anything else or a value of 2^16 or more.
pub fn parse_fixed16(text: &str) -> Option<u32> {
    let (whole, frac) = match text.split_once('.') {
        Some((w, f)) => (w, f),
        None => (text, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) || frac.len() > 12 {
        return None;
    }
    let mut w = 0u64;
    for b in whole.bytes() {
        w = w * 10 + (b - b'0') as u64;
        if w >= 1 << 16 {
            return None;
        }
    }
    let (mut f, mut scale) = (0u64, 1u64);
    for b in frac.bytes() {
        f = f * 10 + (b - b'0') as u64;
        scale *= 10;
    }
    // f / scale < 1 with scale ≤ 10^12: f × 2^17 < 2^57.
    let frac16 = ((f << 17) / scale + 1) >> 1;
    u32::try_from((w << 16) + frac16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isqrt_is_the_floor_square_root() {
        let mut v = 1u64;
        let mut cases = [
            0u64,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            u64::MAX,
            (1 << 62) - 1,
            1 << 62,
        ]
        .to_vec();
        for _ in 0..2000 {
            v = v
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            cases.push(v >> (v % 64));
        }
        for v in cases {
            let r = isqrt(v) as u128;
            assert!(
                r * r <= v as u128 && (r + 1) * (r + 1) > v as u128,
                "isqrt({v})"
            );
        }
    }

    #[test]
    fn mul_q24_is_exact_rounding() {
        let cases = [
            (0i64, 1u32),
            (1, 1 << 23),
            (-1, 1 << 23),
            ((1 << 45) - 7, u32::MAX),
            (-(1 << 45) + 3, u32::MAX),
            (123_456_789, 70_000),
            (-123_456_789, 70_000),
            (-(1 << 54), 1 << 31),
        ];
        for (v, s) in cases {
            let exact = (v as i128 * s as i128 + (1 << 23)).div_euclid(1 << 24) as i64;
            assert_eq!(mul_q24(v, s), exact, "{v} × {s}");
        }
    }

    #[test]
    fn mul_hi_matches_the_wide_product() {
        let cases = [
            (0u64, 0u64),
            (u64::MAX, u64::MAX),
            (u64::MAX, 1),
            (1 << 63, 3),
            (0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321),
        ];
        for (a, b) in cases {
            assert_eq!(mul_hi_u64(a, b), ((a as u128 * b as u128) >> 64) as u64);
        }
    }

    #[test]
    fn inv_rms_is_one_over_the_root() {
        // Mean of squares 1.0 (2^32): x / 1.0 = x.
        let r = InvRms::of(1 << 32);
        assert_eq!(r.apply(3 << 16), 3 << 16);
        // Mean of squares 4.0: x / 2.
        let r = InvRms::of(4 << 32);
        assert_eq!(r.apply(3 << 16), 3 << 15);
        // Against f64 over the whole range of v.
        for v in [RMS_EPSILON, 1 << 20, 987_654_321, 1 << 40, (1 << 58) - 1] {
            let r = InvRms::of(v);
            let x = 100_000i32;
            let expected = x as f64 / (v as f64 / 2f64.powi(32)).sqrt();
            let got = r.apply(x) as f64;
            assert!(
                (got - expected).abs() <= 1.0 + expected.abs() * 1e-8,
                "{v}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn decimals_convert_exactly() {
        let cases = [
            ("0", Some(0)),
            ("1", Some(65_536)),
            ("1.0", Some(65_536)),
            ("0.8", Some(52_429)), // 52,428.8
            ("0.9", Some(58_982)), // 58,982.4
            (".5", Some(32_768)),
            ("16", Some(16 << 16)),
            ("0.000007629394", Some(0)), // 0.49999... of a unit: down
            ("0.000007629395", Some(1)), // 0.50000... of a unit: up
            ("0.0000076293945", None),   // 13 decimals
            ("0.000022888183", Some(1)), // 1.49999... units
            ("0.0000228882", Some(2)),   // 1.50000... units
            ("65535.99999", Some(u32::MAX)),
            ("65536", None),
            ("-1", None),
            ("1e3", None),
            ("", None),
            (".", None),
            ("1.2.3", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_fixed16(text), expected, "{text}");
        }
    }

    #[test]
    fn exp_index_rounds_and_clamps() {
        assert_eq!(exp_index(0), 0);
        assert_eq!(exp_index(127), 0);
        assert_eq!(exp_index(128), 1);
        assert_eq!(exp_index(256), 1);
        assert_eq!(exp_index(16 << 16), 4096);
        assert_eq!(exp_index(u32::MAX as u64), 4096);
    }
}
