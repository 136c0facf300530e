//! The check of section zero when a seal pass starts (chunk 0): what the seal needs to trust
//! the header it freezes, read with word loads. The same rules as curta-core's
//! `Metadata::parse_declared` (the tag, the configuration's ranges, the section count, the
//! reserved bytes zero, the section table tiling from 0 with exactly the declared lengths, the
//! blocks in order inside section zero, every matrix descriptor of its configuration's shape,
//! section and row length, aligned and inside its section, the inverse square root of the head
//! size), but in one pass over words at their aligned addresses and with no formatting: a
//! refusal is a static reason and up to four numbers, logged with `sol_log` and `sol_log_64`.
//!
//! The account data the runtime gives a program is 8-byte aligned, and section zero starts
//! 2,048 bytes into it, so every u32 and u64 field of the header sits at its natural alignment;
//! the check refuses a section zero that is not (it cannot happen on chain).

use crate::error::CurtaError;
use curta_core::header::{descriptor, field};
use curta_core::{
    inv_sqrt_head_size, row_length, Block, Config, FormatError, MatrixKind, ALIGNMENT,
    DESCRIPTOR_LEN, HEADER_LEN, MATRIX_TABLE_OFFSET, MAX_SECTIONS, SECTION_ENTRY_LEN,
    SECTION_TABLE_OFFSET, TAG,
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

    /// The first word from `start` to `end` (multiples of 8, within the header) that is not
    /// zero. The words are OR-ed together first, with no branch per word; only a header that
    /// fails is searched.
    #[inline(always)]
    fn zero(&self, start: usize, end: usize) -> Option<usize> {
        let mut any = 0;
        let mut at = start;
        while at < end {
            any |= self.u64(at);
            at += 8;
        }
        if any == 0 {
            return None;
        }
        (start..end).step_by(8).find(|&at| self.u64(at) != 0)
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

/// Two u32 as the little-endian u64 they make: `low` first.
#[inline(always)]
fn pair(low: u32, high: u32) -> u64 {
    low as u64 | (high as u64) << 32
}

/// The refusal of the descriptor at header byte `at`, whose first four fields differ from
/// `expected` (section, columns, rows, row bytes): the first differing field, named (only a
/// refused header gets here).
#[inline(always)]
fn descriptor_refusal(h: &Words, at: usize, expected: [u32; 4]) -> Refusal {
    let fields = [
        descriptor::SECTION,
        descriptor::COLUMNS,
        descriptor::ROWS,
        descriptor::ROW_BYTES,
    ];
    let k = (0..4)
        .find(|&k| h.u32(at + fields[k]) != expected[k])
        .unwrap_or(0);
    invalid(
        "section zero: matrix descriptor differs (index, header byte, found, expected)",
        [
            ((at - MATRIX_TABLE_OFFSET) / DESCRIPTOR_LEN) as u64,
            (at + fields[k]) as u64,
            h.u32(at + fields[k]) as u64,
            expected[k] as u64,
        ],
    )
}

/// Checks section zero against the declared section lengths and returns its configuration.
#[inline(always)]
pub fn check(bytes: &[u8], declared: &[u32]) -> Result<Config, Refusal> {
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
    let c = Config::from_fields(core::array::from_fn(|i| h.u32(field::CONFIG + 4 * i)));
    c.validate().map_err(config_refusal)?;

    // The section count: the header's, its configuration's layout's and the declared one.
    let count = h.u32(field::SECTION_COUNT) as usize;
    let layout_count = c.section_count();
    let multi = layout_count > 2;
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

    // The section table: tiling from 0, exactly the declared lengths (which CreateModel kept in
    // 1..=10,483,712, section zero at least 4,096: the length of these bytes).
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
    if declared[0] as usize != bytes.len() {
        return Err(mismatch(
            "section table: section zero length differs (found, expected)",
            [bytes.len() as u64, declared[0] as u64, 0, 0],
        ));
    }

    // D9: the bytes the header's tables leave out are zero.
    let matrices = 2 + 7 * c.layers as usize;
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

    // The blocks, past the header, in order, none running into the next, inside section zero.
    let end = bytes.len() as u64;
    let mut min = HEADER_LEN as u64;
    for (i, block) in Block::ALL.into_iter().enumerate() {
        let at = block.header_offset();
        let start = h.u32(at) as u64;
        let length = block.byte_len(&c).unwrap_or(0);
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
        min = start + length;
    }

    // The matrix descriptors: the vocabulary's two, then each layer's seven, in one loop over
    // (section, shape) pairs with no division. A descriptor is three aligned words: (section,
    // columns), (rows, row bytes) and the offset; the first two are compared whole with the
    // expected words, built once per shape, and the matrix's size is the shape's.
    let shape = |kind: MatrixKind| {
        let (rows, columns) = kind.shape(&c);
        let row_bytes = row_length(columns);
        (
            columns,
            pair(rows, row_bytes),
            rows as u64 * row_bytes as u64,
        )
    };
    let vocabulary = shape(MatrixKind::TokenEmbedding);
    let layer = MatrixKind::LAYER.map(shape);
    let mut at = MATRIX_TABLE_OFFSET;
    for group in 0..=c.layers as usize {
        let (shapes, section): (&[(u32, u64, u64)], usize) = if group == 0 {
            (&[vocabulary, vocabulary], 1)
        } else {
            (&layer, if multi { 1 + group } else { 1 })
        };
        let section_length = declared[section] as u64;
        for &(columns, rows_word, size) in shapes {
            let first = h.u64(at + descriptor::SECTION);
            let second = h.u64(at + descriptor::ROWS);
            if first != pair(section as u32, columns) || second != rows_word {
                return Err(descriptor_refusal(
                    &h,
                    at,
                    [
                        section as u32,
                        columns,
                        rows_word as u32,
                        (rows_word >> 32) as u32,
                    ],
                ));
            }
            let start = h.u64(at + descriptor::OFFSET);
            let end = start.saturating_add(size);
            if start & (ALIGNMENT as u64 - 1) != 0 || end > section_length {
                return Err(invalid(
                    "section zero: matrix misaligned or out of its section (index, offset, end, length)",
                    [
                        ((at - MATRIX_TABLE_OFFSET) / DESCRIPTOR_LEN) as u64,
                        start,
                        end,
                        section_length,
                    ],
                ));
            }
            at += DESCRIPTOR_LEN;
        }
    }

    let found = h.u32(field::INV_SQRT_HEAD_SIZE);
    let expected = inv_sqrt_head_size(c.head_size());
    if found != expected {
        return Err(invalid(
            "section zero: header byte 68 differs (found, expected)",
            [found as u64, expected as u64, 0, 0],
        ));
    }
    Ok(c)
}
