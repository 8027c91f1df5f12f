//! The previous index and change detection: what the last run left, which
//! walked files are unchanged, and whether anything must be written at all.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use rayon::prelude::*;

use super::IndexOptions;
use crate::corpus::read::read_walked;
use crate::corpus::walk::{SourceFile, Walk, stated};
use crate::embed::Embedder;
use crate::embed::endpoint::EndpointRecord;
use crate::fusion::{FusionDefaults, FusionSource};
use crate::index::manifest::{
    CHUNKS_FORMAT_VERSION, Manifest, SPARSE_FORMAT_VERSION, SkippedFile, skipped_stamps,
};
use crate::lists::dense::cells::CELLS_FILE;
use crate::lists::dense::codes::CODES_FILE;
use crate::lists::dense::{self, KEYS_FILE};
use crate::lists::graph;
use crate::lists::graph::GRAPH_FILE;
use crate::lists::vector_cache::{self, PartVectors, ReusableVectors};
use crate::progress::Progress;
use crate::store::checks;
use crate::store::generation::{
    ChunkOrd, DATES_FILE, FILES_DIR, FileEntry, FileStamp, PATH_INDEX_FILE, PATHS_FILE, SPARSE_DIR,
    STAMPS_FILE,
};
use crate::store::metadata_index::METADATA_INDEX_FILE;
use crate::store::parts::{DELTA_FILE, Parts};
use crate::store::texts::TEXT_INDEX_FILE;

/// The previous index, when its chunks can be reused.
pub(super) struct Previous {
    pub(super) manifest: Option<Manifest>,
    /// Its parts (base and delta), read as one table: file indices and
    /// chunk ordinals below are in their numbering.
    pub(super) parts: Option<Parts>,
    /// Vectors this run's model made before, by key: the previous
    /// parts', or the model's cache.
    pub(super) vectors: Option<ReusableVectors>,
    /// The previous files whose entries the new table took over
    /// ([`Previous::take_entry`]): each is taken once. (Entries are looked
    /// up by path in the parts' sorted file tables, never all decoded.)
    taken: HashSet<usize>,
    /// What a run needs to carry the previous generation's chunks over
    /// instead of rewriting them; `None` when it cannot.
    pub(super) carried: Option<Carried>,
}

/// How much of the previous index a run re-reads against its checks
/// before it uses it ([`check_carried_files`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verify {
    /// Every file a run may carry over: a run that walks, and may write the
    /// index whole from the base's chunks.
    Carried,
    /// What a run appending a delta reads unchecked: the base's files
    /// without read checks, and the earlier deltas whole (whose files it
    /// writes again). The base's tables, texts and vectors are checked
    /// block by block as they are read, like a search's; so a run told one
    /// path costs what it reads, not the index's size.
    Appended,
}

/// What a run needs of the previous index to carry its base's chunks
/// over, and to reuse any previous chunk's vector.
pub(super) struct Carried {
    /// Per previous part, per chunk of it, the key of its vector
    /// ([`dense::vector_key`]).
    keys: Vec<Arc<[u64]>>,
    /// Uids the base's sparse list has given out (live and dead).
    pub(super) uid_count: u32,
    /// Length of the base's text stream (live texts and garbage).
    text_len: u64,
}

impl Carried {
    /// Reads them from the previous parts `old`, described by `manifest`,
    /// whose vector keys are `keys`.
    fn read(old: &Parts, manifest: &Manifest, keys: Vec<Arc<[u64]>>) -> Result<Self> {
        ensure!(
            (old.parts().iter().zip(&keys))
                .all(|(part, keys)| part.generation().len() == keys.len()),
            "the previous index's vector keys do not match its chunks"
        );
        Ok(Self {
            keys,
            uid_count: u32::try_from(manifest.sparse.uids)?,
            text_len: old.base().text_stream_len()?,
        })
    }

    /// The vector key of the previous index's chunk `chunk` (of `old`, the
    /// parts these were read from).
    pub(super) fn key(&self, old: &Parts, chunk: ChunkOrd) -> Result<u64> {
        let (part, local) = old.locate(chunk)?;
        (self
            .keys
            .get(part)
            .and_then(|keys| keys.get(local as usize))
            .copied())
        .context("a carried chunk has no vector key")
    }
}

