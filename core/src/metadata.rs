//! Section zero, read in place: the header, the section table, the matrix descriptors and the
//! blocks that follow the header. Nothing is copied; every accessor reads the bytes it names.

use crate::header::inv_sqrt_head_size;
use crate::header::{check_header_len, descriptor, field, section_entry, Block, Header};
use crate::le::u32_at;
use crate::*;

/// A checked view of section zero.
#[derive(Clone, Copy, Debug)]
pub struct Metadata<'a> {
    bytes: &'a [u8],
    config: Config,
    blocks: BlockOffsets,
    section_count: usize,
}

impl<'a> Metadata<'a> {
    /// Reads and checks section zero: the tag, the configuration's ranges, the section count
    /// and table, that every block lies past the header and inside section zero in the spec's
    /// order (each but the token strings at a multiple of 4), that every matrix descriptor has
    /// its configuration's shape, its layout's section, a row length, an aligned offset and lies
    /// inside its section, header byte 68, and that the exponential table holds the spec's
    /// values ([`EXP_TABLE`]).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        check_header_len(bytes, "section zero's header")?;
        let header = Header::read(bytes);
        if header.tag != TAG {
            return Err(FormatError::BadTag { found: header.tag });
        }
        let config = header.config;
        config.validate()?;

        let section_count = header.section_count as u64;
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
            blocks: header.blocks,
            section_count: section_count as usize,
        };
        metadata.check_reserved_zero()?;
        metadata.check_sections()?;
        metadata.check_blocks()?;
        metadata.check_descriptors()?;
        let expected = inv_sqrt_head_size(config.head_size());
        if header.inv_sqrt_head_size != expected {
            return Err(FormatError::InvSqrtHeadSize {
                found: header.inv_sqrt_head_size,
                expected,
            });
        }
        metadata.check_exp_table()?;
        Ok(metadata)
    }

    /// The exponential table is the spec's ([`EXP_TABLE`]): the softmax of attention and of
    /// sampling divides by a sum of its entries (entry 0 is the largest term of every sum) and
    /// bounds its products by them, so any other table could make a run divide by zero or
    /// overflow.
    fn check_exp_table(&self) -> Result<(), FormatError> {
        let table = self.block_bytes(Block::Exp);
        let found = |i: usize| u32_at(table, 4 * i);
        match (0..EXP_TABLE_LEN).find(|&i| found(i) != EXP_TABLE[i]) {
            None => Ok(()),
            Some(index) => Err(FormatError::ExpTable {
                index,
                found: found(index),
                expected: EXP_TABLE[index],
            }),
        }
    }

    /// D9: header bytes the spec's tables leave out are zero: 72 to 128, the section table
    /// past the section count, the matrix table past the matrix count.
    fn check_reserved_zero(&self) -> Result<(), FormatError> {
        let sections_end = SectionEntry::at(self.section_count);
        let matrices_end = MatrixDescriptor::at(self.config.matrix_count());
        let reserved = [
            (field::END, SECTION_TABLE_OFFSET),
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
            let entry = SectionEntry::at(i);
            let section = self.section(i);
            if section.offset != expected_offset {
                return Err(FormatError::SectionOffset {
                    section: i,
                    entry: entry + section_entry::OFFSET,
                    found: section.offset,
                    expected: expected_offset,
                });
            }
            let min = if i == 0 { HEADER_LEN as u64 } else { 1 };
            if section.length < min || section.length > MAX_SECTION_LEN as u64 {
                return Err(FormatError::SectionLength {
                    section: i,
                    entry: entry + section_entry::LENGTH,
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
    /// strings last, up to the end of section zero; every block but the token strings (bytes)
    /// at a multiple of 4, as the converter writes them (D5): the forward pass reads their
    /// values with word loads on chain.
    fn check_blocks(&self) -> Result<(), FormatError> {
        let end = self.bytes.len() as u64;
        let mut min = HEADER_LEN as u64;
        for (i, block) in Block::ALL.into_iter().enumerate() {
            let offset = self.blocks.get(block) as u64;
            if offset < min {
                return Err(FormatError::BlockOffset {
                    block: block.name(),
                    field: block.header_offset(),
                    offset,
                    min,
                });
            }
            // The token strings' length is not in the header: they need only fit.
            let length = block.byte_len(&self.config).unwrap_or(0);
            let (limit, next) = match Block::ALL.get(i + 1) {
                Some(&next) => (self.blocks.get(next) as u64, next.name()),
                None => (end, "the end of section zero"),
            };
            let limit = limit.min(end);
            if offset + length > limit {
                return Err(FormatError::BlockOverlap {
                    block: block.name(),
                    offset,
                    length,
                    limit,
                    next,
                });
            }
            if block != Block::TokenStrings && offset % 4 != 0 {
                return Err(FormatError::BlockMisaligned {
                    block: block.name(),
                    field: block.header_offset(),
                    offset,
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
            let at = MatrixDescriptor::at(index);
            let name = Config::matrix_name(index);
            let d = self.matrix(index);
            let (rows, columns) = self.config.matrix_shape(index);
            let checks: [(&'static str, usize, u64, u64); 4] = [
                (
                    "section",
                    at + descriptor::SECTION,
                    d.section as u64,
                    self.config.matrix_section(index) as u64,
                ),
                (
                    "columns",
                    at + descriptor::COLUMNS,
                    d.columns as u64,
                    columns as u64,
                ),
                ("rows", at + descriptor::ROWS, d.rows as u64, rows as u64),
                (
                    "row length",
                    at + descriptor::ROW_BYTES,
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
            if d.offset % ALIGNMENT as u64 != 0 {
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

    /// Section zero of a sealed model, read without its checks: the program's seal checked it
    /// with the rules of [`Metadata::parse`] (section_zero::check) before the weights hash
    /// proved these bytes, so a run on chain does not pay for them at every step. Every
    /// accessor still slices within `bytes`: a wrong section zero can make a reader panic,
    /// never read outside it. Too short for the header is `None`.
    pub fn sealed(bytes: &'a [u8]) -> Option<Self> {
        if bytes.len() < HEADER_LEN {
            return None;
        }
        let header = Header::read(bytes);
        Some(Metadata {
            bytes,
            config: header.config,
            blocks: header.blocks,
            section_count: (header.section_count as usize).min(MAX_SECTIONS),
        })
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

    /// Header byte 68: one over the square root of the head size, 24 fractional bits (checked
    /// against the head size).
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
        SectionEntry::read(self.bytes, i)
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
        MatrixDescriptor::read(self.bytes, i)
    }

    pub fn matrices(&self) -> impl Iterator<Item = MatrixDescriptor> + 'a {
        let this = *self;
        (0..self.matrix_count()).map(move |i| this.matrix(i))
    }

    /// The bytes of a block of fixed length (all but the token strings, which run to the end
    /// of section zero).
    pub fn block_bytes(&self, block: Block) -> &'a [u8] {
        let start = self.blocks.get(block) as usize;
        match block.byte_len(&self.config) {
            Some(len) => &self.bytes[start..start + len as usize],
            None => &self.bytes[start..],
        }
    }

    /// Word `i` of a block of u32 words. Panics past the block's end.
    fn word(&self, block: Block, i: usize) -> u32 {
        let len = block.byte_len(&self.config).unwrap_or(0) as usize / 4;
        assert!(i < len, "{} index {i} of {len}", block.name());
        u32_at(self.bytes, self.blocks.get(block) as usize + 4 * i)
    }

    /// Normalization coefficient `i` (24 fractional bits): for each layer, the attention then
    /// the feed-forward weights, then the final normalization.
    pub fn norm(&self, i: usize) -> i32 {
        self.word(Block::Norm, i) as i32
    }

    /// Rotary coefficient `i`: position × head size + 2j is the cosine, + 2j + 1 the sine.
    pub fn rotary(&self, i: usize) -> i32 {
        self.word(Block::Rotary, i) as i32
    }

    /// e^(−i / 256) with 30 fractional bits, i in 0..=4096.
    pub fn exp(&self, i: usize) -> u32 {
        self.word(Block::Exp, i)
    }

    /// SiLU(i / 128 − 16) with 16 fractional bits, i in 0..=4096.
    pub fn silu(&self, i: usize) -> i32 {
        self.word(Block::Silu, i) as i32
    }

    /// Tokenizer entry `id`. Panics if `id >= vocab_size`.
    pub fn token(&self, id: u32) -> TokenEntry {
        assert!(
            id < self.config.vocab_size,
            "token {id} of {}",
            self.config.vocab_size
        );
        TokenEntry::read(self.bytes, TokenEntry::at(self.blocks.token_entries, id))
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

    /// The bytes of token `id` as the tokenizer reads them, total: [`Metadata::token_bytes`],
    /// or no bytes for an entry outside the token strings or over 128 bytes (docs/format.md,
    /// D13). A sealed model's run never fails on a token entry: the token is kept, its text is
    /// empty. Panics if `id >= vocab_size`.
    pub fn token_text(&self, id: u32) -> &'a [u8] {
        self.token_bytes(id).unwrap_or(&[])
    }

    /// Entry `i` of the sorted token ids, checked to be a token id, so that
    /// `token(sorted_id(i)?)` cannot panic on a crafted file. Panics if `i >= vocab_size`.
    pub fn sorted_id(&self, i: u32) -> Result<u32, FormatError> {
        let vocab_size = self.config.vocab_size;
        let id = self.word(Block::SortedIds, i as usize);
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
