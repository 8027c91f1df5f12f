//! Appending a delta part rather than rewriting the index: when few files
//! changed, a run writes them (and the files the previous delta held) into
//! a generation of their own, with the tombstones of the base's versions,
//! and keeps the base as it is (see [`crate::store::parts`]).
//!
//! The base is immutable until the next compaction: a run that writes the
//! whole index anew ([`super::run`] without a plan here) carries the base's
//! live chunks over and writes the delta's anew, dropping both the delta
//! and the garbage. A run compacts when the delta would hold more than
//! [`DELTA_SHARE`] of the base's files or bury more than half of them, on
//! `--compact` and `--full`, when the settings, model or format change,
//! and for an index with a graph (which is built over the whole table).

use anyhow::Result;

use super::IndexOptions;
use super::previous::{FileState, Previous};
use crate::corpus::walk::Walk;
use crate::embed::Embedder;
use crate::index::manifest::{DeltaManifest, FORMAT_VERSION, Manifest};
use crate::lists::dense::codes::CODES_FILE;
use crate::lists::sparse::SparseStats;
use crate::store::checks::Checksums;
use crate::store::generation::{ChunkTable, searchable_text};
use crate::store::parts::Parts;
use crate::text::tokenize::Analyzer;

/// A delta holds at most one file in this many of the base's (beyond
/// [`DELTA_MIN_FILES`]): each run writes the delta's files anew, so they
/// stay a small share of the base (a bound chosen, not measured; the
/// delta's speed is in bench/README.md, *Appending a delta*).
const DELTA_SHARE: usize = 32;

/// A delta may always hold this many files, however small the base.
const DELTA_MIN_FILES: usize = 64;

/// A delta buries at most one file in this many of the base's: past it,
/// the base is more garbage than a run that carries it over would leave
/// (which rewrites everything past half, [`super::previous`]).
const MAX_BURIED_SHARE: usize = 2;

/// What a run appending a delta writes.
pub(super) struct DeltaPlan {
    /// The walked files the delta holds: changed, only touched (their new
    /// stamps are recorded), or held by the previous delta.
    pub(super) walk: Walk,
    /// Their states.
    pub(super) states: Vec<FileState>,
    /// The base's files the delta buries, ascending: every one not kept
    /// as it is.
    pub(super) buried: Vec<u32>,
}

/// The delta this run appends, or `None` when it must write the index
/// whole (see the module doc). The base's files are kept when the walk
/// found them unchanged, or, for a run told the changed paths, when
/// `unwalked` (per base file) says it kept them without looking.
pub(super) fn plan(
    options: &IndexOptions,
    embedder: &dyn Embedder,
    previous: &Previous,
    walked: &Walk,
    states: &[FileState],
    unwalked: Option<&[bool]>,
) -> Option<DeltaPlan> {
    let (manifest, parts) = (previous.manifest.as_ref()?, previous.parts.as_ref()?);
    let appendable = !options.full
        && !options.compact
        && manifest.format_version == FORMAT_VERSION
        && previous.carried.is_some()
        && previous.vectors.is_some()
        && manifest.embedder == *embedder.info()
        && manifest.walk == options.walk
        && manifest.graph.is_none()
        && !options.builds_graph(Some(manifest))
        && options.dense_index_setting(Some(manifest)) == manifest.dense_index.setting;
    if !appendable {
        return None;
    }
    let base_files = parts.base().file_count();
    let mut kept = unwalked.map_or_else(|| vec![false; base_files], <[bool]>::to_vec);
    if kept.len() != base_files {
        return None;
    }
    let mut walk = Walk {
        files: Vec::new(),
        skipped: walked.skipped.clone(),
    };
    let mut delta_states = Vec::new();
    for (file, state) in walked.files.iter().zip(states) {
        match state {
            FileState::Unchanged {
                previous_file,
                touched: false,
                ..
            } if previous.in_base(*previous_file) => kept[*previous_file] = true,
            _ => {
                walk.files.push(file.clone());
                delta_states.push(state.clone());
            }
        }
    }
    if walk.files.len() > DELTA_MIN_FILES.max(base_files / DELTA_SHARE) {
        return None;
    }
    let buried: Vec<u32> = (0..base_files as u32)
        .filter(|&file| !kept[file as usize])
        .collect();
    // A base mostly buried is mostly garbage: written anew, it is smaller.
    if buried.len() > base_files / MAX_BURIED_SHARE {
        return None;
    }
    Some(DeltaPlan {
        walk,
        states: delta_states,
        buried,
    })
}

/// Where each of the delta's files (`table`'s, sorted by path) stands
/// among the base's of `parts`: how many base files sort before it.
pub(super) fn places(parts: &Parts, table: &ChunkTable) -> Result<Vec<u32>> {
    let base = parts.base();
    table
        .files
        .iter()
        .map(|f| base.files_before(&f.path))
        .collect()
}

/// The base's live documents once `buried` (its files, ascending) are
/// buried, and the entry of the delta in generation `generation` holding
/// `files` files and `chunks` chunks, whose files' checks are `checksums`.
pub(super) struct Appended {
    /// The base's live documents and tokens, and the uids it gave out.
    pub(super) base_live: SparseStats,
    /// The rows the base's sign codes cover, when it has them.
    pub(super) base_code_rows: Option<u64>,
    /// The manifest's entry for the delta.
    pub(super) delta: DeltaManifest,
}

/// Works out what the manifest records for a delta burying `buried` of
/// `parts`' base: the base's live documents follow from the previous
/// manifest's record and the tokens of the files buried only now (their
/// texts are tokenized again, as the sparse list did; the files buried
/// before were counted then).
pub(super) fn appended(
    parts: &Parts,
    manifest: &Manifest,
    analyzer: Analyzer,
    buried: &[u32],
    delta: (u64, usize, usize, Checksums),
) -> Result<Appended> {
    let (base_written, mut buried_chunks, mut buried_tokens) = match &manifest.delta {
        Some(previous) => (
            previous.base_sparse,
            previous.buried_chunks,
            previous.buried_tokens,
        ),
        None => (manifest.sparse, 0, 0),
    };
    let base = &parts.parts()[0];
    // The base's documents were made with the fields it records.
    let fields = manifest.sparse_fields;
    for &file in buried.iter().filter(|&&f| base.file_is_live(f)) {
        let generation = base.generation();
        let part = fields.file_part(&analyzer, &generation.file(file)?);
        for chunk in generation.chunks_of_file(file)? {
            let record = generation.record(chunk)?;
            let searchable = searchable_text(&record.heading_path, &generation.text(chunk)?);
            let text = fields.document(&part, &record.heading_path, &searchable);
            buried_chunks += 1;
            buried_tokens += analyzer.tokenize(&text).len() as u64;
        }
    }
    let (generation, files, chunks, checksums) = delta;
    let has_codes = manifest.checksums.contains_key(CODES_FILE);
    Ok(Appended {
        base_code_rows: has_codes.then_some(parts.base().len() as u64),
        base_live: SparseStats {
            docs: base_written.docs.saturating_sub(buried_chunks),
            tokens: base_written.tokens.saturating_sub(buried_tokens),
            uids: base_written.uids,
        },
        delta: DeltaManifest {
            generation,
            files,
            chunks,
            buried_files: buried.len(),
            base_sparse: base_written,
            buried_chunks,
            buried_tokens,
            checksums,
        },
    })
}