impl Previous {
    /// Loads the previous manifest and generation; problems become warnings
    /// and mean a full rebuild, never a failed run.
    pub(super) fn load(
        options: &IndexOptions,
        embedder: &'static dyn Embedder,
        verify: Verify,
        warnings: &mut Vec<String>,
    ) -> Self {
        let mut previous = Self {
            manifest: None,
            parts: None,
            vectors: None,
            taken: HashSet::new(),
            carried: None,
        };
        let manifest = match Manifest::read(&options.index_dir) {
            Ok(manifest) => manifest,
            Err(err) => {
                warnings.push(format!(
                    "previous index unusable, rebuilding it whole: {err:#}"
                ));
                return previous;
            }
        };
        let Some(manifest) = manifest else {
            return previous;
        };
        if options.full {
            previous.manifest = Some(manifest);
            return previous;
        }
        // The keys are read whole, and checked as they are.
        let opened = Parts::open(&options.index_dir, &manifest.parts()).and_then(|parts| {
            check_carried_files(&parts, &manifest, verify)?;
            let keys = read_keys(&parts, &manifest)?;
            Ok((parts, keys))
        });
        let (parts, keys) = match opened {
            Ok((parts, keys)) => (Some(parts), keys),
            Err(err) => {
                warnings.push(format!(
                    "previous index unusable, rebuilding it whole: {err:#}"
                ));
                (None, Vec::new())
            }
        };
        // Rows are checked as they are read where the files were not.
        let vectors: Vec<PartVectors> = (parts.iter())
            .flat_map(Parts::parts)
            .zip(manifest.parts())
            .zip(&keys)
            .map(|((part, (_, checks)), keys)| PartVectors {
                dir: part.generation().dir(),
                keys: keys.clone(),
                checks: (verify == Verify::Appended).then_some(checks),
            })
            .collect();
        previous.vectors = vector_cache::reusable(
            &options.index_dir,
            &vectors,
            Some(&manifest.embedder),
            embedder.info(),
            warnings,
        );
        // Chunks are reused only when they would be cut and tokenized the same way.
        let same_chunks = manifest.tokenizer == options.analyzer
            && manifest.sparse_fields == options.sparse_fields
            && manifest.file_list == options.file_list
            && manifest.chunker == options.chunker
            && manifest.format_version >= CHUNKS_FORMAT_VERSION;
        if let Some(parts) = parts.filter(|_| same_chunks) {
            previous.carried = Carried::read(&parts, &manifest, keys).ok();
            previous.parts = Some(parts);
        }
        previous.manifest = Some(manifest);
        previous
    }

    /// What the last run's walk found, for a run told the changed paths
    /// ([`walk_told`](crate::corpus::walk::walk_told)): the files the
    /// previous generation holds, with their stamps; the files it skipped,
    /// stated anew (a skipped file is read again, as after a walk); and
    /// the entries the walk could not read. `None` when the previous index
    /// cannot tell: none, unusable, rebuilt whole, or walked otherwise.
    pub(super) fn known_walk(&self, options: &IndexOptions) -> Option<Walk> {
        let manifest = self.manifest.as_ref()?;
        if options.full || self.parts.is_none() || manifest.walk != options.walk {
            return None;
        }
        let mut known = Walk::default();
        let live = self.parts.as_ref()?.live_files().ok()?;
        for (_, entry) in live {
            known.files.push(recorded_file(entry));
        }
        for skip in &manifest.skipped {
            match skip.stamp {
                None => known.skipped.push(skip.skipped()),
                Some(_) => known.files.extend(stated(&options.root, &skip.path)),
            }
        }
        known.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        Some(known)
    }

    /// The previous manifest when the walk found exactly the previous files,
    /// all with the same content, and the same skipped files, unchanged,
    /// under the same settings: the index is current and a new generation
    /// would be a copy. (A file only touched is not current: the new
    /// generation records its new stamp, its chunks carried over.)
    /// `unwalked` live files are known unchanged without being in `walked`
    /// (a told run's, [`super::told`]).
    pub(super) fn current(
        &self,
        options: &IndexOptions,
        embedder: &dyn Embedder,
        walked: &Walk,
        states: &[FileState],
        unwalked: usize,
    ) -> Option<&Manifest> {
        let manifest = self.manifest.as_ref()?;
        let current = self.parts.is_some()
            && !(options.compact && manifest.delta.is_some())
            && manifest.format_version >= SPARSE_FORMAT_VERSION
            && self.vectors.is_some()
            && manifest.embedder == *embedder.info()
            && EndpointRecord::same_place(manifest.model_endpoint.as_ref(), embedder.endpoint())
            && manifest.walk == options.walk
            && match manifest.graph {
                Some(g) => {
                    options.builds_graph(Some(manifest))
                        && g.format_version == graph::tables::FORMAT_VERSION
                        && g.options.analyzer == options.analyzer
                }
                None => !options.builds_graph(Some(manifest)),
            }
            && self.dense_index_current(options, manifest)
            && FusionChoice::for_run(Some(manifest), embedder).recorded_in(manifest)
            && same_skips(&manifest.skipped, walked, states)
            && states
                .iter()
                .filter(|s| matches!(s, FileState::Unchanged { touched: false, .. }))
                .count()
                + unwalked
                == self.parts.as_ref().map_or(0, Parts::live_file_count);
        current.then_some(manifest)
    }

