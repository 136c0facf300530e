//! Where everything goes in the artifact (D5, D8), computed from the configuration and the
//! token strings' total length before a byte is written.
//!
//! ```text
//! section 0   header (4,096) | norm | rotary | exp | SiLU | token entries | sorted ids
//!             | token strings | zero bytes up to a multiple of 8
//! 2 sections  section 1: every matrix in descriptor order (a shared classifier stored once)
//! L+2         section 1: embedding (then an untied classifier); section 2 + l: layer l's
//!             seven matrices in index order; offsets from 0 in each section
//! ```

use super::ConvertError;
use crate::{row_length, BlockOffsets, Config, MatrixDescriptor, HEADER_LEN, MAX_SECTION_LEN};
use crate::{EXP_TABLE_LEN, SILU_TABLE_LEN, TOKEN_ENTRY_LEN};

pub struct Plan {
    pub blocks: BlockOffsets,
    /// Section lengths in file order; section zero first.
    pub section_lengths: Vec<u64>,
    pub descriptors: Vec<MatrixDescriptor>,
}

impl Plan {
    pub fn new(c: &Config, tied: bool, strings_len: usize) -> Result<Plan, ConvertError> {
        let v = c.vocab_size as u64;
        let mut at = HEADER_LEN as u64;
        let mut block = |len: u64| {
            let offset = at;
            at += len;
            offset as u32
        };
        // Each block is at most a few megabytes with a valid configuration, so u32 holds them
        // until the section-zero limit is checked below.
        let blocks = BlockOffsets {
            norm: block(4 * c.norm_len() as u64),
            rotary: block(4 * c.rotary_len() as u64),
            exp: block(4 * EXP_TABLE_LEN as u64),
            silu: block(4 * SILU_TABLE_LEN as u64),
            token_entries: block(TOKEN_ENTRY_LEN as u64 * v),
            sorted_ids: block(4 * v),
            token_strings: block(strings_len as u64),
        };
        let mut section_lengths = vec![at.next_multiple_of(8)];

        let multi = c.section_count() > 2;
        section_lengths.push(0);
        let mut descriptors = Vec::with_capacity(c.matrix_count());
        for index in 0..c.matrix_count() {
            let (rows, columns) = c.matrix_shape(index);
            let row_bytes = row_length(columns);
            if index == 1 && tied {
                descriptors.push(descriptors[0]);
                continue;
            }
            let section = if multi && index >= 2 {
                2 + (index - 2) / 7
            } else {
                1
            };
            if section == section_lengths.len() {
                section_lengths.push(0);
            }
            let offset = section_lengths[section];
            section_lengths[section] += rows as u64 * row_bytes as u64;
            descriptors.push(MatrixDescriptor {
                section: section as u32,
                columns,
                rows,
                row_bytes,
                offset,
            });
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
        debug_assert_eq!(section_lengths.len(), c.section_count());
        Ok(Plan {
            blocks,
            section_lengths,
            descriptors,
        })
    }

    /// Byte offset of each section in the file.
    pub fn section_offsets(&self) -> Vec<u64> {
        let mut at = 0;
        self.section_lengths
            .iter()
            .map(|len| {
                let offset = at;
                at += len;
                offset
            })
            .collect()
    }

    pub fn file_len(&self) -> u64 {
        self.section_lengths.iter().sum()
    }
}
