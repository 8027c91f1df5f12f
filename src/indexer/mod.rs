//! The indexing pipeline: walk ∥ open the previous index → check the files
//! against it → stream the files in batches (read and chunk ∥ sparse ∥
//! embed) → graph ∥ sparse commit → table → checksums → manifest → clean up.
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
//! are read, chunked, tokenized and embedded; a one-file edit still writes
//! the table, vector and text files anew (copying the carried rows), a
//! cost that grows with the corpus. A run told which paths changed
//! ([`IndexOptions::told`]: a watcher, `remember`) looks at those instead
//! of walking the folder. When carrying
//! over would leave more dead data than live (many files changed or
//! removed), the run writes everything anew instead, which also drops the
//! garbage.
//!
//! The steps, one file each: `previous` (the last run's index and change
//! detection), `batches` (the streaming pass) with `examine` (one file),
//! `table` (the chunk table) and `vectors` (embedding or reuse by key),
//! `lists` (graph and sparse commit), `commit` (manifest, switch, clean-up).

mod batches;
mod commit;
mod delta;
mod examine;
mod lists;
mod previous;
mod table;
mod told;
mod vectors;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::corpus::Skipped;
use crate::corpus::chunk::ChunkOptions;
use crate::corpus::walk::{Walk, WalkOptions, walk, walk_told};
use crate::embed::{Embedder, ModelSource};
use crate::index::Index;
use crate::index::manifest::{Counts, Manifest, SkippedFile};
use crate::lists::dense::codes::DenseIndexSetting;
use crate::lists::dense::floor;
use crate::lists::sparse::SparseStats;
use crate::lists::sparse::fields::Fields;
use crate::progress::Progress;
use crate::store::generation;
use crate::store::lock::IndexLock;
use crate::store::{INDEX_DIR_NAME, LOCK_FILE, atomic, ownership, parts};
use crate::text::tokenize::Analyzer;
use commit::PartialGeneration;
use delta::DeltaPlan;
use previous::{FileState, Previous, Verify};

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
    /// Write the index whole, folding its delta part into a new base,
    /// rather than append a delta ([`delta`]).
    pub compact: bool,
    /// Chunker settings.
    pub chunker: ChunkOptions,
    /// Tokenizer settings for the sparse list.
    pub analyzer: Analyzer,
    /// How often each field of a chunk counts in its sparse document.
    pub sparse_fields: Fields,
    /// Whether to write the file list's index ([`crate::lists::files`]).
    pub file_list: bool,
    /// Ignore rules and globs for the walk.
    pub walk: WalkOptions,
    /// The model that embeds the chunks (`--model`, `--embed-url`, or the
    /// bundled model).
    pub model: ModelSource,
    /// Build the entity graph (`--graph`, `--no-graph`); `None` keeps what
    /// the previous index did (no graph for a new index).
    pub graph: Option<bool>,
    /// When to write the dense list's sign codes (`--dense-index`);
    /// `None` keeps what the previous index did (`auto` for a new index).
    pub dense_index: Option<DenseIndexSetting>,
    /// The paths changed since the last run, when the caller was told
    /// (a watcher's events, the file `remember` wrote): the run looks at
    /// those rather than walking the folder, unless one could change more
    /// than itself ([`walk_told`]) or the previous index cannot tell what
    /// the last walk found. `None`: walk.
    pub told: Option<Vec<PathBuf>>,
}

impl IndexOptions {
    /// Default settings for indexing `root` into `root/.memidx`.
    pub fn new(root: PathBuf) -> Self {
        Self {
            index_dir: root.join(INDEX_DIR_NAME),
            root,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            full: false,
            compact: false,
            chunker: ChunkOptions::default(),
            analyzer: Analyzer::default(),
            sparse_fields: Fields::default(),
            file_list: true,
            walk: WalkOptions::default(),
            model: ModelSource::Bundled,
            graph: None,
            dense_index: None,
            told: None,
        }
    }

