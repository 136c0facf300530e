//! What can be wrong with an artifact. Every variant names the field or byte offset, and what
//! was expected against what was found.

use crate::header::{field, section_entry, SectionEntry};

/// An artifact (or its section zero) that does not follow the format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("{what} is truncated: it needs {needed} bytes at offset {offset}, but only {available} are there")]
    Truncated {
        what: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },

    #[error(
        "wrong tag at byte 0: expected \"CURTAW01\", found \"{}\"",
        crate::error::Escaped(found)
    )]
    BadTag { found: [u8; 8] },

    #[error("header field {field} is {value}, expected {min} to {max}")]
    FieldOutOfRange {
        field: &'static str,
        value: u64,
        min: u64,
        max: u64,
    },

    #[error("header field {field} is {value}, which does not divide {of} ({of_value})")]
    NotADivisor {
        field: &'static str,
        value: u32,
        of: &'static str,
        of_value: u32,
    },

    #[error("head size (dimension / heads) is {head_size}, expected an even number up to 64")]
    HeadSize { head_size: u32 },

    #[error("header field section count (byte {at}) is {found}, but the configuration's layout has {expected} sections", at = field::SECTION_COUNT)]
    SectionCount { found: u64, expected: u64 },

    #[error("section {section} (section table byte {entry}): offset is {found}, expected {expected} (where the previous section ends)")]
    SectionOffset {
        section: usize,
        entry: usize,
        found: u64,
        expected: u64,
    },

    #[error("section {section} (section table byte {entry}): length is {length}, expected {min} to {max}")]
    SectionLength {
        section: usize,
        entry: usize,
        length: u64,
        min: u64,
        max: u64,
    },

    #[error("the sections do not tile the file: the section table ends at byte {sections_end}, the file is {file_length} bytes")]
    FileLength { sections_end: u64, file_length: u64 },

    #[error("section zero is {found} bytes, but the section table (byte {at}) says {expected}", at = SectionEntry::at(0) + section_entry::LENGTH)]
    SectionZeroLength { found: u64, expected: u64 },

    #[error("{block} (offset at header byte {field}) starts at {offset}, expected {min} or later")]
    BlockOffset {
        block: &'static str,
        field: usize,
        offset: u64,
        min: u64,
    },

    #[error("{block} ({length} bytes at offset {offset}) runs past {limit}, where {next} begins")]
    BlockOverlap {
        block: &'static str,
        offset: u64,
        length: u64,
        limit: u64,
        next: &'static str,
    },

    #[error(
        "matrix descriptor {index} ({name}, at byte {at}): {field} is {found}, expected {expected}"
    )]
    Descriptor {
        index: usize,
        name: &'static str,
        at: usize,
        field: &'static str,
        found: u64,
        expected: u64,
    },

    #[error("header byte {at} (one over the square root of the head size) is {found}, expected {expected}", at = field::INV_SQRT_HEAD_SIZE)]
    InvSqrtHeadSize { found: u32, expected: u32 },

    #[error("matrix descriptor {index} ({name}): offset {offset} is not a multiple of eight")]
    Misaligned {
        index: usize,
        name: &'static str,
        offset: u64,
    },

    #[error("matrix descriptor {index} ({name}): bytes {offset}..{end} are out of bounds of section {section} ({section_length} bytes)")]
    DescriptorOutOfBounds {
        index: usize,
        name: &'static str,
        section: u32,
        offset: u64,
        end: u64,
        section_length: u64,
    },

    #[error("token {id}: {length} bytes at offset {offset} are not inside the token strings (bytes {strings}..{section_length} of section zero) or are over {max}", max = crate::MAX_TOKEN_LEN)]
    TokenOutOfBounds {
        id: u32,
        offset: u64,
        length: u64,
        strings: u64,
        section_length: u64,
    },

    #[error(
        "sorted token id {index} is {id}, expected a token id below the vocabulary ({vocab_size})"
    )]
    SortedIdOutOfRange {
        index: u32,
        id: u32,
        vocab_size: u32,
    },

    #[error("header byte {offset} is {found:#04x}, expected zero (bytes the header's tables leave out are zero)")]
    ReservedNotZero { offset: usize, found: u8 },

    #[error("{block} (offset at header byte {field}) starts at {offset}, not a multiple of 4 (its values are read as words)")]
    BlockMisaligned {
        block: &'static str,
        field: usize,
        offset: u64,
    },

    #[error("exponential table entry {index} is {found}, expected {expected} (round(e^(-{index}/256) x 2^30), the spec's value)")]
    ExpTable {
        index: usize,
        found: u32,
        expected: u32,
    },
}

/// Bytes shown as an ASCII string with escapes, e.g. "CURTAW\x00\x01".
pub(crate) struct Escaped<'a>(pub &'a [u8]);

impl core::fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.0
            .iter()
            .try_for_each(|&b| write!(f, "{}", core::ascii::escape_default(b)))
    }
}
