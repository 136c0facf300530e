//! The check of section zero when a seal pass starts (chunk 0): what the seal needs to trust
//! the header it freezes, read with word loads. The same rules as curta-core's
//! `Metadata::parse_declared` (the tag, the configuration's ranges, the section count, the
//! reserved bytes zero, the section table tiling from 0 with exactly the declared lengths, the
//! blocks in order inside section zero, every matrix descriptor of its configuration's shape,
//! section and row length, aligned and inside its section, the inverse square root of the head
//! size, every block but the token strings at a multiple of 4, the exponential table the
//! spec's; and what a text prompt's encoding needs: every sorted id below the vocabulary), but
//! in one pass over words at their aligned addresses (the reserved words compared
//! with one `sol_memcmp_` per range) and with no formatting: a refusal is a static reason and
//! up to four numbers, logged with `sol_log` and `sol_log_64`.
//!
//! The account data the runtime gives a program is 8-byte aligned, and section zero starts
//! 2,048 bytes into it, so every u32 and u64 field of the header sits at its natural alignment;
//! the check refuses a section zero that is not (it cannot happen on chain).

use crate::error::CurtaError;
use curta_core::header::{descriptor, field};
use curta_core::{
    inv_sqrt_head_size, row_length, Block, Config, FormatError, MatrixKind, ALIGNMENT,
    DESCRIPTOR_LEN, EXP_TABLE_BYTES, EXP_TABLE_LEN, HEADER_LEN, MATRIX_TABLE_OFFSET, MAX_SECTIONS,
    MAX_SECTION_LEN, SECTION_ENTRY_LEN, SECTION_TABLE_OFFSET, TAG,
};

/// Why section zero was refused: the program error, a static reason and the numbers it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub error: CurtaError,
    pub reason: &'static str,
    pub values: [u64; 4],
}

fn invalid(reason: &'static str, values: [u64; 4]) -> Refusal {
    Refusal {
        error: CurtaError::InvalidSectionZero,
        reason,
        values,
    }
}

fn mismatch(reason: &'static str, values: [u64; 4]) -> Refusal {
    Refusal {
        error: CurtaError::SectionTableMismatch,
        reason,
        values,
    }
}

/// The header of section zero, at an 8-byte aligned address, at least HEADER_LEN bytes.
struct Words(*const u8);

impl Words {
    #[inline(always)]
    fn u32(&self, at: usize) -> u32 {
        // SAFETY: `at + 4 <= HEADER_LEN` at every call and the base is 8-byte aligned, `at` a
        // multiple of 4.
        u32::from_le(unsafe { (self.0.add(at) as *const u32).read() })
    }

    #[inline(always)]
    fn u64(&self, at: usize) -> u64 {
        // SAFETY: as `u32`, `at` a multiple of 8.
        u64::from_le(unsafe { (self.0.add(at) as *const u64).read() })
    }

    /// The first word from `start` to `end` (multiples of 8, `start < end`, within the header)
    /// that is not zero. The range is zero when its first word is and every word equals the
    /// next: one comparison of the range with itself a word later, a `sol_memcmp_` of about
    /// 10 CU on chain instead of a load per word. Only a header that fails is searched.
    #[inline(always)]
    fn zero(&self, start: usize, end: usize) -> Option<usize> {
        // SAFETY: `start < end <= HEADER_LEN` at every call: bytes of the header.
        let range = unsafe { core::slice::from_raw_parts(self.0.add(start), end - start) };
        if self.u64(start) == 0 && same_bytes(&range[..range.len() - 8], &range[8..]) {
            return None;
        }
        (start..end).step_by(8).find(|&at| self.u64(at) != 0)
    }

    /// The first `count` matrix descriptors, each as its three words: (section, columns),
    /// (rows, row bytes) and the offset (little-endian, as the target is).
    #[inline(always)]
    fn descriptors(&self, count: usize) -> &[[u64; 3]] {
        // SAFETY: `MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * count <= HEADER_LEN` (at most 114
        // descriptors), 8-byte aligned.
        unsafe {
            core::slice::from_raw_parts(self.0.add(MATRIX_TABLE_OFFSET) as *const [u64; 3], count)
        }
    }
}

