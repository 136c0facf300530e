//! The forward pass over the state's regions (docs/inference.md, "The forward pass"), top to
//! bottom as llama2.c's run.c `forward()` reads:
//!
//! ```text
//! x = embedding row of the token                          embed
//! for each layer:
//!     xb = rmsnorm(x)                                     rmsnorm
//!     q, k, v = query, key, value × xb                    write_rows (the matmul)
//!     rotate q and k                                      rotary
//!     per head: scores q·k, softmax, Σ weights × values   attention_heads, attention_head
//!                                                         (the kernels' scores, softmax and
//!                                                         weights; weighted_values)
//!     x += output × xb                                    write_rows, Write::Add
//!     xb = rmsnorm(x)                                     rmsnorm
//!     hb = SiLU(gate × xb) × (up × xb)                    write_rows, Write::Gate (silu)
//!     x += down × hb                                      write_rows, Write::Add
//! xb = rmsnorm(x); logits = classifier × xb               rmsnorm, write_rows
//! ```
//!
//! The stages of `run.rs` call these pieces in that order, a bounded number of items at a time.
//! The inner loops (the row sums, a head's dot products and weighted values) are the kernels of
//! `kernels/`, one set per target behind one contract; the program's (SBF) row and head loops
//! are `rows_into` and `head::attention_head_rows`.

use super::fixed::{mul_q24, saturate, shift_round, InvRms, RMS_EPSILON, TABLE_LAST};
pub use super::kernels::Path;
#[cfg(not(target_os = "solana"))]
use super::kernels::{with_path, Kernels, Vector};
use super::model::Rows;
use super::state::{get, set, set_u32, CACHE_OFFSET};
use crate::{Block, Metadata, WEIGHT_BIAS};

/// The longest input vector: the hidden dimension's limit.
pub const MAX_COLUMNS: usize = 2048;

// ---------------------------------------------------------------------------------------------
// The embedding

/// x = row `token` of the embedding: (stored − 128) × scale / 2^8, rounded (halves up).
pub fn embed(x: &mut [u8], embedding: &Rows, token: usize) {
    let (scale, weights) = embedding.row(token);
    for (i, &w) in weights.iter().enumerate() {
        let q = w as i64 - WEIGHT_BIAS as i64;
        set(x, i, saturate(shift_round(q * scale as i64, 8)));
    }
}

// ---------------------------------------------------------------------------------------------
// RMS normalization

/// xb = rmsnorm(x) × the normalization coefficients from index `coefficients`; returns Σ xb.
pub fn rmsnorm(x: &[u8], xb: &mut [u8], meta: &Metadata, coefficients: usize) -> i64 {
    let d = meta.config().dim as usize;
    let weights = &meta.block_bytes(Block::Norm)[4 * coefficients..4 * (coefficients + d)];
    let mut squares = 0u64;
    for i in 0..d {
        let v = get(x, i) as i64;
        squares += (v * v) as u64;
    }
    let rms = InvRms::of(squares / d as u64 + RMS_EPSILON);
    let mut sum = 0i64;
    for i in 0..d {
        let n = rms.apply(get(x, i));
        let v = saturate(shift_round(n * get(weights, i) as i64, 24));
        set(xb, i, v);
        sum += v as i64;
    }
    sum
}

// ---------------------------------------------------------------------------------------------
// The matmul: a matrix's rows times the input vector

/// Room for an input vector in the forms the kernels read (off chain: its 16-bit halves, or its
/// byte planes for AVX-512), or widened to 64 bits (on chain), made once per matrix stage.
pub struct Scratch {
    #[cfg(not(target_os = "solana"))]
    hi: [i16; MAX_COLUMNS],
    #[cfg(not(target_os = "solana"))]
    lo: [i16; MAX_COLUMNS],
    #[cfg(not(target_os = "solana"))]
    planes: [i8; 4 * MAX_COLUMNS],
    /// The kernel set this advance takes.
    #[cfg(not(target_os = "solana"))]
    path: Path,
    /// Threads a matrix stage's rows may be split across (1: the calling thread only).
    #[cfg(not(target_os = "solana"))]
    threads: usize,
    /// The vector `Input::new` made last, while it is still what the scratch holds: (its first
    /// byte's address, its length, its Σ). The query, key and value stages read the same xb,
    /// made once for the three (`Input::reuse`).
    #[cfg(not(target_os = "solana"))]
    held: Option<(usize, usize, i64)>,
    #[cfg(target_os = "solana")]
    wide: &'static mut [i64],
}

/// On chain the scratch is the first [`SCRATCH_BYTES`] of the heap frame, which starts here
/// (the program installs no allocator, and a 4 KiB stack frame cannot hold it): 2,048 values
/// of 8 bytes. The program may use the heap past them.
pub const HEAP_START: u64 = 0x3_0000_0000;
pub const SCRATCH_BYTES: usize = 8 * MAX_COLUMNS;

impl Scratch {
    /// A scratch for this machine's widest kernels, the calling thread only.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Scratch {
        #[cfg(not(target_os = "solana"))]
        return Scratch::with(Path::detect(), 1);
        // SAFETY: the heap frame is at least 32 KiB, 8-byte aligned, and nothing else uses
        // its first 16 KiB while a run advances (one Scratch per advance).
        #[cfg(target_os = "solana")]
        Scratch {
            wide: unsafe {
                core::slice::from_raw_parts_mut(HEAP_START as usize as *mut i64, MAX_COLUMNS)
            },
        }
    }

    /// A scratch for the kernels of `path` (a path this machine runs: [`Path::detect`] or a
    /// narrower one), splitting a stage's rows across up to `threads` threads (the calling one
    /// and the process's team of helpers, `team.rs`; std only, 1 elsewhere).
    #[cfg(not(target_os = "solana"))]
    pub fn with(path: Path, threads: usize) -> Scratch {
        let path = match path {
            Path::Avx512 if Path::detect() != Path::Avx512 => Path::detect(),
            Path::Avx2 if Path::detect() == Path::Portable => Path::Portable,
            p => p,
        };
        Scratch {
            hi: [0; MAX_COLUMNS],
            lo: [0; MAX_COLUMNS],
            planes: [0; 4 * MAX_COLUMNS],
            path,
            threads: if cfg!(feature = "std") {
                threads.max(1)
            } else {
                1
            },
            held: None,
        }
    }

    /// The kernel set of this scratch's advance.
    #[inline]
    pub fn path(&self) -> Path {
        #[cfg(not(target_os = "solana"))]
        return self.path;
        #[cfg(target_os = "solana")]
        Path::Portable
    }
}