    /// Whether the previous generation's dense index (sign codes) is what
    /// this run's setting asks for: the same setting, and codes exactly
    /// when the setting writes them at its count of chunks (an index of an
    /// older format, which had none or kept them in a file this build does
    /// not read, gets them once it qualifies).
    fn dense_index_current(&self, options: &IndexOptions, manifest: &Manifest) -> bool {
        let Some(parts) = &self.parts else {
            return false;
        };
        // The codes are the base's (a delta's rows are scanned whole).
        let rows = parts.base().len();
        let setting = options.dense_index_setting(Some(manifest));
        setting == manifest.dense_index.setting
            && setting.builds(rows) == manifest.sign_code_rows().is_some()
    }

    /// Whether this run carries the previous base's chunks over (their
    /// texts, sparse documents and uids) rather than rewriting everything:
    /// yes, unless there is nothing to carry or carrying would leave more
    /// garbage (texts and sparse documents of removed or changed files'
    /// chunks) than the data carried, or the previous sparse list is of a
    /// format this build no longer reads ([`SPARSE_FORMAT_VERSION`]). A
    /// file the previous delta holds is written anew either way.
    pub(super) fn carry_for(&self, states: &[FileState]) -> bool {
        let (Some(old), Some(carried), Some(manifest)) =
            (&self.parts, &self.carried, &self.manifest)
        else {
            return false;
        };
        if manifest.format_version < SPARSE_FORMAT_VERSION {
            return false;
        }
        let (mut chunks, mut bytes) = (0u64, 0u64);
        for state in states {
            if let FileState::Unchanged { previous_file, .. } = state
                && self.in_base(*previous_file)
            {
                for ord in old
                    .chunks_of_file(*previous_file as u32)
                    .unwrap_or_default()
                {
                    chunks += 1;
                    bytes += old.text_len(ord).unwrap_or(0);
                }
            }
        }
        let dead_chunks = u64::from(carried.uid_count).saturating_sub(chunks);
        let dead_bytes = carried.text_len.saturating_sub(bytes);
        dead_chunks <= chunks && dead_bytes <= bytes
    }

    /// Whether the previous file `index` is one of the base's (rather than
    /// the delta's).
    pub(super) fn in_base(&self, index: usize) -> bool {
        self.parts
            .as_ref()
            .is_some_and(|parts| index < parts.base().file_count())
    }

    /// The previous entry of live file `index`, which the new table takes
    /// over (each file is taken once).
    pub(super) fn take_entry(&mut self, index: usize) -> Result<FileEntry> {
        let parts = (self.parts.as_ref())
            .filter(|parts| parts.file_is_live(index as u32) && !self.taken.contains(&index))
            .context("a file was carried over twice, or was not in the previous index")?;
        let entry = parts.file(index as u32)?;
        self.taken.insert(index);
        Ok(entry)
    }
}

/// True when this run would skip exactly what the previous one did: the
/// walk's skips are the recorded ones, and every walked file that is not in
/// the index is a recorded skip with the same size and modification time
/// (so it would be skipped again, for the same reason).
fn same_skips(recorded: &[SkippedFile], walked: &Walk, states: &[FileState]) -> bool {
    // Compared sorted: an index written before the walk sorted its skips
    // recorded them in walk order.
    let mut walk_skips: Vec<(&str, &str)> = walked
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    let mut recorded_walk_skips: Vec<(&str, &str)> = recorded
        .iter()
        .filter(|s| s.stamp.is_none())
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    walk_skips.sort_unstable();
    recorded_walk_skips.sort_unstable();
    let file_skips = skipped_stamps(recorded);
    let new_files = walked
        .files
        .iter()
        .zip(states)
        .filter(|(_, state)| matches!(state, FileState::Changed));
    let mut still_skipped = 0;
    for (file, _) in new_files {
        if file_skips.get(file.rel_path.as_str()) != Some(&(file.size, file.mtime_ns)) {
            return false;
        }
        still_skipped += 1;
    }
    walk_skips == recorded_walk_skips && still_skipped == file_skips.len()
}

