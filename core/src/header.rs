//! The 4,096-byte header at the start of section zero, read and written by the same code.
//! Every scalar is little-endian; every byte not listed is zero (D9).
//!
//! ```text
//! byte    type      field
//!    0    8 bytes   tag "CURTAW01"
//!    8    u32 × 7   configuration, in Config::fields order: dimension, hidden dimension,
//!                   layers, heads, key and value heads, vocabulary, context
//!   36    u32       section count, 2 to 18
//!   40    u32 × 7   block offsets from the start of section zero, in Block::ALL order:
//!                   normalization, rotary, exponential table, SiLU table, tokenizer
//!                   entries, sorted token ids, token strings
//!   68    u32       round(2^24 / sqrt(head size))
//!   72              zero up to the section table
//!  128    16 each   section table, entry i at 128 + 16 × i:
//!                     +0 u64 offset in the file    +8 u64 length
//!                   zero up to the matrix table
//!  512    24 each   matrix table, descriptor i at 512 + 24 × i:
//!                     +0 u32 section    +4 u32 columns    +8 u32 rows
//!                     +12 u32 row length    +16 u64 offset in the section
//!                   zero up to 4,096
//! ```

use crate::le::{put_u32, put_u64, u32_at, u64_at};
use crate::{Config, FormatError, EXP_TABLE_LEN, SILU_TABLE_LEN, TOKEN_ENTRY_LEN};

/// The format's tag, the first 8 bytes of the file.
pub const TAG: [u8; 8] = *b"CURTAW01";
/// The header at the start of section zero.
pub const HEADER_LEN: usize = 4096;
/// Section table: entry i is 16 bytes at 128 + 16 × i.
pub const SECTION_TABLE_OFFSET: usize = 128;
pub const SECTION_ENTRY_LEN: usize = 16;
/// Matrix table: descriptor i is 24 bytes at 512 + 24 × i.
pub const MATRIX_TABLE_OFFSET: usize = 512;
pub const DESCRIPTOR_LEN: usize = 24;

/// Header byte offsets of the fields before the tables.
pub mod field {
    pub const TAG: usize = 0;
    /// The seven configuration fields, u32 each, in [`Config::fields`](crate::Config::fields)
    /// order.
    pub const CONFIG: usize = 8;
    pub const SECTION_COUNT: usize = 36;
    /// The seven block offsets, u32 each, in [`Block::ALL`](crate::Block::ALL) order.
    pub const BLOCKS: usize = 40;
    pub const INV_SQRT_HEAD_SIZE: usize = 68;
    /// Where the fields end: zero from here to the section table.
    pub const END: usize = 72;
}

/// Byte offsets within a section table entry.
pub mod section_entry {
    pub const OFFSET: usize = 0;
    pub const LENGTH: usize = 8;
}

/// Byte offsets within a matrix descriptor.
pub mod descriptor {
    pub const SECTION: usize = 0;
    pub const COLUMNS: usize = 4;
    pub const ROWS: usize = 8;
    pub const ROW_BYTES: usize = 12;
    pub const OFFSET: usize = 16;
}

/// The blocks of section zero after the header, in header and file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Norm,
    Rotary,
    Exp,
    Silu,
    TokenEntries,
    SortedIds,
    TokenStrings,
}

impl Block {
    pub const ALL: [Block; 7] = [
        Block::Norm,
        Block::Rotary,
        Block::Exp,
        Block::Silu,
        Block::TokenEntries,
        Block::SortedIds,
        Block::TokenStrings,
    ];

    /// The spec's name of the block.
    pub const fn name(self) -> &'static str {
        match self {
            Block::Norm => "normalization coefficients",
            Block::Rotary => "rotary coefficients",
            Block::Exp => "exponential table",
            Block::Silu => "SiLU table",
            Block::TokenEntries => "tokenizer entries",
            Block::SortedIds => "sorted token ids",
            Block::TokenStrings => "token strings",
        }
    }

    /// The header byte that holds the block's offset.
    pub const fn header_offset(self) -> usize {
        field::BLOCKS + 4 * self as usize
    }

    /// The block's length in bytes in a model of this configuration; `None` for the token
    /// strings, which are as long as the tokenizer's tokens together and run to the end of
    /// section zero (before its padding).
    pub fn byte_len(self, c: &Config) -> Option<u64> {
        let v = c.vocab_size as u64;
        Some(match self {
            Block::Norm => 4 * c.norm_len() as u64,
            Block::Rotary => 4 * c.rotary_len() as u64,
            Block::Exp => 4 * EXP_TABLE_LEN as u64,
            Block::Silu => 4 * SILU_TABLE_LEN as u64,
            Block::TokenEntries => TOKEN_ENTRY_LEN as u64 * v,
            Block::SortedIds => 4 * v,
            Block::TokenStrings => return None,
        })
    }
}

/// The offsets at header bytes 40 to 64, counted from the start of section zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockOffsets {
    pub norm: u32,
    pub rotary: u32,
    pub exp: u32,
    pub silu: u32,
    pub token_entries: u32,
    pub sorted_ids: u32,
    pub token_strings: u32,
}

