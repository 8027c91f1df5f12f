//! `meta.json`: the versioned manifest that makes a generation visible.
//!
//! It is written last and atomically; everything a reader needs to trust the
//! generation is here: the format version (checked before anything else is
//! parsed), the settings the index was built with, and the size and CRC-32
//! of every generation file. Its own last field, `meta_crc32`, is the CRC-32
//! of every byte before it, so a flipped bit is named as damage before any
//! value is used; each value is then checked against the bounds a search
//! request must keep (an out-of-bounds one is damage naming the field).
//!
//! The per-file table used for incremental re-indexing (size, mtime, hash)
//! lives in the generation's chunk table instead: on a 62k-file corpus it
//! is megabytes of JSON that every search would otherwise parse.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::corpus::Skipped;
use crate::corpus::chunk::ChunkOptions;
use crate::corpus::walk::WalkOptions;
use crate::embed::endpoint::EndpointRecord;
use crate::embed::{EmbedderInfo, Known, ModelFiles, ModelSource};
use crate::fusion::{FusionDefaults, FusionMethod, FusionSource};
use crate::lists::graph::GraphOptions;
use crate::lists::sparse::fields::{Fields, MAX_FIELD_WEIGHT};
use crate::lists::sparse::{Bm25Params, SparseStats};
use crate::text::tokenize::Analyzer;

use crate::error::IndexError;
use crate::fusion;
use crate::lists::dense;
use crate::lists::dense::codes::{CODES_FILE, DenseIndexSetting};
use crate::store::checks::Checksums;
use crate::store::{MANIFEST_FILE, atomic, bounded, damaged};

/// The on-disk format this build writes (13 added the graph, `graph.bin`;
/// 14 the sparse list's uids, so a re-index updates it instead of
/// rebuilding it; 15 made its ordinal map per segment document and
/// recorded the uids given out; 16 recorded the dense list's feedback with
/// the fusion defaults; 17 sealed `meta.json` with its own CRC-32,
/// `meta_crc32`; 18 recorded where the fusion defaults come from,
/// `fusion_source`; 19 stored each file's document date, `dates.bin`, and
/// the metadata value index, `metadata.bin`, which older generations lack
/// and work out from their file entries; 20 the rows' sign codes for the
/// dense list, `codes.b1`, with their setting, `dense_index`, which older
/// generations lack and scan without; 21 file entries without the
/// metadata keys their path gives, `path` and `dir`, which decoding puts
/// back and older entries still hold; 22 the sign codes in blocks of 32
/// rows, byte by byte, `codes.b32`, in place of 20 and 21's row-by-row
/// `codes.b1`, which this build leaves unread and scans without; 23 where
/// the index folder lies in the indexed folder, `index_in_root`, so that a
/// copied or moved folder's index serves the folder it is in; 24 the
/// tokenizer's Unicode rules, `tokenizer.normalize` and `tokenizer.fold`,
/// and chunks cut by [`CHUNKS_FORMAT_VERSION`]'s rules; 25 the sparse
/// list's term dictionaries as sorted string tables, see
/// [`SPARSE_FORMAT_VERSION`]; 26 the delta part, `delta`, appended after
/// the base generation with the tombstones of the files it replaces; 27
/// the files' paths and stamps in columns of their own, `paths.bin` and
/// `stamps.bin`, which older generations lack and read from `files.bin`;
/// 28 the dense list's cells, `cells.bin`, with the codes in their order,
/// which older generations lack and keep in row order; 29 the static
/// model's word floor, `word_floor`, and the stamps of the model folder's
/// files, `model_files`, which older manifests lack (a search then
/// measures the floor and hashes the model); 30 the embedding endpoint,
/// `model_endpoint`, of an index embedded through one).
pub const FORMAT_VERSION: u32 = 30;

/// The first format whose chunks are cut the way this build cuts them
/// (headings without body kept, merged chunks labelled by every section):
/// a re-index of an older index cuts every file anew.
pub const CHUNKS_FORMAT_VERSION: u32 = 24;

/// The first format whose sparse list this build reads: tantivy's term
/// dictionaries became sorted string tables, read (and checked) a block at
/// a time, in place of an FST read whole. A search refuses an older index;
/// `memidx index` upgrades it, keeping its chunks and vectors and building
/// the sparse list anew.
pub const SPARSE_FORMAT_VERSION: u32 = 25;

