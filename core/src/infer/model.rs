//! A model to run: section zero read in place, and the bytes of the other sections, each
//! checked against the section table. A runner that holds only some sections (the program,
//! given the weight accounts one step needs) passes an empty slice for the others; reading a
//! matrix from a section that is not there is [`RunError::SectionMissing`].

use super::state::get_u32;
use super::RunError;
use crate::{Artifact, Config, Metadata, MAX_SECTIONS, ROW_WEIGHTS_OFFSET};

#[derive(Clone, Copy, Debug)]
pub struct Model<'a> {
    meta: Metadata<'a>,
    sections: [&'a [u8]; MAX_SECTIONS],
}

/// A matrix read through its descriptor: its rows' bytes in the section that holds it.
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    pub bytes: &'a [u8],
    pub columns: usize,
    pub row_bytes: usize,
}

impl<'a> Rows<'a> {
    /// Row `r`: its scale (24 fractional bits) and its stored weights (weight + 128).
    #[inline(always)]
    pub fn row(&self, r: usize) -> (u32, &'a [u8]) {
        let start = r * self.row_bytes;
        let row = &self.bytes[start..start + self.row_bytes];
        // A word load on chain: rows start at multiples of 8 in their section (format.md),
        // and account data is 8-byte aligned.
        let scale = get_u32(row, 0);
        (
            scale,
            &row[ROW_WEIGHTS_OFFSET..ROW_WEIGHTS_OFFSET + self.columns],
        )
    }
}

impl<'a> Rows<'a> {
    /// Whether every row of `rows` lies in the matrix's bytes, so that
    /// [`Rows::row_unchecked`] may read them: one check for a stage's rows instead of one per
    /// row (on SBF tens of units a row).
    pub fn holds(&self, rows: &core::ops::Range<usize>) -> bool {
        ROW_WEIGHTS_OFFSET + self.columns <= self.row_bytes
            && rows
                .end
                .checked_mul(self.row_bytes)
                .is_some_and(|end| end <= self.bytes.len())
    }

    /// [`Rows::row`] without its bounds check.
    ///
    /// # Safety
    /// `r` is in a range that [`Rows::holds`] accepted.
    #[inline(always)]
    pub unsafe fn row_unchecked(&self, r: usize) -> (u32, &'a [u8]) {
        let row = self.bytes.as_ptr().add(r * self.row_bytes);
        // As in `row`: on chain a word load, the row 8-byte aligned.
        #[cfg(target_os = "solana")]
        let scale = (row as *const u32).read();
        #[cfg(not(target_os = "solana"))]
        let scale = u32::from_le_bytes(*(row as *const [u8; 4]));
        let weights = core::slice::from_raw_parts(row.add(ROW_WEIGHTS_OFFSET), self.columns);
        (scale, weights)
    }
}

impl<'a> Model<'a> {
    /// `sections[i]` is section i's bytes or empty (not held); `sections[0]`, when given,
    /// must be `meta`'s bytes. Each held section's length must be the section table's.
    pub fn new(meta: Metadata<'a>, sections: &[&'a [u8]]) -> Result<Model<'a>, RunError> {
        let count = meta.section_count();
        if sections.len() > count {
            return Err(RunError::TooManySections {
                given: sections.len(),
                count,
            });
        }
        let mut held = [&[][..]; MAX_SECTIONS];
        held[0] = meta.bytes();
        for (i, &bytes) in sections.iter().enumerate().skip(1) {
            let expected = meta.section(i).length;
            if !bytes.is_empty() && bytes.len() as u64 != expected {
                return Err(RunError::SectionLength {
                    section: i,
                    length: bytes.len() as u64,
                    expected,
                });
            }
            held[i] = bytes;
        }
        Ok(Model {
            meta,
            sections: held,
        })
    }

    /// Every section of a decoded artifact.
    pub fn from_artifact(artifact: &Artifact<'a>) -> Result<Model<'a>, RunError> {
        let mut sections = [&[][..]; MAX_SECTIONS];
        for (i, s) in artifact.sections().enumerate() {
            sections[i] = s;
        }
        Model::new(*artifact.metadata(), &sections[..artifact.section_count()])
    }

    /// Whether section `section`'s bytes were given.
    pub fn holds(&self, section: usize) -> bool {
        self.sections.get(section).is_some_and(|s| !s.is_empty())
    }

    pub fn metadata(&self) -> &Metadata<'a> {
        &self.meta
    }

    pub fn config(&self) -> Config {
        self.meta.config()
    }

    /// Matrix `index`, read through its descriptor from the section that holds it (the
    /// metadata checked that it lies inside that section).
    pub fn rows(&self, index: usize) -> Result<Rows<'a>, RunError> {
        let d = self.meta.matrix(index);
        let section = self.sections[d.section as usize];
        if section.is_empty() {
            return Err(RunError::SectionMissing {
                section: d.section as usize,
                matrix: index,
            });
        }
        let start = d.offset as usize;
        Ok(Rows {
            bytes: &section[start..start + d.byte_len() as usize],
            columns: d.columns as usize,
            row_bytes: d.row_bytes as usize,
        })
    }
}