impl BlockOffsets {
    /// The seven offsets in [`Block::ALL`] order, as stored at header bytes 40 to 64.
    pub const fn offsets(&self) -> [u32; 7] {
        [
            self.norm,
            self.rotary,
            self.exp,
            self.silu,
            self.token_entries,
            self.sorted_ids,
            self.token_strings,
        ]
    }

    /// The offsets from their seven values in [`Block::ALL`] order.
    pub const fn from_offsets(o: [u32; 7]) -> BlockOffsets {
        BlockOffsets {
            norm: o[0],
            rotary: o[1],
            exp: o[2],
            silu: o[3],
            token_entries: o[4],
            sorted_ids: o[5],
            token_strings: o[6],
        }
    }

    /// The offset of `block`.
    pub const fn get(&self, block: Block) -> u32 {
        self.offsets()[block as usize]
    }
}

/// The header's fields before the tables, as stored (not checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub tag: [u8; 8],
    pub config: Config,
    pub section_count: u32,
    pub blocks: BlockOffsets,
    pub inv_sqrt_head_size: u32,
}

impl Header {
    /// Reads the fields from the start of `header`. Panics if it is shorter than 72 bytes.
    pub fn read(header: &[u8]) -> Header {
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&header[field::TAG..field::TAG + 8]);
        Header {
            tag,
            config: Config::from_fields(words(header, field::CONFIG)),
            section_count: u32_at(header, field::SECTION_COUNT),
            blocks: BlockOffsets::from_offsets(words(header, field::BLOCKS)),
            inv_sqrt_head_size: u32_at(header, field::INV_SQRT_HEAD_SIZE),
        }
    }

    /// Writes the fields at the start of `header`. Panics if it is shorter than 72 bytes.
    pub fn write(&self, header: &mut [u8]) {
        header[field::TAG..field::TAG + 8].copy_from_slice(&self.tag);
        put_words(header, field::CONFIG, self.config.fields());
        put_u32(header, field::SECTION_COUNT, self.section_count);
        put_words(header, field::BLOCKS, self.blocks.offsets());
        put_u32(header, field::INV_SQRT_HEAD_SIZE, self.inv_sqrt_head_size);
    }
}

/// Header byte 68, round(2^24 / sqrt(head size)) in integers: n is the nearest integer to sqrt(2^48 / h)
/// exactly when (2n - 1)^2 <= 2^50 / h < (2n + 1)^2, and no tie can occur for these h.
pub const fn inv_sqrt_head_size(head_size: u32) -> u32 {
    isqrt_below_2_52((1u64 << 50) / head_size as u64).div_ceil(2) as u32
}

/// floor(sqrt(n)) for n < 2^52 by bisection. Its products stay below 2^52, so it needs no
/// overflow-checked 64-bit multiply: `u64::isqrt` does, and that becomes a 128-bit multiply
/// (`__multi3`) that the SBF route's LLVM 19 BPF backend cannot call.
const fn isqrt_below_2_52(n: u64) -> u64 {
    // Invariant: lo^2 <= n < hi^2.
    let (mut lo, mut hi) = (0u64, 1u64 << 26);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if mid * mid <= n {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

fn words(bytes: &[u8], at: usize) -> [u32; 7] {
    core::array::from_fn(|i| u32_at(bytes, at + 4 * i))
}

fn put_words(bytes: &mut [u8], at: usize, words: [u32; 7]) {
    for (i, word) in words.into_iter().enumerate() {
        put_u32(bytes, at + 4 * i, word);
    }
}

/// Entry i of the section table: 16 bytes at 128 + 16 × i.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionEntry {
    pub offset: u64,
    pub length: u64,
}

impl SectionEntry {
    /// The header byte where entry `i` starts.
    pub const fn at(i: usize) -> usize {
        SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * i
    }

    /// Entry `i` of the section table in `header`.
    pub fn read(header: &[u8], i: usize) -> SectionEntry {
        let at = Self::at(i);
        SectionEntry {
            offset: u64_at(header, at + section_entry::OFFSET),
            length: u64_at(header, at + section_entry::LENGTH),
        }
    }

    pub fn write(&self, header: &mut [u8], i: usize) {
        let at = Self::at(i);
        put_u64(header, at + section_entry::OFFSET, self.offset);
        put_u64(header, at + section_entry::LENGTH, self.length);
    }
}

/// Descriptor i of the matrix table: 24 bytes at 512 + 24 × i.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixDescriptor {
    pub section: u32,
    pub columns: u32,
    pub rows: u32,
    pub row_bytes: u32,
    pub offset: u64,
}

impl MatrixDescriptor {
    /// The header byte where descriptor `i` starts.
    pub const fn at(i: usize) -> usize {
        MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * i
    }

