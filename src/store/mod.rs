//! The on-disk index: `.memidx/` with a manifest and immutable generations.
//!
//! ```text
//! .memidx/memidx.tag  marks the folder as memidx's (see [`ownership`])
//! .memidx/meta.json   manifest: format version, generation, settings, files, checksums
//! .memidx/LOCK        held by a running `memidx index`
//! .memidx/gen-N/      chunks.bin, texts.bin, vectors.i8, keys.u64, sparse/ (tantivy), …
//! .memidx/cache/FP/   vectors of models used before (see `lists::vector_cache`)
//! ```
//! A new generation is written beside the old one and fsynced; only then is
//! `meta.json` replaced atomically (temp file + rename), and only after that
//! is the old generation removed. A reader therefore always sees either the
//! previous complete index or the new complete one, never a mix — the scheme
//! tantivy itself uses for its own `meta.json`.

pub mod atomic;
pub mod blocks;
pub mod bounded;
pub mod checked;
pub mod checks;
pub mod generation;
pub mod lock;
pub mod metadata_index;
pub mod ownership;
pub mod parts;
#[cfg(unix)]
pub mod socket;
pub mod texts;

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::IndexError;
use memmap2::Mmap;

/// Name of the index folder placed in the indexed root.
pub const INDEX_DIR_NAME: &str = ".memidx";

/// The manifest's file name inside the index folder.
pub const MANIFEST_FILE: &str = "meta.json";

/// The lock file's name inside the index folder.
pub const LOCK_FILE: &str = "LOCK";

/// Folder name of generation `n` inside the index folder.
pub fn generation_dir(index_dir: &Path, n: u64) -> PathBuf {
    index_dir.join(format!("gen-{n}"))
}

/// The error for a damaged index file: what is wrong (its message names
/// the fix).
pub fn damaged(path: &Path, what: &str) -> IndexError {
    IndexError::Damaged {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

/// Maps a generation file read-only (`None` for an empty file, which
/// cannot be mapped); a file that cannot be opened or mapped, or is not a
/// regular file, is named as damaged.
pub fn map_file(path: &Path) -> Result<Option<Mmap>> {
    let file =
        bounded::open_nonblocking(path).with_context(|| damaged(path, "cannot be opened"))?;
    map_opened(&file, path)
}

/// Maps `file`, a generation file opened at `path`, read-only (`None` when
/// it is empty): for a caller that treats a missing file as its own case.
/// Anything but a regular file (a device, a FIFO) is named as damaged.
pub fn map_opened(file: &File, path: &Path) -> Result<Option<Mmap>> {
    let meta = file
        .metadata()
        .with_context(|| damaged(path, "cannot be read"))?;
    bounded::check_regular(&meta)
        .map_err(|err| anyhow::anyhow!(damaged(path, &err.to_string())))?;
    if meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: generation files are never modified after the manifest that
    // names them is written; a re-index writes a new generation folder.
    Ok(Some(
        unsafe { Mmap::map(file) }.with_context(|| damaged(path, "cannot be mapped"))?,
    ))
}

/// Parses a folder name of the form `gen-N`.
pub fn parse_generation_name(name: &str) -> Option<u64> {
    name.strip_prefix("gen-")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_names_round_trip() {
        let dir = generation_dir(Path::new("/x/.memidx"), 7);
        assert_eq!(dir, Path::new("/x/.memidx/gen-7"));
        assert_eq!(parse_generation_name("gen-7"), Some(7));
        assert_eq!(parse_generation_name("gen-"), None);
        assert_eq!(parse_generation_name("gen-7.tmp"), None);
        assert_eq!(parse_generation_name("other"), None);
    }
}
