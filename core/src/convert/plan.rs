//! Where everything goes in the artifact (D5, D8), computed from the configuration and the
//! token strings' total length before a byte is written: the blocks of section zero one after
//! another in [`Block::ALL`] order, then each matrix in descriptor order at the end of the
//! section [`Config::matrix_section`] gives it (a shared classifier stored once), offsets
//! counted from 0 in each section.

use super::ConvertError;
use crate::{row_length, Block, BlockOffsets, Config, MatrixDescriptor, SectionEntry};
use crate::{ALIGNMENT, HEADER_LEN, MAX_SECTION_LEN};

pub struct Plan {
    pub blocks: BlockOffsets,
    /// Section lengths in file order; section zero first.
    pub section_lengths: Vec<u64>,
    pub descriptors: Vec<MatrixDescriptor>,
}

impl Plan {
    pub fn new(c: &Config, tied: bool, strings_len: usize) -> Result<Plan, ConvertError> {
        let mut at = HEADER_LEN as u64;
        // Each block is at most a few megabytes with a valid configuration, so u32 holds them
        // until the section-zero limit is checked below.
        let blocks = BlockOffsets::from_offsets(Block::ALL.map(|block| {
            let offset = at as u32;
            at += block.byte_len(c).unwrap_or(strings_len as u64);
            offset
        }));
        let mut section_lengths = vec![0; c.section_count()];
        section_lengths[0] = at.next_multiple_of(ALIGNMENT as u64);

        let mut descriptors = Vec::with_capacity(c.matrix_count());
        for index in 0..c.matrix_count() {
            if index == 1 && tied {
                descriptors.push(descriptors[0]);
                continue;
            }
            let (rows, columns) = c.matrix_shape(index);
            let row_bytes = row_length(columns);
            let section = c.matrix_section(index);
            let length = &mut section_lengths[section as usize];
            descriptors.push(MatrixDescriptor {
                section,
                columns,
                rows,
                row_bytes,
                offset: *length,
            });
            *length += rows as u64 * row_bytes as u64;
        }
        for (section, &length) in section_lengths.iter().enumerate() {
            if length > MAX_SECTION_LEN as u64 {
                return Err(ConvertError::SectionTooLong {
                    section,
                    length,
                    max: MAX_SECTION_LEN as u64,
                });
            }
        }
        Ok(Plan {
            blocks,
            section_lengths,
            descriptors,
        })
    }

    /// The section table: each section's offset in the file and its length.
    pub fn sections(&self) -> Vec<SectionEntry> {
        let mut offset = 0;
        self.section_lengths
            .iter()
            .map(|&length| {
                let entry = SectionEntry { offset, length };
                offset += length;
                entry
            })
            .collect()
    }

    pub fn file_len(&self) -> u64 {
        self.section_lengths.iter().sum()
    }
}
