//! Section zero, read in place: the header, the section table, the matrix descriptors and the
//! blocks that follow the header. Nothing is copied; every accessor reads the bytes it names.

use crate::layout::{field, *};
use crate::FormatError;

/// Entry i of the section table: 16 bytes at 128 + 16 × i.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionEntry {
    pub offset: u64,
    pub length: u64,
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
    /// rows × row length, in bytes.
    pub fn byte_len(&self) -> u64 {
        self.rows as u64 * self.row_bytes as u64
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

/// Tokenizer entry `id`: 16 bytes at the token entries' offset + 16 × id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenEntry {
    pub score_key: u32,
    pub length: u32,
    pub offset: u32,
}

/// A checked view of section zero.
#[derive(Clone, Copy, Debug)]
pub struct Metadata<'a> {
    bytes: &'a [u8],
    config: Config,
    blocks: BlockOffsets,
    section_count: usize,
}

pub(crate) use crate::le::{u32_at, u64_at};

/// round(2^24 / sqrt(head size)) in integers: n is the nearest integer to sqrt(2^48 / h)
/// exactly when (2n - 1)^2 <= 2^50 / h < (2n + 1)^2, and no tie can occur for these h.
pub fn inv_sqrt_head_size(head_size: u32) -> u32 {
    isqrt_below_2_52((1u64 << 50) / head_size as u64).div_ceil(2) as u32
}

