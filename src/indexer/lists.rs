//! The lists' last step over the whole table: the graph is built, checked
//! and written, and the dense list's sign codes, while the sparse list
//! commits.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::IndexOptions;
use super::previous::Previous;
use super::table::Built;
use crate::embed::Embedder;
use crate::index::manifest::{DenseIndexManifest, GraphManifest};
use crate::lists::dense::codes::{self, DenseIndexSetting};
use crate::lists::graph::{self, EntityCache, GRAPH_FILE, GraphOptions};
use crate::lists::sparse::{SparseWriter, SparseWritten};
use crate::store::atomic;
use crate::store::generation::{ChunkOrd, FILES_DIR, SPARSE_DIR};
use crate::store::texts::TextStore;

/// The finished sparse list, and the graph's manifest entry (with the
/// default weight) and build time when this run built one.
pub(super) struct FinishedLists {
    /// What the sparse list's commit reports.
    pub(super) sparse: SparseWritten,
    /// What the file list's commit reports, when the run wrote one.
    pub(super) files: Option<SparseWritten>,
    /// The graph's manifest entry and build time.
    pub(super) graph: Option<(GraphManifest, Duration)>,
    /// The dense index's manifest entry.
    pub(super) dense_index: DenseIndexManifest,
    /// Time spent writing the dense index, when one was written.
    pub(super) dense_index_time: Option<Duration>,
}

impl FinishedLists {
    /// The files hard-linked from the previous generation, by name in the
    /// generation: the sparse list's and the file list's.
    pub(super) fn linked(&self) -> Vec<String> {
        let sparse = (self.sparse.linked.iter()).map(|name| format!("{SPARSE_DIR}/{name}"));
        let files = (self.files.iter().flat_map(|files| &files.linked))
            .map(|name| format!("{FILES_DIR}/{name}"));
        sparse.chain(files).collect()
    }
}

/// Commits `sparse` (and the file list) over `built`'s uid map while the graph (when `options`
/// build one) and the dense index (when its setting asks for one at this
/// size; vectors by `embedder`) are built over the table in `gen_dir`.
pub(super) fn finish(
    gen_dir: &Path,
    built: &Built,
    (sparse, files): (SparseWriter, Option<SparseWriter>),
    previous: &Previous,
    options: &IndexOptions,
    embedder: &'static dyn Embedder,
) -> Result<FinishedLists> {
    let graph_options = GraphOptions {
        analyzer: options.analyzer,
        ..GraphOptions::default()
    };
    let build_graph = options.builds_graph(previous.manifest.as_ref());
    let old_dir = previous.parts.as_ref().map(|parts| parts.base().dir());
    let setting = options.dense_index_setting(previous.manifest.as_ref());
    let (sparse_built, graph_built, dense_built) = std::thread::scope(|scope| {
        let graph = scope.spawn(|| {
            build_graph
                .then(|| write_graph(gen_dir, built, old_dir, graph_options))
                .transpose()
        });
        let dense = scope.spawn(|| write_dense_index(gen_dir, built, setting, embedder));
        let sparse = sparse.finish(&built.ords);
        let files = files
            .map(|files| files.finish_expecting(&built.ords, built.files_with_chunks()))
            .transpose();
        let graph = graph
            .join()
            .unwrap_or_else(|_| bail!("the graph builder panicked"));
        let dense = dense
            .join()
            .unwrap_or_else(|_| bail!("the dense index builder panicked"));
        (sparse.and_then(|s| Ok((s, files?))), graph, dense)
    });
    let (dense_index, dense_index_time) = dense_built?;
    let (sparse, files) = sparse_built?;
    Ok(FinishedLists {
        sparse,
        files,
        graph: graph_built?,
        dense_index,
        dense_index_time,
    })
}

/// Writes the sign codes of `built`'s vectors (already in `gen_dir`, by
/// `embedder`) when `setting` asks for them at their count; returns what
/// the manifest records and the time taken.
fn write_dense_index(
    gen_dir: &Path,
    built: &Built,
    setting: DenseIndexSetting,
    embedder: &'static dyn Embedder,
) -> Result<(DenseIndexManifest, Option<Duration>)> {
    let mut manifest = DenseIndexManifest {
        setting,
        rows: None,
    };
    if !setting.builds(built.table.chunks.len()) {
        return Ok((manifest, None));
    }
    let started = Instant::now();
    codes::write(gen_dir, built.table.chunks.len(), embedder.info().dim)?;
    manifest.rows = Some(built.table.chunks.len() as u64);
    Ok((manifest, Some(started.elapsed())))
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
