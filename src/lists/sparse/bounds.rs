//! The most a term can add to a chunk's BM25 score, per segment: what lets
//! [`super::score`] skip postings that cannot enter the top window.
//!
//! A term's BM25 contribution grows with its frequency in the chunk (`tf`)
//! and shrinks with the chunk's length (`dl`), for every k1, b and average
//! length. Its largest value over a segment is therefore reached at one of
//! the segment's *frontier* postings: those that no other posting of the
//! term beats on both counts (a higher or equal `tf` in a chunk no longer).
//! The frontier is a handful of `(tf, dl)` pairs, and the bound it gives is
//! the exact maximum for whatever parameters and statistics the query runs
//! with, so it is written once per segment (tantivy segments never change)
//! and stays true as the index around it is updated. Dead documents are
//! kept in it: a bound may only be too high, never too low.
//!
//! Only terms with at least [`STORED_MIN_DF`] postings are stored; a rarer
//! term's frontier is worked out from its postings when a query needs it,
//! which costs less than reading a stored one would save.
//!
//! File format, `<segment id>.bounds` in the sparse folder, little-endian:
//! the 8 bytes [`MAGIC`], a `u32` term count, then per term `(u64 term ordinal, u32 first pair,
//! u32 pair count)` in ordinal order, then the `(u32 tf, u32 dl)` pairs.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use tantivy::columnar::Column;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, SegmentReader, TERMINATED};

use crate::store::checked::CheckedMap;
use crate::store::checks::Checksums;
use crate::store::{atomic, damaged};

/// Ending of a segment's bounds file, after the segment id.
pub(super) const FILE_SUFFIX: &str = ".bounds";

/// The first bytes of a bounds file: its kind and format version.
const MAGIC: &[u8; 8] = b"mxbound1";

/// Bytes before the first term entry.
const HEADER_BYTES: usize = MAGIC.len() + 4;

/// Terms with fewer postings than this have no stored frontier.
pub(super) const STORED_MIN_DF: u32 = 128;

/// Bytes of one term's entry.
const ENTRY_BYTES: usize = 16;

/// One frontier posting: term frequency and chunk length in tokens.
pub(super) type FrontierPoint = [u32; 2];

/// The name of the bounds file of the segment with id `segment_id`.
pub(super) fn file_name(segment_id: &str) -> String {
    format!("{segment_id}{FILE_SUFFIX}")
}

/// The frontier of one term's postings: the `(tf, dl)` pairs not beaten on
/// both counts by another, by decreasing `tf` (and so increasing `dl`).
/// `lengths` gives each document's length.
pub(super) fn frontier(
    postings: &mut SegmentPostings,
    lengths: &Column<u64>,
) -> Vec<FrontierPoint> {
    // The shortest chunk for each term frequency, then a sweep from the
    // highest frequency down keeps each one shorter than all above it.
    let mut shortest: Vec<u32> = Vec::new();
    let mut doc = postings.doc();
    while doc != TERMINATED {
        let tf = postings.term_freq() as usize;
        let dl = u32::try_from(lengths.first(doc).unwrap_or(0)).unwrap_or(u32::MAX);
        if shortest.len() <= tf {
            shortest.resize(tf + 1, u32::MAX);
        }
        shortest[tf] = shortest[tf].min(dl);
        doc = postings.advance();
    }
    let mut points = Vec::new();
    let mut best = u32::MAX;
    for (tf, &dl) in shortest.iter().enumerate().rev() {
        if dl < best {
            points.push([tf as u32, dl]);
            best = dl;
        }
    }
    points
}