/// Whether two byte strings of the same length are equal: on chain the `sol_memcmp_` syscall.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    #[cfg(target_os = "solana")]
    {
        let mut result = 0i32;
        // SAFETY: the syscall reads `a.len()` bytes of each (b is as long) and writes `result`.
        unsafe {
            pinocchio::syscalls::sol_memcmp_(a.as_ptr(), b.as_ptr(), a.len() as u64, &mut result)
        };
        result == 0
    }
    #[cfg(not(target_os = "solana"))]
    {
        a == b
    }
}

/// The configuration's ranges (curta-core's `Config::validate`), as a refusal.
fn config_refusal(e: FormatError) -> Refusal {
    match e {
        FormatError::FieldOutOfRange {
            value, min, max, ..
        } => invalid(
            "section zero: config field out of range (value, min, max)",
            [value, min, max, 0],
        ),
        FormatError::NotADivisor {
            value, of_value, ..
        } => invalid(
            "section zero: config field does not divide (value, of)",
            [value as u64, of_value as u64, 0, 0],
        ),
        FormatError::HeadSize { head_size } => invalid(
            "section zero: head size not even or over 64 (head size)",
            [head_size as u64, 0, 0, 0],
        ),
        _ => invalid("section zero: invalid configuration", [0; 4]),
    }
}

// A descriptor's first two words hold (section, columns) and (rows, row bytes), low half first.
const _: () = assert!(
    descriptor::SECTION == 0
        && descriptor::COLUMNS == 4
        && descriptor::ROWS == 8
        && descriptor::ROW_BYTES == 12
        && descriptor::OFFSET == 16
        && MATRIX_TABLE_OFFSET & 7 == 0
        && DESCRIPTOR_LEN & 7 == 0
);

/// A matrix shape's expected descriptor words, the section (the low half of the first) left
/// zero, and its size in bytes.
#[derive(Clone, Copy)]
struct Shape {
    columns: u64,
    rows: u64,
    size: u64,
}

/// `inv_sqrt_head_size(h)` for every head size a valid configuration has (even, 2 to 64) at
/// index h / 2 - 1: computed at compile time rather than by 26 bisection steps on chain.
const INV_SQRT_HEAD_SIZE: [u32; 32] = {
    let mut table = [0; 32];
    let mut i = 0;
    while i < 32 {
        table[i] = inv_sqrt_head_size(2 * (i as u32 + 1));
        i += 1;
    }
    table
};

/// Two u32 as the little-endian u64 they make: `low` first.
#[inline(always)]
fn pair(low: u32, high: u32) -> u64 {
    low as u64 | (high as u64) << 32
}

/// Whether a descriptor (its three words) is of matrix `shape` in `section`, its offset
/// aligned and the matrix inside the section.
#[inline(always)]
fn fits(descriptor: &[u64; 3], shape: &Shape, section: usize, section_length: u64) -> bool {
    let [first, second, start] = descriptor.map(u64::from_le);
    // One mask tests the alignment and start < 2^31 (a section is shorter: a larger start is
    // out of it either way), so start + size cannot overflow: the same test as
    // start.saturating_add(size) > section_length.
    first == shape.columns | section as u64
        && second == shape.rows
        && start & OFFSET_MASK == 0
        && start + shape.size <= section_length
}

/// The bits of a matrix offset that must be zero: below the alignment, and 31 and up.
const OFFSET_MASK: u64 = !((1 << 31) - 1) | (ALIGNMENT as u64 - 1);
const _: () = assert!(MAX_SECTION_LEN < 1 << 31 && OFFSET_MASK as i32 as u64 == OFFSET_MASK);

/// Whether every descriptor fits its shape ([`fits`]), checked one after the other with no
/// counter: `shapes` is one of two arrays, of 2 and of 7.
#[inline(always)]
fn all_fit(descriptors: &[[u64; 3]], shapes: &[Shape], section: usize, length: u64) -> bool {
    let fit = |d, shape| fits(d, shape, section, length);
    match (descriptors, shapes) {
        ([a, b], [s, t]) => fit(a, s) && fit(b, t),
        ([a, b, c, d, e, f, g], [s, t, u, v, w, x, y]) => {
            fit(a, s) && fit(b, t) && fit(c, u) && fit(d, v) && fit(e, w) && fit(f, x) && fit(g, y)
        }
        _ => unreachable!("the shapes of the vocabulary and of a layer"),
    }
}