/// The input vector of a matrix stage with Σ x. Off chain it is held as the kernels read it
/// ([`Vector`]: 16-bit halves, or byte planes for AVX-512); the program widens each value to 64
/// bits once, so that each multiply-accumulate is a byte load, a multiply and an add, each value
/// loaded once for three rows ([`rows_into`]). Every form gives the same exact integer.
pub struct Input<'a> {
    sum: i64,
    #[cfg(not(target_os = "solana"))]
    vector: Vector<'a>,
    #[cfg(not(target_os = "solana"))]
    path: Path,
    #[cfg(not(target_os = "solana"))]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    threads: usize,
    #[cfg(target_os = "solana")]
    wide: &'a [i64],
}

impl<'a> Input<'a> {
    /// The input `bytes` (little-endian i32 values, |x| ≤ 2^27) with Σ x = `sum`.
    pub fn new(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
        let n = bytes.len() / 4;
        #[cfg(not(target_os = "solana"))]
        {
            if scratch.path.planes() {
                #[cfg(all(feature = "std", target_arch = "x86_64"))]
                // SAFETY: the path is Avx512 only where the CPU has its features.
                unsafe {
                    super::kernels::avx512::split_planes(
                        bytes,
                        &mut scratch.planes,
                        MAX_COLUMNS,
                        &mut scratch.hi,
                        &mut scratch.lo,
                    )
                };
            } else {
                for (i, v) in bytes.chunks_exact(4).enumerate() {
                    let x = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                    (scratch.hi[i], scratch.lo[i]) = super::kernels::portable::halves(x);
                }
            }
            scratch.held = Some((bytes.as_ptr() as usize, bytes.len(), sum));
            Input::held(scratch, n)
        }
        #[cfg(target_os = "solana")]
        {
            for (i, w) in scratch.wide[..n].iter_mut().enumerate() {
                *w = get(bytes, i) as i64;
            }
            Input {
                sum,
                wide: &scratch.wide[..n],
            }
        }
    }

    /// [`Input::new`], or the vector the scratch already holds when it was made from the same
    /// bytes (the same region, untouched since: the query, key and value stages of a layer).
    #[inline]
    pub fn reuse(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
        #[cfg(not(target_os = "solana"))]
        let hit = scratch.held == Some((bytes.as_ptr() as usize, bytes.len(), sum));
        #[cfg(target_os = "solana")]
        let hit = false;
        match hit {
            #[cfg(not(target_os = "solana"))]
            true => Input::held(scratch, bytes.len() / 4),
            _ => Input::new(bytes, sum, scratch),
        }
    }

    #[cfg(not(target_os = "solana"))]
    fn held(scratch: &'a Scratch, n: usize) -> Input<'a> {
        let (sum, planes) = (scratch.held.map_or(0, |h| h.2), &scratch.planes);
        let plane = |k: usize| &planes[k * MAX_COLUMNS..k * MAX_COLUMNS + n];
        Input {
            sum,
            vector: Vector {
                hi: &scratch.hi[..n],
                lo: &scratch.lo[..n],
                planes: [plane(0), plane(1), plane(2), plane(3)],
            },
            path: scratch.path,
            threads: scratch.threads,
        }
    }

    /// Forgets the held vector: its region is about to change.
    #[inline]
    pub fn forget(scratch: &mut Scratch) {
        #[cfg(not(target_os = "solana"))]
        {
            scratch.held = None;
        }
        #[cfg(target_os = "solana")]
        let _ = scratch;
    }

    /// The spec's row product from Σ stored × x: (Σ stored × x − 128 × Σ x) × scale / 2^24,
    /// rounded (halves up), saturated.
    #[cfg(not(target_os = "solana"))]
    #[inline(always)]
    fn finish(&self, stored_dot: i64, scale: u32) -> i32 {
        saturate(mul_q24(stored_dot - self.bias(), scale))
    }

    /// 128 × Σ x: what the stored bytes' offset adds to a row's Σ stored × x.
    #[cfg(not(target_os = "solana"))]
    #[inline(always)]
    fn bias(&self) -> i64 {
        WEIGHT_BIAS as i64 * self.sum
    }
}

/// Σ stored × x the plain way, for the tests of the kernels.
pub fn stored_dot_plain(weights: &[u8], x: &[u8]) -> i64 {
    let mut acc = 0i64;
    for (&w, v) in weights.iter().zip(x.chunks_exact(4)) {
        acc += w as i64 * i32::from_le_bytes([v[0], v[1], v[2], v[3]]) as i64;
    }
    acc
}

/// What [`write_rows`] does with row r's product v, at word r of its output.
#[derive(Clone, Copy)]
pub enum Write<'t> {
    /// out = v.
    Set,
    /// out = out + v, saturated (the residual of the output and down projections).
    Add,
    /// out = SiLU(out) × v by the SiLU table (the hidden stage: out holds the gate's product).
    Gate(&'t [u8]),
}

#[cfg(not(target_os = "solana"))]
impl Write<'_> {
    /// Word `i` of `out` as the write says, given the row's product `v`.
    #[inline(always)]
    fn apply(self, out: &mut [u8], i: usize, v: i32) {
        match self {
            Write::Set => set(out, i, v),
            Write::Add => set(out, i, saturate(get(out, i) as i64 + v as i64)),
            Write::Gate(table) => set(out, i, gated(table, get(out, i), v)),
        }
    }
}

