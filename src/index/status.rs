//! What `memidx status` reports: what is indexed, with which model and
//! settings, how big it is, and what changed on disk since (found by
//! walking the root as the index run did). Printed by the human and JSON
//! printers as it is.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::Index;
use super::manifest::{Counts, SkippedFile, skipped_stamps};
use crate::corpus::Skipped;
use crate::corpus::date::{DateSource, DocDate};
use crate::corpus::walk::walk;
use crate::embed::{EmbedderInfo, ModelKind};
use crate::fusion::{FusionDefaults, FusionSource};
use crate::lists::dense::cells::CELLS_FILE;
use crate::lists::dense::codes::{
    AUTO_MIN_ROWS, AUTO_SEARCH_MIN_ROWS, CODES_FILE, DenseIndexSetting, RESCORE_PER_WINDOW,
    default_rescored,
};
use crate::lists::sparse::Bm25Params;
use crate::store::MANIFEST_FILE;
use crate::store::generation::{ChunkOrd, FileEntry};

/// Everything `status` reports.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    /// The index folder.
    pub index: String,
    /// The indexed folder.
    pub root: String,
    /// The newest live generation (the delta's, when there is one).
    pub generation: u64,
    /// The delta part appended after the base, or `None` for a base alone.
    pub delta: Option<DeltaStatus>,
    /// On-disk format.
    pub format_version: u32,
    /// memidx version that wrote it.
    pub tool_version: String,
    /// When it was written (RFC 3339, UTC).
    pub built: String,
    /// Files, chunks and skipped files.
    pub counts: Counts,
    /// The files and folders the last run skipped, each with why.
    pub skipped: Vec<Skipped>,
    /// The embedding model.
    pub embedder: EmbedderInfo,
    /// The OpenAI-compatible endpoint that runs it (`--embed-url`); absent
    /// for a local model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedder_url: Option<String>,
    /// Fusion defaults searches use.
    pub fusion: FusionDefaults,
    /// Where they come from: this build's defaults or `eval --save`.
    pub fusion_source: FusionSource,
    /// The graph list, or `None` for an index built without it.
    pub graph: Option<GraphStatus>,
    /// The dense list's approximate index.
    pub dense_index: DenseIndexStatus,
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// Target chunk size in tokens.
    pub chunk_tokens: usize,
    /// Bytes of index files (manifest included).
    pub index_bytes: u64,
    /// Bytes of the indexed markdown.
    pub markdown_bytes: u64,
    /// The files' document dates: their range and sources.
    pub dates: DatesStatus,
    /// The metadata keys the files carry, for filters: each with its most
    /// common values.
    pub metadata: Vec<MetadataKey>,
    /// Files changed on disk since indexing.
    pub stale: Stale,
    /// With `--verify`: the damaged files (empty when all are intact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<Vec<String>>,
    /// With `--verify`: how the chunks were embedded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbeddingStatus>,
}

/// The delta part of an index (see [`crate::store::parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DeltaStatus {
    /// Its generation folder.
    pub generation: u64,
    /// The base's generation folder.
    pub base_generation: u64,
    /// Files it holds.
    pub files: usize,
    /// Chunks it holds.
    pub chunks: usize,
    /// Files of the base it buries.
    pub buried_files: usize,
}

/// How the chunks were embedded: how much of a chunk the model reads, and
/// how many chunks are longer (their vectors stand for their start alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EmbeddingStatus {
    /// The most word pieces of a chunk the model reads.
    pub window: usize,
    /// Chunks the model read only up to its window, counted by its
    /// tokenizer; `None` for a model that cannot tell without embedding
    /// (the bundled static model).
    pub chunks_cut: Option<usize>,
}

impl EmbeddingStatus {
    /// Counts `index`'s chunks the model that built it reads only in part
    /// (it loads the model, and tokenizes every chunk: a `--verify` cost);
    /// `None` for a model that does not say what it reads (a remote one),
    /// an error when that model cannot be loaded or has changed.
    pub fn of(index: &Index) -> Result<Option<Self>> {
        let embedder = super::built_embedder(index.manifest())?;
        let Some(window) = embedder.window() else {
            return Ok(None);
        };
        let parts = index.parts();
        let chunks_cut = match embedder.kind() {
            ModelKind::Static => None,
            ModelKind::Transformer => {
                let mut cut = 0;
                let live = (0..parts.len() as ChunkOrd).filter(|&ord| parts.is_live(ord));
                for ord in live {
                    let text = parts.chunk(ord)?.searchable_text();
                    cut += usize::from(embedder.cuts(&text) == Some(true));
                }
                Some(cut)
            }
        };
        Ok(Some(Self { window, chunks_cut }))
    }
}