    /// The settings that update `index` the way it was built: its root,
    /// walk, chunker, tokenizer and model (the graph as before), for a
    /// caller that knows only the index, like the MCP server.
    pub fn updating(index: &Index) -> Self {
        let manifest = index.manifest();
        let mut options = Self::new(PathBuf::from(&manifest.root));
        options.index_dir = index.dir().to_path_buf();
        options.walk = manifest.walk.clone();
        options.chunker = manifest.chunker;
        options.analyzer = manifest.tokenizer;
        options.sparse_fields = manifest.sparse_fields;
        options.file_list = manifest.file_list;
        options.model = manifest.model_source();
        options
    }

    /// When this run builds the dense index, given the previous manifest.
    fn dense_index_setting(&self, previous: Option<&Manifest>) -> DenseIndexSetting {
        self.dense_index
            .or(previous.map(|m| m.dense_index.setting))
            .unwrap_or_default()
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
    /// Those of them skipped for the first time, or for a new reason, or
    /// changed since the run before skipped them: what is worth a warning
    /// (the rest were named when they were new; `status` lists them all).
    /// A `--full` run counts every skip as new.
    pub new_skips: Vec<Skipped>,
    /// Non-fatal problems in indexed files (e.g. broken front matter).
    pub warnings: Vec<String>,
    /// Chunks embedded in this run (the rest reused their vectors).
    pub embedded: usize,
    /// How many of them the model read only up to its window, and the
    /// window in word pieces (`None` when the model cannot tell).
    pub cut_at_window: Option<(usize, usize)>,
    /// Time spent embedding.
    pub embed_time: Duration,
    /// Time spent building, checking and encoding the graph (alongside the
    /// other lists), when one was built.
    pub graph_time: Option<Duration>,
    /// Time spent writing the dense list's sign codes, when they were.
    pub dense_index_time: Option<Duration>,
    /// True when nothing changed, so no new generation was written.
    pub up_to_date: bool,
    /// Wall-clock time of the run.
    pub elapsed: Duration,
}

/// Loads the model `options` embed with: a folder's files hashed unless
/// the index recorded them as they are, an endpoint probed (see
/// [`crate::embed::load_source`]), with an error saying how to go on when
/// it cannot be.
pub fn load_model(options: &IndexOptions) -> Result<&'static dyn Embedder> {
    let previous = Manifest::read(&options.index_dir).ok().flatten();
    let known = previous
        .as_ref()
        .map(Manifest::known_model)
        .unwrap_or_default();
    crate::embed::load_source(&options.model, known).with_context(|| match &options.model {
        ModelSource::Folder(dir) => format!(
            "cannot load the model {} (given with --model or kept from the index's last run); \
             give its folder with --model DIR, or go back to the bundled model with --bundled-model",
            dir.display()
        ),
        ModelSource::Endpoint(endpoint) => format!(
            "cannot embed with '{}' at {} (given with --embed-url or kept from the index's last \
             run); start its server, or give another with --embed-url URL --embed-model NAME, or \
             go back to the bundled model with --bundled-model",
            endpoint.model, endpoint.url
        ),
        ModelSource::Bundled => "cannot load the bundled model".to_string(),
    })
}

/// Indexes `options.root` into `options.index_dir`, embedding chunks with
/// `embedder` and reporting each stage to `progress`: takes the writer lock
/// for this one run (see [`Writer`] to hold it across runs).
pub fn run(
    options: &IndexOptions,
    embedder: &'static dyn Embedder,
    progress: &dyn Progress,
) -> Result<IndexReport> {
    Writer::take(options)?.run(options, embedder, progress)
}

/// The right to write one index folder: the folder claimed and its writer
/// lock held for as long as this value lives. [`run`] takes one per run; a
/// watcher takes one for its whole life, so that no other `memidx index`
/// writes the index while it watches, and makes its runs through it (the
/// lock is per open file, so a second lock on the same file would be
/// refused even within one process).
#[derive(Debug)]
pub struct Writer {
    index_dir: PathBuf,
    lock: IndexLock,
}

impl Writer {
    /// Claims `options.index_dir` (creating it) and takes its lock, failing
    /// at once with [`IndexError::Locked`](crate::error::IndexError) when
    /// another run holds it.
    pub fn take(options: &IndexOptions) -> Result<Self> {
        check_root(options)?;
        commit::refuse_index_over_root(&options.root, &options.index_dir)?;
        ownership::claim(&options.index_dir)?;
        let lock = IndexLock::acquire(&options.index_dir.join(LOCK_FILE))?;
        Ok(Self {
            index_dir: options.index_dir.clone(),
            lock,
        })
    }

