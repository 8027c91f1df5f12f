//! The indexing pipeline: walk → read → chunk → write a new generation.
//!
//! Files whose size and modification time (or, failing that, content hash)
//! match the previous index keep their chunks; the others are read, checked
//! (size bound, binary, UTF-8) and chunked in parallel with `rayon`. A bad
//! file becomes a [`Skipped`] warning and never stops the run. The new
//! generation is written beside the old one; the manifest switches to it
//! atomically; the old generation is removed last.
//!
//! A re-index *carries* the unchanged files' chunks over rather than
//! rewriting them: their texts stay in the copied text store (new texts
//! are appended), their sparse documents stay in the hard-linked tantivy
//! segments (new ones are added, removed ones marked dead through the uid
//! map), and their vectors are copied by key. Only new and changed files
//! are read, chunked, tokenized and embedded, so a one-file edit costs
//! about as much as a walk of the folder. When carrying over would leave
//! more dead data than live (many files changed or removed), the run
//! writes everything anew instead, which also drops the garbage.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use rayon::prelude::*;

use crate::corpus::Skipped;
use crate::corpus::chunk::{ChunkOptions, parse_file};
use crate::corpus::markdown::Metadata;
use crate::corpus::read::read_walked;
use crate::corpus::walk::{SourceFile, Walk, WalkOptions, walk};
use crate::embed::Embedder;
use crate::fusion::FusionDefaults;
use crate::index::manifest::{Counts, FORMAT_VERSION, GraphManifest, Manifest, SkippedFile};
use crate::lists::dense::{self, VectorWriter};
use crate::lists::graph::{self, EntityCache, GRAPH_FILE, GraphOptions};
use crate::lists::sparse::{self, Bm25Params, SparseWriter};
use crate::lists::vector_cache::{self, ReusableVectors};
use crate::progress::Progress;
use crate::store::checks::Checksums;
use crate::store::generation::{
    self, ChunkOrd, ChunkRecord, ChunkTable, FileEntry, FileStamp, Generation, SPARSE_DIR,
    TextStore, TextWriter, searchable_text,
};
use crate::store::lock::IndexLock;
use crate::store::{self, INDEX_DIR_NAME, LOCK_FILE, atomic, checks, ownership};
use crate::text::tokenize::Analyzer;

/// Settings of one indexing run.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexOptions {
    /// The folder to index.
    pub root: PathBuf,
    /// Where the index lives (normally `root/.memidx`).
    pub index_dir: PathBuf,
    /// Files larger than this many bytes are skipped.
    pub max_file_size: u64,
    /// Re-read and re-chunk every file, ignoring the previous index.
    pub full: bool,
    /// Chunker settings.
    pub chunker: ChunkOptions,
    /// Tokenizer settings for the sparse list.
    pub analyzer: Analyzer,
    /// Ignore rules and globs for the walk.
    pub walk: WalkOptions,
    /// The transformer model folder (`--model`), or `None` for the bundled model.
    pub model_dir: Option<PathBuf>,
    /// Build the entity graph (`--graph`, `--no-graph`); `None` keeps what
    /// the previous index did (no graph for a new index).
    pub graph: Option<bool>,
}

impl IndexOptions {
    /// Default settings for indexing `root` into `root/.memidx`.
    pub fn new(root: PathBuf) -> Self {
        Self {
            index_dir: root.join(INDEX_DIR_NAME),
            root,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            full: false,
            chunker: ChunkOptions::default(),
            analyzer: Analyzer::default(),
            walk: WalkOptions::default(),
            model_dir: None,
            graph: None,
        }
    }

    /// Whether this run builds the graph, given the previous manifest.
    fn builds_graph(&self, previous: Option<&Manifest>) -> bool {
        self.graph
            .unwrap_or_else(|| previous.is_some_and(|m| m.graph.is_some()))
    }
}

