//! Converting files: both inputs mapped, the artifact written once to a temporary file in
//! the output's directory and renamed over the output only when everything succeeded.

use super::{convert, ConvertFileError};
use crate::decode;
use memmap2::Mmap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What `client convert` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub bytes: u64,
    pub section_lengths: Vec<u64>,
    pub weights_hash: [u8; 32],
}

/// A read-only map of a whole file (an empty file maps to no bytes).
pub struct MappedFile {
    map: Option<Mmap>,
}

/// The regular file at `path`, open, with its length; a directory or a device is refused.
pub(super) fn open_regular(path: &Path) -> std::io::Result<(File, u64)> {
    let file = File::open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a directory or a device)",
        ));
    }
    Ok((file, metadata.len()))
}

impl MappedFile {
    pub fn open(path: &Path) -> std::io::Result<MappedFile> {
        let (file, len) = open_regular(path)?;
        if len == 0 {
            return Ok(MappedFile { map: None });
        }
        // SAFETY: the map is read-only; like every reader of a mapped file we rely on nobody
        // truncating or rewriting the file while it is mapped.
        let map = unsafe { Mmap::map(&file) }?;
        Ok(MappedFile { map: Some(map) })
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

/// Converts `checkpoint` and `tokenizer` into the artifact at `out`. On any error nothing is
/// written and an existing `out` is left as it was.
pub fn convert_file(
    checkpoint: &Path,
    tokenizer: &Path,
    out: &Path,
) -> Result<Summary, ConvertFileError> {
    let open = |path: &Path| {
        MappedFile::open(path).map_err(|error| ConvertFileError::Read {
            path: path.to_path_buf(),
            error,
        })
    };
    let checkpoint_map = open(checkpoint)?;
    let tokenizer_map = open(tokenizer)?;
    let artifact = convert(checkpoint_map.bytes(), tokenizer_map.bytes()).map_err(|error| {
        let path = if error.in_tokenizer() {
            tokenizer
        } else {
            checkpoint
        };
        ConvertFileError::Convert {
            path: path.to_path_buf(),
            error,
        }
    })?;
    drop((checkpoint_map, tokenizer_map));

    let summary = summarize(&artifact);
    write_atomically(out, &artifact)?;
    Ok(summary)
}

fn summarize(artifact: &[u8]) -> Summary {
    // The converter's output always decodes; the sections are read from it as any reader would.
    let decoded = decode(artifact).expect("the converter wrote an artifact that does not decode");
    Summary {
        bytes: artifact.len() as u64,
        section_lengths: decoded.sections().map(|s| s.len() as u64).collect(),
        weights_hash: crate::weights_hash(decoded.sections()),
    }
}

/// Writes `bytes` to a temporary file next to `out`, then renames it to `out`.
fn write_atomically(out: &Path, bytes: &[u8]) -> Result<(), ConvertFileError> {
    let write_error = |error| ConvertFileError::Write {
        path: out.to_path_buf(),
        error,
    };
    let dir = match out.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".curta-convert-")
        .tempfile_in(&dir)
        .map_err(write_error)?;
    temp.write_all(bytes).map_err(write_error)?;
    temp.as_file().sync_all().map_err(write_error)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(write_error)?;
    }
    // Dropping the temporary file on any error above removes it.
    temp.persist(out).map_err(|e| write_error(e.error))?;
    Ok(())
}