    /// One indexing run under this lock, for the index folder it was taken
    /// for. When the lock file was removed or replaced since (so the lock
    /// no longer keeps anyone out), the lock is taken anew first; if
    /// another run holds the new one, this run fails as a second `memidx
    /// index` would, and a later one may succeed.
    pub fn run(
        &mut self,
        options: &IndexOptions,
        embedder: &'static dyn Embedder,
        progress: &dyn Progress,
    ) -> Result<IndexReport> {
        if options.index_dir != self.index_dir {
            bail!(
                "this writer holds the lock of {}, not of {}",
                self.index_dir.display(),
                options.index_dir.display()
            );
        }
        if self.lock.still_held().is_err() {
            *self = Self::take(options)?;
        }
        run_locked(options, embedder, progress, &self.lock)
    }
}

/// Fails unless the folder to index is a folder.
fn check_root(options: &IndexOptions) -> Result<()> {
    let root = options.root.display();
    match std::fs::metadata(&options.root) {
        // An index folder given as the folder to index (one kept apart with
        // `--index`) would get an index of its own inside it.
        Ok(meta) if meta.is_dir() && ownership::is_index(&options.root) => {
            let indexed = Manifest::read(&options.root).ok().flatten();
            let indexed = indexed.map_or("FOLDER".to_string(), |m| m.root);
            bail!(
                "'{root}' is a memidx index, not a folder of markdown; to update it, run: \
                 memidx index '{indexed}' --index '{root}'"
            )
        }
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => bail!("'{root}' is a file, not a folder; give the folder of markdown to index"),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            bail!("no such folder '{root}'; give the folder of markdown to index")
        }
        Err(err) => bail!("cannot read '{root}': {err}"),
    }
}

/// The run itself, with the index folder claimed and `lock` held.
fn run_locked(
    options: &IndexOptions,
    embedder: &'static dyn Embedder,
    progress: &dyn Progress,
    lock: &IndexLock,
) -> Result<IndexReport> {
    let started = Instant::now();
    let run = Run {
        options,
        embedder,
        progress,
        lock,
        started,
    };
    check_root(options)?;
    if let Some(told) = &options.told
        && let Some(report) = append_told(&run, told)?
    {
        return Ok(report);
    }
    // The walk (bound by stat calls) runs while the previous index is
    // opened and its carried files re-read against their checksums.
    let mut warnings = Vec::new();
    let verify = Verify::Carried;
    let (previous, walked) = match &options.told {
        Some(told) => {
            let previous = Previous::load(options, embedder, verify, &mut warnings);
            let walked = match previous.known_walk(options) {
                Some(known) => walk_told(&options.root, &options.walk, known, told)?,
                None => None,
            };
            let walked = walked.map_or_else(|| walk(&options.root, &options.walk), Ok);
            (previous, walked)
        }
        None => std::thread::scope(|scope| {
            let walked = scope.spawn(|| walk(&options.root, &options.walk));
            let previous = Previous::load(options, embedder, verify, &mut warnings);
            let walked = walked
                .join()
                .unwrap_or_else(|_| bail!("the folder walk panicked"));
            (previous, walked)
        }),
    };
    commit::refuse_another_root(
        &options.root,
        &options.index_dir,
        previous.manifest.as_ref(),
    )?;
    remove_leftovers(options, &previous);
    let walked = walked?;
    if walked.files.is_empty() {
        warnings.push(format!(
            "no markdown files (.md, .markdown) found under {}",
            options.root.display()
        ));
    }
    let states = previous::check_all(&walked.files, options, &previous, progress);
    if let Some(current) = previous.current(options, embedder, &walked, &states, 0) {
        return Ok(IndexReport::up_to_date(options, current, warnings, started));
    }
    let plan = delta::plan(options, embedder, &previous, &walked, &states, None);
    write(&run, previous, walked, states, plan, warnings)
}