/// Rows (or a layer's heads, their scores' and values' multiply-accumulates counted) of at
/// least this many multiply-accumulates in all are split across the scratch's threads: below
/// it a hand-off costs more than it saves (stories260K's stages never reach it, nor its heads
/// before position 511; the stories15M shape's heads from position 113).
#[cfg(feature = "std")]
const PARALLEL_WORK: usize = 1 << 16;

/// Rows `rows` of matrix `m` times `input`, each product v of row r written to word r of `out`
/// as `write` says. Off chain the rows may be split across threads (the scratch's), each its
/// own rows and output words: the same words in any split.
#[inline]
pub fn write_rows(
    m: &Rows,
    rows: core::ops::Range<usize>,
    input: &Input,
    out: &mut [u8],
    write: Write,
) {
    #[cfg(target_os = "solana")]
    rows_into(&mut RowsInto {
        rows: *m,
        start: rows.start,
        end: rows.end,
        input,
        out: &mut out[4 * rows.start..],
        write,
    });
    #[cfg(not(target_os = "solana"))]
    {
        let rows = rows.start..rows.end.max(rows.start);
        let out = &mut out[4 * rows.start..4 * rows.end];
        write_products(&mut [Product::new(&[(*m, write)], rows, out)], input);
    }
}

/// Matrices, each with what its rows' products do to the output.
#[cfg(not(target_os = "solana"))]
pub type Matrices<'m> = [(Rows<'m>, Write<'m>)];

/// Matrices' rows into one output, in order (the hidden stage's gate, then its up rows over
/// the gate's products): a piece of [`write_products`]' work. `out`'s word 0 is row
/// `rows.start`'s.
#[cfg(not(target_os = "solana"))]
pub struct Product<'p, 'm, 'o> {
    matrices: &'p Matrices<'m>,
    rows: core::ops::Range<usize>,
    out: &'o mut [u8],
}

#[cfg(not(target_os = "solana"))]
impl<'p, 'm, 'o> Product<'p, 'm, 'o> {
    pub fn new(
        matrices: &'p Matrices<'m>,
        rows: core::ops::Range<usize>,
        out: &'o mut [u8],
    ) -> Product<'p, 'm, 'o> {
        Product {
            matrices,
            rows,
            out,
        }
    }
}

/// Every product's matrices times `input`, in one split across the scratch's threads when
/// their work together reaches [`PARALLEL_WORK`] (part i takes the i-th share of each
/// product's rows), so that the stages that read one input (query, key and value; the gate and
/// up rows) hand work off once. Each part writes its own words: the same words in any split.
#[cfg(not(target_os = "solana"))]
pub fn write_products(products: &mut [Product], input: &Input) {
    #[cfg(feature = "std")]
    {
        let work: usize = products
            .iter()
            .map(|p| p.rows.len() * p.matrices.iter().map(|(m, _)| m.columns).sum::<usize>())
            .sum();
        if input.threads > 1 && work >= PARALLEL_WORK {
            // Part i: (the product, its first row, its rows' words) for each product.
            type Share<'a> = std::vec::Vec<(usize, usize, &'a mut [u8])>;
            let mut parts: std::vec::Vec<Share> =
                (0..input.threads).map(|_| Share::new()).collect();
            let mut matrices = std::vec::Vec::with_capacity(products.len());
            for (p, product) in products.iter_mut().enumerate() {
                matrices.push(product.matrices);
                let per = product
                    .rows
                    .len()
                    .div_ceil(input.threads)
                    .next_multiple_of(4);
                for (i, chunk) in product.out.chunks_mut(4 * per.max(4)).enumerate() {
                    parts[i].push((p, product.rows.start + i * per, chunk));
                }
            }
            super::team::sum_parts(input.threads, parts, |_, share| {
                for (p, start, chunk) in share {
                    for &(m, write) in matrices[p] {
                        rows_to(&m, start..start + chunk.len() / 4, input, chunk, write);
                    }
                }
                0
            });
            return;
        }
    }
    for product in products {
        for &(m, write) in product.matrices {
            rows_to(&m, product.rows.clone(), input, product.out, write);
        }
    }
}

/// Rows `rows` of `m` times `input` into `out` (word 0 is row `rows.start`'s), by the kernels
/// of the input's path.
#[cfg(not(target_os = "solana"))]
fn rows_to(m: &Rows, rows: core::ops::Range<usize>, input: &Input, out: &mut [u8], write: Write) {
    // SAFETY: with_path picks a set the CPU runs.
    with_path!(input.path, K => rows_with::<K>(m, rows, input, out, write))
}

/// [`rows_to`] with the kernel set `K`: eight rows a turn ([`Kernels::products8`]), then four
/// ([`Kernels::products4`]), then one at a time.
///
/// # Safety
/// `K::available()`.
#[cfg(not(target_os = "solana"))]
#[inline(always)]
unsafe fn rows_with<K: Kernels>(
    m: &Rows,
    rows: core::ops::Range<usize>,
    input: &Input,
    out: &mut [u8],
    write: Write,
) {
    let x = &input.vector;
    let first = rows.start;
    if m.holds(&rows) {
        let mut r = rows.start;
        while r + 8 <= rows.end {
            // SAFETY: r to r + 7 are in the range `holds` accepted.
            let rs: [_; 8] = core::array::from_fn(|k| m.row_unchecked(r + k));
            let products = K::products8(x, rs.map(|(_, w)| w), rs.map(|(s, _)| s), input.bias());
            for (k, &v) in products.iter().enumerate() {
                write.apply(out, r + k - first, v);
            }
            r += 8;
        }
        if r + 4 <= rows.end {
            // SAFETY: r to r + 3 are in the range `holds` accepted.
            let rs = [0, 1, 2, 3].map(|k| m.row_unchecked(r + k));
            let products = K::products4(x, rs.map(|(_, w)| w), rs.map(|(s, _)| s), input.bias());
            for (k, &v) in products.iter().enumerate() {
                write.apply(out, r + k - first, v);
            }
            r += 4;
        }
        for r in r..rows.end {
            // SAFETY: as above.
            let (scale, weights) = m.row_unchecked(r);
            write.apply(out, r - first, input.finish(K::dot(x, weights), scale));
        }
    } else {
        for r in rows {
            let (scale, weights) = m.row(r);
            write.apply(out, r - first, input.finish(K::dot(x, weights), scale));
        }
    }
}