/// The on-disk formats this build can read (searched from
/// [`SPARSE_FORMAT_VERSION`] on; older ones only upgraded).
pub const SUPPORTED_FORMAT_VERSIONS: RangeInclusive<u32> = 16..=FORMAT_VERSION;

/// The last format without `fusion_source`.
const UNSOURCED_FORMAT_VERSION: u32 = 17;

/// The fusion defaults that builds writing formats 16 and 17 gave a static
/// and a transformer model: an index of those formats holding other values
/// had them saved by `eval --save`.
const UNSOURCED_BUILTIN_DEFAULTS: [FusionDefaults; 2] = [
    FusionDefaults {
        method: FusionMethod::Rrf,
        sparse_weight: 1.0,
        dense_weight: 0.3,
        file_weight: 0.0,
        rrf_k: 60.0,
        window: None,
        dense_feedback: 3,
    },
    FusionDefaults {
        method: FusionMethod::Rrf,
        sparse_weight: 1.0,
        dense_weight: 1.0,
        file_weight: 0.0,
        rrf_k: 60.0,
        window: None,
        dense_feedback: 3,
    },
];

/// The last format whose `meta.json` has no `meta_crc32` (its generation
/// files are format 17's, so such an index stays readable; the next
/// `memidx index` writes format 17).
const UNSEALED_FORMAT_VERSION: u32 = 16;

/// Largest `meta.json` (or a cache's `cache.json`) read: a manifest is a
/// few kB, its checksum table one line per generation file.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// The name of `meta.json`'s last field, the CRC-32 of the bytes before it.
const SEAL_FIELD: &str = "meta_crc32";

/// The manifest of one complete index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// On-disk format; readers refuse versions outside [`SUPPORTED_FORMAT_VERSIONS`].
    pub format_version: u32,
    /// Number of the live base generation folder (`gen-N`).
    pub generation: u64,
    /// Version of memidx that wrote the index.
    pub tool_version: String,
    /// When the index was written, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// The indexed folder, absolute, as it was when indexed.
    pub root: String,
    /// The index folder's path inside `root` (`.memidx`) when it was
    /// there: an index found elsewhere at that path's end was copied or
    /// moved with its folder, and serves the folder it is in now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_in_root: Option<String>,
    /// Ignore rules and globs the walk used.
    pub walk: WalkOptions,
    /// Tokenizer settings for the sparse list (queries must use the same).
    pub tokenizer: Analyzer,
    /// BM25 parameters of the sparse list.
    pub bm25: Bm25Params,
    /// How often each field of a chunk counts in its sparse document
    /// (absent before they were weighed: the searchable text alone).
    #[serde(default = "crate::lists::sparse::fields::legacy")]
    pub sparse_fields: Fields,
    /// Whether each generation holds the file list's index (absent before
    /// it was built: none; see [`crate::lists::files`]).
    #[serde(default)]
    pub file_list: bool,
    /// The dense list's noise floor ([`crate::lists::dense::floor`]) over
    /// every row of the index, measured when it was written so that no
    /// search embeds the probes; `None` for a static model, an index
    /// without rows, or one written before it was recorded (a search
    /// measures it then).
    #[serde(default)]
    pub noise_floor: Option<f32>,
    /// The static model's word floor ([`crate::lists::dense::floor`]),
    /// recorded when the index was written so that no search splits the
    /// made-up words; `None` for a transformer, or an index written before
    /// it was recorded (a search measures it then).
    #[serde(default)]
    pub word_floor: Option<f32>,
    /// Chunker settings (a change forces every file to be re-chunked).
    pub chunker: ChunkOptions,
    /// The model that embedded the chunks (queries must use the same).
    pub embedder: EmbedderInfo,
    /// The model folder given with `--model` (absolute), or null for the
    /// bundled model.
    pub model_dir: Option<String>,
    /// The stamps of the model folder's files as the run found them before
    /// hashing them ([`crate::embed::stamp`]): a search that finds them
    /// unchanged takes `embedder.fingerprint` instead of hashing the model
    /// again. Absent for the bundled model, for files changed just before
    /// the run, and before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_files: Option<ModelFiles>,
    /// The OpenAI-compatible endpoint that embedded the chunks and embeds
    /// the queries (`--embed-url`), or absent for a local model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_endpoint: Option<EndpointRecord>,
    /// Fusion weights and k that searches use unless told otherwise.
    pub fusion: FusionDefaults,
    /// Where `fusion` (and the graph's weight) come from. Absent before
    /// format 18, where it is inferred from the values (see [`Manifest::read`]).
    #[serde(default)]
    pub fusion_source: FusionSource,
    /// The sparse list's live documents and their tokens (BM25's N and
    /// average length).
    pub sparse: SparseStats,
    /// The graph list's build settings and default weight; `None` for an
    /// index built without the graph.
    #[serde(default)]
    pub graph: Option<GraphManifest>,
    /// The dense list's approximate index: when runs build it, and the shape
    /// of the one this generation has. Absent before format 20 (no index).
    #[serde(default)]
    pub dense_index: DenseIndexManifest,
    /// Totals of the last run.
    pub counts: Counts,
    /// The files and folders the last run skipped, so that a run over the
    /// same unchanged corpus can tell nothing changed (and warn again).
    #[serde(default)]
    pub skipped: Vec<SkippedFile>,
    /// Size and CRC-32 of every file of the base generation, by its path
    /// inside the generation folder.
    pub checksums: Checksums,
    /// The delta part appended after the base, when a run wrote one: the
    /// files changed since the base, in a generation of their own, with
    /// the tombstones of the base's versions (see
    /// [`crate::store::parts`]). Absent before format 26.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<DeltaManifest>,
}