/// A run told the changed paths `told`, when it can append a delta
/// ([`told`]): `None` when it must list every file instead.
fn append_told(run: &Run, told: &[PathBuf]) -> Result<Option<IndexReport>> {
    let (options, embedder) = (run.options, run.embedder);
    let mut warnings = Vec::new();
    let previous = Previous::load(options, embedder, Verify::Appended, &mut warnings);
    commit::refuse_another_root(
        &options.root,
        &options.index_dir,
        previous.manifest.as_ref(),
    )?;
    let Some(looked) = told::look(options, &previous, told)? else {
        return Ok(None);
    };
    remove_leftovers(options, &previous);
    let states = previous::check_all(&looked.walked.files, options, &previous, run.progress);
    let walked = &looked.walked;
    if let Some(current) = previous.current(options, embedder, walked, &states, looked.unwalked) {
        let report = IndexReport::up_to_date(options, current, warnings, run.started);
        return Ok(Some(report));
    }
    let plan = delta::plan(
        options,
        embedder,
        &previous,
        walked,
        &states,
        Some(&looked.kept),
    );
    match plan {
        Some(plan) => write(run, previous, looked.walked, states, Some(plan), warnings).map(Some),
        None => Ok(None),
    }
}

/// Removes what failed runs left in the index folder: every generation
/// but those `previous` names.
fn remove_leftovers(options: &IndexOptions, previous: &Previous) {
    let live = previous.manifest.as_ref().map(Manifest::generations);
    commit::remove_leftovers(&options.index_dir, live.as_deref().unwrap_or_default());
}

/// Writes the next generation from the `walked` files and their `states`
/// against `previous`: a delta when `plan` says, else the whole index.
fn write(
    run: &Run,
    mut previous: Previous,
    walked: Walk,
    states: Vec<FileState>,
    plan: Option<DeltaPlan>,
    mut warnings: Vec<String>,
) -> Result<IndexReport> {
    let Run {
        options,
        embedder,
        lock,
        started,
        ..
    } = *run;
    let carry = plan.is_none() && previous.carry_for(&states);
    let live = previous.manifest.as_ref().map(Manifest::generations);
    let generation = live.iter().flatten().max().map_or(1, |g| g + 1);
    let gen_dir = commit::create_generation_dir(&options.index_dir, generation)?;
    let partial = PartialGeneration::new(&gen_dir);
    let (streamed_walk, streamed_states) = match &plan {
        Some(plan) => (&plan.walk, plan.states.as_slice()),
        None => (&walked, states.as_slice()),
    };
    let streamed = batches::stream(
        run,
        &gen_dir,
        streamed_walk,
        streamed_states,
        &mut previous,
        carry,
    )?;
    warnings.extend(streamed.warnings);
    let built = streamed.built;
    let lists = lists::finish(
        &gen_dir,
        &built,
        (streamed.sparse, streamed.files),
        &previous,
        options,
        embedder,
    )?;
    let graph_time = lists.graph.as_ref().map(|(_, t)| *t);
    let dense_index_time = lists.dense_index_time;
    generation::write_table(&gen_dir, &built.table)?;
    if let (Some(plan), Some(parts)) = (&plan, &previous.parts) {
        let places = delta::places(parts, &built.table)?;
        parts::write_delta(&gen_dir, std::slice::from_ref(&plan.buried), &places)?;
    }
    atomic::sync_tree(&gen_dir)?;
    let checksums = commit::checksums(&gen_dir, &lists.linked(), previous.manifest.as_ref())?;
    // A delta's run keeps the base's floor (its few rows would cost the
    // probes' embedding on every `remember`); a full run or a compaction
    // measures it again.
    let noise_floor = match (&plan, &previous.manifest) {
        (Some(_), Some(before)) => before.noise_floor,
        _ => commit::noise_floor(run, generation, &checksums, lists.dense_index.setting)?,
    };

    let skipped = streamed.skipped;
    let mut counts = Counts {
        files: built.table.files.len(),
        chunks: built.table.chunks.len(),
        skipped: skipped.len(),
    };
    let appended = match (&plan, &previous.parts, &previous.manifest) {
        (Some(plan), Some(parts), Some(before)) => {
            let delta = (generation, counts.files, counts.chunks, checksums.clone());
            let appended = delta::appended(parts, before, options.analyzer, &plan.buried, delta)?;
            counts.files += parts.base().file_count() - plan.buried.len();
            counts.chunks += appended.base_live.docs as usize;
            Some((appended, before))
        }
        _ => None,
    };
    let skipped_record = commit::skipped_files(&skipped, &walked.files);
    // A full run starts over: every skip is news again.
    let before = previous.manifest.as_ref().filter(|_| !options.full);
    let new_skips = commit::new_skips(&skipped_record, before);
    let delta_sparse = lists.sparse.stats;
    let mut manifest = commit::manifest(
        run,
        generation,
        lists,
        counts,
        skipped_record,
        checksums,
        previous.manifest.as_ref(),
    );
    manifest.noise_floor = noise_floor;
    manifest.word_floor = floor::word_floor(run.embedder);
    if let Some((appended, before)) = appended {
        // The base stays as the previous manifest records it.
        manifest.generation = before.generation;
        manifest.checksums = before.checksums.clone();
        // The codes cover the base's rows, and the delta's when it has them.
        let delta_rows = manifest.dense_index.rows;
        manifest.dense_index = before.dense_index;
        manifest.dense_index.rows = match (appended.base_code_rows, delta_rows) {
            (None, None) => None,
            (base, delta) => Some(base.unwrap_or(0) + delta.unwrap_or(0)),
        };
        manifest.sparse = SparseStats {
            docs: appended.base_live.docs + delta_sparse.docs,
            tokens: appended.base_live.tokens + delta_sparse.tokens,
            uids: appended.base_live.uids,
        };
        manifest.delta = Some(appended.delta);
    }
    // A remote model's vectors stand only while it is still the model the
    // run began with.
    embedder.confirm_unchanged()?;
    lock.still_held()?;
    commit::switch(&options.index_dir, &manifest, partial, &mut warnings)?;
    commit::clean_up(&options.index_dir, &previous, &manifest, &mut warnings);
    // A delta's run keeps the base's live files as they are.
    let kept = plan.as_ref().zip(previous.parts.as_ref());
    let kept = kept.map_or(0, |(plan, parts)| {
        parts.base().file_count() - plan.buried.len()
    });
    let reused = kept + built.reused_from.iter().flatten().count();
    free_in_background((built, previous, walked));
    Ok(IndexReport {
        index_dir: options.index_dir.clone(),
        generation,
        files: manifest.counts.files,
        reused,
        chunks: manifest.counts.chunks,
        skipped,
        new_skips,
        warnings,
        embedded: streamed.embedded,
        cut_at_window: streamed.cut.zip(embedder.window()),
        embed_time: streamed.embed_time,
        graph_time,
        dense_index_time,
        up_to_date: false,
        elapsed: started.elapsed(),
    })
}