/// The refusal of descriptor `index`, of matrix `shape` in `section`: the first of its four
/// fields that differs, named, or else its offset, misaligned or out of the section (only a
/// refused header gets here).
#[inline(always)]
fn descriptor_refusal(
    h: &Words,
    index: usize,
    section: usize,
    shape: &Shape,
    section_length: u64,
) -> Refusal {
    let at = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * index;
    let expected = [
        section as u32,
        (shape.columns >> 32) as u32,
        shape.rows as u32,
        (shape.rows >> 32) as u32,
    ];
    let fields = [
        descriptor::SECTION,
        descriptor::COLUMNS,
        descriptor::ROWS,
        descriptor::ROW_BYTES,
    ];
    if let Some(k) = (0..4).find(|&k| h.u32(at + fields[k]) != expected[k]) {
        return invalid(
            "section zero: matrix descriptor differs (index, header byte, found, expected)",
            [
                index as u64,
                (at + fields[k]) as u64,
                h.u32(at + fields[k]) as u64,
                expected[k] as u64,
            ],
        );
    }
    let start = h.u64(at + descriptor::OFFSET);
    invalid(
        "section zero: matrix misaligned or out of its section (index, offset, end, length)",
        [
            index as u64,
            start,
            start.saturating_add(shape.size),
            section_length,
        ],
    )
}

/// The first entry of a refused exponential table that differs from the spec's: its index,
/// the value found and the spec's, into `values`. Its own frame (SBF returns no aggregate),
/// called only for a refused table.
#[inline(never)]
fn exp_difference(table: &[u8], values: &mut [u64; 4]) {
    let word = |b: &[u8], i: usize| {
        u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]) as u64
    };
    let mut index = 0;
    while index + 1 < EXP_TABLE_LEN && word(table, index) == word(&EXP_TABLE_BYTES, index) {
        index += 1;
    }
    *values = [
        index as u64,
        word(table, index),
        word(&EXP_TABLE_BYTES, index),
        0,
    ];
}

/// Checks section zero against the declared section lengths and returns its configuration.
#[inline(always)]
pub fn check(bytes: &[u8], declared: &[u32]) -> Result<Config, Refusal> {
    let mut job = Job {
        bytes,
        declared,
        result: Err(invalid("", [0; 4])),
    };
    run(&mut job);
    job.result
}

/// [`check`]'s arguments and result, in memory: the check runs in a frame of its own (its
/// registers are not spilled around the caller's), with one argument (LLVM's BPF backend
/// passes at most five in registers and returns none of this size).
struct Job<'a> {
    bytes: &'a [u8],
    declared: &'a [u32],
    result: Result<Config, Refusal>,
}

#[inline(never)]
fn run(job: &mut Job) {
    job.result = check_in_place(job.bytes, job.declared);
}

/// The spec's rules in its order, each a step of its own (all inlined into [`run`]'s frame).
#[inline(always)]
fn check_in_place(bytes: &[u8], declared: &[u32]) -> Result<Config, Refusal> {
    let h = header(bytes)?;
    let c = Config::from_fields(core::array::from_fn(|i| h.u32(field::CONFIG + 4 * i)));
    c.validate().map_err(config_refusal)?;
    let count = section_count(&h, &c, declared)?;
    section_table(&h, declared, bytes.len())?;
    let matrices = 2 + 7 * c.layers as usize;
    reserved_zero(&h, count, matrices)?;
    blocks(&h, &c, bytes.len() as u64)?;
    descriptors(&h, &c, declared, count > 2, matrices)?;
    inv_sqrt_head_size_field(&h, &c)?;
    exp_table(bytes, &h)?;
    tokenizer(bytes, &h, &c)?;
    Ok(c)
}

/// At least the 4,096-byte header, 8-byte aligned, with the tag CURTAW01.
#[inline(always)]
fn header(bytes: &[u8]) -> Result<Words, Refusal> {
    if bytes.len() < HEADER_LEN {
        return Err(invalid(
            "section zero: shorter than its header (length)",
            [bytes.len() as u64, 0, 0, 0],
        ));
    }
    if bytes.as_ptr() as usize & 7 != 0 {
        return Err(invalid("section zero: not 8-byte aligned", [0; 4]));
    }
    let h = Words(bytes.as_ptr());
    if h.u64(field::TAG) != u64::from_le_bytes(TAG) {
        return Err(invalid(
            "section zero: wrong tag at byte 0, expected CURTAW01",
            [h.u64(field::TAG), 0, 0, 0],
        ));
    }
    Ok(h)
}

