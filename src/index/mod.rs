//! The index as a whole: its manifest (`meta.json`, the one file that says
//! which generations are live and with what settings) and the parts it
//! names (a base generation and, after a small change, a delta; see
//! [`crate::store::parts`]), opened together.
//!
//! This floor stands above the lists and the fusion, so the manifest can
//! record their settings (BM25 parameters, fusion defaults, the graph's
//! options) without the storage floor knowing any of them. It is the one
//! place that reads `meta.json` for searching; [`Index::open_with`] also
//! absorbs the race with a concurrent `memidx index`.

pub mod get;
pub mod manifest;
pub mod set;
pub mod status;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use crate::embed::Embedder;
use crate::error::IndexError;
use crate::fusion::{FusionDefaults, FusionSource};
use crate::lists::graph::{GraphList, QueryOptions, no_graph};
use crate::store::checks;
use crate::store::generation::FileEntry;
use crate::store::lock::IndexLock;
use crate::store::parts::Parts;
use crate::store::{LOCK_FILE, MANIFEST_FILE};
use manifest::Manifest;

/// How often opening is retried when a concurrent index run replaced the
/// generation being opened.
const OPEN_ATTEMPTS: usize = 3;

/// An opened index: its folder, manifest and live parts.
pub struct Index {
    dir: PathBuf,
    manifest: Manifest,
    parts: Parts,
}

impl Index {
    /// Opens the index in `dir` (a `.memidx` folder).
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with(dir, Ok)
    }

    /// Opens the index in `dir` and hands it to `then` (which opens what it
    /// needs of the parts). A concurrent `memidx index` may switch the
    /// manifest and remove a generation it named between our reading the
    /// one and opening the other: then the manifest names newer
    /// generations, and the whole open is retried with those.
    pub fn open_with<T>(dir: &Path, then: impl Fn(Self) -> Result<T>) -> Result<T> {
        let mut manifest = read_manifest(dir)?;
        let mut attempts = 1;
        loop {
            let tried = manifest.generations();
            let opened = Parts::open(dir, &manifest.parts()).and_then(|parts| {
                then(Self {
                    dir: dir.to_path_buf(),
                    manifest,
                    parts,
                })
            });
            match opened {
                Err(err) if attempts < OPEN_ATTEMPTS && a_race_may_explain(&err) => {
                    manifest = read_manifest(dir)?;
                    if manifest.generations() == tried {
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

    /// The live parts (chunk tables and texts), read as one table.
    pub fn parts(&self) -> &Parts {
        &self.parts
    }

    /// The indexed root folder (as recorded when indexing).
    pub fn root(&self) -> &Path {
        Path::new(&self.manifest.root)
    }

    /// The indexed file at `path` (relative to the root) and its chunks'
    /// ids in file order; `None` when the index does not hold it.
    pub fn file_chunks(&self, path: &str) -> Result<Option<(FileEntry, Vec<String>)>> {
        let parts = &self.parts;
        let Some(file) = parts.file_index(path) else {
            return Ok(None);
        };
        let ids = parts
            .chunks_of_file(file)?
            .map(|ord| parts.chunk_id(ord))
            .collect::<Result<_>>()?;
        Ok(Some((parts.file(file)?, ids)))
    }

    /// The graph list, or an error saying how to build one when the index
    /// has none (an index with a graph is written whole, without deltas,
    /// so the graph is its base's).
    pub fn open_graph(&self, options: QueryOptions) -> Result<GraphList> {
        if self.manifest.graph.is_none() {
            return Err(no_graph(&self.manifest.root));
        }
        let base = self.parts.base();
        GraphList::open(base.dir(), base.len(), options)
    }
}

/// What identifies the live parts as a long-lived reader opened them:
/// the device, inode, size and modification time of `meta.json` and of
/// every file of the generations it names. A run publishes a generation by
/// renaming a new `meta.json` into place, and a file rewritten, truncated
/// or restored from a backup in place (`cp -r backup/.memidx .`) changes
/// its stamp too, so a reader (the MCP server) that compares stamps before
/// each use knows, without reading the files, whether what it has mapped
/// is still what it opened, and reopens (with every check a fresh open
/// makes) instead of touching a mapping whose file changed under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveStamp {
    manifest: FileStamp,
    /// Each file of the live generations, by path, in path order.
    files: Vec<(PathBuf, FileStamp)>,
}

impl LiveStamp {
    /// The stamp of the index in `dir`, or `None` when it has no readable
    /// `meta.json`.
    pub fn of(dir: &Path) -> Option<Self> {
        let manifest_path = dir.join(MANIFEST_FILE);
        let manifest = FileStamp::of(&std::fs::metadata(&manifest_path).ok()?);
        let generations = read_manifest(dir).ok()?.generations();
        let mut files: Vec<(PathBuf, FileStamp)> = (generations.into_iter())
            .flat_map(|generation| {
                walkdir::WalkDir::new(crate::store::generation_dir(dir, generation))
            })
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let meta = entry.metadata().ok().filter(|m| m.is_file())?;
                Some((entry.into_path(), FileStamp::of(&meta)))
            })
            .collect();
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Some(Self { manifest, files })
    }
}

/// One file's device, inode, size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    device: u64,
    inode: u64,
    size: u64,
    mtime_ns: i128,
}