/// Default bound on the size of one markdown file (10 MiB).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// What an indexing run did.
#[derive(Debug, Clone)]
pub struct IndexReport {
    /// The index folder written.
    pub index_dir: PathBuf,
    /// The generation now live.
    pub generation: u64,
    /// Files indexed (fresh + reused).
    pub files: usize,
    /// Files whose chunks were kept from the previous index.
    pub reused: usize,
    /// Chunks in the new index.
    pub chunks: usize,
    /// Files skipped, with reasons.
    pub skipped: Vec<Skipped>,
    /// Non-fatal problems in indexed files (e.g. broken front matter).
    pub warnings: Vec<String>,
    /// Chunks embedded in this run (the rest reused their vectors).
    pub embedded: usize,
    /// Time spent embedding.
    pub embed_time: Duration,
    /// Time spent building, checking and encoding the graph (alongside the
    /// other lists), when one was built.
    pub graph_time: Option<Duration>,
    /// True when nothing changed, so no new generation was written.
    pub up_to_date: bool,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

/// Indexes `options.root` into `options.index_dir`, embedding chunks with
/// `embedder` and reporting each stage to `progress`.
pub fn run(
    options: &IndexOptions,
    embedder: &'static dyn Embedder,
    progress: &dyn Progress,
) -> Result<IndexReport> {
    let started = Instant::now();
    let root = &options.root;
    if !root.is_dir() {
        bail!(
            "'{}' is not a folder; give the folder of markdown to index",
            root.display()
        );
    }
    refuse_index_over_root(root, &options.index_dir)?;
    ownership::claim(&options.index_dir)?;
    let lock = IndexLock::acquire(&options.index_dir.join(LOCK_FILE))?;
    let mut warnings = Vec::new();
    let previous = Previous::load(options, embedder, &mut warnings);
    remove_leftovers(
        &options.index_dir,
        previous.manifest.as_ref().map(|m| m.generation),
    );

    let walked = walk(root, &options.walk)?;
    if walked.files.is_empty() {
        warnings.push(format!(
            "no markdown files (.md, .markdown) found under {}",
            root.display()
        ));
    }
    progress.stage("checking", walked.files.len(), "files");
    let states: Vec<FileState> = walked
        .files
        .par_iter()
        .map(|file| {
            let state = check(file, options, &previous);
            progress.advance(1);
            state
        })
        .collect();
    progress.finish();

    if previous.is_current(options, embedder, &walked, &states) {
        let manifest = previous
            .manifest
            .as_ref()
            .context("a current index has a manifest")?;
        return Ok(IndexReport {
            index_dir: options.index_dir.clone(),
            generation: manifest.generation,
            files: manifest.counts.files,
            reused: manifest.counts.files,
            chunks: manifest.counts.chunks,
            // Skipped again, for the same reasons: warn again.
            skipped: manifest
                .skipped
                .iter()
                .map(|s| Skipped {
                    path: s.path.clone(),
                    reason: s.reason.clone(),
                })
                .collect(),
            warnings,
            embedded: 0,
            embed_time: Duration::ZERO,
            graph_time: None,
            up_to_date: true,
            elapsed: started.elapsed(),
        });
    }
    let mut skipped = walked.skipped.clone();
    let carry = previous.carry_for(&states);
    let generation = previous.manifest.as_ref().map_or(1, |m| m.generation + 1);
    let gen_dir = store::generation_dir(&options.index_dir, generation);
    if gen_dir.exists() {
        fs::remove_dir_all(&gen_dir)
            .with_context(|| format!("cannot remove leftover {}", gen_dir.display()))?;
    }
    fs::create_dir_all(&gen_dir).with_context(|| format!("cannot create {}", gen_dir.display()))?;
    let mut partial = PartialGeneration(Some(&gen_dir));
    let base_dir = previous
        .generation
        .as_ref()
        .map(Generation::dir)
        .filter(|_| carry);
    let mut built = Built::new(previous.carried.as_ref().filter(|_| carry));
    let mut texts = TextWriter::create(&gen_dir, base_dir)?;
    let mut sparse = SparseWriter::create(
        &gen_dir.join(SPARSE_DIR),
        options.analyzer,
        base_dir.map(|d| d.join(SPARSE_DIR)).as_deref(),
    )?;
    let mut vectors = VectorWriter::create(&gen_dir)?;
    let (mut embedded, mut embed_time) = (0, Duration::ZERO);

    // Files stream through in batches: read and chunk (in parallel), then
    // the sparse list tokenizes and adds them while the model embeds.
    // Only one batch's texts are in memory at a time.
    progress.stage("indexing", walked.files.len(), "files");
    for (files, states) in walked
        .files
        .chunks(FILE_BATCH)
        .zip(states.chunks(FILE_BATCH))
    {
        let outcomes: Vec<FileOutcome> = files
            .par_iter()
            .zip(states)
            .map(|(file, state)| examine(file, options, state.clone()))
            .collect();
        let first = built.table.chunks.len();
        let sources = built.assemble(
            outcomes,
            &previous,
            carry,
            &mut texts,
            &mut skipped,
            &mut warnings,
        )?;
        let chunks = &built.table.chunks[first..];
        let docs: Vec<(u32, &str)> = chunks
            .iter()
            .zip(&sources)
            .filter_map(|(chunk, source)| Some((chunk.uid, source.searchable.as_deref()?)))
            .collect();
        let (added, batch) = std::thread::scope(|scope| {
            let added = scope.spawn(|| sparse.add(&docs));
            let embed_started = Instant::now();
            let batch = embed_batch(chunks, &sources, &previous, embedder)
                .map(|b| (b, embed_started.elapsed()));
            let added = added
                .join()
                .unwrap_or_else(|_| bail!("the sparse index builder panicked"));
            (added, batch)
        });
        added?;
        let (batch, elapsed) = batch?;
        embed_time += elapsed;
        embedded += batch.embedded;
        vectors.append(&batch.vectors, &batch.keys)?;
        for (offset, chunk) in built.table.chunks[first..].iter_mut().enumerate() {
            chunk.has_vector = batch.vectors.has_vector(offset);
        }
        progress.advance(files.len());
        progress.note(&format!("{embedded} chunks embedded"));
    }
    progress.finish();
    texts.finish()?;
    vectors.finish()?;

    // The graph is built over the whole table while tantivy commits.
    let graph_options = GraphOptions {
        analyzer: options.analyzer,
        ..GraphOptions::default()
    };
    let build_graph = options.builds_graph(previous.manifest.as_ref());
    let old_dir = previous.generation.as_ref().map(Generation::dir);
    let (sparse_built, graph_built) = std::thread::scope(|scope| {
        let graph = scope.spawn(|| {
            build_graph
                .then(|| write_graph(&gen_dir, &built, old_dir, graph_options))
                .transpose()
        });
        let sparse = sparse.finish(&built.ords);
        let graph = graph
            .join()
            .unwrap_or_else(|_| bail!("the graph builder panicked"));
        (sparse, graph)
    });
    let sparse_built = sparse_built?;
    let graph_built = graph_built?;
    let graph_time = graph_built.as_ref().map(|(_, t)| *t);
    generation::write_table(&gen_dir, &built.table)?;
    atomic::sync_tree(&gen_dir)?;
    // Segment files linked from the previous generation keep its checks.
    let linked: Checksums = match &previous.manifest {
        Some(old) => sparse_built
            .linked
            .iter()
            .map(|name| format!("{SPARSE_DIR}/{name}"))
            .filter_map(|name| Some((name.clone(), *old.checksums.get(&name)?)))
            .collect(),
        None => Checksums::new(),
    };
    let checksums = checks::compute(&gen_dir, &linked)?;

    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        generation,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        created_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        root: fs::canonicalize(root)
            .unwrap_or_else(|_| root.clone())
            .display()
            .to_string(),
        walk: options.walk.clone(),
        tokenizer: options.analyzer,
        bm25: Bm25Params::default(),
        chunker: options.chunker,
        embedder: embedder.info().clone(),
        model_dir: options.model_dir.as_ref().map(|d| {
            fs::canonicalize(d)
                .unwrap_or_else(|_| d.clone())
                .display()
                .to_string()
        }),
        fusion: FusionDefaults::for_model(embedder.kind()),
        sparse: sparse_built.stats,
        graph: graph_built.map(|(graph_manifest, _)| GraphManifest {
            // A weight chosen with `eval --save` survives re-indexing.
            weight: previous
                .manifest
                .as_ref()
                .and_then(|m| m.graph)
                .map_or(graph::DEFAULT_WEIGHT, |g| g.weight),
            ..graph_manifest
        }),
        counts: Counts {
            files: built.table.files.len(),
            chunks: built.table.chunks.len(),
            skipped: skipped.len(),
        },
        skipped: skipped_files(&skipped, &walked.files),
        checksums,
    };
    lock.still_held()?;
    if let Err(err) = manifest.write(&options.index_dir) {
        if !names_generation(&options.index_dir, generation) {
            return Err(err);
        }
        // The rename went through; only the folder's sync failed.
        warnings.push(format!(
            "generation {generation} is live, but {err:#}; a power cut before the disk catches up could bring back the previous index"
        ));
    }
    partial.0 = None;
    if let Some(old) = &previous.manifest {
        let old_dir = store::generation_dir(&options.index_dir, old.generation);
        if old.embedder != manifest.embedder && previous.generation.is_some() {
            // Switching models: keep the old model's vectors for a switch back.
            if let Err(err) =
                vector_cache::keep(&options.index_dir, &old_dir, &old.embedder, &old.checksums)
            {
                warnings.push(format!(
                    "could not keep the previous model's vectors: {err:#}"
                ));
            }
        }
        let _ = fs::remove_dir_all(old_dir);
    }
    vector_cache::forget(&options.index_dir, &manifest.embedder);
    Ok(IndexReport {
        index_dir: options.index_dir.clone(),
        generation,
        files: manifest.counts.files,
        reused: built.reused_from.iter().flatten().count(),
        chunks: manifest.counts.chunks,
        skipped,
        warnings,
        embedded,
        embed_time,
        graph_time,
        up_to_date: false,
        elapsed: started.elapsed(),
    })
}