/// Frees `value` on a thread of its own, so the caller does not wait for
/// it: a run's table, walk and previous index are a few hundred thousand
/// small allocations, and freeing them took a tenth of a one-file
/// re-index (a process that exits next never pays it). When no thread can
/// be started, `value` is freed here.
fn free_in_background<T: Send + 'static>(value: T) {
    // On failure the closure, and so `value`, is dropped by `spawn`.
    let _ = std::thread::Builder::new()
        .name("memidx-free".into())
        .spawn(move || drop(value));
}

/// One run's settings, model, progress sink, lock and start, which its
/// steps read.
#[derive(Clone, Copy)]
struct Run<'a> {
    options: &'a IndexOptions,
    embedder: &'static dyn Embedder,
    progress: &'a dyn Progress,
    lock: &'a IndexLock,
    started: Instant,
}

impl IndexReport {
    /// The report of a run that found the index `current` (described by its
    /// manifest) up to date and wrote nothing.
    fn up_to_date(
        options: &IndexOptions,
        current: &Manifest,
        warnings: Vec<String>,
        started: Instant,
    ) -> Self {
        Self {
            index_dir: options.index_dir.clone(),
            generation: current.latest_generation(),
            files: current.counts.files,
            reused: current.counts.files,
            chunks: current.counts.chunks,
            // Skipped again, unchanged and for the same reasons.
            skipped: current.skipped.iter().map(SkippedFile::skipped).collect(),
            new_skips: Vec::new(),
            warnings,
            embedded: 0,
            cut_at_window: None,
            embed_time: Duration::ZERO,
            graph_time: None,
            dense_index_time: None,
            up_to_date: true,
            elapsed: started.elapsed(),
        }
    }
}
