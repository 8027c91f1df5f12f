//! The index as a whole: its manifest (`meta.json`, the one file that says
//! which generation is live and with what settings) and the generation it
//! names, opened together.
//!
//! This floor stands above the lists and the fusion, so the manifest can
//! record their settings (BM25 parameters, fusion defaults, the graph's
//! options) without the storage floor knowing any of them. It is the one
//! place that reads `meta.json` for searching; [`Index::open_with`] also
//! absorbs the race with a concurrent `memidx index`.

pub mod get;
pub mod manifest;
pub mod status;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::store::checks;
use crate::store::generation::Generation;
use manifest::Manifest;

/// How often opening is retried when a concurrent index run replaced the
/// generation being opened.
const OPEN_ATTEMPTS: usize = 3;

/// An opened index: its folder, manifest and live generation.
pub struct Index {
    dir: PathBuf,
    manifest: Manifest,
    generation: Generation,
}

impl Index {
    /// Opens the index in `dir` (a `.memidx` folder).
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with(dir, Ok)
    }

    /// Opens the index in `dir` and hands it to `then` (which opens what it
    /// needs of the generation). A concurrent `memidx index` may switch the
    /// manifest and remove the generation it named between our reading the
    /// one and opening the other: then the manifest names a newer
    /// generation, and the whole open is retried with that one.
    pub fn open_with<T>(dir: &Path, then: impl Fn(Self) -> Result<T>) -> Result<T> {
        let mut manifest = read_manifest(dir)?;
        let mut attempts = 1;
        loop {
            let tried = manifest.generation;
            let opened = Generation::open(dir, manifest.generation, &manifest.checksums).and_then(
                |generation| {
                    then(Self {
                        dir: dir.to_path_buf(),
                        manifest,
                        generation,
                    })
                },
            );
            match opened {
                Err(err) if attempts < OPEN_ATTEMPTS => {
                    manifest = read_manifest(dir)?;
                    if manifest.generation == tried {
                        return Err(err);
                    }
                    attempts += 1;
                }
                outcome => return outcome,
            }
        }
    }

    /// The index folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The live generation (chunk table and texts).
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// The indexed root folder (as recorded when indexing).
    pub fn root(&self) -> &Path {
        Path::new(&self.manifest.root)
    }
}

/// Re-reads every file of the live generation of the index in `dir`
/// against its checksum, without opening it (damage must not stop the
/// check); the damaged files, named (empty when all are intact).
pub fn verify(dir: &Path) -> Result<Vec<String>> {
    let manifest = read_manifest(dir)?;
    Ok(checks::verify(
        &crate::store::generation_dir(dir, manifest.generation),
        &manifest.checksums,
    ))
}

/// Reads `dir/meta.json`, which must exist.
fn read_manifest(dir: &Path) -> Result<Manifest> {
    Manifest::read(dir)?.with_context(|| {
        format!(
            "{} holds no complete index (no meta.json); run 'memidx index DIR' first",
            dir.display()
        )
    })
}
