//! The program's backend (SBF): the input vector widened to 64 bits once per matrix stage, in
//! the heap frame, so that each multiply-accumulate is a byte load, a multiply and an add, each
//! value loaded once for three rows ([`rows_into`]); one attention head in loops shaped for SBF
//! (`head.rs`). Their inner loops are `kernels::sbf`: assembly on SBF, and in the tests a Rust
//! stand-in of the same names, so that the loops around them run natively against the other
//! backends.

mod head;

use super::{Backend, Head};
use crate::infer::fixed::{mul_q24, saturate};
use crate::infer::forward::{gated, Write};
use crate::infer::kernels::sbf;
use crate::infer::model::Rows;
use crate::infer::state::get;
use crate::WEIGHT_BIAS;
use core::ops::Range;

pub use head::attention_head_rows;

/// The program's backend.
pub struct Sbf;

/// Room for the widened input: on chain the first `forward::SCRATCH_BYTES` of the heap frame.
pub struct Scratch {
    wide: &'static mut [i64],
}

/// The input vector of a matrix stage with Σ x, each value widened to 64 bits.
pub struct Input<'a> {
    sum: i64,
    wide: &'a [i64],
}

impl Backend for Sbf {
    type Options = ();
    type Scratch = Scratch;
    type Input<'a> = Input<'a>;

    #[inline(always)]
    fn options() {}

    #[inline(always)]
    fn scratch(_: ()) -> Scratch {
        Scratch {
            wide: sbf::wide_scratch(),
        }
    }

    fn input<'a>(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
        let n = bytes.len() / 4;
        for (i, w) in scratch.wide[..n].iter_mut().enumerate() {
            *w = get(bytes, i) as i64;
        }
        Input {
            sum,
            wide: &scratch.wide[..n],
        }
    }

    #[inline(always)]
    fn rows(m: &Rows, rows: Range<usize>, input: &Input, out: &mut [u8], write: Write) {
        rows_into(&mut RowsInto {
            rows: *m,
            start: rows.start,
            end: rows.end,
            input,
            out,
            write,
        });
    }

    #[inline(always)]
    fn attention_head(h: &mut Head, _: &Scratch) -> i64 {
        attention_head_rows(h)
    }
}

/// The program's matrix stage: rows `start..end` of `rows` against `input`, written as `write`
/// says at `out` (a word per row, 4-byte aligned). Three rows a turn (`kernels::sbf::dot3`, each
/// input value loaded once for the three), in a function of its own so that the stage around
/// it keeps no values in the registers the kernel takes; its arguments in one struct (SBF
/// passes five registers).
pub struct RowsInto<'a> {
    pub rows: Rows<'a>,
    pub start: usize,
    pub end: usize,
    pub input: &'a Input<'a>,
    pub out: &'a mut [u8],
    pub write: Write<'a>,
}

/// Runs a [`RowsInto`]. Panics (as slicing would) when a row or the output is out of bounds.
#[inline(never)]
pub fn rows_into(job: &mut RowsInto) {
    let (m, input) = (&job.rows, job.input);
    let n = input.wide.len();
    let (start, end) = (job.start, job.end.max(job.start));
    let stride = m.row_bytes;
    // Rows::holds, without its checked multiplication (a 128-bit product on SBF).
    assert!(m.columns == n && crate::ROW_WEIGHTS_OFFSET + n <= stride);
    assert!(end <= m.bytes.len() / stride && job.out.len() >= 4 * (end - start));
    let bias = WEIGHT_BIAS as i64 * input.sum;
    let finish = |dot: i64, scale: u32| saturate(mul_q24(dot - bias, scale));
    let write = job.write;
    let emit = |o: *mut u8, v: i32| {
        // SAFETY: o is a word of `out` (the assert above); state words are 4-byte aligned.
        unsafe {
            let o = o as *mut i32;
            match write {
                Write::Set => o.write(v),
                Write::Add => o.write(saturate(o.read() as i64 + v as i64)),
                Write::Gate(table) => o.write(gated(table, o.read(), v)),
            }
        }
    };
    // SAFETY: rows start..end lie in the matrix's bytes (`holds`), each a 4-byte scale at
    // the row's start (8-byte aligned) and n weights from byte ROW_WEIGHTS_OFFSET; the input
    // has n values.
    unsafe {
        let mut row = m.bytes.as_ptr().add(start * stride);
        let mut o = job.out.as_mut_ptr();
        let x = input.wide.as_ptr();
        let mut left = end - start;
        let w = crate::ROW_WEIGHTS_OFFSET;
        while left >= 3 {
            let (a, b, c) = (row, row.add(stride), row.add(2 * stride));
            let (da, db, dc) = sbf::dot3(a.add(w), b.add(w), c.add(w), x, n);
            emit(o, finish(da, (a as *const u32).read()));
            emit(o.add(4), finish(db, (b as *const u32).read()));
            emit(o.add(8), finish(dc, (c as *const u32).read()));
            row = row.add(3 * stride);
            o = o.add(12);
            left -= 3;
        }
        if left == 2 {
            let b = row.add(stride);
            let (da, db) = sbf::dot2(row.add(w), b.add(w), x, n);
            emit(o, finish(da, (row as *const u32).read()));
            emit(o.add(4), finish(db, (b as *const u32).read()));
        } else if left == 1 {
            let da = sbf::dot1(row.add(w), x, n);
            emit(o, finish(da, (row as *const u32).read()));
        }
    }
}
