//! The program's row kernels (SBF): one, two or three rows of a matrix against the widened
//! input, each input value loaded once for the rows of a turn. LLVM's BPF backend spills when
//! it holds three rows' pointers and sums in a loop (SBF has ten registers, and three rows
//! take all ten: three sums, three row pointers, the input pointer, its end, the input value
//! and a product), so the loops are written in the backend's assembly: per column a word load
//! of the input, then per row a byte load, a multiply and an add (three rows: 10 instructions
//! for 3 multiply-accumulates); per 32 columns one add per pointer and the branch (three rows:
//! 3.385 instructions per multiply-accumulate, two rows 3.56, one row 4.09). The sums are exact
//! in i64 (|Σ| ≤ 2,048 × 255 × 2^27 < 2^47), so they are the integers of every other path
//! whatever the order of the additions.
//!
//! Below them the attention head's loops (`backend::sbf::attention_head_rows`), in assembly
//! for the same reason: the weighted values four outputs a turn ([`weighted4`]), a score's dot
//! ([`dot_i32`]), a head of eight values' whole score loop ([`scores8`]), the softmax's
//! exponentials ([`exponentials`]) and weights ([`weights`]). The caches hold v + 2^31
//! (`state::CACHE_OFFSET`), which SBF's zero-extending word load reads as it is.

use core::arch::asm;

/// The widened input's room: the first `forward::SCRATCH_BYTES` of the heap frame (the program
/// installs no allocator, and a 4 KiB stack frame cannot hold it), 2,048 values of 8 bytes.
#[inline(always)]
pub fn wide_scratch() -> &'static mut [i64] {
    use crate::infer::forward::{HEAP_START, MAX_COLUMNS};
    // SAFETY: the heap frame is at least 32 KiB, 8-byte aligned, and nothing else uses its
    // first 16 KiB while a run advances (one scratch per advance).
    unsafe { core::slice::from_raw_parts_mut(HEAP_START as usize as *mut i64, MAX_COLUMNS) }
}

/// The i32 at `p`, widened: one word load.
///
/// # Safety
/// Four readable bytes at `p`, 4-byte aligned (`state::get_u32`).
#[inline(always)]
pub unsafe fn load(p: *const u8) -> i64 {
    (p as *const i32).read() as i64
}

/// Stores `v` at `p`: one word store.
///
/// # Safety
/// As [`load`], writable.
#[inline(always)]
pub unsafe fn store(p: *mut u8, v: u32) {
    (p as *mut u32).write(v)
}

/// One column `k` (the input value at byte 8k) of one row.
macro_rules! column1 {
    ($k:literal, $k8:literal) => {
        concat!(
            "{x} = *(u64 *)({xp} + ",
            $k8,
            ")\n",
            "{t} = *(u8 *)({pa} + ",
            $k,
            ")\n",
            "{t} *= {x}\n",
            "{sa} += {t}\n",
        )
    };
}

/// One column `k` (the input value at byte 8k) of two rows.
macro_rules! column2 {
    ($k:literal, $k8:literal) => {
        concat!(
            "{x} = *(u64 *)({xp} + ",
            $k8,
            ")\n",
            "{t} = *(u8 *)({pa} + ",
            $k,
            ")\n",
            "{t} *= {x}\n",
            "{sa} += {t}\n",
            "{t} = *(u8 *)({pb} + ",
            $k,
            ")\n",
            "{t} *= {x}\n",
            "{sb} += {t}\n",
        )
    };
}

/// One column `k` (the input value at byte 8k) of three rows.
macro_rules! column3 {
    ($k:literal, $k8:literal) => {
        concat!(
            "{x} = *(u64 *)({xp} + ",
            $k8,
            ")\n",
            "{t} = *(u8 *)({pa} + ",
            $k,
            ")\n",
            "{t} *= {x}\n",
            "{sa} += {t}\n",
            "{t} = *(u8 *)({pb} + ",
            $k,
            ")\n",
            "{t} *= {x}\n",
            "{sb} += {t}\n",
            "{t} = *(u8 *)({pc} + ",
            $k,
            ")\n",
            "{t} *= {x}\n",
            "{sc} += {t}\n",
        )
    };
}