/// The previous index, when its chunks can be reused.
struct Previous {
    manifest: Option<Manifest>,
    generation: Option<Generation>,
    /// Vectors this run's model made before, by key: the previous
    /// generation's, or the model's cache.
    vectors: Option<ReusableVectors>,
    /// Previous file index by path.
    files: HashMap<String, usize>,
    /// The previous file entries, by index.
    entries: Vec<FileEntry>,
    /// What a run needs to carry the previous generation's chunks over
    /// instead of rewriting them; `None` when it cannot.
    carried: Option<Carried>,
}

/// The parts of the previous generation a run carries over.
struct Carried {
    /// Per previous chunk, the key of its vector ([`dense::vector_key`]).
    keys: Vec<u64>,
    /// Uids the previous sparse list has given out (live and dead).
    uid_count: u32,
    /// Length of the previous text stream (live texts and garbage).
    text_len: u64,
}

impl Carried {
    /// Reads them from the previous generation `old`, described by `manifest`.
    fn read(old: &Generation, manifest: &Manifest) -> Result<Self> {
        Ok(Self {
            keys: dense::read_keys(old.dir())?,
            uid_count: u32::try_from(manifest.sparse.uids)?,
            text_len: old.text_stream_len()?,
        })
    }
}

impl Previous {
    /// Loads the previous manifest and generation; problems become warnings
    /// and mean a full rebuild, never a failed run.
    fn load(
        options: &IndexOptions,
        embedder: &'static dyn Embedder,
        warnings: &mut Vec<String>,
    ) -> Self {
        let mut previous = Self {
            manifest: None,
            generation: None,
            vectors: None,
            files: HashMap::new(),
            entries: Vec::new(),
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
        let generation =
            match Generation::open(&options.index_dir, manifest.generation, &manifest.checksums)
                .and_then(|g| {
                    check_carried_files(&g, &manifest)?;
                    Ok((g.files()?, g))
                }) {
                Ok(opened) => Some(opened),
                Err(err) => {
                    warnings.push(format!(
                        "previous index unusable, rebuilding it whole: {err:#}"
                    ));
                    None
                }
            };
        previous.vectors = vector_cache::reusable(
            &options.index_dir,
            generation.as_ref().map(|(_, g)| g.dir()),
            Some(&manifest.embedder),
            embedder.info(),
            warnings,
        );
        // Chunks are reused only when they would be cut and tokenized the same way.
        let same_chunks =
            manifest.tokenizer == options.analyzer && manifest.chunker == options.chunker;
        if let Some((entries, generation)) = generation.filter(|_| same_chunks) {
            previous.files = entries
                .iter()
                .enumerate()
                .map(|(i, f)| (f.path.clone(), i))
                .collect();
            previous.entries = entries;
            previous.carried = Carried::read(&generation, &manifest).ok();
            previous.generation = Some(generation);
        }
        previous.manifest = Some(manifest);
        previous
    }

    /// True when the walk found exactly the previous files, all with the
    /// same content, and the same skipped files, unchanged, under the same
    /// settings: the index is current and a new generation would be a copy.
    /// (Files only touched keep their old mtime in the index and are
    /// re-hashed by the next run.)
    fn is_current(
        &self,
        options: &IndexOptions,
        embedder: &dyn Embedder,
        walked: &Walk,
        states: &[FileState],
    ) -> bool {
        let Some(manifest) = &self.manifest else {
            return false;
        };
        self.generation.is_some()
            && self.vectors.is_some()
            && manifest.embedder == *embedder.info()
            && manifest.walk == options.walk
            && match manifest.graph {
                Some(g) => {
                    options.builds_graph(Some(manifest))
                        && g.format_version == graph::tables::FORMAT_VERSION
                        && g.options.analyzer == options.analyzer
                }
                None => !options.builds_graph(Some(manifest)),
            }
            && same_skips(&manifest.skipped, walked, states)
            && states
                .iter()
                .filter(|s| matches!(s, FileState::Unchanged { .. }))
                .count()
                == self.entries.len()
    }

    /// Whether this run carries the previous generation's chunks over (their
    /// texts, sparse documents and uids) rather than rewriting everything:
    /// yes, unless there is nothing to carry or carrying would leave more
    /// garbage (texts and sparse documents of removed or changed files'
    /// chunks) than the data carried.
    fn carry_for(&self, states: &[FileState]) -> bool {
        let (Some(old), Some(carried)) = (&self.generation, &self.carried) else {
            return false;
        };
        let (mut chunks, mut bytes) = (0u64, 0u64);
        for state in states {
            if let FileState::Unchanged { previous_file, .. } = state {
                for ord in old.chunks_of_file(*previous_file as u32) {
                    chunks += 1;
                    bytes += old.text_len(ord).unwrap_or(0);
                }
            }
        }
        let dead_chunks = u64::from(carried.uid_count).saturating_sub(chunks);
        let dead_bytes = carried.text_len.saturating_sub(bytes);
        dead_chunks <= chunks && dead_bytes <= bytes
    }

    /// The previous entry for `path` when its stamp says the content is the same.
    fn unchanged(&self, path: &str, matches: impl Fn(&FileStamp) -> bool) -> Option<usize> {
        let index = *self.files.get(path)?;
        let entry = self.entries.get(index)?;
        matches(&entry.stamp).then_some(index)
    }
}

/// True when this run would skip exactly what the previous one did: the
/// walk's skips are the recorded ones, and every walked file that is not in
/// the index is a recorded skip with the same size and modification time
/// (so it would be skipped again, for the same reason).
fn same_skips(recorded: &[SkippedFile], walked: &Walk, states: &[FileState]) -> bool {
    let walk_skips: Vec<(&str, &str)> = walked
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    let recorded_walk_skips: Vec<(&str, &str)> = recorded
        .iter()
        .filter(|s| s.stamp.is_none())
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    let file_skips: HashMap<&str, (u64, i128)> = recorded
        .iter()
        .filter_map(|s| Some((s.path.as_str(), s.stamp?)))
        .collect();
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

/// The record of what a run skipped: each file with the stamp it was
/// walked with (found in `walked`), each walk-level skip without one.
fn skipped_files(skipped: &[Skipped], walked: &[SourceFile]) -> Vec<SkippedFile> {
    let stamps: HashMap<&str, (u64, i128)> = walked
        .iter()
        .map(|f| (f.rel_path.as_str(), (f.size, f.mtime_ns)))
        .collect();
    skipped
        .iter()
        .map(|s| SkippedFile {
            path: s.path.clone(),
            reason: s.reason.clone(),
            stamp: stamps.get(s.path.as_str()).copied(),
        })
        .collect()
}

/// What happened to one walked file.
enum FileOutcome {
    /// Same content as in the previous index: keep its chunks.
    Reused {
        stamp: FileStamp,
        previous_file: usize,
    },
    /// Read and chunked anew.
    Fresh {
        entry: FileEntry,
        chunks: Vec<crate::corpus::chunk::ChunkDraft>,
        warning: Option<String>,
    },
    /// Left out, with the reason.
    Skipped(Skipped),
}

/// What the first pass finds about one walked file.
#[derive(Clone)]
enum FileState {
    /// Same content as in the previous index.
    Unchanged {
        stamp: FileStamp,
        previous_file: usize,
    },
    /// New or changed: to be read and chunked.
    Changed,
}

/// Compares one file with the previous index: by size and modification
/// time, and when those differ for a file the index holds, by content hash
/// (a file only touched is unchanged). Reads nothing for a new file.
fn check(file: &SourceFile, options: &IndexOptions, previous: &Previous) -> FileState {
    if let Some(previous_file) = previous.unchanged(&file.rel_path, |s| {
        s.size == file.size && s.mtime_ns == file.mtime_ns
    }) {
        let stamp = FileStamp {
            size: file.size,
            mtime_ns: file.mtime_ns,
            hash: String::new(),
        };
        return FileState::Unchanged {
            stamp,
            previous_file,
        };
    }
    if !previous.files.contains_key(&file.rel_path) || file.size > options.max_file_size {
        return FileState::Changed;
    }
    let Ok(bytes) = read_walked(file, options.max_file_size) else {
        return FileState::Changed;
    };
    let stamp = stamp_of(file, &bytes);
    match previous.unchanged(&file.rel_path, |s| s.hash == stamp.hash) {
        Some(previous_file) => FileState::Unchanged {
            stamp,
            previous_file,
        },
        None => FileState::Changed,
    }
}

/// The stamp of `file` whose content is `bytes`.
fn stamp_of(file: &SourceFile, bytes: &[u8]) -> FileStamp {
    FileStamp {
        size: bytes.len() as u64,
        mtime_ns: file.mtime_ns,
        hash: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes)),
    }
}