/// The dense list's approximate index (the rows' sign codes): when index
/// runs write it, and the one this generation has.
#[derive(Debug, Clone, Serialize)]
pub struct DenseIndexStatus {
    /// When runs write it: `auto`, `always` or `never`.
    pub setting: DenseIndexSetting,
    /// Chunks from which `auto` writes it.
    pub auto_min_chunks: usize,
    /// Rows a search must cover (with every index searched together) for
    /// `auto`'s codes to serve it; below, it scans every vector.
    pub auto_search_min_chunks: usize,
    /// The rows its codes cover, or `None` when the index has none.
    pub rows: Option<u64>,
    /// A search rescores at least this many rows per window chunk…
    pub rescore_per_window: usize,
    /// …and at least this many rows, whatever the window (`None` without
    /// codes).
    pub rescore_at_least: Option<usize>,
    /// Bytes of the codes' file (0 without codes).
    pub bytes: u64,
    /// Bytes of the cells' file, which orders the codes (`None` for codes
    /// in chunk order, or none).
    pub cells_bytes: Option<u64>,
}

/// What the index's graph holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GraphStatus {
    /// Entities kept in the graph.
    pub entities: usize,
    /// Communities, all levels.
    pub communities: usize,
    /// The graph list's weight in the default lists (0: off by default).
    pub weight: f64,
}

/// The indexed files' document dates.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DatesStatus {
    /// The oldest file's date (`None` without files).
    pub oldest: Option<DatedFile>,
    /// The newest file's date.
    pub newest: Option<DatedFile>,
    /// How many files took their date from each source (`front matter`,
    /// `path`, `mtime`).
    pub files_by_source: BTreeMap<&'static str, usize>,
}

/// One file's document date.
#[derive(Debug, Clone, Serialize)]
pub struct DatedFile {
    /// The file, relative to the root.
    pub path: String,
    /// Its date, RFC 3339 UTC.
    pub date: String,
    /// Where the date came from.
    pub from: &'static str,
}

impl DatesStatus {
    /// The dates of `files`; ties of oldest and newest go to the first path.
    fn of(files: &[FileEntry]) -> Self {
        let mut files_by_source: BTreeMap<&'static str, usize> =
            DateSource::ALL.iter().map(|s| (s.name(), 0)).collect();
        let mut oldest: Option<(&FileEntry, DocDate)> = None;
        let mut newest: Option<(&FileEntry, DocDate)> = None;
        for file in files {
            let date = file.date();
            *files_by_source.entry(date.source.name()).or_default() += 1;
            if oldest.is_none_or(|(_, o)| date.seconds < o.seconds) {
                oldest = Some((file, date));
            }
            if newest.is_none_or(|(_, n)| date.seconds > n.seconds) {
                newest = Some((file, date));
            }
        }
        let shown = |(file, date): (&FileEntry, DocDate)| DatedFile {
            path: file.path.clone(),
            date: date.rfc3339(),
            from: date.source.name(),
        };
        Self {
            oldest: oldest.map(shown),
            newest: newest.map(shown),
            files_by_source,
        }
    }
}

/// How many of a key's most common values [`MetadataKey`] lists.
pub const LISTED_VALUES: usize = 5;

/// A metadata key the indexed files carry (front matter, and `path`,
/// `dir` and `title`, which every file has): what a filter can name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetadataKey {
    /// The key.
    pub key: String,
    /// How many files carry it.
    pub files: usize,
    /// How many distinct values it takes.
    pub distinct: usize,
    /// Its most common values (at most [`LISTED_VALUES`]), most files
    /// first, ties in value order; empty when there are more than that and
    /// each belongs to one file alone (paths, titles), where a filter names
    /// a file rather than a group of them.
    pub values: Vec<ValueCount>,
}

/// One value of a metadata key and how many files hold it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValueCount {
    /// The value.
    pub value: String,
    /// Files holding it.
    pub files: usize,
}

impl MetadataKey {
    /// The keys of `files`, in key order.
    fn of(files: &[FileEntry]) -> Vec<Self> {
        let mut keys: BTreeMap<&str, (usize, BTreeMap<&str, usize>)> = BTreeMap::new();
        for file in files {
            for (key, values) in &file.metadata {
                let (holders, counts) = keys.entry(key).or_default();
                *holders += 1;
                for value in values {
                    *counts.entry(value).or_default() += 1;
                }
            }
        }
        keys.into_iter()
            .map(|(key, (files, counts))| {
                let mut values: Vec<ValueCount> = (counts.iter())
                    .map(|(value, files)| ValueCount {
                        value: value.to_string(),
                        files: *files,
                    })
                    .collect();
                // Stable: ties stay in value order.
                values.sort_by_key(|v| std::cmp::Reverse(v.files));
                if values.len() > LISTED_VALUES && values[0].files < 2 {
                    values.clear();
                }
                values.truncate(LISTED_VALUES);
                Self {
                    key: key.to_string(),
                    files,
                    distinct: counts.len(),
                    values,
                }
            })
            .collect()
    }
}

