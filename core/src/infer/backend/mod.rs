//! The backends of the forward pass, one per target behind one face ([`Backend`]): the scratch
//! and the input vector of a matrix stage as the target's loops read it, a matrix's rows times
//! that input, several matrices' rows over one input, and one attention head. Every backend
//! defines the same names; what one leaves out, the face's defaults fill in (as ggml's
//! `ggml-cpu/arch/<target>/` with its generic fallbacks):
//!
//! - `native` (every target but SBF): the kernel sets of `kernels/` (portable, AVX2, AVX-512,
//!   SIMD128) behind their `Kernels` contract, chosen by [`Path`]; with std a stage's rows and
//!   a layer's heads are split across threads;
//! - `sbf` (the program): the input widened to 64 bits in the heap frame, rows three at a
//!   time and the attention head in loops shaped for SBF, their inner loops in assembly
//!   (`kernels::sbf`).
//!
//! [`Target`] is this target's backend: the one place the forward pass switches on the target.
//! Every backend computes the same exact integers, so every path gives the same bits.

use super::forward::Write;
use super::kernels::Path;
use super::model::Rows;
use core::ops::Range;

#[cfg(not(target_os = "solana"))]
pub mod native;
#[cfg(any(target_os = "solana", test))]
pub mod sbf;

#[cfg(not(target_os = "solana"))]
pub use native::Native as Target;
#[cfg(target_os = "solana")]
pub use sbf::Sbf as Target;

/// This target's scratch ([`Backend::Scratch`]).
pub type Scratch = <Target as Backend>::Scratch;
/// This target's choices for a run ([`Backend::Options`]).
pub type Options = <Target as Backend>::Options;

/// The face every backend shows the forward pass.
pub trait Backend {
    /// What a run may choose: the kernel set and the threads (every choice gives the same
    /// bytes).
    type Options: Copy;
    /// Room for a matrix stage's input vector, made once per advance.
    type Scratch;
    /// A matrix stage's input vector with Σ x, as the backend's row loops read it.
    type Input<'a>
    where
        Self: 'a;

    /// Whether a layer's query, key and value stages run as one [`Backend::write_products`]
    /// when the budget holds the three whole (the same bytes as in turn). By default in turn.
    const QUERY_KEY_VALUE_AS_ONE: bool = false;

    /// The widest kernels this machine runs, the calling thread only.
    fn options() -> Self::Options;

    /// `options` with the kernels of `path` (a path this machine lacks falls back to the
    /// widest it has). By default there is one set.
    #[inline(always)]
    fn with_path(options: Self::Options, _path: Path) -> Self::Options {
        options
    }

    /// `options` splitting stages across up to `threads` threads. By default one thread.
    #[inline(always)]
    fn with_threads(options: Self::Options, _threads: usize) -> Self::Options {
        options
    }

    /// A scratch for an advance by `options`.
    fn scratch(options: Self::Options) -> Self::Scratch;

    /// The input `bytes` (little-endian i32 values, |x| ≤ 2^27) with Σ x = `sum`.
    fn input<'a>(bytes: &'a [u8], sum: i64, scratch: &'a mut Self::Scratch) -> Self::Input<'a>;

    /// [`Backend::input`], or the vector the scratch already holds when it was made from the
    /// same bytes (the same region, untouched since: the query, key and value stages of a
    /// layer). By default made anew.
    #[inline(always)]
    fn reuse<'a>(bytes: &'a [u8], sum: i64, scratch: &'a mut Self::Scratch) -> Self::Input<'a> {
        Self::input(bytes, sum, scratch)
    }

    /// Forgets the held vector: its region is about to change. By default none is held.
    #[inline(always)]
    fn forget(_scratch: &mut Self::Scratch) {}

