//! `meta.json`: the versioned manifest that makes a generation visible.
//!
//! It is written last and atomically; everything a reader needs to trust the
//! generation is here: the format version (checked before anything else is
//! parsed), the settings the index was built with, and the size and CRC-32
//! of every generation file. The per-file table used for incremental
//! re-indexing (size, mtime, hash) lives in the generation's chunk table
//! instead: on a 62k-file corpus it is megabytes of JSON that every search
//! would otherwise parse.

use std::ops::RangeInclusive;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::corpus::chunk::ChunkOptions;
use crate::corpus::walk::WalkOptions;
use crate::embed::{EmbedderInfo, FusionDefaults};
use crate::graph::GraphOptions;
use crate::lists::sparse::{Bm25Params, SparseStats};
use crate::text::tokenize::Analyzer;

use super::checks::Checksums;
use super::{MANIFEST_FILE, atomic, bounded, damaged};

/// The on-disk format this build writes (13 added the graph, `graph.bin`;
/// 14 the sparse list's uids, so a re-index updates it instead of
/// rebuilding it; 15 made its ordinal map per segment document and
/// recorded the uids given out; 16 recorded the dense list's feedback with
/// the fusion defaults).
pub const FORMAT_VERSION: u32 = 16;

/// The on-disk formats this build can read.
pub const SUPPORTED_FORMAT_VERSIONS: RangeInclusive<u32> = 16..=16;

/// Largest `meta.json` (or a cache's `cache.json`) read: a manifest is a
/// few kB, its checksum table one line per generation file.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// The manifest of one complete index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// On-disk format; readers refuse versions outside [`SUPPORTED_FORMAT_VERSIONS`].
    pub format_version: u32,
    /// Number of the live generation folder (`gen-N`).
    pub generation: u64,
    /// Version of memidx that wrote the index.
    pub tool_version: String,
    /// When the index was written, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// The indexed folder, absolute, as it was when indexed.
    pub root: String,
    /// Ignore rules and globs the walk used.
    pub walk: WalkOptions,
    /// Tokenizer settings for the sparse list (queries must use the same).
    pub tokenizer: Analyzer,
    /// BM25 parameters of the sparse list.
    pub bm25: Bm25Params,
    /// Chunker settings (a change forces every file to be re-chunked).
    pub chunker: ChunkOptions,
    /// The model that embedded the chunks (queries must use the same).
    pub embedder: EmbedderInfo,
    /// The model folder given with `--model` (absolute), or null for the
    /// bundled model.
    pub model_dir: Option<String>,
    /// Fusion weights and k that searches use unless told otherwise.
    pub fusion: FusionDefaults,
    /// The sparse list's live documents and their tokens (BM25's N and
    /// average length).
    pub sparse: SparseStats,
    /// The graph list's build settings and default weight; `None` for an
    /// index built without the graph.
    #[serde(default)]
    pub graph: Option<GraphManifest>,
    /// Totals of the last run.
    pub counts: Counts,
    /// Size and CRC-32 of every generation file, by its path inside the
    /// generation folder.
    pub checksums: Checksums,
}

/// What the manifest records about the graph of the generation (`graph.bin`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphManifest {
    /// Format of `graph.bin` ([`crate::graph::tables::FORMAT_VERSION`]).
    pub format_version: u32,
    /// The settings it was built with.
    pub options: GraphOptions,
    /// The graph list's fusion weight unless a search sets one.
    pub weight: f64,
    /// Entities kept in the graph.
    pub entities: usize,
    /// Communities, all levels.
    pub communities: usize,
}

/// Totals shown by the index summary and `status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Files indexed.
    pub files: usize,
    /// Chunks in the index.
    pub chunks: usize,
    /// Files skipped with a warning in the run that wrote this index.
    pub skipped: usize,
}