impl FileStamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        Self {
            device,
            inode,
            size: meta.len(),
            mtime_ns,
        }
    }
}

/// Re-reads every file of every live part of the index in `dir` against
/// its checksum, without opening it (damage must not stop the check); the
/// damaged files, named (empty when all are intact).
pub fn verify(dir: &Path) -> Result<Vec<IndexError>> {
    let manifest = read_manifest(dir)?;
    Ok((manifest.parts().into_iter())
        .flat_map(|(generation, checksums)| {
            checks::verify(&crate::store::generation_dir(dir, generation), checksums)
        })
        .collect())
}

/// True when `err` may come from a concurrent run that replaced the
/// generation being opened (its files vanished or changed under us): the
/// only failure worth opening again.
fn a_race_may_explain(err: &anyhow::Error) -> bool {
    matches!(IndexError::find(err), Some(IndexError::Damaged { .. }))
        || err.chain().any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        })
}

/// The manifest of the index in `dir`, which must exist and be of a
/// format this build searches, its root the folder the index serves now
/// ([`moved_root`]).
fn read_manifest(dir: &Path) -> Result<Manifest> {
    let mut manifest = Manifest::read(dir)?.ok_or_else(|| IndexError::NoIndex {
        dir: dir.to_path_buf(),
    })?;
    if manifest.format_version < manifest::SPARSE_FORMAT_VERSION {
        bail!(IndexError::Unsupported {
            path: dir.join(MANIFEST_FILE),
            found: manifest.format_version,
            oldest: manifest::SPARSE_FORMAT_VERSION,
            newest: manifest::FORMAT_VERSION,
        });
    }
    if let Some(root) = moved_root(dir, &manifest) {
        manifest.root = root.display().to_string();
    }
    Ok(manifest)
}

/// The folder an index copied or moved with the folder it indexes serves:
/// `cp -a notes notes-copy` copies `notes/.memidx` too, and the copy's
/// searches, `get`, `remember`, `reindex` and watching must act on
/// `notes-copy`, not on `notes`. `None` when the index is where it was
/// (inside its recorded root) or was kept outside it.
///
/// The manifest says where the index lay in its root (`index_in_root`,
/// format 23); for an older one, an index folder named `.memidx` outside
/// its recorded root is taken to have lain at `.memidx` when that root
/// still has an index of its own there (this is a copy) or is gone (the
/// folder moved) — an index kept elsewhere by `--index` has neither.
fn moved_root(dir: &Path, manifest: &Manifest) -> Option<PathBuf> {
    let recorded = Path::new(&manifest.root);
    let index = std::fs::canonicalize(dir).ok()?;
    if index.starts_with(recorded) {
        return None;
    }
    let inside = match &manifest.index_in_root {
        Some(inside) => PathBuf::from(inside),
        None => {
            let own = recorded.join(crate::store::INDEX_DIR_NAME);
            let copied = std::fs::canonicalize(&own).is_ok_and(|own| own != index);
            let named = index.file_name() == Some(crate::store::INDEX_DIR_NAME.as_ref());
            let a_copy_or_moved = named && (copied || !recorded.exists());
            if !a_copy_or_moved {
                return None;
            }
            PathBuf::from(crate::store::INDEX_DIR_NAME)
        }
    };
    if !index.ends_with(&inside) {
        return None;
    }
    let mut root = index;
    for _ in inside.components() {
        root.pop();
    }
    Some(root)
}