/// Reads and chunks a file the first pass found new or changed, or keeps
/// an unchanged one's chunks.
fn examine(file: &SourceFile, options: &IndexOptions, state: FileState) -> FileOutcome {
    let skip = |reason: String| {
        FileOutcome::Skipped(Skipped {
            path: file.rel_path.clone(),
            reason,
        })
    };
    if let FileState::Unchanged {
        stamp,
        previous_file,
    } = state
    {
        return FileOutcome::Reused {
            stamp,
            previous_file,
        };
    }
    if file.size > options.max_file_size {
        return skip(format!(
            "{} bytes is over the {}-byte limit (raise it with --max-file-size)",
            file.size, options.max_file_size
        ));
    }
    let bytes = match read_walked(file, options.max_file_size) {
        Ok(bytes) => bytes,
        Err(reason) => return skip(reason),
    };
    let stamp = stamp_of(file, &bytes);
    if bytes.contains(&0) {
        return skip("looks binary (contains NUL bytes)".into());
    }
    let source = match std::str::from_utf8(&bytes) {
        Ok(source) => source,
        Err(err) => return skip(format!("not valid UTF-8 (at byte {})", err.valid_up_to())),
    };
    let parsed = parse_file(source, &options.chunker);
    let warning = parsed
        .front_matter
        .error
        .as_ref()
        .map(|e| format!("{}: front matter ignored: {e}", file.rel_path));
    let mut metadata = parsed.front_matter.metadata;
    add_builtin_metadata(&mut metadata, &file.rel_path, parsed.title.as_deref());
    FileOutcome::Fresh {
        entry: FileEntry {
            path: file.rel_path.clone(),
            metadata,
            stamp,
        },
        chunks: parsed.chunks,
        warning,
    }
}