/// A file as the previous index recorded it (`entry`): as a walk would
/// list it with the stamp it had then.
pub(super) fn recorded_file(entry: FileEntry) -> SourceFile {
    SourceFile {
        rel_path: entry.path,
        size: entry.stamp.size,
        mtime_ns: entry.stamp.mtime_ns,
        identity: (0, 0),
    }
}

/// What the first pass finds about one walked file.
#[derive(Clone)]
pub(super) enum FileState {
    /// Same content as in the previous index (its new stamp is the walked
    /// file's: a state per walked file stays small at a million files).
    Unchanged {
        previous_file: usize,
        /// Only the content hash matched (the file was touched, or its
        /// size and time otherwise moved): its new stamp must be recorded,
        /// or every later status would call it changed.
        touched: bool,
    },
    /// New or changed: to be read and chunked.
    Changed,
}

/// Walked files looked up in the previous index together: one merge with
/// its sorted file tables per this many ([`Parts::live_file_indices`]).
const CHECK_BATCH: usize = 4096;

/// Compares every walked file (sorted by path) with the previous index
/// ([`check`]), in parallel, reporting each to `progress`.
pub(super) fn check_all(
    files: &[SourceFile],
    options: &IndexOptions,
    previous: &Previous,
    progress: &dyn Progress,
) -> Vec<FileState> {
    progress.stage("checking", files.len(), "files");
    let states = files
        .par_chunks(CHECK_BATCH)
        .flat_map_iter(|files| {
            let paths: Vec<&str> = files.iter().map(|f| f.rel_path.as_str()).collect();
            // A lookup that fails (damage) finds nothing: the file is read anew.
            let found = (previous.parts.as_ref())
                .and_then(|parts| parts.live_file_indices(&paths).ok())
                .unwrap_or_else(|| vec![None; files.len()]);
            let states: Vec<FileState> = (files.iter().zip(found))
                .map(|(file, found)| check(file, found.map(|f| f as usize), options, previous))
                .collect();
            progress.advance(files.len());
            states
        })
        .collect();
    progress.finish();
    states
}

/// Compares one file with the previous index, where it is the live file
/// `found`, if any: by size and modification time, and when those differ,
/// by content hash (a file only touched is unchanged). Reads nothing for a
/// new file.
fn check(
    file: &SourceFile,
    found: Option<usize>,
    options: &IndexOptions,
    previous: &Previous,
) -> FileState {
    let Some((index, parts)) = found.zip(previous.parts.as_ref()) else {
        return FileState::Changed;
    };
    // The quick check reads the stamps column alone, not the entry.
    let Ok(recorded) = parts.file_size_and_time(index as u32) else {
        return FileState::Changed;
    };
    if recorded == (file.size, file.mtime_ns) {
        return FileState::Unchanged {
            previous_file: index,
            touched: false,
        };
    }
    if file.size > options.max_file_size {
        return FileState::Changed;
    }
    // (Bytes of another length than the walk saw: the file changed since,
    // and its walked stamp, which a reused file records, is not theirs.)
    let bytes = match read_walked(&options.root, file, options.max_file_size) {
        Ok(bytes) if bytes.len() as u64 == file.size => bytes,
        _ => return FileState::Changed,
    };
    let Ok(entry) = parts.file(index as u32) else {
        return FileState::Changed;
    };
    match entry.stamp.hash == stamp_of(file, &bytes).hash {
        true => FileState::Unchanged {
            previous_file: index,
            touched: true,
        },
        false => FileState::Changed,
    }
}

/// The stamp of `file` whose content is `bytes`.
pub(super) fn stamp_of(file: &SourceFile, bytes: &[u8]) -> FileStamp {
    FileStamp {
        size: bytes.len() as u64,
        mtime_ns: file.mtime_ns,
        hash: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes)),
    }
}

/// Files of a generation that a run writes anew from the table and the
/// vectors, never carrying their bytes over: damage in them cannot spread
/// into the next generation, so a run need not re-read them.
const REBUILT_FILES: [&str; 9] = [
    METADATA_INDEX_FILE,
    DATES_FILE,
    PATH_INDEX_FILE,
    PATHS_FILE,
    STAMPS_FILE,
    CODES_FILE,
    CELLS_FILE,
    GRAPH_FILE,
    DELTA_FILE,
];