/// The section count: the header's, its configuration's layout's and the declared one.
#[inline(always)]
fn section_count(h: &Words, c: &Config, declared: &[u32]) -> Result<usize, Refusal> {
    let count = h.u32(field::SECTION_COUNT) as usize;
    let layout_count = c.section_count();
    if count != layout_count {
        return Err(invalid(
            "section zero: section count is not the config's (found, expected)",
            [count as u64, layout_count as u64, 0, 0],
        ));
    }
    if count != declared.len() || count > MAX_SECTIONS {
        return Err(mismatch(
            "section table: section count differs from the declared (found, declared)",
            [count as u64, declared.len() as u64, 0, 0],
        ));
    }
    Ok(count)
}

/// The section table: tiling from 0, exactly the declared lengths (which CreateModel kept in
/// 1..=10,483,712, section zero at least 4,096: the length of these bytes, `zero_length`).
#[inline(always)]
fn section_table(h: &Words, declared: &[u32], zero_length: usize) -> Result<(), Refusal> {
    let mut offset = 0u64;
    for (i, &length) in declared.iter().enumerate() {
        let at = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * i;
        let found = h.u64(at + 8);
        if found != length as u64 {
            return Err(mismatch(
                "section table: section length differs from the declared (section, found, declared)",
                [i as u64, found, length as u64, 0],
            ));
        }
        let entry_offset = h.u64(at);
        if entry_offset != offset {
            return Err(invalid(
                "section zero: section offset does not tile (section, found, expected)",
                [i as u64, entry_offset, offset, 0],
            ));
        }
        offset += length as u64;
    }
    if declared[0] as usize != zero_length {
        return Err(mismatch(
            "section table: section zero length differs (found, expected)",
            [zero_length as u64, declared[0] as u64, 0, 0],
        ));
    }
    Ok(())
}

/// D9: the bytes the header's tables leave out are zero.
#[inline(always)]
fn reserved_zero(h: &Words, count: usize, matrices: usize) -> Result<(), Refusal> {
    let sections_end = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * count;
    let matrices_end = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * matrices;
    for (start, end) in [
        (field::END, SECTION_TABLE_OFFSET),
        (sections_end, MATRIX_TABLE_OFFSET),
        (matrices_end, HEADER_LEN),
    ] {
        if let Some(at) = h.zero(start, end) {
            return Err(invalid(
                "section zero: reserved header word not zero (byte)",
                [at as u64, 0, 0, 0],
            ));
        }
    }
    Ok(())
}

/// The blocks, past the header, in order, none running into the next, inside section zero
/// (`end` bytes), each but the token strings at a multiple of 4.
#[inline(always)]
fn blocks(h: &Words, c: &Config, end: u64) -> Result<(), Refusal> {
    let mut min = HEADER_LEN as u64;
    for (i, block) in Block::ALL.into_iter().enumerate() {
        let at = block.header_offset();
        let start = h.u32(at) as u64;
        let length = block.byte_len(c).unwrap_or(0);
        let limit = match Block::ALL.get(i + 1) {
            Some(next) => (h.u32(next.header_offset()) as u64).min(end),
            None => end,
        };
        if start < min || start + length > limit {
            return Err(invalid(
                "section zero: block out of place (header byte, offset, length, limit)",
                [at as u64, start, length, limit],
            ));
        }
        // The forward pass reads the tables' and entries' values with word loads.
        if block != Block::TokenStrings && start & 3 != 0 {
            return Err(invalid(
                "section zero: block offset not a multiple of 4 (header byte, offset)",
                [at as u64, start, 0, 0],
            ));
        }
        min = start + length;
    }
    Ok(())
}

