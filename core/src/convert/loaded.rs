//! An artifact file loaded for a local run (`client run`). Its bytes are copied into anonymous
//! memory that the kernel is asked to back with 2 MiB pages (Linux's transparent huge pages,
//! `madvise`; the machines here have them in `madvise` mode): a token reads every weight once,
//! and over 4 KiB pages (a mapped file's) the stories15M shape's 16.5 MB span about 4,000
//! pages, more than the CPU's translation cache holds, so each new page of the weights cost a
//! page walk (`client run` on huge pages made about 1.2x the tokens a second, docs/inference.md).
//! Elsewhere, or when the kernel has no huge page to give, the same bytes sit in ordinary pages.

use memmap2::{MmapMut, MmapOptions};
use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// The size and alignment of a huge page.
const HUGE_PAGE: usize = 2 << 20;

/// A whole file's bytes in memory of their own (an empty file holds none).
pub struct LoadedFile {
    map: Option<MmapMut>,
    start: usize,
    len: usize,
}

impl LoadedFile {
    /// Reads the regular file at `path`; refuses a directory or a device, and a file whose
    /// length changes while it is read.
    pub fn open(path: &Path) -> std::io::Result<LoadedFile> {
        let (mut file, len) = super::file::open_regular(path)?;
        let len = usize::try_from(len).map_err(|_| {
            Error::new(ErrorKind::InvalidInput, "larger than this machine's memory")
        })?;
        if len == 0 {
            return Ok(LoadedFile {
                map: None,
                start: 0,
                len: 0,
            });
        }
        // A huge page's worth more than the file, so that the bytes can start on a boundary.
        let mut map = MmapOptions::new().len(len + HUGE_PAGE).map_anon()?;
        // Only a hint: where it is refused, ordinary pages.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let start = (HUGE_PAGE - map.as_ptr() as usize % HUGE_PAGE) % HUGE_PAGE;
        file.read_exact(&mut map[start..start + len])
            .map_err(|e| match e.kind() {
                ErrorKind::UnexpectedEof => {
                    Error::new(ErrorKind::InvalidData, "shrank while it was read")
                }
                _ => e,
            })?;
        if file.read(&mut [0u8; 1])? != 0 {
            return Err(Error::new(ErrorKind::InvalidData, "grew while it was read"));
        }
        Ok(LoadedFile {
            map: Some(map),
            start,
            len,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(map) => &map[self.start..self.start + self.len],
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file's bytes exactly, from a huge page's boundary; an empty file holds none; a
    /// directory is refused by name of what it is.
    #[test]
    fn a_loaded_file_holds_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("artifact.curta");
        let bytes: Vec<u8> = (0..3 * HUGE_PAGE + 12_345)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let loaded = LoadedFile::open(&path).unwrap();
        assert_eq!(loaded.bytes(), &bytes[..]);
        assert_eq!(loaded.bytes().as_ptr() as usize % HUGE_PAGE, 0);
        std::fs::write(&path, b"").unwrap();
        assert_eq!(LoadedFile::open(&path).unwrap().bytes(), b"");
        let error = LoadedFile::open(dir.path())
            .err()
            .expect("a directory is refused");
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            error.to_string(),
            "not a regular file (a directory or a device)"
        );
    }
}