/// The program's matrix stage: rows `start..end` of `rows` against `input`, written as `write`
/// says at `out` (a word per row, 4-byte aligned). Three rows a turn (`kernels::sbf::dot3`, each
/// input value loaded once for the three), in a function of its own so that the stage around
/// it keeps no values in the registers the kernel takes; its arguments in one struct (SBF
/// passes five registers).
#[cfg(target_os = "solana")]
pub struct RowsInto<'a> {
    pub rows: Rows<'a>,
    pub start: usize,
    pub end: usize,
    pub input: &'a Input<'a>,
    pub out: &'a mut [u8],
    pub write: Write<'a>,
}

/// Runs a [`RowsInto`]. Panics (as slicing would) when a row or the output is out of bounds.
#[cfg(target_os = "solana")]
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
            let (da, db, dc) = super::kernels::sbf::dot3(a.add(w), b.add(w), c.add(w), x, n);
            emit(o, finish(da, (a as *const u32).read()));
            emit(o.add(4), finish(db, (b as *const u32).read()));
            emit(o.add(8), finish(dc, (c as *const u32).read()));
            row = row.add(3 * stride);
            o = o.add(12);
            left -= 3;
        }
        if left == 2 {
            let b = row.add(stride);
            let (da, db) = super::kernels::sbf::dot2(row.add(w), b.add(w), x, n);
            emit(o, finish(da, (row as *const u32).read()));
            emit(o.add(4), finish(db, (b as *const u32).read()));
        } else if left == 1 {
            let da = super::kernels::sbf::dot1(row.add(w), x, n);
            emit(o, finish(da, (row as *const u32).read()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rotary position embedding

/// Rotates each (even, odd) pair of each head of `q` and `key`, by the rotary coefficients of
/// `pos`: (a, b) -> (a cos − b sin, a sin + b cos), each rounded from 24 fractional bits; the
/// rotated key (the position's row of the key cache) is stored in the caches' offset binary
/// ([`CACHE_OFFSET`]), as the value stage stored the value row.
pub fn rotary(q: &mut [u8], key: &mut [u8], meta: &Metadata, pos: u32) {
    let head_size = meta.config().head_size() as usize;
    let start = 4 * pos as usize * head_size;
    let coefficients = &meta.block_bytes(Block::Rotary)[start..start + 4 * head_size];
    rotate(q, coefficients, head_size, 0);
    rotate(key, coefficients, head_size, CACHE_OFFSET);
}

/// [`rotary`]'s rotation of one vector, each value's bits XORed with `offset` as stored.
#[inline(always)]
fn rotate(v: &mut [u8], coefficients: &[u8], head_size: usize, offset: u32) {
    for i in (0..v.len() / 4).step_by(2) {
        let j = i % head_size;
        let cos = get(coefficients, j) as i64;
        let sin = get(coefficients, j + 1) as i64;
        let a = get(v, i) as i64;
        let b = get(v, i + 1) as i64;
        set_u32(
            v,
            i,
            saturate(shift_round(a * cos - b * sin, 24)) as u32 ^ offset,
        );
        set_u32(
            v,
            i + 1,
            saturate(shift_round(a * sin + b * cos, 24)) as u32 ^ offset,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Attention: one head's scores, their softmax, the weighted sum of the values

/// One head's attention at `pos`. `q` is the head's query, `keys` and `values` the layer's
/// caches (rows of `kv_dim` values from position 0), `kv_offset` the head's key and value
/// head × head size, `att` scratch for pos + 1 values, `out` the head's slice of xb. Returns
/// the sum of the head's outputs. Off chain by the kernels of `path`.
#[allow(clippy::too_many_arguments)]
pub fn attention_head(
    meta: &Metadata,
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    kv_dim: usize,
    kv_offset: usize,
    pos: u32,
    att: &mut [u8],
    out: &mut [u8],
    path: Path,
) -> i64 {
    let (inv_sqrt, exp) = (meta.inv_sqrt_head_size(), meta.block_bytes(Block::Exp));
    #[cfg(target_os = "solana")]
    {
        let _ = path;
        super::head::attention_head_rows(&mut super::head::Head {
            query: q,
            keys,
            values,
            row_len: 4 * kv_dim,
            offset: 4 * kv_offset,
            positions: pos as usize + 1,
            inv_sqrt,
            exp,
            att,
            out,
        })
    }
    #[cfg(not(target_os = "solana"))]
    attention_head_on(
        path, inv_sqrt, exp, q, keys, values, kv_dim, kv_offset, pos, att, out,
    )
}

/// Heads `heads` of a layer's attention ([`attention_head`] each, head h reading key and value
/// head h / `group`), their outputs at their spans of `xb`; returns the sum of their outputs.
/// `att` is left holding the last head's exponentials. Off chain, with enough work, the heads
/// are split across the scratch's threads, each part with its own scratch for the
/// exponentials but the last part, which takes `att`: the same bytes for any split.
#[allow(clippy::too_many_arguments)]
pub fn attention_heads(
    meta: &Metadata,
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    group: usize,
    pos: u32,
    heads: core::ops::Range<usize>,
    att: &mut [u8],
    xb: &mut [u8],
    scratch: &Scratch,
) -> i64 {
    let c = meta.config();
    let (head_size, kv_dim) = (
        c.head_size() as usize,
        (c.kv_heads * c.head_size()) as usize,
    );
    let path = scratch.path();
    let one = |head: usize, att: &mut [u8], out: &mut [u8]| {
        let query = &q[4 * head * head_size..4 * (head + 1) * head_size];
        let kv_offset = head / group * head_size;
        attention_head(
            meta, query, keys, values, kv_dim, kv_offset, pos, att, out, path,
        )
    };
    let xb = &mut xb[4 * heads.start * head_size..4 * heads.end * head_size];
    #[cfg(all(feature = "std", not(target_os = "solana")))]
    if scratch.threads > 1
        && heads.len() > 1
        && 2 * heads.len() * (pos as usize + 1) * head_size >= PARALLEL_WORK
    {
        let per = heads.len().div_ceil(scratch.threads);
        let parts = heads.len().div_ceil(per);
        let positions = 4 * (pos as usize + 1);
        let mut own = std::vec![0u8; (parts - 1) * positions];
        let mut atts: std::vec::Vec<&mut [u8]> = own.chunks_exact_mut(positions).collect();
        atts.push(att);
        let items = xb.chunks_mut(4 * per * head_size).zip(atts).collect();
        return super::team::sum_parts(scratch.threads, items, |i, (out, att)| {
            let first = heads.start + i * per;
            let spans = out.chunks_exact_mut(4 * head_size).enumerate();
            spans.map(|(k, o)| one(first + k, att, o)).sum::<i64>()
        });
    }
    let spans = xb.chunks_exact_mut(4 * head_size).enumerate();
    spans.map(|(k, o)| one(heads.start + k, att, o)).sum()
}

/// [`attention_head`] by the kernels of `path` (a path this machine runs), from header byte 68
/// (`inv_sqrt`) and the exponential table.
#[cfg(not(target_os = "solana"))]
#[allow(clippy::too_many_arguments)]
pub(super) fn attention_head_on(
    path: Path,
    inv_sqrt: u32,
    exp: &[u8],
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    kv_dim: usize,
    kv_offset: usize,
    pos: u32,
    att: &mut [u8],
    out: &mut [u8],
) -> i64 {
    // SAFETY: with_path picks a set the CPU runs.
    with_path!(path, K => attention_head_with::<K>(
        inv_sqrt, exp, q, keys, values, kv_dim, kv_offset, pos, att, out,
    ))
}

/// One head's attention with the kernel set `K`: the scores, their softmax, the weighted values.
///
/// # Safety
/// `K::available()`.
#[cfg(not(target_os = "solana"))]
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn attention_head_with<K: Kernels>(
    inv_sqrt: u32,
    exp: &[u8],
    q: &[u8],
    keys: &[u8],
    values: &[u8],
    kv_dim: usize,
    kv_offset: usize,
    pos: u32,
    att: &mut [u8],
    out: &mut [u8],
) -> i64 {
    let head_size = q.len() / 4;
    let positions = pos as usize + 1;
    let mut query = [0i64; 64];
    for (j, v) in query[..head_size].iter_mut().enumerate() {
        *v = get(q, j) as i64;
    }
    let query = &query[..head_size];
    let row_len = 4 * kv_dim;
    let att = &mut att[..4 * positions];
    let keys = &keys[..positions * row_len];
    let max = K::scores(query, q, keys, row_len, 4 * kv_offset, inv_sqrt, att);
    let reciprocal = K::softmax(att, max, exp);
    let values = &values[..positions * row_len];
    weighted_values::<K>(
        att,
        reciprocal,
        values,
        row_len,
        4 * kv_offset,
        out,
        head_size,
    )
}

/// Positions whose attention weights [`weighted_values`] computes at a time: their cached
/// values (a head's slice of 64 rows) stay in the first-level cache while each group of outputs
/// sums over them.
#[cfg(not(target_os = "solana"))]
const WEIGHTS_CHUNK: usize = 64;

/// out_j = Σ_t weight_t × value_t,j, rounded from 30 fractional bits, saturated; returns Σ out.
/// Every partial sum is bounded by Σ weights ≤ 2^30 times |value| ≤ 2^27. The positions go in
/// chunks: a chunk's weights are computed once, then summed against its cached values (exact
/// i64 sums: any order).
///
/// # Safety
/// `K::available()`.
#[cfg(not(target_os = "solana"))]
#[inline(always)]
unsafe fn weighted_values<K: Kernels>(
    att: &[u8],
    reciprocal: u64,
    values: &[u8],
    row_len: usize,
    offset: usize,
    out: &mut [u8],
    head_size: usize,
) -> i64 {
    let positions = values.len() / row_len;
    // Every row's slice [offset, offset + 4 × head size) lies in `values`: the kernels read
    // them unchecked.
    assert!(offset + 4 * head_size <= row_len && head_size <= 64);
    let mut acc = [0i64; 64];
    let mut weights = [0u32; WEIGHTS_CHUNK];
    let mut weight_sum = 0i64;
    let mut start = 0;
    while start < positions {
        let n = WEIGHTS_CHUNK.min(positions - start);
        K::weights(
            &att[4 * start..4 * (start + n)],
            reciprocal,
            &mut weights[..n],
        );
        weight_sum += weights[..n].iter().map(|&w| w as i64).sum::<i64>();
        let rows = &values[start * row_len..(start + n) * row_len];
        K::accumulate(&mut acc[..head_size], &weights[..n], rows, row_len, offset);
        start += n;
    }
    // The kernels summed the cached words, v + 2^31 each.
    let back = weight_sum << 31;
    let mut sum = 0i64;
    for (j, &a) in acc[..head_size].iter().enumerate() {
        let v = saturate(shift_round(a - back, 30));
        set(out, j, v);
        sum += v as i64;
    }
    sum
}

// ---------------------------------------------------------------------------------------------
// The feed-forward block's gate

/// SiLU of `v` (16 fractional bits) from its table: the identity from 16 on, zero below −16,
/// otherwise linear interpolation between entries i and i + 1 where i = floor((v + 16) × 128),
/// from the 9 bits of the fraction f: round((T[i] × (512 − f) + T[i+1] × f) / 2^9), halves up.
pub fn silu(table: &[u8], v: i32) -> i64 {
    let v = v as i64;
    if v >= 16 << 16 {
        return v;
    }
    if v < -(16 << 16) {
        return 0;
    }
    let u = (v + (16 << 16)) as u64;
    let i = (u >> 9) as usize;
    debug_assert!(i < TABLE_LAST);
    let f = (u & 511) as i64;
    let a = get(table, i) as i64;
    let b = get(table, i + 1) as i64;
    shift_round(a * (512 - f) + b * f, 9)
}

/// hb[i] = SiLU(gate) × up, rounded from 32 to 16 fractional bits, saturated.
#[inline]
pub fn gated(silu_table: &[u8], gate: i32, up: i32) -> i32 {
    saturate(shift_round(silu(silu_table, gate) * up as i64, 16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::kernels::portable::halves_dot;
    use crate::infer::state::word;
    use std::vec::Vec;

    /// A CPU with a set's features takes the set: its known-answer check (`available`) passed
    /// here, so the tests below run it.
    #[test]
    fn a_cpu_with_the_features_runs_their_set() {
        #[cfg(target_arch = "x86_64")]
        {
            let avx512 = ["avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni"];
            let has = |f: &str| match f {
                "avx512f" => std::is_x86_feature_detected!("avx512f"),
                "avx512bw" => std::is_x86_feature_detected!("avx512bw"),
                "avx512dq" => std::is_x86_feature_detected!("avx512dq"),
                "avx512vl" => std::is_x86_feature_detected!("avx512vl"),
                "avx512vnni" => std::is_x86_feature_detected!("avx512vnni"),
                _ => std::is_x86_feature_detected!("avx2"),
            };
            if avx512.iter().all(|f| has(f)) {
                assert!(Path::all().contains(&Path::Avx512), "AVX-512 disagreed");
                assert_eq!(Path::detect(), Path::Avx512);
            }
            if has("avx2") {
                assert!(Path::all().contains(&Path::Avx2), "AVX2 disagreed");
            }
        }
    }

    /// Every kernel set's scores, exponentials and weights equal the portable ones, value by
    /// value: head sizes 1 to 64, 1 to 300 positions (every tail of the vector loops), queries
    /// of 28 bits (scores saturate) and of 14 (they spread), scales below 2^24 and from 2^31
    /// on, the artifact's exponential table, and R = 2^32 (one position).
    #[test]
    fn every_path_scores_and_weighs_alike() {
        use crate::infer::kernels::portable::Portable;
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || crate::infer::next_random(&mut seed);
        let exp = &crate::EXP_TABLE_BYTES;
        let cases = [
            (8, 1),
            (8, 7),
            (8, 8),
            (8, 9),
            (8, 17),
            (8, 256),
            (48, 33),
            (64, 300),
            (3, 15),
            (13, 16),
            (1, 40),
        ];
        for (round, &(head_size, positions)) in cases.iter().enumerate() {
            let row_len = 4 * (2 * head_size + 1);
            let offset = 4 * (round % 2) * head_size;
            // The keys in the cache's offset binary (state::CACHE_OFFSET).
            let keys: Vec<u8> = (0..positions * row_len / 4)
                .flat_map(|_| (((next() % (1 << 28)) as i32 - (1 << 27)) ^ i32::MIN).to_le_bytes())
                .collect();
            for shift in [0, 14] {
                let q: Vec<u8> = (0..head_size)
                    .flat_map(|_| {
                        (((next() % (1 << 28)) as i32 - (1 << 27)) >> shift).to_le_bytes()
                    })
                    .collect();
                let query: Vec<i64> = q.chunks_exact(4).map(|v| word(v) as i64).collect();
                let inv_sqrt = match (round + shift) % 3 {
                    0 => next() as u32 | 1 << 31,
                    _ => (next() % (1 << 24)) as u32,
                };
                let mut expected = vec![0u8; 4 * positions];
                // SAFETY: the portable set runs everywhere.
                let max = unsafe {
                    Portable::scores(&query, &q, &keys, row_len, offset, inv_sqrt, &mut expected)
                };
                let mut exps = expected.clone();
                let reciprocal = unsafe { Portable::softmax(&mut exps, max, exp) };
                let mut weights = vec![0u32; positions];
                unsafe { Portable::weights(&exps, reciprocal, &mut weights) };
                let spread = expected
                    .chunks_exact(4)
                    .filter(|v| word(v).abs() < 1 << 27)
                    .count();
                if shift == 14 && inv_sqrt < 1 << 24 {
                    assert!(2 * spread > positions, "case {round}: the scores spread");
                }
                for path in Path::all() {
                    let case = format!("{path:?}, case {round}, shift {shift}");
                    let mut att = vec![0u8; 4 * positions];
                    let got = with_path!(path, K => K::scores(&query, &q, &keys, row_len, offset, inv_sqrt, &mut att));
                    assert_eq!((got, &att), (max, &expected), "scores, {case}");
                    let r = with_path!(path, K => K::softmax(&mut att, max, exp));
                    assert_eq!((r, &att), (reciprocal, &exps), "exponentials, {case}");
                    let mut w = vec![0u32; positions];
                    with_path!(path, K => K::weights(&att, r, &mut w));
                    assert_eq!(w, weights, "weights, {case}");
                }
            }
        }
        // R = 2^32: a single position's exponential is the whole sum.
        for path in Path::all() {
            let mut att = 0i32.to_le_bytes().to_vec();
            let r = with_path!(path, K => K::softmax(&mut att, 0, exp));
            assert_eq!(r, 1 << 32, "{path:?}");
            let mut w = [0u32; 1];
            with_path!(path, K => K::weights(&att, r, &mut w));
            assert_eq!(w[0], 1 << 30, "{path:?}");
        }
    }

    /// Every kernel set this machine runs (portable, AVX2, AVX-512 VNNI) gives the same exact
    /// row sums as Σ w × x in i64 — one row ([`Kernels::dot`]), four rows
    /// ([`Kernels::dot4`]), the products of four and of eight ([`Kernels::products4`],
    /// [`Kernels::products8`]: scales over the whole u32 range, biases of either sign), and
    /// whole matrix stages ([`write_rows`], every `Write`, rows in and past fours, split across
    /// threads) — at the extremes of the ranges and on seeded
    /// random rows of every tail length up to 2,048 columns.
    #[test]
    fn every_kernel_gives_the_same_integers() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let extremes = [
            1 << 27,
            -(1 << 27),
            (1 << 27) - 1,
            -32_769,
            32_768,
            0,
            -129,
            128,
        ];
        let paths = Path::all();
        for n in [
            1usize, 7, 8, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 100, 127, 128, 172, 255,
            256, 257, 263, 264, 272, 279, 288, 768, 2047, 2048,
        ] {
            for round in 0..6 {
                let weights: Vec<Vec<u8>> = (0..8)
                    .map(|r| {
                        (0..n)
                            .map(|i| match round {
                                0 | 4 => 255,
                                5 => (r * 51) as u8,
                                _ => (next() >> (i % 8)) as u8,
                            })
                            .collect()
                    })
                    .collect();
                let x: Vec<i32> = (0..n)
                    .map(|i| match round {
                        0 => 1 << 27,
                        1 => -(1 << 27),
                        2 => extremes[i % extremes.len()],
                        // Every low half at −2^15: Σ b × lo of a whole row leaves i32.
                        4 => -32_768,
                        _ => (next() % (1 << 28)) as i32 - (1 << 27),
                    })
                    .collect();
                let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let expected: Vec<i64> = weights
                    .iter()
                    .map(|w| w.iter().zip(&x).map(|(&w, &v)| w as i64 * v as i64).sum())
                    .collect();
                assert_eq!(
                    stored_dot_plain(&weights[0], &bytes),
                    expected[0],
                    "plain, {n}"
                );
                // The products' rule in i128: round((dot − bias) × scale / 2^24), halves up,
                // saturated; scales over the whole u32 range, biases of either sign.
                let scales = [1, next() as u32, next() as u32 | 1 << 31, u32::MAX];
                let scales8: [u32; 8] = core::array::from_fn(|r| match r {
                    0..4 => scales[r],
                    4 => 1 << 24,
                    _ => next() as u32,
                });
                let bias = match round {
                    0 => 0,
                    1 => -(1i64 << 45),
                    _ => (next() % (1 << 46)) as i64 - (1 << 45),
                };
                let finished: [i32; 8] = core::array::from_fn(|r| {
                    let v = (expected[r] - bias) as i128 * scales8[r] as i128;
                    ((v + (1 << 23)) >> 24).clamp(-(1 << 27), 1 << 27) as i32
                });
                for &path in &paths {
                    let mut scratch = Scratch::with(path, 1);
                    let input = Input::new(&bytes, 0, &mut scratch);
                    assert_eq!(input.path, path);
                    let x = &input.vector;
                    if path == Path::Portable {
                        assert_eq!(halves_dot(&weights[0], x.hi, x.lo), expected[0]);
                    }
                    let rows8: [&[u8]; 8] = core::array::from_fn(|r| &weights[r][..]);
                    let rows = [rows8[0], rows8[1], rows8[2], rows8[3]];
                    let (one, four, products, products8) = with_path!(path, K => (
                        weights.iter().map(|w| K::dot(x, w)).collect::<Vec<_>>(),
                        K::dot4(x, rows),
                        K::products4(x, rows, scales, bias),
                        K::products8(x, rows8, scales8, bias),
                    ));
                    assert_eq!(one, expected, "{path:?} dot, {n} columns, round {round}");
                    assert_eq!(four[..], expected[..4], "{path:?} dot4, {n}, round {round}");
                    assert_eq!(
                        products[..],
                        finished[..4],
                        "{path:?} products4, {n}, {round}"
                    );
                    assert_eq!(
                        products8, finished,
                        "{path:?} products8, {n}, round {round}"
                    );
                }
            }
        }
    }

    /// A matrix of `rows` rows of `columns` seeded weights and scales, as the format lays it
    /// out (a 4-byte scale, then the weights from ROW_WEIGHTS_OFFSET, rows 8-byte aligned).
    fn matrix(rows: usize, columns: usize, seed: &mut u64) -> (Vec<u8>, usize) {
        let row_bytes = (crate::ROW_WEIGHTS_OFFSET + columns).next_multiple_of(8);
        let mut bytes = vec![0u8; rows * row_bytes];
        for row in bytes.chunks_exact_mut(row_bytes) {
            let scale = (crate::infer::next_random(seed) % (1 << 24)) as u32;
            row[..4].copy_from_slice(&scale.to_le_bytes());
            for w in &mut row[crate::ROW_WEIGHTS_OFFSET..crate::ROW_WEIGHTS_OFFSET + columns] {
                *w = crate::infer::next_random(seed) as u8;
            }
        }
        (bytes, row_bytes)
    }

    /// [`write_rows`] gives the same words on every path, with 1 to 3 threads, for every
    /// `Write`, whole stages and ranges that start and end mid-matrix.
    #[test]
    fn every_path_and_split_of_a_stage_writes_the_same_words() {
        let mut seed = 0x1234_5678_9ABC_DEF1u64;
        let table: Vec<u8> = (0..=TABLE_LAST as u64)
            .flat_map(|i| ((i as i32 * 331) - 700_000).to_le_bytes())
            .collect();
        for (rows, columns) in [
            (5, 7),
            (512, 64),
            (172, 64),
            (64, 172),
            (1031, 288),
            (9, 2048),
        ] {
            let (bytes, row_bytes) = matrix(rows, columns, &mut seed);
            let m = Rows {
                bytes: &bytes,
                columns,
                row_bytes,
            };
            let x: Vec<u8> = (0..columns)
                .flat_map(|_| {
                    let v = (crate::infer::next_random(&mut seed) % (1 << 28)) as i32 - (1 << 27);
                    v.to_le_bytes()
                })
                .collect();
            let sum: i64 = x.chunks_exact(4).map(|v| word(v) as i64).sum();
            let start: Vec<u8> = (0..rows)
                .flat_map(|_| {
                    ((crate::infer::next_random(&mut seed) % (1 << 22)) as i32).to_le_bytes()
                })
                .collect();
            for range in [0..rows, 1..rows, 0..rows.min(3), rows / 3..rows - rows / 4] {
                for write in [Write::Set, Write::Add, Write::Gate(&table)] {
                    // The reference: one row at a time, the plain sum.
                    let mut expected = start.clone();
                    let mut scratch = Scratch::with(Path::Portable, 1);
                    let input = Input::new(&x, sum, &mut scratch);
                    for r in range.clone() {
                        let (scale, w) = m.row(r);
                        let v = input.finish(stored_dot_plain(w, &x), scale);
                        write.apply(&mut expected, r, v);
                    }
                    for &path in &Path::all() {
                        for threads in 1..=3 {
                            let mut scratch = Scratch::with(path, threads);
                            let input = Input::new(&x, sum, &mut scratch);
                            let mut out = start.clone();
                            write_rows(&m, range.clone(), &input, &mut out, write);
                            assert!(
                                out == expected,
                                "{path:?}, {threads} threads, {rows} × {columns}, {range:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// [`write_products`] in one split gives every product's words as its matrices in turn,
    /// row by row: products of several matrices over one output (the gate, then the up rows),
    /// of other row counts and ranges, one too small to share out, on every path and 1 to 3
    /// threads (their work together past the split's threshold).
    #[test]
    fn products_in_one_split_write_what_their_matrices_write_in_turn() {
        let mut seed = 0x0DDB_A11C_AFE5_EED5u64;
        let columns = 288;
        let table: Vec<u8> = (0..=TABLE_LAST as u64)
            .flat_map(|i| ((i as i32 * 331) - 700_000).to_le_bytes())
            .collect();
        let stored: Vec<(Vec<u8>, usize)> = [300, 200, 200, 5]
            .map(|rows| matrix(rows, columns, &mut seed))
            .into();
        let m: Vec<Rows> = stored
            .iter()
            .map(|(bytes, row_bytes)| Rows {
                bytes,
                columns,
                row_bytes: *row_bytes,
            })
            .collect();
        let x: Vec<u8> = (0..columns)
            .flat_map(|_| {
                ((crate::infer::next_random(&mut seed) % (1 << 28)) as i32 - (1 << 27))
                    .to_le_bytes()
            })
            .collect();
        let sum: i64 = x.chunks_exact(4).map(|v| word(v) as i64).sum();
        let first = [(m[0], Write::Set)];
        let gated = [(m[1], Write::Set), (m[2], Write::Gate(&table))];
        let small = [(m[3], Write::Add)];
        let products: [(&Matrices, core::ops::Range<usize>); 3] =
            [(&first, 0..300), (&gated, 7..190), (&small, 0..5)];
        assert!(300 * columns + 2 * 183 * columns + 5 * columns >= PARALLEL_WORK);
        let start = |rows: usize, seed: &mut u64| -> Vec<u8> {
            (0..rows)
                .flat_map(|_| ((crate::infer::next_random(seed) % (1 << 22)) as i32).to_le_bytes())
                .collect()
        };
        let outs: Vec<Vec<u8>> = products
            .iter()
            .map(|(_, r)| start(r.len(), &mut seed))
            .collect();
        // The reference: each product's matrices in turn, one row at a time, the plain sum.
        let mut expected = outs.clone();
        let mut scratch = Scratch::with(Path::Portable, 1);
        let input = Input::new(&x, sum, &mut scratch);
        for ((matrices, range), out) in products.iter().zip(&mut expected) {
            for &(m, write) in matrices.iter() {
                for r in range.clone() {
                    let (scale, w) = m.row(r);
                    let v = input.finish(stored_dot_plain(w, &x), scale);
                    write.apply(out, r - range.start, v);
                }
            }
        }
        for &path in &Path::all() {
            for threads in 1..=3 {
                let mut scratch = Scratch::with(path, threads);
                let input = Input::new(&x, sum, &mut scratch);
                let mut got = outs.clone();
                let mut all: Vec<Product> = products
                    .iter()
                    .zip(&mut got)
                    .map(|((matrices, range), out)| Product::new(matrices, range.clone(), out))
                    .collect();
                write_products(&mut all, &input);
                assert!(got == expected, "{path:?}, {threads} threads");
            }
        }
    }

    /// The byte planes of AVX-512 give back every value of the activations' range.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    #[test]
    fn the_digits_give_back_the_value() {
        use crate::infer::kernels::avx512::digits;
        let mut seed = 7u64;
        let values = (0..100_000)
            .map(|_| (crate::infer::next_random(&mut seed) % (1 << 28)) as i32 - (1 << 27))
            .chain([
                1 << 27,
                -(1 << 27),
                0,
                -1,
                127,
                128,
                -128,
                -129,
                32_767,
                -32_768,
            ]);
        for x in values {
            let d = digits(x);
            let back = d[0] as i64 + ((d[1] as i64) << 8) + ((d[2] as i64) << 16);
            assert_eq!(back + ((d[3] as i64) << 24), x as i64, "{x}");
            assert!((-8..=8).contains(&d[3]), "{x}");
        }
    }
}