/// What the manifest records about a delta part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeltaManifest {
    /// Number of its generation folder (`gen-N`).
    pub generation: u64,
    /// Files it holds.
    pub files: usize,
    /// Chunks it holds.
    pub chunks: usize,
    /// Files of the base it buries.
    pub buried_files: usize,
    /// The base's documents as it was written (before any burial): what
    /// the live statistics are worked out from.
    pub base_sparse: SparseStats,
    /// The base's chunks it buries.
    pub buried_chunks: u64,
    /// Their tokens.
    pub buried_tokens: u64,
    /// Size and CRC-32 of every file of its generation.
    pub checksums: Checksums,
}

/// What the manifest records about the dense list's approximate index,
/// the rows' sign codes (`codes.b32`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseIndexManifest {
    /// When index runs build it (`memidx index --dense-index`).
    pub setting: DenseIndexSetting,
    /// The rows the generation's codes cover; `None` when it has none.
    pub rows: Option<u64>,
}

/// What the manifest records about the graph of the generation (`graph.bin`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphManifest {
    /// Format of `graph.bin` ([`crate::lists::graph::tables::FORMAT_VERSION`]).
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

/// A file or folder an index run skipped, with the reason, and the size and
/// modification time it had (none for what the walk could not enter).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkippedFile {
    /// Path relative to the root.
    pub path: String,
    /// Why it was skipped.
    pub reason: String,
    /// `(size, mtime in nanoseconds)` when it was a file the walk listed.
    pub stamp: Option<(u64, i128)>,
}

impl SkippedFile {
    /// The skip as a run reports it: path and reason.
    pub fn skipped(&self) -> Skipped {
        Skipped {
            path: self.path.clone(),
            reason: self.reason.clone(),
        }
    }
}

/// The recorded skips of walked files by path, each with the
/// `(size, mtime in nanoseconds)` the file had: a file found with that same
/// stamp would be skipped again, for the same reason.
pub fn skipped_stamps(skipped: &[SkippedFile]) -> HashMap<&str, (u64, i128)> {
    skipped
        .iter()
        .filter_map(|s| Some((s.path.as_str(), s.stamp?)))
        .collect()
}

/// Only the version and seal fields, parsed first so that a newer layout is
/// reported as a version problem rather than as a parse error.
#[derive(Deserialize)]
struct VersionProbe {
    format_version: u32,
    meta_crc32: Option<u32>,
}

/// The end of a sealed `meta.json`, after the manifest's last value.
fn seal_suffix(crc: u32) -> String {
    format!(",\n  \"{SEAL_FIELD}\": {crc}\n}}\n")
}

impl Manifest {
    /// The model the index was embedded with, for a run that embeds with
    /// it again.
    pub fn model_source(&self) -> ModelSource {
        match (&self.model_endpoint, &self.model_dir) {
            (Some(record), _) => ModelSource::Endpoint(record.endpoint()),
            (None, Some(dir)) => ModelSource::Folder(PathBuf::from(dir)),
            (None, None) => ModelSource::Bundled,
        }
    }