/// Stores `fusion` (and the graph list's `graph_weight`, when the index has
/// a graph) as the defaults of the index in `dir`: under the writer lock,
/// replacing `meta.json` atomically (`eval --sweep --save`). Re-indexing
/// keeps them until another save or a switch of model.
pub fn save_fusion_defaults(dir: &Path, fusion: FusionDefaults, graph_weight: f64) -> Result<()> {
    let _lock = IndexLock::acquire(&dir.join(LOCK_FILE))?;
    let mut manifest = read_manifest(dir)?;
    manifest.fusion = fusion;
    manifest.fusion_source = FusionSource::Saved;
    if let Some(graph) = &mut manifest.graph {
        graph.weight = graph_weight;
    }
    manifest.write(dir)
}

/// The embedder that built the index described by `manifest` (for its
/// queries, and for `status --verify`'s count of chunks it read in part),
/// or an error saying how to rebuild when it is not available or has
/// changed.
pub fn built_embedder(manifest: &Manifest) -> Result<&'static dyn Embedder> {
    let built_with = &manifest.embedder;
    if let Some(endpoint) = &manifest.model_endpoint {
        // Its first query carries the probes that tell the model.
        return crate::embed::load_recorded_endpoint(endpoint, built_with);
    }
    let rebuild = |dir: &str| match dir {
        "" => "memidx index --full DIR".to_string(),
        dir => format!("memidx index --full --model {dir} DIR"),
    };
    let dir = manifest.model_dir.as_deref();
    let recorded = manifest
        .model_files
        .as_ref()
        .map(|files| crate::embed::Recorded {
            files,
            fingerprint: &built_with.fingerprint,
        });
    let embedder = crate::embed::load_as_recorded(dir.map(Path::new), recorded).context(
        "cannot load the model the index was built with; index again with its new folder \
         ('memidx index --model MODEL_DIR DIR') or with the bundled model \
         ('memidx index --bundled-model DIR')",
    )?;
    ensure!(
        built_with == embedder.info(),
        "the index was embedded with '{}' ({}), but {} is now '{}' ({}); rebuild it with '{}'",
        built_with.id,
        built_with.fingerprint,
        dir.map_or("this memidx's bundled model".to_string(), |d| format!(
            "the model in {d}"
        )),
        embedder.info().id,
        embedder.info().fingerprint,
        rebuild(dir.unwrap_or_default())
    );
    Ok(embedder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_an_index_is_no_index_and_an_unknown_format_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let Err(err) = Index::open(dir.path()) else {
            panic!("opened an empty folder")
        };
        assert!(matches!(
            IndexError::find(&err),
            Some(IndexError::NoIndex { .. })
        ));
        std::fs::write(
            dir.path().join(crate::store::MANIFEST_FILE),
            r#"{"format_version": 999}"#,
        )
        .unwrap();
        let Err(err) = Index::open(dir.path()) else {
            panic!("opened a future format")
        };
        assert!(matches!(
            IndexError::find(&err),
            Some(IndexError::Unsupported { found: 999, .. })
        ));
        assert!(!a_race_may_explain(&err), "a race cannot explain a format");
    }
}