    /// Descriptor `i` of the matrix table in `header`.
    pub fn read(header: &[u8], i: usize) -> MatrixDescriptor {
        let at = Self::at(i);
        MatrixDescriptor {
            section: u32_at(header, at + descriptor::SECTION),
            columns: u32_at(header, at + descriptor::COLUMNS),
            rows: u32_at(header, at + descriptor::ROWS),
            row_bytes: u32_at(header, at + descriptor::ROW_BYTES),
            offset: u64_at(header, at + descriptor::OFFSET),
        }
    }

    pub fn write(&self, header: &mut [u8], i: usize) {
        let at = Self::at(i);
        put_u32(header, at + descriptor::SECTION, self.section);
        put_u32(header, at + descriptor::COLUMNS, self.columns);
        put_u32(header, at + descriptor::ROWS, self.rows);
        put_u32(header, at + descriptor::ROW_BYTES, self.row_bytes);
        put_u64(header, at + descriptor::OFFSET, self.offset);
    }

    /// rows × row length, in bytes.
    pub fn byte_len(&self) -> u64 {
        self.rows as u64 * self.row_bytes as u64
    }
}

/// Refuses `bytes` shorter than the header; `what` names them in the error.
pub(crate) fn check_header_len(bytes: &[u8], what: &'static str) -> Result<(), FormatError> {
    if bytes.len() < HEADER_LEN {
        return Err(FormatError::Truncated {
            what,
            offset: 0,
            needed: HEADER_LEN as u64,
            available: bytes.len() as u64,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected positions from the spec's tables ("The header", "Sections", "Matrix
    // descriptors"), read back with from_le_bytes rather than the le helpers.
    fn u32_le(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    fn u64_le(b: &[u8], at: usize) -> u64 {
        u32_le(b, at) as u64 | (u32_le(b, at + 4) as u64) << 32
    }

    #[test]
    fn the_block_table_has_the_spec_offsets_and_order() {
        let offsets = Block::ALL.map(Block::header_offset);
        assert_eq!(offsets, [40, 44, 48, 52, 56, 60, 64]);
        let names = Block::ALL.map(Block::name);
        assert_eq!(
            names,
            [
                "normalization coefficients",
                "rotary coefficients",
                "exponential table",
                "SiLU table",
                "tokenizer entries",
                "sorted token ids",
                "token strings",
            ]
        );
        // stories15M: d 288, L 6, context 256, head size 48, v 32,000.
        let c = Config::from_fields([288, 768, 6, 6, 6, 32_000, 256]);
        let lengths = Block::ALL.map(|b| b.byte_len(&c));
        let expected = [
            13 * 288 * 4,
            256 * 48 * 4,
            4097 * 4,
            4097 * 4,
            32_000 * 16,
            32_000 * 4,
        ];
        assert_eq!(lengths[..6], expected.map(Some));
        assert_eq!(lengths[6], None);
    }

    #[test]
    fn header_fields_are_written_at_the_spec_bytes_and_read_back() {
        let header = Header {
            tag: TAG,
            config: Config::from_fields([1, 2, 3, 4, 5, 6, 7]),
            section_count: 8,
            blocks: BlockOffsets::from_offsets([9, 10, 11, 12, 13, 14, 15]),
            inv_sqrt_head_size: 16,
        };
        let mut bytes = [0u8; HEADER_LEN];
        header.write(&mut bytes);
        assert_eq!(&bytes[..8], b"CURTAW01");
        let words: [u32; 16] = core::array::from_fn(|i| u32_le(&bytes, 8 + 4 * i));
        assert_eq!(words, core::array::from_fn(|i| i as u32 + 1));
        assert!(bytes[72..].iter().all(|&b| b == 0));
        assert_eq!(Header::read(&bytes), header);
        assert_eq!(header.blocks.get(Block::SortedIds), 14);
    }

    #[test]
    fn table_entries_are_written_at_the_spec_bytes_and_read_back() {
        let mut bytes = [0u8; HEADER_LEN];
        let section = SectionEntry {
            offset: 0x0102_0304_0506_0708,
            length: 0x1112_1314_1516_1718,
        };
        section.write(&mut bytes, 2);
        assert_eq!(u64_le(&bytes, 160), section.offset);
        assert_eq!(u64_le(&bytes, 168), section.length);
        assert_eq!(SectionEntry::read(&bytes, 2), section);

        let matrix = MatrixDescriptor {
            section: 3,
            columns: 288,
            rows: 768,
            row_bytes: 296,
            offset: 0x0a0b_0c0d_0e0f_1011,
        };
        matrix.write(&mut bytes, 5);
        let at = 512 + 24 * 5;
        let words = [0, 4, 8, 12].map(|o| u32_le(&bytes, at + o));
        assert_eq!(words, [3, 288, 768, 296]);
        assert_eq!(u64_le(&bytes, at + 16), matrix.offset);
        assert_eq!(MatrixDescriptor::read(&bytes, 5), matrix);
        // Nothing but the two entries was written.
        bytes[160..176].fill(0);
        bytes[at..at + 24].fill(0);
        assert!(bytes.iter().all(|&b| b == 0));
    }
}