/// Writes the bounds file of `segment` into `dir`: the frontier of every
/// term of `body` with at least [`STORED_MIN_DF`] postings. `lengths` is
/// the segment's length column.
pub(super) fn write(
    dir: &Path,
    segment: &SegmentReader,
    body: Field,
    lengths: &Column<u64>,
) -> Result<()> {
    let inverted = segment.inverted_index(body)?;
    let mut entries = Vec::new();
    let mut points: Vec<FrontierPoint> = Vec::new();
    let mut stream = inverted.terms().stream()?;
    while stream.advance() {
        let info = stream.value();
        if info.doc_freq < STORED_MIN_DF {
            continue;
        }
        let mut postings =
            inverted.read_postings_from_terminfo(info, IndexRecordOption::WithFreqs)?;
        let term = frontier(&mut postings, lengths);
        entries.push((stream.term_ord(), points.len() as u32, term.len() as u32));
        points.extend(term);
    }
    let mut bytes =
        Vec::with_capacity(HEADER_BYTES + entries.len() * ENTRY_BYTES + points.len() * 8);
    bytes.extend(MAGIC);
    bytes.extend((entries.len() as u32).to_le_bytes());
    for (ord, first, count) in entries {
        bytes.extend(ord.to_le_bytes());
        bytes.extend(first.to_le_bytes());
        bytes.extend(count.to_le_bytes());
    }
    for [tf, dl] in points {
        bytes.extend(tf.to_le_bytes());
        bytes.extend(dl.to_le_bytes());
    }
    let name = file_name(&segment.segment_id().uuid_string());
    atomic::write_synced(&dir.join(name), &bytes)
}

/// Removes from `dir` the bounds files of segments not in `live` (tantivy
/// merged them away), so they are not carried into the next generation.
pub(super) fn remove_stale(dir: &Path, live: &[String]) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(id) = name.strip_suffix(FILE_SUFFIX)
            && !live.iter().any(|l| l == id)
        {
            fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// A segment's stored frontiers, memory-mapped (checked whole at open
/// against its block checksums, when it has them).
pub(super) struct SegmentBounds {
    map: CheckedMap,
    terms: usize,
}

impl SegmentBounds {
    /// Opens the bounds file `name` in `dir`, its sidecar found in
    /// `checksums` (by name in `dir`); `None` when there is none (a segment
    /// written before bounds were, whose terms are then scored in full).
    pub(super) fn open(dir: &Path, name: &str, checksums: &Checksums) -> Result<Option<Self>> {
        let path = dir.join(name);
        if !path.exists() {
            return Ok(None);
        }
        let malformed = || damaged(&path, "is malformed");
        let map = CheckedMap::open(dir, name, checksums)?;
        let bytes = map.all()?;
        ensure!(bytes.starts_with(MAGIC), malformed());
        let terms = bytes
            .get(MAGIC.len()..HEADER_BYTES)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
            .with_context(malformed)?;
        let bounds = Self { map, terms };
        let pairs = bounds
            .entry(terms.wrapping_sub(1))
            .map_or(0, |(_, first, count)| first + count);
        ensure!(
            bounds.map.len() == bounds.points_start() + pairs * 8,
            malformed()
        );
        Ok(Some(bounds))
    }

    fn points_start(&self) -> usize {
        HEADER_BYTES + self.terms * ENTRY_BYTES
    }

    /// Entry `i`: (term ordinal, first pair, pair count).
    fn entry(&self, i: usize) -> Option<(u64, usize, usize)> {
        if i >= self.terms {
            return None;
        }
        let at = HEADER_BYTES + i * ENTRY_BYTES;
        let bytes = self.map.unchecked().get(at..at + ENTRY_BYTES)?;
        let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes"));
        let ord = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        Some((ord, u32_at(8) as usize, u32_at(12) as usize))
    }

    /// The stored frontier of the term with ordinal `term_ord`, if it has
    /// one.
    pub(super) fn frontier(&self, term_ord: u64) -> Option<Vec<FrontierPoint>> {
        let (mut low, mut high) = (0, self.terms);
        while low < high {
            let mid = (low + high) / 2;
            let (ord, first, count) = self.entry(mid)?;
            if ord == term_ord {
                let start = self.points_start() + first * 8;
                let bytes = self.map.unchecked().get(start..start + count * 8)?;
                let pairs = bytes.chunks_exact(8).map(|p| {
                    let word = |o: usize| u32::from_le_bytes(p[o..o + 4].try_into().expect("4"));
                    [word(0), word(4)]
                });
                return Some(pairs.collect());
            }
            if ord < term_ord {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        None
    }
}