/// Adds `path`, `dir` and `title` (front matter `title`, else the first
/// level-1 heading, else the file stem). Built-in keys win over front matter.
fn add_builtin_metadata(metadata: &mut Metadata, rel_path: &str, heading_title: Option<&str>) {
    let (dir, name) = rel_path.rsplit_once('/').unwrap_or((".", rel_path));
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    if metadata.get("title").is_none_or(|t| t.is_empty()) {
        let title = heading_title.unwrap_or(stem).to_string();
        metadata.insert("title".into(), vec![title]);
    }
    metadata.insert("path".into(), vec![rel_path.to_string()]);
    metadata.insert("dir".into(), vec![dir.to_string()]);
}

/// Files read and chunked per batch of the streaming pass (bounds the
/// texts held at once).
const FILE_BATCH: usize = 1024;

/// The new generation's table, assembled batch by batch in walk (path)
/// order; the texts go straight to a [`TextWriter`].
struct Built {
    table: ChunkTable,
    /// Per file, its index in the previous generation when it is unchanged.
    reused_from: Vec<Option<u32>>,
    /// Per uid, the ordinal of its chunk, or [`sparse::DEAD`] (the sparse
    /// list's uid map; its length is the number of uids given out).
    ords: Vec<u32>,
}

/// Where one chunk of a batch comes from.
struct ChunkSource {
    /// Its ordinal in the previous generation, when it was there.
    previous: Option<ChunkOrd>,
    /// Its searchable text when the sparse list must (re)index it: a new
    /// chunk, or any chunk when nothing is carried.
    searchable: Option<String>,
}