/// Files of a base that a run reads without checking them as it reads:
/// a delta's run re-reads them whole ([`Verify::Appended`]).
const UNCHECKED_READS: [&str; 1] = [TEXT_INDEX_FILE];

/// Every part's vector keys, read whole and checked as they are read
/// (so [`check_carried_files`] leaves them out).
fn read_keys(parts: &Parts, manifest: &Manifest) -> Result<Vec<Arc<[u64]>>> {
    (parts.parts().iter().zip(manifest.parts()))
        .map(|(part, (_, checks))| {
            Ok(dense::read_keys_checked(part.generation().dir(), Some(checks))?.into())
        })
        .collect()
}

/// Re-reads every file of the previous parts that a run may carry over
/// (all but the sparse folders, whose segments are linked with the checks
/// they had, so damage in them stays visible to `status --verify`, and
/// whose other files are rebuilt, the [`REBUILT_FILES`], and the vector
/// keys, checked as they are read; of the base under [`Verify::Appended`],
/// only the [`UNCHECKED_READS`]) and fails on
/// the first whose CRC-32 no longer matches: carried data is written with
/// new checksums, so damage must be caught before, not laundered into a
/// generation that looks intact.
fn check_carried_files(parts: &Parts, manifest: &Manifest, verify: Verify) -> Result<()> {
    let in_sparse = |name: &str| {
        [SPARSE_DIR, FILES_DIR].iter().any(|dir| {
            name.strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    for (at, (part, (_, checksums))) in parts.parts().iter().zip(manifest.parts()).enumerate() {
        let whole = at > 0 || verify == Verify::Carried;
        let problems =
            checks::verify_matching(part.generation().dir(), checksums, |name| match whole {
                true => !in_sparse(name) && !REBUILT_FILES.contains(&name) && name != KEYS_FILE,
                false => UNCHECKED_READS.contains(&name),
            });
        if let Some(problem) = problems.into_iter().next() {
            bail!(problem);
        }
    }
    Ok(())
}

/// The fusion defaults a run records, with their source and the graph
/// list's weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct FusionChoice {
    pub(super) defaults: FusionDefaults,
    pub(super) source: FusionSource,
    pub(super) graph_weight: f64,
}

impl FusionChoice {
    /// What `eval --save` stored in the `previous` index, while the model is
    /// the same; else this build's defaults for `embedder`.
    pub(super) fn for_run(previous: Option<&Manifest>, embedder: &dyn Embedder) -> Self {
        match previous {
            Some(saved)
                if saved.fusion_source == FusionSource::Saved
                    && saved.embedder == *embedder.info() =>
            {
                Self {
                    defaults: saved.fusion,
                    source: FusionSource::Saved,
                    graph_weight: saved.graph.map_or(graph::DEFAULT_WEIGHT, |g| g.weight),
                }
            }
            _ => Self {
                defaults: FusionDefaults::for_model(embedder.kind()),
                source: FusionSource::Builtin,
                graph_weight: graph::DEFAULT_WEIGHT,
            },
        }
    }

    /// Whether `manifest` already records this choice.
    pub(super) fn recorded_in(&self, manifest: &Manifest) -> bool {
        manifest.fusion == self.defaults
            && manifest.fusion_source == self.source
            && manifest.graph.is_none_or(|g| g.weight == self.graph_weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Skipped;

    #[test]
    fn skips_recorded_in_another_order_are_the_same_skips() {
        let skip = |path: &str| Skipped {
            path: path.into(),
            reason: "hidden".into(),
        };
        let recorded = |path: &str| SkippedFile {
            path: path.into(),
            reason: "hidden".into(),
            stamp: None,
        };
        // A walk sorts "notes-old/…" before "notes/…"; an index written
        // before the walk sorted its skips recorded them in walk order.
        let walked = Walk {
            files: Vec::new(),
            skipped: vec![skip("notes-old/.a.md"), skip("notes/.b.md")],
        };
        let in_walk_order = [recorded("notes/.b.md"), recorded("notes-old/.a.md")];
        assert!(same_skips(&in_walk_order, &walked, &[]));
        let other = [recorded("notes/.b.md"), recorded("notes-old/.c.md")];
        assert!(!same_skips(&other, &walked, &[]));
    }
}
