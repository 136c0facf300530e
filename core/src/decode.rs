//! A whole artifact: section zero's metadata plus the sections as byte ranges of the file.

use crate::header::check_header_len;
use crate::le::u32_at;
use crate::MAX_SECTION_LEN;
use crate::{FormatError, MatrixDescriptor, Metadata, SectionEntry, HEADER_LEN, MAX_SECTIONS};
use crate::{ROW_WEIGHTS_OFFSET, TAG};

/// A checked artifact borrowed from the file's bytes.
#[derive(Clone, Copy, Debug)]
pub struct Artifact<'a> {
    file: &'a [u8],
    metadata: Metadata<'a>,
}

/// One matrix: its descriptor and the bytes of its rows inside its section.
#[derive(Clone, Copy, Debug)]
pub struct Matrix<'a> {
    pub descriptor: MatrixDescriptor,
    bytes: &'a [u8],
}

/// One row: its scale (24 fractional bits) and the stored weights, each the int8 weight + 128.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row<'a> {
    pub scale: u32,
    pub weights: &'a [u8],
}

/// Checks the tag, the configuration, that the sections tile the file exactly from byte zero,
/// the section limits, and every descriptor's shape, alignment and bounds.
pub fn decode(file: &[u8]) -> Result<Artifact<'_>, FormatError> {
    let metadata = decode_head(file, file.len() as u64)?;
    Ok(Artifact { file, metadata })
}

/// [`decode`]'s checks made on the first bytes of a file of `file_length` bytes: `head` is
/// the file's start, at least its first `min(file_length, MAX_SECTION_LEN)` bytes (section zero
/// is at most [`MAX_SECTION_LEN`] bytes, so they hold it whatever the header says). Returns the
/// checked section zero, for a reader that does not hold the matrices' bytes (the SDK's).
pub fn decode_head(head: &[u8], file_length: u64) -> Result<Metadata<'_>, FormatError> {
    let file_len = usize::try_from(file_length).unwrap_or(usize::MAX);
    let head = &head[..head.len().min(file_len)];
    debug_assert!(head.len() >= file_len.min(MAX_SECTION_LEN));
    check_header_len(head, "the artifact's header")?;
    // Section zero's length, from section table entry 0; the metadata checks the whole table
    // against it.
    let zero_length = SectionEntry::read(head, 0).length;
    if head[..TAG.len()] == TAG && zero_length > file_length {
        return Err(FormatError::Truncated {
            what: "section zero",
            offset: 0,
            needed: zero_length,
            available: file_length,
        });
    }
    let zero_end = (zero_length as usize).clamp(HEADER_LEN, head.len());
    let metadata = Metadata::parse(&head[..zero_end])?;
    let last = metadata.section(metadata.section_count() - 1);
    let sections_end = last.offset + last.length;
    if sections_end != file_length {
        return Err(FormatError::FileLength {
            sections_end,
            file_length,
        });
    }
    debug_assert!(metadata.section_count() <= MAX_SECTIONS);
    Ok(metadata)
}

impl<'a> Artifact<'a> {
    pub fn metadata(&self) -> &Metadata<'a> {
        &self.metadata
    }

    pub fn config(&self) -> crate::Config {
        self.metadata.config()
    }

    /// The whole file.
    pub fn bytes(&self) -> &'a [u8] {
        self.file
    }

    pub fn section_count(&self) -> usize {
        self.metadata.section_count()
    }

    /// The bytes of section `i`: the data of weight account `i` after its header.
    pub fn section(&self, i: usize) -> &'a [u8] {
        let entry = self.metadata.section(i);
        &self.file[entry.offset as usize..(entry.offset + entry.length) as usize]
    }

    pub fn sections(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.section_count()).map(move |i| self.section(i))
    }

    /// Matrix `i` in the spec's tensor order. Panics if `i >= matrix_count()`.
    pub fn matrix(&self, i: usize) -> Matrix<'a> {
        let descriptor = self.metadata.matrix(i);
        let section = self.section(descriptor.section as usize);
        let start = descriptor.offset as usize;
        Matrix {
            descriptor,
            bytes: &section[start..start + descriptor.byte_len() as usize],
        }
    }
}

impl<'a> Matrix<'a> {
    /// All rows' bytes, one after another.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Row `r`. Panics if `r >= rows`.
    pub fn row(&self, r: u32) -> Row<'a> {
        assert!(
            r < self.descriptor.rows,
            "row {r} of {}",
            self.descriptor.rows
        );
        let len = self.descriptor.row_bytes as usize;
        let row = &self.bytes[r as usize * len..(r as usize + 1) * len];
        Row {
            scale: u32_at(row, 0),
            weights: &row
                [ROW_WEIGHTS_OFFSET..ROW_WEIGHTS_OFFSET + self.descriptor.columns as usize],
        }
    }
}
