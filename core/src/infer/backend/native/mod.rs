//! The backend of every target but SBF: the input vector of a matrix stage split once into the
//! forms the kernel sets of `kernels/` read ([`Vector`]), the rows eight, four and one at a
//! time by the set of the run's [`Path`], and with std a stage's rows (or a layer's heads)
//! split across the process's team of threads (`team.rs`).

pub(super) mod head;
#[cfg(test)]
mod tests;

use super::{heads_in_turn, Backend, Head, Layer, Product};
use crate::infer::fixed::{mul_q24, saturate};
use crate::infer::forward::{gated, Write, MAX_COLUMNS};
use crate::infer::kernels::{with_path, Kernels, Path, Vector};
use crate::infer::model::Rows;
use crate::infer::state::{get, set};
use crate::WEIGHT_BIAS;
use core::ops::Range;

/// The off-chain backend.
pub struct Native;

/// The kernel set and the threads of a run.
#[derive(Clone, Copy)]
pub struct Options {
    path: Path,
    threads: usize,
}

/// Room for an input vector in the forms the kernels read: its 16-bit halves, or its byte
/// planes for AVX-512.
pub struct Scratch {
    hi: [i16; MAX_COLUMNS],
    lo: [i16; MAX_COLUMNS],
    planes: [i8; 4 * MAX_COLUMNS],
    /// The kernel set this advance takes.
    path: Path,
    /// Threads a matrix stage's rows may be split across (1: the calling thread only).
    threads: usize,
    /// The vector `Native::input` made last, while it is still what the scratch holds: (its
    /// first byte's address, its length, its Σ). The query, key and value stages read the
    /// same xb, made once for the three (`Native::reuse`).
    held: Option<(usize, usize, i64)>,
}

/// The input vector of a matrix stage with Σ x, held as the kernels read it.
pub struct Input<'a> {
    sum: i64,
    vector: Vector<'a>,
    path: Path,
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    threads: usize,
}

impl Scratch {
    /// A scratch for the kernels of `path` (a path this machine runs: [`Path::detect`] or a
    /// narrower one), splitting a stage's rows across up to `threads` threads (std only, 1
    /// elsewhere).
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

    /// The vector the scratch holds, `n` values.
    fn held(&self, n: usize) -> Input<'_> {
        let (sum, planes) = (self.held.map_or(0, |h| h.2), &self.planes);
        let plane = |k: usize| &planes[k * MAX_COLUMNS..k * MAX_COLUMNS + n];
        Input {
            sum,
            vector: Vector {
                hi: &self.hi[..n],
                lo: &self.lo[..n],
                planes: [plane(0), plane(1), plane(2), plane(3)],
            },
            path: self.path,
            threads: self.threads,
        }
    }
}

impl Input<'_> {
    /// The spec's row product from Σ stored × x: (Σ stored × x − 128 × Σ x) × scale / 2^24,
    /// rounded (halves up), saturated.
    #[inline(always)]
    fn finish(&self, stored_dot: i64, scale: u32) -> i32 {
        saturate(mul_q24(stored_dot - self.bias(), scale))
    }

    /// 128 × Σ x: what the stored bytes' offset adds to a row's Σ stored × x.
    #[inline(always)]
    fn bias(&self) -> i64 {
        WEIGHT_BIAS as i64 * self.sum
    }
}

impl Backend for Native {
    type Options = Options;
    type Scratch = Scratch;
    type Input<'a> = Input<'a>;

    const QUERY_KEY_VALUE_AS_ONE: bool = true;

    #[inline]
    fn options() -> Options {
        Options {
            path: Path::detect(),
            threads: 1,
        }
    }

    #[inline]
    fn with_path(options: Options, path: Path) -> Options {
        Options { path, ..options }
    }

    #[inline]
    fn with_threads(options: Options, threads: usize) -> Options {
        let threads = threads.max(1);
        #[cfg(feature = "std")]
        crate::infer::team::prepare(threads);
        Options { threads, ..options }
    }

    #[inline]
    fn scratch(options: Options) -> Scratch {
        Scratch::with(options.path, options.threads)
    }

    fn input<'a>(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
        if scratch.path.planes() {
            #[cfg(all(feature = "std", target_arch = "x86_64"))]
            // SAFETY: the path is Avx512 only where the CPU has its features.
            unsafe {
                crate::infer::kernels::avx512::split_planes(
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
                (scratch.hi[i], scratch.lo[i]) = crate::infer::kernels::portable::halves(x);
            }
        }
        scratch.held = Some((bytes.as_ptr() as usize, bytes.len(), sum));
        scratch.held(bytes.len() / 4)
    }

    #[inline]
    fn reuse<'a>(bytes: &'a [u8], sum: i64, scratch: &'a mut Scratch) -> Input<'a> {
        match scratch.held == Some((bytes.as_ptr() as usize, bytes.len(), sum)) {
            true => scratch.held(bytes.len() / 4),
            false => Native::input(bytes, sum, scratch),
        }
    }

    #[inline]
    fn forget(scratch: &mut Scratch) {
        scratch.held = None;
    }

    #[inline]
    fn rows(m: &Rows, rows: Range<usize>, input: &Input, out: &mut [u8], write: Write) {
        let rows = rows.start..rows.end.max(rows.start);
        let out = &mut out[..4 * rows.len()];
        Native::write_products(&mut [Product::new(&[(*m, write)], rows, out)], input);
    }