/// Columns 0 to 31 of `$column` (`column1`, `column2` or `column3`): a turn of 32 columns.
macro_rules! columns32 {
    ($column:ident) => {
        concat!(
            $column!(0, 0),
            $column!(1, 8),
            $column!(2, 16),
            $column!(3, 24),
            $column!(4, 32),
            $column!(5, 40),
            $column!(6, 48),
            $column!(7, 56),
            $column!(8, 64),
            $column!(9, 72),
            $column!(10, 80),
            $column!(11, 88),
            $column!(12, 96),
            $column!(13, 104),
            $column!(14, 112),
            $column!(15, 120),
            $column!(16, 128),
            $column!(17, 136),
            $column!(18, 144),
            $column!(19, 152),
            $column!(20, 160),
            $column!(21, 168),
            $column!(22, 176),
            $column!(23, 184),
            $column!(24, 192),
            $column!(25, 200),
            $column!(26, 208),
            $column!(27, 216),
            $column!(28, 224),
            $column!(29, 232),
            $column!(30, 240),
            $column!(31, 248),
        )
    };
}

/// Columns 0 to 3 of `$column`: a turn of four columns.
macro_rules! columns4 {
    ($column:ident) => {
        concat!(
            $column!(0, 0),
            $column!(1, 8),
            $column!(2, 16),
            $column!(3, 24),
        )
    };
}