    /// Rows `rows` of `m` times `input`, each product v of row r written to word r −
    /// `rows.start` of `out` as `write` says.
    fn rows(m: &Rows, rows: Range<usize>, input: &Self::Input<'_>, out: &mut [u8], write: Write);

    /// [`Backend::rows`] written to word r of `out`.
    #[inline(always)]
    fn write_rows(
        m: &Rows,
        rows: Range<usize>,
        input: &Self::Input<'_>,
        out: &mut [u8],
        write: Write,
    ) {
        let out = &mut out[4 * rows.start..];
        Self::rows(m, rows, input, out, write)
    }

    /// Every product's matrices times `input`: the words of each product's matrices in turn.
    /// By default in turn.
    #[inline(always)]
    fn write_products(products: &mut [Product], input: &Self::Input<'_>) {
        for product in products {
            for &(m, write) in product.matrices {
                Self::rows(&m, product.rows.clone(), input, product.out, write);
            }
        }
    }

    /// hb = SiLU(gate × x) × (up × x) at rows `rows` (word r of `hb` is row r's): the gate's
    /// rows, then the up rows over them (`Write::Gate`). By default one matrix after the other.
    #[inline(always)]
    fn write_hidden(
        gate: &Rows,
        up: &Rows,
        silu: &[u8],
        input: &Self::Input<'_>,
        hb: &mut [u8],
        rows: Range<usize>,
    ) {
        Self::write_rows(gate, rows.clone(), input, hb, Write::Set);
        Self::write_rows(up, rows, input, hb, Write::Gate(silu));
    }

    /// One head's attention: its scores, their softmax and the weighted sum of its values into
    /// `head.out`, the exponentials left in `head.att`; returns Σ out.
    fn attention_head(head: &mut Head, scratch: &Self::Scratch) -> i64;

    /// Heads `heads` of `layer` ([`Backend::attention_head`] each), their outputs at their
    /// spans of `xb`; returns the sum of their outputs, `att` left holding the last head's
    /// exponentials. By default in turn.
    #[inline(always)]
    fn attention_heads(
        layer: &Layer,
        heads: Range<usize>,
        att: &mut [u8],
        xb: &mut [u8],
        scratch: &Self::Scratch,
    ) -> i64 {
        let xb = &mut xb[4 * heads.start * layer.head_size..4 * heads.end * layer.head_size];
        heads_in_turn::<Self>(layer, heads.start, att, xb, scratch)
    }
}

/// Heads from `first` of `layer` in turn, one per head-size span of `xb` (the heads' slice).
#[inline(always)]
pub fn heads_in_turn<B: Backend + ?Sized>(
    layer: &Layer,
    first: usize,
    att: &mut [u8],
    xb: &mut [u8],
    scratch: &B::Scratch,
) -> i64 {
    let spans = xb.chunks_exact_mut(4 * layer.head_size).enumerate();
    spans
        .map(|(k, out)| B::attention_head(&mut layer.head(first + k, att, out), scratch))
        .sum()
}

/// Matrices, each with what its rows' products do to the output.
pub type Matrices<'m> = [(Rows<'m>, Write<'m>)];

/// Matrices' rows into one output, in order (the hidden stage's gate, then its up rows over
/// the gate's products): a piece of [`Backend::write_products`]' work. `out`'s word 0 is row
/// `rows.start`'s.
pub struct Product<'p, 'm, 'o> {
    pub matrices: &'p Matrices<'m>,
    pub rows: Range<usize>,
    pub out: &'o mut [u8],
}

impl<'p, 'm, 'o> Product<'p, 'm, 'o> {
    pub fn new(matrices: &'p Matrices<'m>, rows: Range<usize>, out: &'o mut [u8]) -> Self {
        Product {
            matrices,
            rows,
            out,
        }
    }
}

/// A layer's attention at one position: what each of its heads reads.
pub struct Layer<'a> {
    /// Every head's query.
    pub q: &'a [u8],
    /// The layer's key and value caches: rows of `kv_dim` values from position 0.
    pub keys: &'a [u8],
    pub values: &'a [u8],
    /// Query heads per key and value head.
    pub group: usize,
    pub head_size: usize,
    pub kv_dim: usize,
    pub pos: u32,
    /// Header byte 68 (1 / sqrt(head size), 24 fractional bits) and the exponential table.
    pub inv_sqrt: u32,
    pub exp: &'a [u8],
}

impl<'a> Layer<'a> {
    /// Head `h`'s inputs, with `att` for its exponentials and `out` its slice of xb.
    #[inline(always)]
    pub fn head<'h>(&'h self, h: usize, att: &'h mut [u8], out: &'h mut [u8]) -> Head<'h> {
        let head_size = self.head_size;
        Head {
            query: &self.q[4 * h * head_size..4 * (h + 1) * head_size],
            keys: self.keys,
            values: self.values,
            row_len: 4 * self.kv_dim,
            offset: 4 * (h / self.group * head_size),
            positions: self.pos as usize + 1,
            inv_sqrt: self.inv_sqrt,
            exp: self.exp,
            att,
            out,
        }
    }
}

/// A head's inputs and outputs.
pub struct Head<'a> {
    /// The head's query: head size i32 values.
    pub query: &'a [u8],
    /// The layer's key and value caches: rows of `row_len` bytes from position 0.
    pub keys: &'a [u8],
    pub values: &'a [u8],
    pub row_len: usize,
    /// Bytes from a row's start to the head's key (and value) head.
    pub offset: usize,
    /// Cached positions attended: 0 to pos.
    pub positions: usize,
    /// Header byte 68 and the exponential table.
    pub inv_sqrt: u32,
    pub exp: &'a [u8],
    /// Scratch for `positions` values, and the head's slice of xb.
    pub att: &'a mut [u8],
    pub out: &'a mut [u8],
}

#[cfg(test)]
mod tests;
