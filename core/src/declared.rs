//! Section zero against the section lengths a model declared on chain: the check the program
//! makes when a seal pass starts (chunk 0).

use crate::{FormatError, Metadata};

/// Why section zero does not fit the declared section lengths.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclaredError {
    /// Section zero is not a valid CURTAW01 header.
    #[error("section zero: {0}")]
    Invalid(FormatError),
    /// Its section table lists another number of sections than declared.
    #[error("section table: {found} sections, declared {declared}")]
    Count { found: usize, declared: usize },
    /// Its section table lists another length for a section than declared (section zero's
    /// own entry against the declared length included).
    #[error("section table: section {section} is {found} bytes, declared {declared}")]
    Length {
        section: usize,
        found: u64,
        declared: u32,
    },
}

impl DeclaredError {
    /// Whether section zero is valid but its table differs from the declared lengths. A table
    /// whose own entry for section zero differs from section zero's length (curta-core's
    /// `SectionZeroLength`) is such a difference: section zero's length is the declared one.
    pub fn is_table_mismatch(&self) -> bool {
        !matches!(self, DeclaredError::Invalid(e) if !matches!(e, FormatError::SectionZeroLength { .. }))
    }
}

impl<'a> Metadata<'a> {
    /// Parses section zero (its length is the declared `declared[0]`) and checks that its
    /// section table lists exactly the declared lengths.
    pub fn parse_declared(section_zero: &'a [u8], declared: &[u32]) -> Result<Self, DeclaredError> {
        let metadata = Metadata::parse(section_zero).map_err(DeclaredError::Invalid)?;
        if metadata.section_count() != declared.len() {
            return Err(DeclaredError::Count {
                found: metadata.section_count(),
                declared: declared.len(),
            });
        }
        for (section, (entry, &length)) in metadata.sections().zip(declared).enumerate() {
            if entry.length != length as u64 {
                return Err(DeclaredError::Length {
                    section,
                    found: entry.length,
                    declared: length,
                });
            }
        }
        Ok(metadata)
    }
}