/// Only the version field, parsed first so that a newer layout is reported
/// as a version problem rather than as a parse error.
#[derive(Deserialize)]
struct VersionProbe {
    format_version: u32,
}

impl Manifest {
    /// Reads `index_dir/meta.json`; `Ok(None)` when there is none yet.
    ///
    /// A manifest that is not a regular file of at most
    /// [`MAX_MANIFEST_BYTES`] or does not parse, or whose format version
    /// this build cannot read, is an error that names the file and the fix.
    pub fn read(index_dir: &Path) -> Result<Option<Self>> {
        let path = index_dir.join(MANIFEST_FILE);
        let bytes = match bounded::read_regular(&path, MAX_MANIFEST_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.is_not_found() => return Ok(None),
            Err(err) => bail!(damaged(&path, &err.to_string())),
        };
        let damaged = || damaged(&path, "does not parse");
        let probe: VersionProbe = serde_json::from_slice(&bytes).with_context(damaged)?;
        if !SUPPORTED_FORMAT_VERSIONS.contains(&probe.format_version) {
            bail!(
                "index format version {} in {} is not supported (this memidx reads {}..={}); rebuild it with 'memidx index'",
                probe.format_version,
                path.display(),
                SUPPORTED_FORMAT_VERSIONS.start(),
                SUPPORTED_FORMAT_VERSIONS.end()
            );
        }
        serde_json::from_slice(&bytes)
            .with_context(damaged)
            .map(Some)
    }

    /// Atomically replaces `index_dir/meta.json` with this manifest.
    pub fn write(&self, index_dir: &Path) -> Result<()> {
        let mut json = serde_json::to_vec_pretty(self)?;
        json.push(b'\n');
        atomic::write_atomic(&index_dir.join(MANIFEST_FILE), &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::checks::FileCheck;
    use std::fs;

    fn sample() -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            generation: 3,
            tool_version: "0.1.0".into(),
            created_unix_ms: 1,
            root: "/docs".into(),
            walk: WalkOptions::default(),
            tokenizer: Analyzer::default(),
            bm25: Bm25Params::default(),
            chunker: ChunkOptions::default(),
            embedder: EmbedderInfo {
                id: "m".into(),
                dim: 4,
                fingerprint: "f".into(),
            },
            model_dir: None,
            fusion: FusionDefaults {
                sparse_weight: 1.0,
                dense_weight: 0.5,
                rrf_k: 60.0,
                window: None,
                dense_feedback: 3,
            },
            sparse: SparseStats {
                docs: 2,
                tokens: 9,
                uids: 3,
            },
            graph: Some(GraphManifest {
                format_version: crate::graph::tables::FORMAT_VERSION,
                options: GraphOptions::default(),
                weight: 0.5,
                entities: 3,
                communities: 1,
            }),
            counts: Counts {
                files: 1,
                chunks: 2,
                skipped: 0,
            },
            checksums: Checksums::from([(
                "chunks.bin".to_string(),
                FileCheck {
                    size: 1,
                    crc32: 42,
                    mtime_ns: 7,
                },
            )]),
        }
    }

    #[test]
    fn round_trips_and_missing_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Manifest::read(dir.path()).unwrap().is_none());
        sample().write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(sample()));
    }

    #[test]
    fn unknown_version_is_refused_with_the_supported_range() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), r#"{"format_version": 99}"#).unwrap();
        let err = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("format version 99"), "{err}");
        let range = format!(
            "{}..={}",
            SUPPORTED_FORMAT_VERSIONS.start(),
            SUPPORTED_FORMAT_VERSIONS.end()
        );
        assert!(err.contains(&range), "{err}");
    }

    #[test]
    fn truncated_manifest_is_reported_as_damaged() {
        let dir = tempfile::tempdir().unwrap();
        sample().write(dir.path()).unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let err = format!("{:#}", Manifest::read(dir.path()).unwrap_err());
        assert!(err.contains("index is damaged"), "{err}");
    }
}