/// floor(sqrt(n)) for n < 2^52 by bisection. Its products stay below 2^52, so it needs no
/// overflow-checked 64-bit multiply: `u64::isqrt` does, and that becomes a 128-bit multiply
/// (`__multi3`) that the SBF route's LLVM 19 BPF backend cannot call.
fn isqrt_below_2_52(n: u64) -> u64 {
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

impl<'a> Metadata<'a> {
    /// Reads and checks section zero: the tag, the configuration's ranges, the section count
    /// and table, that every block lies past the header and inside section zero in the spec's
    /// order, and that every matrix descriptor has its configuration's shape, its layout's
    /// section, a row length, an aligned offset and lies inside its section.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        if bytes.len() < HEADER_LEN {
            return Err(FormatError::Truncated {
                what: "section zero's header",
                offset: 0,
                needed: HEADER_LEN as u64,
                available: bytes.len() as u64,
            });
        }
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&bytes[..8]);
        if tag != TAG {
            return Err(FormatError::BadTag { found: tag });
        }
        let config = Config {
            dim: u32_at(bytes, field::DIM),
            hidden_dim: u32_at(bytes, field::HIDDEN_DIM),
            layers: u32_at(bytes, field::LAYERS),
            heads: u32_at(bytes, field::HEADS),
            kv_heads: u32_at(bytes, field::KV_HEADS),
            vocab_size: u32_at(bytes, field::VOCAB_SIZE),
            context_length: u32_at(bytes, field::CONTEXT_LENGTH),
        };
        config.validate()?;

        let section_count = u32_at(bytes, field::SECTION_COUNT) as u64;
        if !(MIN_SECTIONS as u64..=MAX_SECTIONS as u64).contains(&section_count) {
            return Err(FormatError::FieldOutOfRange {
                field: "section count",
                value: section_count,
                min: MIN_SECTIONS as u64,
                max: MAX_SECTIONS as u64,
            });
        }
        if section_count != config.section_count() as u64 {
            return Err(FormatError::SectionCount {
                found: section_count,
                expected: config.section_count() as u64,
            });
        }
        let metadata = Metadata {
            bytes,
            config,
            blocks: BlockOffsets {
                norm: u32_at(bytes, field::NORM_OFFSET),
                rotary: u32_at(bytes, field::ROTARY_OFFSET),
                exp: u32_at(bytes, field::EXP_OFFSET),
                silu: u32_at(bytes, field::SILU_OFFSET),
                token_entries: u32_at(bytes, field::TOKEN_ENTRIES_OFFSET),
                sorted_ids: u32_at(bytes, field::SORTED_IDS_OFFSET),
                token_strings: u32_at(bytes, field::TOKEN_STRINGS_OFFSET),
            },
            section_count: section_count as usize,
        };
        metadata.check_reserved_zero()?;
        metadata.check_sections()?;
        metadata.check_blocks()?;
        metadata.check_descriptors()?;
        let expected = inv_sqrt_head_size(config.head_size());
        if metadata.inv_sqrt_head_size() != expected {
            return Err(FormatError::InvSqrtHeadSize {
                found: metadata.inv_sqrt_head_size(),
                expected,
            });
        }
        Ok(metadata)
    }

    /// D9: header bytes the spec's tables leave out are zero: 72 to 128, the section table
    /// past the section count, the matrix table past the matrix count.
    fn check_reserved_zero(&self) -> Result<(), FormatError> {
        let sections_end = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * self.section_count;
        let matrices_end = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * self.config.matrix_count();
        let reserved = [
            (field::INV_SQRT_HEAD_SIZE + 4, SECTION_TABLE_OFFSET),
            (sections_end, MATRIX_TABLE_OFFSET),
            (matrices_end, HEADER_LEN),
        ];
        for (start, end) in reserved {
            if let Some(i) = self.bytes[start..end].iter().position(|&b| b != 0) {
                return Err(FormatError::ReservedNotZero {
                    offset: start + i,
                    found: self.bytes[start + i],
                });
            }
        }
        Ok(())
    }

    /// Section zero starts at zero, each section starts where the one before ends, each is
    /// 1 to 10,483,712 bytes, and section zero is the bytes this view was given.
    fn check_sections(&self) -> Result<(), FormatError> {
        let mut expected_offset = 0u64;
        for i in 0..self.section_count {
            let entry = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * i;
            let section = self.section(i);
            if section.offset != expected_offset {
                return Err(FormatError::SectionOffset {
                    section: i,
                    entry,
                    found: section.offset,
                    expected: expected_offset,
                });
            }
            let min = if i == 0 { HEADER_LEN as u64 } else { 1 };
            if section.length < min || section.length > MAX_SECTION_LEN as u64 {
                return Err(FormatError::SectionLength {
                    section: i,
                    entry: entry + 8,
                    length: section.length,
                    min,
                    max: MAX_SECTION_LEN as u64,
                });
            }
            expected_offset += section.length;
        }
        let length = self.section(0).length;
        if length != self.bytes.len() as u64 {
            return Err(FormatError::SectionZeroLength {
                found: self.bytes.len() as u64,
                expected: length,
            });
        }
        Ok(())
    }

    /// Each block past the header, in the spec's order, none running into the next, the token
    /// strings last, up to the end of section zero.
    fn check_blocks(&self) -> Result<(), FormatError> {
        let c = &self.config;
        let b = &self.blocks;
        let v = c.vocab_size as u64;
        let blocks: [(&'static str, usize, u32, u64); 7] = [
            (
                "normalization coefficients",
                field::NORM_OFFSET,
                b.norm,
                4 * c.norm_len() as u64,
            ),
            (
                "rotary coefficients",
                field::ROTARY_OFFSET,
                b.rotary,
                4 * c.rotary_len() as u64,
            ),
            (
                "exponential table",
                field::EXP_OFFSET,
                b.exp,
                4 * EXP_TABLE_LEN as u64,
            ),
            (
                "SiLU table",
                field::SILU_OFFSET,
                b.silu,
                4 * SILU_TABLE_LEN as u64,
            ),
            (
                "tokenizer entries",
                field::TOKEN_ENTRIES_OFFSET,
                b.token_entries,
                TOKEN_ENTRY_LEN as u64 * v,
            ),
            (
                "sorted token ids",
                field::SORTED_IDS_OFFSET,
                b.sorted_ids,
                4 * v,
            ),
            (
                "token strings",
                field::TOKEN_STRINGS_OFFSET,
                b.token_strings,
                0,
            ),
        ];
        let mut min = HEADER_LEN as u64;
        for (i, &(block, field, offset, length)) in blocks.iter().enumerate() {
            let offset = offset as u64;
            if offset < min {
                return Err(FormatError::BlockOffset {
                    block,
                    field,
                    offset,
                    min,
                });
            }
            let (limit, next) = match blocks.get(i + 1) {
                Some(&(next, _, next_offset, _)) => (next_offset as u64, next),
                None => (self.bytes.len() as u64, "the end of section zero"),
            };
            let limit = limit.min(self.bytes.len() as u64);
            if offset + length > limit {
                return Err(FormatError::BlockOverlap {
                    block,
                    offset,
                    length,
                    limit,
                    next,
                });
            }
            min = offset + length;
        }
        Ok(())
    }

    /// Every descriptor has the shape of its index, the section of the layout, the row length
    /// of its columns, an offset that is a multiple of eight, and fits its section.
    fn check_descriptors(&self) -> Result<(), FormatError> {
        for index in 0..self.matrix_count() {
            let at = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * index;
            let name = Config::matrix_name(index);
            let d = self.matrix(index);
            let (rows, columns) = self.config.matrix_shape(index);
            let checks: [(&'static str, usize, u64, u64); 4] = [
                (
                    "section",
                    at,
                    d.section as u64,
                    self.config.matrix_section(index) as u64,
                ),
                ("columns", at + 4, d.columns as u64, columns as u64),
                ("rows", at + 8, d.rows as u64, rows as u64),
                (
                    "row length",
                    at + 12,
                    d.row_bytes as u64,
                    row_length(columns) as u64,
                ),
            ];
            for (field, at, found, expected) in checks {
                if found != expected {
                    return Err(FormatError::Descriptor {
                        index,
                        name,
                        at,
                        field,
                        found,
                        expected,
                    });
                }
            }
            if !d.offset.is_multiple_of(8) {
                return Err(FormatError::Misaligned {
                    index,
                    name,
                    offset: d.offset,
                });
            }
            let section_length = self.section(d.section as usize).length;
            let end = d.offset.saturating_add(d.byte_len());
            if end > section_length {
                return Err(FormatError::DescriptorOutOfBounds {
                    index,
                    name,
                    section: d.section,
                    offset: d.offset,
                    end,
                    section_length,
                });
            }
        }
        Ok(())
    }

    /// The bytes of section zero this view reads.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn config(&self) -> Config {
        self.config
    }

    pub fn blocks(&self) -> BlockOffsets {
        self.blocks
    }

    /// Header byte 68: one over the square root of the head size, 24 fractional bits.
    pub fn inv_sqrt_head_size(&self) -> u32 {
        u32_at(self.bytes, field::INV_SQRT_HEAD_SIZE)
    }

    pub fn section_count(&self) -> usize {
        self.section_count
    }

    /// Section table entry `i`. Panics if `i >= section_count()`.
    pub fn section(&self, i: usize) -> SectionEntry {
        assert!(
            i < self.section_count,
            "section {i} of {}",
            self.section_count
        );
        let at = SECTION_TABLE_OFFSET + SECTION_ENTRY_LEN * i;
        SectionEntry {
            offset: u64_at(self.bytes, at),
            length: u64_at(self.bytes, at + 8),
        }
    }

    pub fn sections(&self) -> impl Iterator<Item = SectionEntry> + 'a {
        let this = *self;
        (0..self.section_count).map(move |i| this.section(i))
    }

    pub fn matrix_count(&self) -> usize {
        self.config.matrix_count()
    }

    /// Matrix descriptor `i`. Panics if `i >= matrix_count()`.
    pub fn matrix(&self, i: usize) -> MatrixDescriptor {
        assert!(
            i < self.matrix_count(),
            "matrix {i} of {}",
            self.matrix_count()
        );
        let at = MATRIX_TABLE_OFFSET + DESCRIPTOR_LEN * i;
        MatrixDescriptor {
            section: u32_at(self.bytes, at),
            columns: u32_at(self.bytes, at + 4),
            rows: u32_at(self.bytes, at + 8),
            row_bytes: u32_at(self.bytes, at + 12),
            offset: u64_at(self.bytes, at + 16),
        }
    }

    pub fn matrices(&self) -> impl Iterator<Item = MatrixDescriptor> + 'a {
        let this = *self;
        (0..self.matrix_count()).map(move |i| this.matrix(i))
    }

    fn word(&self, block: u32, len: usize, i: usize) -> u32 {
        assert!(i < len, "index {i} of {len}");
        u32_at(self.bytes, block as usize + 4 * i)
    }

    /// Normalization coefficient `i` (24 fractional bits): for each layer, the attention then
    /// the feed-forward weights, then the final normalization.
    pub fn norm(&self, i: usize) -> i32 {
        self.word(self.blocks.norm, self.config.norm_len(), i) as i32
    }

    /// Rotary coefficient `i`: position × head size + 2j is the cosine, + 2j + 1 the sine.
    pub fn rotary(&self, i: usize) -> i32 {
        self.word(self.blocks.rotary, self.config.rotary_len(), i) as i32
    }

    /// e^(−i / 256) with 30 fractional bits, i in 0..=4096.
    pub fn exp(&self, i: usize) -> u32 {
        self.word(self.blocks.exp, EXP_TABLE_LEN, i)
    }

    /// SiLU(i / 128 − 16) with 16 fractional bits, i in 0..=4096.
    pub fn silu(&self, i: usize) -> i32 {
        self.word(self.blocks.silu, SILU_TABLE_LEN, i) as i32
    }

    /// Tokenizer entry `id`. Panics if `id >= vocab_size`.
    pub fn token(&self, id: u32) -> TokenEntry {
        let at = self.blocks.token_entries as usize + TOKEN_ENTRY_LEN * id as usize;
        assert!(
            id < self.config.vocab_size,
            "token {id} of {}",
            self.config.vocab_size
        );
        TokenEntry {
            score_key: u32_at(self.bytes, at),
            length: u32_at(self.bytes, at + 4),
            offset: u32_at(self.bytes, at + 8),
        }
    }

    /// The bytes of token `id`, checked to lie in the token strings and within 128 bytes.
    pub fn token_bytes(&self, id: u32) -> Result<&'a [u8], FormatError> {
        let entry = self.token(id);
        let (offset, length) = (entry.offset as u64, entry.length as u64);
        let section_length = self.bytes.len() as u64;
        if length > MAX_TOKEN_LEN as u64
            || offset < self.blocks.token_strings as u64
            || offset + length > section_length
        {
            return Err(FormatError::TokenOutOfBounds {
                id,
                offset,
                length,
                strings: self.blocks.token_strings as u64,
                section_length,
            });
        }
        Ok(&self.bytes[offset as usize..(offset + length) as usize])
    }

    /// Entry `i` of the sorted token ids, checked to be a token id, so that
    /// `token(sorted_id(i)?)` cannot panic on a crafted file. Panics if `i >= vocab_size`.
    pub fn sorted_id(&self, i: u32) -> Result<u32, FormatError> {
        let vocab_size = self.config.vocab_size;
        let id = self.word(self.blocks.sorted_ids, vocab_size as usize, i as usize);
        if id >= vocab_size {
            return Err(FormatError::SortedIdOutOfRange {
                index: i,
                id,
                vocab_size,
            });
        }
        Ok(id)
    }
}