/// A chunk whose text is written anew.
struct NewChunk {
    file: u32,
    heading_path: Vec<String>,
    lines: (u32, u32),
    /// Its ordinal in the previous generation, if it was there (its vector
    /// key is known).
    previous: Option<ChunkOrd>,
}

impl Built {
    /// An empty table; carried chunks keep their uids, whose dead ones stay
    /// given out.
    fn new(carried: Option<&Carried>) -> Self {
        Self {
            table: ChunkTable::default(),
            reused_from: Vec::new(),
            ords: vec![sparse::DEAD; carried.map_or(0, |c| c.uid_count as usize)],
        }
    }

    /// Appends one batch of files. With `carry`, unchanged files keep their
    /// chunks' texts, uids and sparse documents; without, every chunk is
    /// written anew (uid = ordinal). Returns the sources of the chunks added.
    fn assemble(
        &mut self,
        outcomes: Vec<FileOutcome>,
        previous: &Previous,
        carry: bool,
        texts: &mut TextWriter,
        skipped: &mut Vec<Skipped>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<ChunkSource>> {
        let mut sources = Vec::new();
        for outcome in outcomes {
            let file = self.table.files.len() as u32;
            match outcome {
                FileOutcome::Skipped(s) => skipped.push(s),
                FileOutcome::Reused {
                    stamp,
                    previous_file,
                } => {
                    let old = previous
                        .generation
                        .as_ref()
                        .context("reused a file without a previous index")?;
                    let mut entry = previous.entries[previous_file].clone();
                    // Same content: keep its hash, record the current size and mtime.
                    entry.stamp.size = stamp.size;
                    entry.stamp.mtime_ns = stamp.mtime_ns;
                    self.table.files.push(entry);
                    self.reused_from.push(Some(previous_file as u32));
                    for old_ord in old.chunks_of_file(previous_file as u32) {
                        let mut record = old.record(old_ord)?;
                        record.file = file;
                        let source = if carry {
                            self.push_carried(record, old_ord)
                        } else {
                            let text = old.text(old_ord)?;
                            let chunk = NewChunk {
                                file,
                                heading_path: record.heading_path,
                                lines: record.lines,
                                previous: Some(old_ord),
                            };
                            self.push_new(chunk, &text, texts)?
                        };
                        sources.push(source);
                    }
                }
                FileOutcome::Fresh {
                    entry,
                    chunks,
                    warning,
                } => {
                    warnings.extend(warning);
                    self.table.files.push(entry);
                    self.reused_from.push(None);
                    for draft in chunks {
                        let chunk = NewChunk {
                            file,
                            heading_path: draft.heading_path,
                            lines: (draft.lines.0 as u32, draft.lines.1 as u32),
                            previous: None,
                        };
                        sources.push(self.push_new(chunk, &draft.text, texts)?);
                    }
                }
            }
        }
        Ok(sources)
    }

    /// Appends a chunk carried over from the previous generation as it was
    /// (its text stays where it is in the carried store).
    fn push_carried(&mut self, record: ChunkRecord, old_ord: ChunkOrd) -> ChunkSource {
        self.ords[record.uid as usize] = self.table.chunks.len() as ChunkOrd;
        self.table.chunks.push(record);
        ChunkSource {
            previous: Some(old_ord),
            searchable: None,
        }
    }

    /// Appends a chunk whose text is written anew, numbering it within its
    /// file and giving it the next uid.
    fn push_new(
        &mut self,
        chunk: NewChunk,
        text: &str,
        texts: &mut TextWriter,
    ) -> Result<ChunkSource> {
        let n = match self.table.chunks.last() {
            Some(last) if last.file == chunk.file => last.n + 1,
            _ => 1,
        };
        let searchable = searchable_text(&chunk.heading_path, text);
        let uid = self.ords.len() as u32;
        self.ords.push(self.table.chunks.len() as ChunkOrd);
        self.table.chunks.push(ChunkRecord {
            file: chunk.file,
            n,
            heading_path: chunk.heading_path,
            lines: chunk.lines,
            text_start: texts.push(text)?,
            text_len: text.len() as u32,
            text_crc: crc32fast::hash(text.as_bytes()),
            has_vector: false,
            uid,
        });
        Ok(ChunkSource {
            previous: chunk.previous,
            searchable: Some(searchable),
        })
    }
}

/// Builds the graph of `built` (whose texts are already in `gen_dir`),
/// decoding unchanged files' entities from `previous_dir`'s cache when it
/// has one, checks its invariants, and writes it and the new cache into
/// `gen_dir`; returns what the manifest records about it (with the
/// default weight) and the time taken.
fn write_graph(
    gen_dir: &Path,
    built: &Built,
    previous_dir: Option<&Path>,
    options: GraphOptions,
) -> Result<(GraphManifest, Duration)> {
    let started = Instant::now();
    // A damaged cache only costs extraction.
    let previous = previous_dir.and_then(|dir| EntityCache::open(dir).ok().flatten());
    let store = TextStore::open(gen_dir)?;
    let chunk_text = |ord: ChunkOrd| {
        let chunk = built
            .table
            .chunks
            .get(ord as usize)
            .context("the graph asked for a chunk past the end")?;
        store.read(chunk.text_start, chunk.text_len, chunk.text_crc)
    };
    let (graph, cache) = graph::build_generation(
        &built.table,
        &chunk_text,
        &built.reused_from,
        previous.as_ref(),
        options,
    )?;
    let view = graph.tables.view(&graph.header);
    view.validate()
        .context("the graph just built is inconsistent")?;
    let bytes = graph::tables::encode(&graph.header, &graph.tables)?;
    atomic::write_synced(&gen_dir.join(GRAPH_FILE), &bytes)?;
    cache.write(gen_dir)?;
    let manifest = GraphManifest {
        format_version: graph::tables::FORMAT_VERSION,
        options,
        weight: graph::DEFAULT_WEIGHT,
        entities: view.entity_count(),
        communities: view.community_sizes.len(),
    };
    Ok((manifest, started.elapsed()))
}

/// Texts embedded per call of the embedder.
const EMBED_BATCH: usize = 256;

/// One batch's vectors and keys, in ordinal order.
struct BatchVectors {
    /// One row per chunk.
    vectors: dense::QuantizedVectors,
    /// Per chunk, the key of its vector ([`dense::vector_key`]).
    keys: Vec<u64>,
    /// How many were embedded (the rest were reused).
    embedded: usize,
}

/// Vectors for one batch of `chunks` (with their `sources`): reused when
/// this model embedded the same text before (see [`vector_cache`]),
/// embedded otherwise.
fn embed_batch(
    chunks: &[ChunkRecord],
    sources: &[ChunkSource],
    previous: &Previous,
    embedder: &dyn Embedder,
) -> Result<BatchVectors> {
    let dim = embedder.info().dim;
    let old_keys = previous.carried.as_ref().map(|c| &c.keys);
    let keys: Vec<u64> = sources
        .par_iter()
        .map(
            |source| match (source.previous, old_keys, &source.searchable) {
                (Some(old), Some(keys), _) if (old as usize) < keys.len() => Ok(keys[old as usize]),
                (_, _, Some(text)) => Ok(dense::vector_key(text)),
                _ => bail!("a carried chunk has neither a vector key nor a text"),
            },
        )
        .collect::<Result<_>>()?;
    let mut vectors = dense::QuantizedVectors::zeros(keys.len(), dim);
    let mut todo = Vec::new();
    for (row, key) in keys.iter().enumerate() {
        let known = match &previous.vectors {
            Some(reusable) => reusable.get(*key)?,
            None => None,
        };
        match known {
            Some((values, scale)) => vectors.set_quantized(row, values, scale),
            None => todo.push(row),
        }
    }
    for batch in todo.chunks(EMBED_BATCH) {
        let texts: Vec<String> = batch
            .iter()
            .map(|&row| searchable(&chunks[row], &sources[row], previous))
            .collect::<Result<_>>()?;
        let flat = embedder.embed(&texts)?;
        for (&row, values) in batch.iter().zip(flat.chunks_exact(dim)) {
            vectors.set(row, values);
        }
    }
    Ok(BatchVectors {
        vectors,
        keys,
        embedded: todo.len(),
    })
}

/// The searchable text of `chunk`: kept when it was written anew, else
/// read back from the previous generation.
fn searchable(chunk: &ChunkRecord, source: &ChunkSource, previous: &Previous) -> Result<String> {
    if let Some(text) = &source.searchable {
        return Ok(text.clone());
    }
    let (old, ord) = previous
        .generation
        .as_ref()
        .zip(source.previous)
        .context("a carried chunk without its previous generation")?;
    Ok(searchable_text(&chunk.heading_path, &old.text(ord)?))
}

/// Re-reads every file of the previous generation that a run may carry
/// over (all but the sparse folder, whose segments are linked with the
/// checks they had, so damage in them stays visible to `status --verify`,
/// and whose other files are rebuilt) and
/// fails on the first whose CRC-32 no longer matches: carried data is
/// written with new checksums, so damage must be caught before, not
/// laundered into a generation that looks intact.
fn check_carried_files(generation: &Generation, manifest: &Manifest) -> Result<()> {
    let in_sparse = |name: &str| {
        name.strip_prefix(SPARSE_DIR)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    let problems = checks::verify_matching(generation.dir(), &manifest.checksums, |name| {
        !in_sparse(name)
    });
    match problems.into_iter().next() {
        Some(problem) => bail!(problem),
        None => Ok(()),
    }
}

/// True when `index_dir/meta.json` names `generation` (the switch to it
/// happened, whatever failed after).
fn names_generation(index_dir: &Path, generation: u64) -> bool {
    Manifest::read(index_dir).is_ok_and(|m| m.is_some_and(|m| m.generation == generation))
}

/// A generation folder being written: removed when the run fails before
/// the manifest names it (so a full disk is freed at once), kept once the
/// field is cleared.
struct PartialGeneration<'a>(Option<&'a Path>);

impl Drop for PartialGeneration<'_> {
    fn drop(&mut self) {
        if let Some(dir) = self.0 {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// Refuses an index folder that is the indexed folder or holds it: the
/// run would index its own files and clean up among the user's.
fn refuse_index_over_root(root: &Path, index_dir: &Path) -> Result<()> {
    let (Ok(root), Ok(index)) = (fs::canonicalize(root), fs::canonicalize(index_dir)) else {
        return Ok(());
    };
    if root.starts_with(&index) {
        bail!(
            "the index folder {} is the folder being indexed or holds it; keep the index in its own folder",
            index.display()
        );
    }
    Ok(())
}

/// Removes what interrupted runs left in the (claimed) index folder:
/// generation folders other than the live one, temporary files of
/// `meta.json` writes, and half-moved vector caches.
fn remove_leftovers(index_dir: &Path, live: Option<u64>) {
    let Ok(entries) = fs::read_dir(index_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name.starts_with(atomic::TEMP_PREFIX) {
            let _ = fs::remove_file(entry.path());
        } else if store::parse_generation_name(name).is_some_and(|n| Some(n) != live) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    vector_cache::remove_staging(index_dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_metadata_prefers_front_matter_title() {
        let mut m = Metadata::new();
        add_builtin_metadata(&mut m, "runbooks/db/pool.md", Some("Pool"));
        assert_eq!(m["title"], ["Pool"]);
        assert_eq!(m["dir"], ["runbooks/db"]);
        assert_eq!(m["path"], ["runbooks/db/pool.md"]);
        let mut m = Metadata::from([("title".to_string(), vec!["Given".to_string()])]);
        add_builtin_metadata(&mut m, "top.md", None);
        assert_eq!(m["title"], ["Given"]);
        assert_eq!(m["dir"], ["."]);
        let mut m = Metadata::new();
        add_builtin_metadata(&mut m, "notes.markdown", None);
        assert_eq!(m["title"], ["notes"]);
    }
}