/// Files whose disk state differs from the index.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stale {
    /// Indexed files whose size or modification time changed.
    pub changed: Vec<String>,
    /// Markdown files not in the index.
    pub added: Vec<String>,
    /// Indexed files no longer on disk.
    pub deleted: Vec<String>,
}

impl Stale {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.deleted.is_empty()
    }
}

impl StatusReport {
    /// The report on `index`; `damaged` and `embedding` are what `--verify`
    /// found, if run.
    pub fn of(
        index: &Index,
        damaged: Option<Vec<String>>,
        embedding: Option<EmbeddingStatus>,
    ) -> Result<Self> {
        let (index_dir, manifest) = (index.dir(), index.manifest());
        let files: &Vec<_> = &(index.parts().live_files()?.into_iter())
            .map(|(_, file)| file)
            .collect();
        let walked = walk(Path::new(&manifest.root), &manifest.walk)?;
        let mut stale = Stale::default();
        // A file the last run skipped (too large, binary, not UTF-8) and
        // that has not changed since is not new: the next run skips it
        // again, with the same warning.
        let skipped = skipped_stamps(&manifest.skipped);
        let mut on_disk = walked
            .files
            .iter()
            .filter(|f| skipped.get(f.rel_path.as_str()) != Some(&(f.size, f.mtime_ns)))
            .peekable();
        // Both lists are sorted by path: merge them.
        for entry in files {
            while let Some(file) = on_disk.next_if(|f| f.rel_path < entry.path) {
                stale.added.push(file.rel_path.clone());
            }
            match on_disk.next_if(|f| f.rel_path == entry.path) {
                Some(file) if !entry.stamp.matches(file.size, file.mtime_ns) => {
                    stale.changed.push(entry.path.clone())
                }
                Some(_) => {}
                None => stale.deleted.push(entry.path.clone()),
            }
        }
        stale.added.extend(on_disk.map(|f| f.rel_path.clone()));
        let manifest_bytes =
            std::fs::metadata(index_dir.join(MANIFEST_FILE)).map_or(0, |m| m.len());
        Ok(Self {
            index: index_dir.display().to_string(),
            root: manifest.root.clone(),
            generation: manifest.latest_generation(),
            delta: manifest.delta.as_ref().map(|d| DeltaStatus {
                generation: d.generation,
                base_generation: manifest.generation,
                files: d.files,
                chunks: d.chunks,
                buried_files: d.buried_files,
            }),
            format_version: manifest.format_version,
            tool_version: manifest.tool_version.clone(),
            built: jiff::Timestamp::from_millisecond(manifest.created_unix_ms as i64).map_or_else(
                |_| "unknown".to_string(),
                |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            ),
            counts: manifest.counts,
            skipped: manifest.skipped.iter().map(SkippedFile::skipped).collect(),
            embedder: manifest.embedder.clone(),
            embedder_url: manifest.model_endpoint.as_ref().map(|e| e.url.clone()),
            fusion: manifest.fusion,
            fusion_source: manifest.fusion_source,
            graph: manifest.graph.map(|g| GraphStatus {
                entities: g.entities,
                communities: g.communities,
                weight: g.weight,
            }),
            dense_index: DenseIndexStatus {
                setting: manifest.dense_index.setting,
                auto_min_chunks: AUTO_MIN_ROWS,
                auto_search_min_chunks: AUTO_SEARCH_MIN_ROWS,
                rows: manifest.sign_code_rows(),
                rescore_per_window: RESCORE_PER_WINDOW,
                rescore_at_least: manifest
                    .sign_code_rows()
                    .map(|rows| default_rescored(0, rows as usize)),
                bytes: manifest.checksums.get(CODES_FILE).map_or(0, |c| c.size),
                cells_bytes: manifest.checksums.get(CELLS_FILE).map(|c| c.size),
            },
            bm25: manifest.bm25,
            chunk_tokens: manifest.chunker.budget_tokens,
            index_bytes: manifest_bytes
                + (manifest.parts().iter())
                    .flat_map(|(_, checks)| checks.values())
                    .map(|c| c.size)
                    .sum::<u64>(),
            markdown_bytes: files.iter().map(|f| f.stamp.size).sum(),
            dates: DatesStatus::of(files),
            metadata: MetadataKey::of(files),
            stale,
            damaged,
            embedding,
        })
    }
}