/// Σ_k a_k × x_k over `n` columns: one row's stored bytes against the widened input `x`.
///
/// # Safety
/// Each row readable for `n` bytes, `x` for `n` values (8-byte aligned).
#[inline(always)]
pub unsafe fn dot1(a: *const u8, x: *const i64, n: usize) -> i64 {
    let mut sa = 0i64;
    let (mut pa, mut xp) = (a, x);
    let wide = n & !31;
    if wide != 0 {
        // 32 columns a turn.
        let end = x.add(wide);
        asm!(
            "2:",
            columns32!(column1),
            "{pa} += 32",
            "{xp} += 256",
            "if {xp} != {end} goto 2b",
            sa = inout(reg) sa,
            pa = inout(reg) pa,
            xp = inout(reg) xp,
            end = in(reg) end,
            x = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    let narrow = n & !3;
    if narrow != wide {
        // Four columns a turn (a row of 172 columns: 5 × 32 + 3 × 4).
        let end = x.add(narrow);
        asm!(
            "2:",
            columns4!(column1),
            "{pa} += 4",
            "{xp} += 32",
            "if {xp} != {end} goto 2b",
            sa = inout(reg) sa,
            pa = inout(reg) pa,
            xp = inout(reg) xp,
            end = in(reg) end,
            x = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    // The columns past a multiple of four, one at a time.
    for k in 0..n - narrow {
        let v = *xp.add(k);
        sa += *pa.add(k) as i64 * v;
    }
    sa
}

/// Σ_k a_k × x_k, Σ_k b_k × x_k over `n` columns: two rows' stored bytes against the widened input
/// `x`.
///
/// # Safety
/// Each row readable for `n` bytes, `x` for `n` values (8-byte aligned).
#[inline(always)]
pub unsafe fn dot2(a: *const u8, b: *const u8, x: *const i64, n: usize) -> (i64, i64) {
    let (mut sa, mut sb) = (0i64, 0i64);
    let (mut pa, mut pb, mut xp) = (a, b, x);
    let wide = n & !31;
    if wide != 0 {
        // 32 columns a turn.
        let end = x.add(wide);
        asm!(
            "2:",
            columns32!(column2),
            "{pa} += 32",
            "{pb} += 32",
            "{xp} += 256",
            "if {xp} != {end} goto 2b",
            sa = inout(reg) sa,
            sb = inout(reg) sb,
            pa = inout(reg) pa,
            pb = inout(reg) pb,
            xp = inout(reg) xp,
            end = in(reg) end,
            x = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    let narrow = n & !3;
    if narrow != wide {
        // Four columns a turn (a row of 172 columns: 5 × 32 + 3 × 4).
        let end = x.add(narrow);
        asm!(
            "2:",
            columns4!(column2),
            "{pa} += 4",
            "{pb} += 4",
            "{xp} += 32",
            "if {xp} != {end} goto 2b",
            sa = inout(reg) sa,
            sb = inout(reg) sb,
            pa = inout(reg) pa,
            pb = inout(reg) pb,
            xp = inout(reg) xp,
            end = in(reg) end,
            x = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    // The columns past a multiple of four, one at a time.
    for k in 0..n - narrow {
        let v = *xp.add(k);
        sa += *pa.add(k) as i64 * v;
        sb += *pb.add(k) as i64 * v;
    }
    (sa, sb)
}

/// Σ_k a_k × x_k, Σ_k b_k × x_k, Σ_k c_k × x_k over `n` columns: three rows' stored bytes against
/// the widened input `x`.
///
/// # Safety
/// Each row readable for `n` bytes, `x` for `n` values (8-byte aligned).
#[inline(always)]
pub unsafe fn dot3(
    a: *const u8,
    b: *const u8,
    c: *const u8,
    x: *const i64,
    n: usize,
) -> (i64, i64, i64) {
    let (mut sa, mut sb, mut sc) = (0i64, 0i64, 0i64);
    let (mut pa, mut pb, mut pc, mut xp) = (a, b, c, x);
    let wide = n & !31;
    if wide != 0 {
        // 32 columns a turn.
        let end = x.add(wide);
        asm!(
            "2:",
            columns32!(column3),
            "{pa} += 32",
            "{pb} += 32",
            "{pc} += 32",
            "{xp} += 256",
            "if {xp} != {end} goto 2b",
            sa = inout(reg) sa,
            sb = inout(reg) sb,
            sc = inout(reg) sc,
            pa = inout(reg) pa,
            pb = inout(reg) pb,
            pc = inout(reg) pc,
            xp = inout(reg) xp,
            end = in(reg) end,
            x = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    let narrow = n & !3;
    if narrow != wide {
        // Four columns a turn (a row of 172 columns: 5 × 32 + 3 × 4).
        let end = x.add(narrow);
        asm!(
            "2:",
            columns4!(column3),
            "{pa} += 4",
            "{pb} += 4",
            "{pc} += 4",
            "{xp} += 32",
            "if {xp} != {end} goto 2b",
            sa = inout(reg) sa,
            sb = inout(reg) sb,
            sc = inout(reg) sc,
            pa = inout(reg) pa,
            pb = inout(reg) pb,
            pc = inout(reg) pc,
            xp = inout(reg) xp,
            end = in(reg) end,
            x = out(reg) _,
            t = out(reg) _,
            options(nostack, readonly),
        );
    }
    // The columns past a multiple of four, one at a time.
    for k in 0..n - narrow {
        let v = *xp.add(k);
        sa += *pa.add(k) as i64 * v;
        sb += *pb.add(k) as i64 * v;
        sc += *pc.add(k) as i64 * v;
    }
    (sa, sb, sc)
}

/// Σ_t w_t × v_t,j for four outputs j of an attention head: `values` the first output's value
/// at the first cached position (rows `row_len` bytes apart), `weights` to `last` the softmax
/// weights, `weight_sum` their sum. The cache holds v + 2^31 (`state::CACHE_OFFSET`), which
/// SBF loads zero-extended as it is, and 2^31 × Σ w is taken off at the end:
/// Σ w × (v + 2^31) − 2^31 × Σ w = Σ w × v, exact (every step is mod 2^64 and the result, at
/// most 2^30 × 2^27 in magnitude, fits). Per position 16 instructions for 4
/// multiply-accumulates, in the ten registers (LLVM kept the loop's stride and a sum on the
/// stack: 35; with an i32 cache, sign-corrected by an XOR per value, 20).
///
/// # Safety
/// `weights..last` readable u32s (at least one); for each of them a row with 16 readable bytes
/// at `values` + t × `row_len`, 4-byte aligned.
#[inline(always)]
pub unsafe fn weighted4(
    values: *const u8,
    row_len: usize,
    weights: *const u32,
    last: *const u32,
    weight_sum: u64,
) -> [i64; 4] {
    let (mut a0, mut a1, mut a2, mut a3) = (0i64, 0i64, 0i64, 0i64);
    asm!(
        "2:",
        "{w} = *(u32 *)({weight} + 0)",
            "{t} = *(u32 *)({value} + 0)",
            "{t} *= {w}",
            "{a0} += {t}",
            "{t} = *(u32 *)({value} + 4)",
            "{t} *= {w}",
            "{a1} += {t}",
            "{t} = *(u32 *)({value} + 8)",
            "{t} *= {w}",
            "{a2} += {t}",
            "{t} = *(u32 *)({value} + 12)",
            "{t} *= {w}",
            "{a3} += {t}",
        "{value} += {row_len}",
        "{weight} += 4",
        "if {weight} != {last} goto 2b",
        a0 = inout(reg) a0,
        a1 = inout(reg) a1,
        a2 = inout(reg) a2,
        a3 = inout(reg) a3,
        value = inout(reg) values => _,
        weight = inout(reg) weights => _,
        row_len = in(reg) row_len,
        last = in(reg) last,
        w = out(reg) _,
        t = out(reg) _,
        options(nostack, readonly),
    );
    let back = (weight_sum << 31) as i64;
    [a0, a1, a2, a3].map(|a| a.wrapping_sub(back))
}

/// Σ_j q_j × k_j over `n` values (a multiple of 4, at least 4) of an attention head: `q` the
/// query widened to i64, `key` the cached key's words (k + 2^31), `q_sum` Σ q_j over the whole
/// head (taken off times 2^31, as in [`weighted4`]). Exact mod 2^64, and the dot fits an i64.
/// Per four values 19 instructions (LLVM: 30, an i32 key sign-extended by two shifts each).
///
/// # Safety
/// `q` readable for `n` values, `key` for `n` i32s (4-byte aligned); `n` a nonzero multiple
/// of 4.
#[inline(always)]
pub unsafe fn dot_i32(q: *const i64, key: *const u8, n: usize, q_sum: i64) -> i64 {
    let mut dot = 0i64;
    asm!(
        "2:",
        "{q} = *(u64 *)({qp} + 0)",
        "{k} = *(u32 *)({kp} + 0)",
        "{k} *= {q}",
        "{dot} += {k}",
        "{q} = *(u64 *)({qp} + 8)",
        "{k} = *(u32 *)({kp} + 4)",
        "{k} *= {q}",
        "{dot} += {k}",
        "{q} = *(u64 *)({qp} + 16)",
        "{k} = *(u32 *)({kp} + 8)",
        "{k} *= {q}",
        "{dot} += {k}",
        "{q} = *(u64 *)({qp} + 24)",
        "{k} = *(u32 *)({kp} + 12)",
        "{k} *= {q}",
        "{dot} += {k}",
        "{qp} += 32",
        "{kp} += 16",
        "if {qp} != {end} goto 2b",
        dot = inout(reg) dot,
        qp = inout(reg) q => _,
        kp = inout(reg) key => _,
        end = in(reg) q.add(n),
        q = out(reg) _,
        k = out(reg) _,
        options(nostack, readonly),
    );
    dot.wrapping_sub(q_sum << 31)
}

/// One product of [`scores8`]: the query value at byte `q8` times the cached key's word at
/// byte `k4` (k + 2^31), added to the score.
macro_rules! score_product {
    ($q8:literal, $k4:literal) => {
        concat!(
            "{u} = *(u64 *)({qp} + ",
            $q8,
            ")\n",
            "{t} = *(u32 *)({kp} + ",
            $k4,
            ")\n",
            "{t} *= {u}\n",
            "{v} += {t}\n",
        )
    };
}

/// What [`scores8`] needs besides its pointers, in one place (one register reaches them):
/// the dot's rounding bias with the keys' 2^31 × Σ q taken off, the largest |v| whose
/// product with the scale fits 62 bits (past it the score saturates), its negation and the
/// scale (header byte 68).
#[repr(C)]
pub struct ScoreConstants {
    pub bias: i64,
    pub high: i64,
    pub low: i64,
    pub scale: i64,
}

impl ScoreConstants {
    /// For a query whose eight values sum to `q_sum`, and header byte 68.
    pub fn new(q_sum: i64, inv_sqrt: u32) -> ScoreConstants {
        // |v| ≤ 2^62 / s keeps v × s within 62 bits; past it |v × s / 2^24| ≥ 2^38, beyond
        // ACT_LIMIT, so the saturated score is the same. A scale of 0 never saturates.
        let high = match inv_sqrt {
            0 => i64::MAX,
            s => ((1u64 << 62) / s as u64) as i64,
        };
        ScoreConstants {
            bias: (1i64 << 15).wrapping_sub(q_sum << 31),
            high,
            low: -high,
            scale: inv_sqrt as i64,
        }
    }
}

/// The scores of a head of eight values at `n` (at least 1) cached positions, written to
/// `att` as i32s; returns their maximum. Per position: the dot q · k over the cached words
/// k + 2^31 (as in [`weighted4`]), rounded to 16 fractional bits with 2^31 × Σ q taken off in
/// the bias, times the scale rounded from 24 fractional bits (one product: v is
/// first checked against ± 2^62 / scale, past which the score saturates), saturated to
/// ± ACT_LIMIT. These are `saturate(mul_q24(shift_round(q · k, 16), scale))` exactly: the
/// rounding of one 62-bit product is `mul_q24`'s of the split one. 50 instructions a position
/// (LLVM's loop around `dot_i32`, with an i32 cache: 91).
///
/// # Safety
/// `q` readable for eight values; for each t < `n` eight i32s at `key` + t × `row_len` and
/// one at `att` + 4t, writable (4-byte aligned).
#[inline(always)]
pub unsafe fn scores8(
    q: *const i64,
    key: *const u8,
    row_len: usize,
    att: *mut u8,
    n: usize,
    constants: &ScoreConstants,
) -> i64 {
    let mut max = i32::MIN as i64;
    asm!(
        "2:",
        "{v} = *(u64 *)({qp} + 0)",
        "{t} = *(u32 *)({kp} + 0)",
        "{v} *= {t}",
        score_product!(8, 4),
        score_product!(16, 8),
        score_product!(24, 12),
        score_product!(32, 16),
        score_product!(40, 20),
        score_product!(48, 24),
        score_product!(56, 28),
        "{t} = *(u64 *)({cp} + 0)",
        "{v} += {t}",
        "{v} s>>= 16",
        "{t} = *(u64 *)({cp} + 8)",
        "if {v} s> {t} goto 4f",
        "{t} = *(u64 *)({cp} + 16)",
        "if {v} s< {t} goto 5f",
        "{t} = *(u64 *)({cp} + 24)",
        "{v} *= {t}",
        "{v} += 8388608",
        "{v} s>>= 24",
        "if {v} s> 134217728 goto 4f",
        "if {v} s< -134217728 goto 5f",
        "3:",
        "*(u32 *)({ap} + 0) = {v}",
        "if {max} s>= {v} goto 6f",
        "{max} = {v}",
        "6:",
        "{kp} += {row_len}",
        "{ap} += 4",
        "if {ap} != {end} goto 2b",
        "goto 7f",
        "4:",
        "{v} = 134217728",
        "goto 3b",
        "5:",
        "{v} = -134217728",
        "goto 3b",
        "7:",
        max = inout(reg) max,
        qp = in(reg) q,
        kp = inout(reg) key => _,
        ap = inout(reg) att => _,
        end = in(reg) att.add(4 * n),
        row_len = in(reg) row_len,
        cp = in(reg) constants as *const ScoreConstants,
        v = out(reg) _,
        t = out(reg) _,
        u = out(reg) _,
        options(nostack),
    );
    max
}

/// The softmax's exponentials over `n` (at least 1) scores at `att`, written over them:
/// e_t = exp[min(round((max − score_t) / 2^8), TABLE_LAST)]; returns Σ e. Each score is
/// loaded as score − 2^31 (its bits XORed with the sign-extended 0xFFFF_FFFF_8000_0000), so max +
/// 128 − 2^31 less it is max − score + 128 (at least 128: `max` is the scores' maximum). 13
/// instructions a position (LLVM: 20).
///
/// # Safety
/// `n` i32s at `att` (4-byte aligned, writable), each at most `max`; `exp` readable for
/// TABLE_LAST + 1 u32s.
#[inline(always)]
pub unsafe fn exponentials(att: *mut u8, n: usize, max: i64, exp: *const u8) -> u64 {
    let mut total = 0u64;
    asm!(
        "2:",
        "{t} = *(u32 *)({ap} + 0)",
        "{t} ^= -2147483648",
        "{u} = {c}",
        "{u} -= {t}",
        "{u} >>= 8",
        "if {u} > 4096 goto 4f",
        "3:",
        "{u} <<= 2",
        "{u} += {exp}",
        "{u} = *(u32 *)({u} + 0)",
        "*(u32 *)({ap} + 0) = {u}",
        "{total} += {u}",
        "{ap} += 4",
        "if {ap} != {end} goto 2b",
        "goto 5f",
        "4:",
        "{u} = 4096",
        "goto 3b",
        "5:",
        total = inout(reg) total,
        ap = inout(reg) att => _,
        end = in(reg) att.add(4 * n),
        c = in(reg) max + 128 - (1i64 << 31),
        exp = in(reg) exp,
        t = out(reg) _,
        u = out(reg) _,
        options(nostack),
    );
    total
}

/// The weights floor(e_t × `reciprocal` / 2^32) of `n` (at least 1) exponentials at `att`,
/// written to `weights`; returns their sum. 8 instructions a position (LLVM: 16).
///
/// # Safety
/// `n` u32s readable at `att` and writable at `weights` (4-byte aligned); each
/// e × `reciprocal` < 2^64.
#[inline(always)]
pub unsafe fn weights(att: *const u8, n: usize, reciprocal: u64, weights: *mut u32) -> u64 {
    let mut sum = 0u64;
    asm!(
        "2:",
        "{t} = *(u32 *)({ap} + 0)",
        "{t} *= {r}",
        "{t} >>= 32",
        "*(u32 *)({wp} + 0) = {t}",
        "{sum} += {t}",
        "{ap} += 4",
        "{wp} += 4",
        "if {ap} != {end} goto 2b",
        sum = inout(reg) sum,
        ap = inout(reg) att => _,
        wp = inout(reg) weights => _,
        end = in(reg) att.add(4 * n),
        r = in(reg) reciprocal,
        t = out(reg) _,
        options(nostack),
    );
    sum
}