    /// Every product's matrices times `input`, in one split across the scratch's threads when
    /// their work together reaches [`PARALLEL_WORK`] (part i takes the i-th share of each
    /// product's rows), so that the stages that read one input (query, key and value; the
    /// gate and up rows) hand work off once. Each part writes its own words: the same words in
    /// any split.
    fn write_products(products: &mut [Product], input: &Input) {
        #[cfg(feature = "std")]
        if input.threads > 1 && work(products) >= PARALLEL_WORK {
            return crate::infer::team::split(input.threads, |threads| match threads {
                1 => products_in_turn(products, input),
                _ => products_split(products, input, threads),
            });
        }
        products_in_turn(products, input)
    }

    /// The gate's and the up rows in one split ([`Native::write_products`]).
    #[inline]
    fn write_hidden(
        gate: &Rows,
        up: &Rows,
        silu: &[u8],
        input: &Input,
        hb: &mut [u8],
        rows: Range<usize>,
    ) {
        let both = [(*gate, Write::Set), (*up, Write::Gate(silu))];
        let out = &mut hb[4 * rows.start..4 * rows.end];
        Native::write_products(&mut [Product::new(&both, rows, out)], input);
    }

    #[inline]
    fn attention_head(h: &mut Head, scratch: &Scratch) -> i64 {
        head::attention_head_on(scratch.path, h)
    }

    /// Off chain, with enough work, the heads are split across the scratch's threads, each
    /// part with its own scratch for the exponentials but the last part, which takes `att`:
    /// the same bytes for any split.
    fn attention_heads(
        layer: &Layer,
        heads: Range<usize>,
        att: &mut [u8],
        xb: &mut [u8],
        scratch: &Scratch,
    ) -> i64 {
        let head_size = layer.head_size;
        let xb = &mut xb[4 * heads.start * head_size..4 * heads.end * head_size];
        #[cfg(feature = "std")]
        if scratch.threads > 1
            && heads.len() > 1
            && 2 * heads.len() * (layer.pos as usize + 1) * head_size >= PARALLEL_WORK
        {
            return crate::infer::team::split(scratch.threads, |threads| match threads {
                1 => heads_in_turn::<Native>(layer, heads.start, att, xb, scratch),
                _ => heads_split(layer, heads, att, xb, scratch, threads),
            });
        }
        heads_in_turn::<Native>(layer, heads.start, att, xb, scratch)
    }
}

/// Rows (or a layer's heads, their scores' and values' multiply-accumulates counted) of at
/// least this many multiply-accumulates in all are split across the scratch's threads: below
/// it a hand-off costs more than it saves (stories260K's stages never reach it, nor its heads
/// before position 511; the stories15M shape's heads from position 113).
#[cfg(feature = "std")]
const PARALLEL_WORK: usize = 1 << 16;

/// The products' multiply-accumulates.
#[cfg(feature = "std")]
fn work(products: &[Product]) -> usize {
    products
        .iter()
        .map(|p| p.rows.len() * p.matrices.iter().map(|(m, _)| m.columns).sum::<usize>())
        .sum()
}

/// Every product's rows on the calling thread.
fn products_in_turn(products: &mut [Product], input: &Input) {
    for product in products {
        for &(m, write) in product.matrices {
            rows_to(&m, product.rows.clone(), input, product.out, write);
        }
    }
}

/// A layer's heads split across `threads` threads ([`Native::attention_heads`]).
#[cfg(feature = "std")]
fn heads_split(
    layer: &Layer,
    heads: Range<usize>,
    att: &mut [u8],
    xb: &mut [u8],
    scratch: &Scratch,
    threads: usize,
) -> i64 {
    let per = heads.len().div_ceil(threads);
    let parts = heads.len().div_ceil(per);
    let positions = 4 * (layer.pos as usize + 1);
    let mut own = std::vec![0u8; (parts - 1) * positions];
    let mut atts: std::vec::Vec<&mut [u8]> = own.chunks_exact_mut(positions).collect();
    atts.push(att);
    let items = xb.chunks_mut(4 * per * layer.head_size).zip(atts).collect();
    crate::infer::team::sum_parts(threads, items, |i, (out, att)| {
        heads_in_turn::<Native>(layer, heads.start + i * per, att, out, scratch)
    })
}

/// [`Native::write_products`] split across `threads` threads.
#[cfg(feature = "std")]
fn products_split(products: &mut [Product], input: &Input, threads: usize) {
    // Part i: (the product, its first row, its rows' words) for each product.
    type Share<'a> = std::vec::Vec<(usize, usize, &'a mut [u8])>;
    let mut parts: std::vec::Vec<Share> = (0..threads).map(|_| Share::new()).collect();
    let mut matrices = std::vec::Vec::with_capacity(products.len());
    for (p, product) in products.iter_mut().enumerate() {
        matrices.push(product.matrices);
        let per = product.rows.len().div_ceil(threads).next_multiple_of(4);
        for (i, chunk) in product.out.chunks_mut(4 * per.max(4)).enumerate() {
            parts[i].push((p, product.rows.start + i * per, chunk));
        }
    }
    crate::infer::team::sum_parts(threads, parts, |_, share| {
        for (p, start, chunk) in share {
            for &(m, write) in matrices[p] {
                rows_to(&m, start..start + chunk.len() / 4, input, chunk, write);
            }
        }
        0
    });
}

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

/// Rows `rows` of `m` times `input` into `out` (word 0 is row `rows.start`'s), by the kernels
/// of the input's path.
fn rows_to(m: &Rows, rows: Range<usize>, input: &Input, out: &mut [u8], write: Write) {
    // SAFETY: with_path picks a set the CPU runs.
    with_path!(input.path, K => rows_with::<K>(m, rows, input, out, write))
}

/// [`rows_to`] with the kernel set `K`: eight rows a turn ([`Kernels::products8`]), then four
/// ([`Kernels::products4`]), then one at a time.
///
/// # Safety
/// `K::available()`.
#[inline(always)]
unsafe fn rows_with<K: Kernels>(
    m: &Rows,
    rows: Range<usize>,
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