/// The matrix descriptors, `matrices` of them: the vocabulary's two, then each layer's seven
/// (in section 1, or in section 2 + layer when `multi`, the layout of L + 2 sections). A
/// descriptor is three aligned words: (section, columns), (rows, row bytes) and the offset;
/// the first two are compared whole with the expected words, built once per shape (the
/// section added per group), and the matrix's size is the shape's.
#[inline(always)]
fn descriptors(
    h: &Words,
    c: &Config,
    declared: &[u32],
    multi: bool,
    matrices: usize,
) -> Result<(), Refusal> {
    let shape = |kind: MatrixKind| {
        let (rows, columns) = kind.shape(c);
        let row_bytes = row_length(columns);
        Shape {
            columns: pair(0, columns),
            rows: pair(rows, row_bytes),
            size: rows as u64 * row_bytes as u64,
        }
    };
    let vocabulary = [shape(MatrixKind::TokenEmbedding); 2];
    let layer = MatrixKind::LAYER.map(shape);
    let table = h.descriptors(matrices);
    // Each group's checks are written out (`all_fit`, not a loop with a counter) against a
    // shape array at a fixed place: a few loads and branches per descriptor, nothing spilled.
    // Only a refused group is searched for its first refused descriptor.
    let refusal = |descriptors: &[[u64; 3]], shapes: &[Shape], section: usize| {
        let section_length = declared[section] as u64;
        let k = descriptors
            .iter()
            .zip(shapes)
            .position(|(d, shape)| !fits(d, shape, section, section_length))
            .unwrap_or(0);
        let index = (descriptors.as_ptr() as usize - table.as_ptr() as usize) / DESCRIPTOR_LEN + k;
        descriptor_refusal(h, index, section, &shapes[k], section_length)
    };
    let (first, mut rest) = table.split_at(2);
    if !all_fit(first, &vocabulary, 1, declared[1] as u64) {
        return Err(refusal(first, &vocabulary, 1));
    }
    for group in 1..=c.layers as usize {
        let section = if multi { 1 + group } else { 1 };
        let (descriptors, more) = rest.split_at(7);
        if !all_fit(descriptors, &layer, section, declared[section] as u64) {
            return Err(refusal(descriptors, &layer, section));
        }
        rest = more;
    }
    Ok(())
}

/// Header byte 68: one over the square root of the head size, the spec's value.
#[inline(always)]
fn inv_sqrt_head_size_field(h: &Words, c: &Config) -> Result<(), Refusal> {
    let found = h.u32(field::INV_SQRT_HEAD_SIZE);
    // The configuration is valid: the head size is even, 2 to 64.
    let expected = INV_SQRT_HEAD_SIZE[(c.head_size() / 2 - 1) as usize];
    if found != expected {
        return Err(invalid(
            "section zero: header byte 68 differs (found, expected)",
            [found as u64, expected as u64, 0, 0],
        ));
    }
    Ok(())
}

/// The exponential table is the spec's: a run divides by sums of its entries. One
/// `sol_memcmp_` of the block (in place, checked by [`blocks`]) with the table the program
/// carries; only a refused table is searched for its first differing entry.
#[inline(always)]
fn exp_table(bytes: &[u8], h: &Words) -> Result<(), Refusal> {
    let start = h.u32(Block::Exp.header_offset()) as usize;
    let table = &bytes[start..start + EXP_TABLE_BYTES.len()];
    if !same_bytes(table, &EXP_TABLE_BYTES) {
        let mut values = [0u64; 4];
        exp_difference(table, &mut values);
        return Err(invalid(
            "section zero: exponential table entry differs from the spec's (index, found, expected)",
            values,
        ));
    }
    Ok(())
}

/// Every sorted id names a token (is below the vocabulary): every lookup of a text prompt's
/// encoding reads sorted ids, so a model failing it would seal and then refuse every text
/// prompt (curta-core's `SortedIdOutOfRange`).
#[inline(always)]
fn tokenizer(bytes: &[u8], h: &Words, c: &Config) -> Result<(), Refusal> {
    let sorted = h.u32(Block::SortedIds.header_offset()) as usize;
    let vocab = c.vocab_size;
    // SAFETY: `blocks` checked the sorted ids' block (`vocab` u32s) inside section zero at a
    // multiple of 4 from its 8-byte aligned start.
    let ids = unsafe {
        core::slice::from_raw_parts(bytes.as_ptr().add(sorted) as *const u32, vocab as usize)
    };
    match ids.iter().position(|&id| u32::from_le(id) >= vocab) {
        None => Ok(()),
        Some(index) => Err(invalid(
            "section zero: sorted token id past the vocabulary (index, id, vocabulary)",
            [
                index as u64,
                u32::from_le(ids[index]) as u64,
                vocab as u64,
                0,
            ],
        )),
    }
}