    /// What the index recorded of its model, for a run loading it again.
    pub fn known_model(&self) -> Known<'_> {
        Known {
            info: Some(&self.embedder),
            files: self.model_files.as_ref(),
            endpoint: self.model_endpoint.as_ref(),
        }
    }

    /// The rows the generation's sign codes cover, `None` when it has none
    /// this build reads (formats 20 and 21 kept them in `codes.b1`: such a
    /// generation's searches scan every vector).
    pub fn sign_code_rows(&self) -> Option<u64> {
        // The base's codes; a delta's rows are scanned whole.
        self.dense_index
            .rows
            .filter(|_| self.checksums.contains_key(CODES_FILE))
    }

    /// The newest generation it names: its delta's, else its base's (each
    /// run that writes one numbers it after the last).
    pub fn latest_generation(&self) -> u64 {
        self.delta
            .as_ref()
            .map_or(self.generation, |d| d.generation)
    }

    /// The generations of its parts, oldest (the base) first.
    pub fn generations(&self) -> Vec<u64> {
        self.parts().into_iter().map(|(g, _)| g).collect()
    }

    /// The generations of its parts, oldest (the base) first, each with
    /// the checks of its files.
    pub fn parts(&self) -> Vec<(u64, &Checksums)> {
        let delta = self.delta.as_ref().map(|d| (d.generation, &d.checksums));
        std::iter::once((self.generation, &self.checksums))
            .chain(delta)
            .collect()
    }

    /// Reads `index_dir/meta.json`; `Ok(None)` when there is none yet.
    ///
    /// A manifest that is not a regular file of at most
    /// [`MAX_MANIFEST_BYTES`], does not parse, fails its CRC-32 or holds a
    /// value out of bounds is damage named with the fix; one whose format
    /// version this build cannot read is refused with the supported range.
    pub fn read(index_dir: &Path) -> Result<Option<Self>> {
        let path = index_dir.join(MANIFEST_FILE);
        let bytes = match bounded::read_regular(&path, MAX_MANIFEST_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.is_not_found() => return Ok(None),
            Err(err) => bail!(damaged(&path, &err.to_string())),
        };
        let damaged = |what: &str| anyhow!(damaged(&path, what));
        let probe: VersionProbe =
            serde_json::from_slice(&bytes).map_err(|_| damaged("does not parse"))?;
        if !SUPPORTED_FORMAT_VERSIONS.contains(&probe.format_version) {
            bail!(IndexError::Unsupported {
                path,
                found: probe.format_version,
                oldest: *SUPPORTED_FORMAT_VERSIONS.start(),
                newest: *SUPPORTED_FORMAT_VERSIONS.end(),
            });
        }
        let json = match probe.meta_crc32 {
            Some(crc) => {
                let head = bytes
                    .strip_suffix(seal_suffix(crc).as_bytes())
                    .filter(|head| crc32fast::hash(head) == crc)
                    .ok_or_else(|| damaged("checksum mismatch"))?;
                [head, &b"\n}"[..]].concat()
            }
            None if probe.format_version == UNSEALED_FORMAT_VERSION => bytes,
            None => return Err(damaged(&format!("has no checksum ({SEAL_FIELD})"))),
        };
        let mut manifest: Self =
            serde_json::from_slice(&json).map_err(|_| damaged("does not parse"))?;
        if probe.format_version <= UNSOURCED_FORMAT_VERSION {
            manifest.fusion_source = manifest.inferred_fusion_source();
        }
        manifest
            .check_bounds()
            .map_err(|err| damaged(&format!("field {err:#}")))?;
        Ok(Some(manifest))
    }

    /// Atomically replaces `index_dir/meta.json` with this manifest, sealed
    /// with the CRC-32 of its bytes (see the module doc) and so recorded as
    /// [`FORMAT_VERSION`] (an older index read and written again, as `eval
    /// --save` does, is read as before: a generation by the files its
    /// checksums list, the optional ones worked out when absent).
    pub fn write(&self, index_dir: &Path) -> Result<()> {
        let current = Self {
            format_version: FORMAT_VERSION,
            ..self.clone()
        };
        let json = serde_json::to_vec_pretty(&current)?;
        let head = json
            .strip_suffix(b"\n}")
            .context("a manifest serializes to a JSON object")?;
        let sealed = [head, seal_suffix(crc32fast::hash(head)).as_bytes()].concat();
        atomic::write_atomic(&index_dir.join(MANIFEST_FILE), &sealed)
    }

    /// Where the fusion defaults of a manifest written before format 18 came
    /// from: saved, unless they are the defaults those builds gave a model
    /// and the graph (if any) has its default weight.
    fn inferred_fusion_source(&self) -> FusionSource {
        let builtin = UNSOURCED_BUILTIN_DEFAULTS.contains(&self.fusion)
            && self
                .graph
                .is_none_or(|g| g.weight == crate::lists::graph::DEFAULT_WEIGHT);
        if builtin {
            FusionSource::Builtin
        } else {
            FusionSource::Saved
        }
    }

    /// Checks every value a search or a re-index uses against the bounds
    /// a search request must keep, and the counts against each other; the
    /// error names the field (`fusion.window: …`).
    fn check_bounds(&self) -> Result<()> {
        let fusion = &self.fusion;
        fusion::check_weight("sparse", fusion.sparse_weight).context("fusion.sparse_weight")?;
        fusion::check_weight("dense", fusion.dense_weight).context("fusion.dense_weight")?;
        fusion::check_weight("file", fusion.file_weight).context("fusion.file_weight")?;
        fusion::check_rrf_k(fusion.rrf_k).context("fusion.rrf_k")?;
        if let Some(window) = fusion.window {
            fusion::check_window(window).context("fusion.window")?;
        }
        dense::check_dense_feedback(fusion.dense_feedback).context("fusion.dense_feedback")?;
        let graph_weight = match &self.graph {
            Some(graph) => fusion::check_weight("graph", graph.weight).context("graph.weight")?,
            None => 0.0,
        };
        ensure!(
            fusion.sparse_weight + fusion.dense_weight + graph_weight > 0.0,
            "fusion: every list has weight 0"
        );
        let Bm25Params { k1, b } = self.bm25;
        ensure!(
            k1.is_finite() && k1 >= 0.0,
            "bm25.k1: k1 must be a finite number ≥ 0, got {k1:?}"
        );
        ensure!(
            (0.0..=1.0).contains(&b),
            "bm25.b: b must be between 0 and 1, got {b:?}"
        );
        let Fields {
            heading,
            title,
            file_name,
        } = self.sparse_fields;
        ensure!(
            [heading, title, file_name]
                .iter()
                .all(|&w| w <= MAX_FIELD_WEIGHT),
            "sparse_fields: a field weight must be at most {MAX_FIELD_WEIGHT}, got {heading}, {title}, {file_name}"
        );
        if let Some(floor) = self.noise_floor {
            // A cosine, with the rounding of int8 rows.
            ensure!(
                floor.is_finite() && floor.abs() <= 1.01,
                "noise_floor: a cosine between -1 and 1, got {floor:?}"
            );
        }
        if let Some(floor) = self.word_floor {
            ensure!(
                (0.0..=1.0).contains(&floor),
                "word_floor: a share between 0 and 1, got {floor:?}"
            );
        }
        ensure!(
            self.embedder.dim > 0,
            "embedder.dim: the vector dimension must be at least 1"
        );
        let SparseStats { docs, tokens, uids } = self.sparse;
        ensure!(
            docs == self.counts.chunks as u64,
            "sparse.docs: {docs} documents for {} chunks",
            self.counts.chunks
        );
        let delta_chunks = self.delta.as_ref().map_or(0, |d| d.chunks as u64);
        ensure!(
            uids + delta_chunks >= docs,
            "sparse.uids: {uids} uids given out for {docs} documents"
        );
        ensure!(
            docs > 0 || tokens == 0,
            "sparse.tokens: {tokens} tokens in no documents"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::checks::FileCheck;
    use std::fs;

    fn sample() -> Manifest {
        Manifest {
            delta: None,
            dense_index: Default::default(),
            format_version: FORMAT_VERSION,
            generation: 3,
            tool_version: "0.1.0".into(),
            created_unix_ms: 1,
            root: "/docs".into(),
            index_in_root: None,
            walk: WalkOptions::default(),
            tokenizer: Analyzer::default(),
            bm25: Bm25Params::default(),
            sparse_fields: Fields::default(),
            file_list: true,
            noise_floor: None,
            word_floor: None,
            chunker: ChunkOptions::default(),
            embedder: EmbedderInfo {
                id: "m".into(),
                dim: 4,
                fingerprint: "f".into(),
            },
            model_dir: None,
            model_files: None,
            model_endpoint: None,
            fusion: FusionDefaults {
                method: FusionMethod::Rrf,
                sparse_weight: 1.0,
                dense_weight: 0.5,
                file_weight: 0.5,
                rrf_k: 60.0,
                window: None,
                dense_feedback: 3,
            },
            fusion_source: FusionSource::Saved,
            sparse: SparseStats {
                docs: 2,
                tokens: 9,
                uids: 3,
            },
            graph: Some(GraphManifest {
                format_version: crate::lists::graph::tables::FORMAT_VERSION,
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
            skipped: Vec::new(),
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
    fn a_flipped_bit_anywhere_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        sample().write(dir.path()).unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        let intact = fs::read(&path).unwrap();
        let text = String::from_utf8(intact.clone()).unwrap();
        let head = text.rfind(",\n  \"meta_crc32\": ").unwrap();
        assert!(text.ends_with(&seal_suffix(crc32fast::hash(&intact[..head]))));
        // One bit of every byte, a different one from byte to byte.
        for at in 0..intact.len() {
            let bit = at * 8 + at % 8;
            let mut bytes = intact.clone();
            bytes[at] ^= 1 << (at % 8);
            fs::write(&path, &bytes).unwrap();
            let err = format!("{:#}", Manifest::read(dir.path()).unwrap_err());
            assert!(
                err.contains("index is damaged") || err.contains("is not supported"),
                "bit {bit}: {err}"
            );
            assert!(!err.contains('\n'), "bit {bit}: {err}");
        }
    }

    #[test]
    fn format_16_may_lack_the_checksum_and_format_17_may_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        let legacy = Manifest {
            format_version: UNSEALED_FORMAT_VERSION,
            ..sample()
        };
        fs::write(&path, serde_json::to_vec_pretty(&legacy).unwrap()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(legacy.clone()));
        // Written again, it is sealed, as the current format.
        legacy.write(dir.path()).unwrap();
        let json = fs::read_to_string(&path).unwrap();
        assert!(json.contains(&format!("\"format_version\": {FORMAT_VERSION},")));
        assert!(json.contains(SEAL_FIELD));
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(sample()));

        fs::write(&path, serde_json::to_vec_pretty(&sample()).unwrap()).unwrap();
        let err = format!("{:#}", Manifest::read(dir.path()).unwrap_err());
        assert!(
            err.contains("index is damaged") && err.contains("has no checksum (meta_crc32)"),
            "{err}"
        );
    }

    /// A change that puts a value of the manifest out of bounds.
    type Spoil = fn(&mut Manifest);

    #[test]
    fn out_of_bounds_values_are_damage_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(Spoil, &str); 11] = [
            (
                |m| m.fusion.window = Some(0),
                "field fusion.window: window must be between 1 and 100000, got 0",
            ),
            (|m| m.fusion.rrf_k = -1.0, "field fusion.rrf_k:"),
            (
                |m| m.fusion.dense_weight = 1e308,
                "field fusion.dense_weight:",
            ),
            (
                |m| m.fusion.sparse_weight = -0.5,
                "field fusion.sparse_weight:",
            ),
            (
                |m| m.fusion.dense_feedback = 101,
                "field fusion.dense_feedback:",
            ),
            (
                |m| m.graph.as_mut().unwrap().weight = -0.5,
                "field graph.weight:",
            ),
            (|m| m.bm25.k1 = -1.5, "field bm25.k1:"),
            (|m| m.bm25.b = 1.5, "field bm25.b:"),
            (
                |m| m.sparse_fields.file_name = 1000,
                "field sparse_fields: a field weight must be at most 16",
            ),
            (
                |m| m.sparse.docs = 3,
                "field sparse.docs: 3 documents for 2 chunks",
            ),
            (
                |m| {
                    m.fusion.sparse_weight = 0.0;
                    m.fusion.dense_weight = 0.0;
                    m.graph = None;
                },
                "field fusion: every list has weight 0",
            ),
        ];
        for (spoil, message) in cases {
            let mut manifest = sample();
            spoil(&mut manifest);
            manifest.write(dir.path()).unwrap();
            let err = format!("{:#}", Manifest::read(dir.path()).unwrap_err());
            assert!(
                err.starts_with("index is damaged: ")
                    && err.contains(&format!("meta.json {message}"))
                    && err.ends_with("; run 'memidx index --full' to rebuild it"),
                "{message}: {err}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_manifest_that_is_a_device_is_damaged() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(MANIFEST_FILE)).unwrap();
        let err = format!("{:#}", Manifest::read(dir.path()).unwrap_err());
        assert!(
            err.contains("meta.json is a character device, not a regular file"),
            "{err}"
        );
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
