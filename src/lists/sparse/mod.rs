//! The sparse list: BM25 over chunk text + heading path, stored with tantivy.
//!
//! tantivy keeps the persistent, memory-mapped inverted index (terms,
//! postings with term frequencies) and two fast fields per chunk: its
//! ordinal and its exact length in tokens. Scoring is done here
//! ([`score`]) over tantivy's postings, with the Lucene BM25 formula
//! `idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`,
//! `idf = ln(1 + (N − n + 0.5)/(n + 0.5))`, but with exact document lengths
//! (tantivy's own scorer quantizes them to one byte and fixes k1 = 1.2) and
//! with [`Bm25Params`] recorded in the index. The filter [`AllowSet`] is
//! applied to every match before the top window is taken.
//!
//! Text is analyzed once by the identifier-aware [`Analyzer`], in parallel
//! (`rayon`), and handed to tantivy as its terms, each ended by a NUL, in a
//! document type of memidx's own (`ChunkDoc`, which spares the JSON round
//! trip of tantivy's default document); the tokenizer registered as
//! [`TOKENIZER_NAME`] reads them back into one reused token, so tantivy
//! copies no term per token. Queries use the same analyzer.
//!
//! **Updated, not rebuilt.** A document names its chunk by a *uid* that the
//! chunk keeps from generation to generation ([`ChunkRecord::uid`]). A
//! re-index hard-links the previous generation's tantivy segments (they
//! are immutable) and adds the new chunks as a new segment; [`ORDS_FILE`]
//! then maps every document of every segment to its chunk's ordinal in
//! this generation, or to [`DEAD`] for a removed chunk's document (one
//! array lookup per posting, cheaper than reading the uid). Scoring skips
//! dead documents and counts document frequencies over live ones, and the
//! document count and total length come from the live chunks
//! ([`SparseStats`]), so every score equals a fresh index's. The indexer
//! rebuilds from scratch once dead documents outnumber live ones.
//!
//! **Pruned, to the same answer.** Each segment carries per-term score
//! bounds ([`bounds`]), written when tantivy writes the segment; a search
//! walks the postings with MaxScore ([`score`]) and skips those that cannot
//! enter the window, with the same window, scores and order as scoring every
//! posting. A segment without bounds (written by an older memidx) is scored
//! in full.
//!
//! [`ChunkRecord::uid`]: crate::store::generation::ChunkRecord::uid

mod bounds;
pub mod fields;
#[cfg(test)]
mod pruning_tests;
mod score;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tantivy::columnar::Column;
use tantivy::schema::{
    Document, FAST, Field, IndexRecordOption, OwnedValue, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{Token as TantivyToken, TokenStream, Tokenizer};
use tantivy::{
    DocSet, Index, IndexWriter, InvertedIndexReader, ReloadPolicy, SegmentReader, TERMINATED, Term,
};

use super::AllowSet;
use super::frozen_dir::FrozenDirectory;
use super::{Coverage, List, ListHit, ListKind, PostingCounts, RankedList, TopWindow};
use crate::store::checked::{BLOCKS_SUFFIX, CheckedMap, write_sidecar};
use crate::store::checks::Checksums;
use crate::store::generation::ChunkOrd;
use crate::store::parts::PartOrder;
use crate::store::{atomic, damaged};
use crate::text::near::NearMiss;
use crate::text::tokenize::{Analyzer, Token, looks_like_identifier};
use bounds::SegmentBounds;
use score::{Bm25, Collected, QueryTerm};

/// Name under which the tokenizer that reads the analyzed terms back
/// ([`TermsTokenizer`]) is registered with tantivy.
pub const TOKENIZER_NAME: &str = "memidx";

const BODY_FIELD: &str = "body";
const UID_FIELD: &str = "uid";
const LEN_FIELD: &str = "len";

/// File, in the sparse folder, mapping each document to its chunk's
/// ordinal or to [`DEAD`]: a `u32` segment count; per segment its id (32
/// ASCII hex digits), `u32` document count and `u32` dead-document count;
/// then per segment, per document, the `u32` ordinal. All little-endian.
pub const ORDS_FILE: &str = "ords.bin";

/// Bytes of one segment's entry in the [`ORDS_FILE`] header.
const SEGMENT_ENTRY_BYTES: usize = 40;

/// One segment's part of the [`ORDS_FILE`] map.
#[derive(Debug, Clone, PartialEq)]
struct SegmentMap {
    /// The tantivy segment id, as 32 hex digits.
    id: String,
    /// Its documents' ordinals, in `u32` units from the start of the file.
    range: Range<usize>,
    /// How many of its documents are dead. A segment without any takes
    /// tantivy's document frequencies as they are.
    dead: u32,
}

/// The ordinal of a uid whose chunk is gone.
pub const DEAD: u32 = u32::MAX;

/// Most distinct terms a query may have to be scored with pruning. A
/// document-at-a-time walk pays per candidate for every essential term, and
/// past this many terms (a pasted paragraph, say) scoring every posting term
/// at a time costs less (measured: bench/README.md).
const MAX_PRUNED_TERMS: usize = 12;

/// How far, relative to the score (or to 1 below it), a returned chunk's
/// score may differ from the one its text gives before the files are named
/// as damaged: the two are summed the same way, so only damage moves them.
const HIT_SCORE_TOLERANCE: f32 = 1e-5;

/// Indexing memory budget for tantivy's writer, all threads together.
const WRITER_MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// Chunks analyzed per parallel batch while building (bounds the memory
/// held by analyzed terms in flight).
const ANALYZE_BATCH: usize = 4096;

/// BM25 parameters; they act at query time, so they can change without
/// re-indexing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
}

/// k1 = 1.5 (the bm25s default; Lucene uses 1.2), b = 0.75: the common
/// middle ground, measured against the alternatives (docs/how-it-works.md).
impl Default for Bm25Params {
    fn default() -> Self {
        Self { k1: 1.5, b: 0.75 }
    }
}

/// The live documents of a sparse list: BM25's N and, divided by it, its
/// average document length. Recorded in the manifest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparseStats {
    /// Live documents (one per chunk).
    pub docs: u64,
    /// Tokens in all live documents.
    pub tokens: u64,
    /// Uids given out, live and dead (the next new chunk gets this one).
    pub uids: u64,
}

/// What [`SparseWriter::finish`] wrote.
pub struct SparseWritten {
    /// The live documents.
    pub stats: SparseStats,
    /// Files hard-linked from the base, by name in the sparse folder (their
    /// content, and so their checksums, are the base's).
    pub linked: Vec<String>,
}

/// Most distinct query terms looked up for a near miss: each streams the
/// terms sharing its first two characters, so this bounds what a long
/// query of nonsense costs.
const NEAR_MISS_TERMS: usize = 32;

/// The BM25 list of one generation, or of several searched as one
/// ([`SparseList::merge`]).
pub struct SparseList {
    body: Field,
    analyzer: Analyzer,
    params: Bm25Params,
    /// The live documents of every part, summed: BM25's N and average
    /// length are the whole corpus's.
    stats: SparseStats,
    /// Each generation's sparse folder, in ordinal order.
    parts: Vec<Part>,
    segments: Vec<Segment>,
    /// Most distinct terms a query may have to be scored with pruning
    /// ([`MAX_PRUNED_TERMS`]; the tests set it to hold both ways to the
    /// same answers).
    pruned_terms: usize,
}

/// A query weighed by a sparse list's live documents ([`SparseList::weigh`]).
pub struct WeighedQuery {
    /// The query's distinct terms, in the order a search sums them, each
    /// with its weight (idf × its count in the query).
    pub terms: Vec<(String, f32)>,
    /// Whether one of them names something exact the index holds: a query
    /// word shaped like an identifier ([`looks_like_identifier`]; see
    /// [`crate::fusion`]).
    pub exact: bool,
    bm25: Bm25,
}

impl WeighedQuery {
    /// The BM25 score of a chunk of `dl` tokens in which term `i` of
    /// [`Self::terms`] occurs `tf(i)` times: bit for bit what a search of
    /// the list gives it.
    pub fn score(&self, tf: impl Fn(usize) -> u32, dl: u64) -> f32 {
        let mut score = 0.0f32;
        for (i, (_, weight)) in self.terms.iter().enumerate() {
            let tf = tf(i);
            if tf > 0 {
                score += self.bm25.term(*weight, tf, dl);
            }
        }
        score
    }

    /// The share of the query's weight (each term's idf × count, as
    /// [`Self::terms`]) that a chunk holding the terms `held(i)` says it
    /// holds, from 0 to 1: what a chunk matches of the query, whatever the
    /// other chunks match (a relative score puts the best at 1 always).
    pub fn coverage(&self, held: impl Fn(usize) -> bool) -> f32 {
        // Folded from +0.0: a float sum of nothing is -0.0.
        let total = (self.terms.iter()).fold(0.0f32, |sum, (_, weight)| sum + weight);
        let matched = (self.terms.iter().enumerate())
            .filter(|(i, _)| held(*i))
            .fold(0.0f32, |sum, (_, (_, weight))| sum + weight);
        match total > 0.0 {
            true => (matched / total).clamp(0.0, 1.0),
            false => 0.0,
        }
    }
}

/// One generation's sparse folder in a list: its ordinal map and where its
/// chunks' ordinals start among the list's.
struct Part {
    /// The [`ORDS_FILE`] map, memory-mapped, checked whole at open.
    ords: CheckedMap,
    ords_path: PathBuf,
    /// The list-wide ordinal of the generation's first chunk.
    base: ChunkOrd,
}

/// What a search reads of one tantivy segment.
struct Segment {
    /// Its generation's place in [`SparseList::parts`].
    part: usize,
    /// The list-wide ordinal of its generation's first chunk.
    base: ChunkOrd,
    /// Its generation's chunk count: an ordinal at or past it is damage.
    chunks: u64,
    inverted: Arc<InvertedIndexReader>,
    /// Each document's length in tokens.
    lengths: Column<u64>,
    /// Where its documents' ordinals are in the [`ORDS_FILE`] map, in `u32`
    /// units.
    ords: Range<usize>,
    /// Its dead documents, ascending.
    dead: Vec<u32>,
    /// Its documents whose chunks a later part of the index buried, one
    /// bit each (`None` when there are none): skipped as dead ones are,
    /// though their ordinals are live in [`ORDS_FILE`].
    buried: Option<Vec<u64>>,
    /// For a part of an index of several, where the part's chunks stand in
    /// the index's order.
    order: Option<PartOrder>,
    /// Its terms' score bounds, if it was written with them.
    bounds: Option<SegmentBounds>,
}

impl Segment {
    /// The list-wide ordinal of its generation's chunk `chunk`.
    #[inline]
    fn global(&self, chunk: ChunkOrd) -> ChunkOrd {
        self.base
            + self
                .order
                .as_ref()
                .map_or(chunk, |order| order.global(chunk))
    }

    /// Whether document `doc`'s chunk was buried by a later part.
    #[inline]
    fn is_buried(&self, doc: u32) -> bool {
        self.buried
            .as_ref()
            .is_some_and(|bits| bits[doc as usize / 64] & (1 << (doc % 64)) != 0)
    }
}

/// Writes a generation's sparse list: the base's documents (hard-linked)
/// plus the ones added, batch by batch, through one tantivy writer whose
/// memory budget bounds what is held.
pub struct SparseWriter {
    dir: PathBuf,
    index: Index,
    analyzer: Analyzer,
    fields: (Field, Field, Field),
    /// Created on the first addition (a run that only removes needs none).
    writer: Option<IndexWriter<ChunkDoc>>,
    linked: Vec<String>,
}

impl SparseWriter {
    /// Starts the sparse list in `dir`, from the previous generation's
    /// sparse folder `base` when given, else empty.
    pub fn create(dir: &Path, analyzer: Analyzer, base: Option<&Path>) -> Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let (index, linked) = match base {
            Some(base) => {
                let linked = link_segments(base, dir)?;
                let index = Index::open_in_dir(dir)
                    .with_context(|| damaged(base, "cannot be opened to be updated"))?;
                (index, linked)
            }
            None => {
                let index = Index::create_in_dir(dir, schema()).with_context(|| {
                    format!("cannot create the sparse index in {}", dir.display())
                })?;
                (index, Vec::new())
            }
        };
        register(&index);
        let schema = index.schema();
        let field = |name| {
            schema
                .get_field(name)
                .context("the sparse schema lacks a field")
        };
        let fields = (field(BODY_FIELD)?, field(UID_FIELD)?, field(LEN_FIELD)?);
        Ok(Self {
            dir: dir.to_path_buf(),
            index,
            analyzer,
            fields,
            writer: None,
            linked,
        })
    }

    /// Analyzes `docs` (uid, text) in parallel and adds them (the tests'
    /// way to write documents without fields).
    #[cfg(test)]
    pub fn add(&mut self, docs: &[(u32, &str)]) -> Result<()> {
        let none = AnalyzedPart::default();
        let docs: Vec<(u32, &str, &AnalyzedPart)> =
            docs.iter().map(|&(uid, text)| (uid, text, &none)).collect();
        self.add_with_parts(&docs)
    }

    /// Analyzes `text` once, for [`Self::add_with_parts`] to end several
    /// documents with (a file's part of its chunks' documents,
    /// [`fields::Fields::file_part`]).
    pub fn analyze(&self, text: &str) -> AnalyzedPart {
        let (count, terms) = ended_terms(&self.analyzer.tokenize(text));
        AnalyzedPart { count, terms }
    }

    /// Analyzes `docs` (uid, text, a part analyzed before that ends it) in
    /// parallel and adds them: each the document its text and part make
    /// together, as one text joined by a line break would be analyzed.
    pub fn add_with_parts(&mut self, docs: &[(u32, &str, &AnalyzedPart)]) -> Result<()> {
        for batch in docs.chunks(ANALYZE_BATCH) {
            let texts: Vec<&str> = batch.iter().map(|doc| doc.1).collect();
            let analyzed = self.analyze_texts(&texts);
            let documents = (batch.iter().zip(&analyzed))
                .map(|(&(uid, _, part), text)| (uid, AnalyzedPart::join([text], part)));
            self.add_analyzed(documents)?;
        }
        Ok(())
    }

    /// Analyzes `texts` in parallel, each into its terms, for documents
    /// made of them ([`AnalyzedPart::join`], [`Self::add_analyzed`]).
    pub fn analyze_texts(&self, texts: &[&str]) -> Vec<AnalyzedPart> {
        let analyzer = self.analyzer;
        (texts.par_iter())
            .map(|text| {
                let (count, terms) = ended_terms(&analyzer.tokenize(text));
                AnalyzedPart { count, terms }
            })
            .collect()
    }

    /// Adds `docs` (uid, its document's analyzed terms).
    pub fn add_analyzed(
        &mut self,
        docs: impl IntoIterator<Item = (u32, AnalyzedPart)>,
    ) -> Result<()> {
        let mut docs = docs.into_iter().peekable();
        if docs.peek().is_none() {
            return Ok(());
        }
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => {
                let threads = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .clamp(1, 4);
                let writer = self
                    .index
                    .writer_with_num_threads(threads, WRITER_MEMORY_BYTES)
                    .with_context(|| {
                        format!("cannot write the sparse index in {}", self.dir.display())
                    })?;
                self.writer.insert(writer)
            }
        };
        let (body, uid, len) = self.fields;
        for (doc_uid, analyzed) in docs {
            let added = writer.add_document(ChunkDoc([
                (uid, OwnedValue::U64(u64::from(doc_uid))),
                (len, OwnedValue::U64(analyzed.count as u64)),
                (body, OwnedValue::Str(analyzed.terms)),
            ]));
            if let Err(err) = added {
                // tantivy says only that its indexing threads died; the
                // join inside a commit returns what killed them.
                let cause = writer.commit().err().unwrap_or(err);
                bail!(
                    "cannot write the sparse index in {}: {cause}",
                    self.dir.display()
                );
            }
        }
        Ok(())
    }

    /// Commits, writes the documents' ordinals ([`ORDS_FILE`]) from
    /// `ords` (per uid, its chunk's ordinal or [`DEAD`]), writes the
    /// score bounds of every segment that has none yet, and counts the live
    /// documents, checking that every live uid has exactly one.
    pub fn finish(self, ords: &[u32]) -> Result<SparseWritten> {
        let live = ords.iter().filter(|&&o| o != DEAD).count() as u64;
        self.finish_expecting(ords, live)
    }

    /// [`Self::finish`] for a list whose documents stand for some of the
    /// live uids only (the file list's, one a file, under the uid of its
    /// first chunk): checks that `live` documents are.
    pub fn finish_expecting(mut self, ords: &[u32], live: u64) -> Result<SparseWritten> {
        if let Some(mut writer) = self.writer {
            let failed = |err: tantivy::TantivyError| {
                anyhow::anyhow!(
                    "cannot write the sparse index in {}: {err}",
                    self.dir.display()
                )
            };
            writer.commit().map_err(failed)?;
            writer.wait_merging_threads().map_err(failed)?;
        }
        let reader = self.index.reader()?;
        let searcher = reader.searcher();
        let mut header = (searcher.segment_readers().len() as u32)
            .to_le_bytes()
            .to_vec();
        let mut body = Vec::new();
        let mut stats = SparseStats {
            uids: ords.len() as u64,
            ..SparseStats::default()
        };
        let (body_field, ..) = self.fields;
        let mut segment_ids = Vec::new();
        for segment in searcher.segment_readers() {
            let uids = segment.fast_fields().u64(UID_FIELD)?;
            let lengths = segment.fast_fields().u64(LEN_FIELD)?;
            let id = segment.segment_id().uuid_string();
            if !self.dir.join(bounds::file_name(&id)).exists() {
                bounds::write(&self.dir, segment, body_field, &lengths)?;
            }
            let mut dead = 0u32;
            for doc in 0..segment.max_doc() {
                let ord = uids
                    .first(doc)
                    .and_then(|u| ords.get(usize::try_from(u).ok()?))
                    .copied()
                    .unwrap_or(DEAD);
                if ord == DEAD {
                    dead += 1;
                } else {
                    stats.docs += 1;
                    stats.tokens += lengths.first(doc).unwrap_or(0);
                }
                body.extend(ord.to_le_bytes());
            }
            header.extend(id.as_bytes());
            header.extend(segment.max_doc().to_le_bytes());
            header.extend(dead.to_le_bytes());
            segment_ids.push(id);
        }
        ensure!(
            stats.docs == live,
            "the sparse index in {} holds {} live documents where {live} were written",
            self.dir.display(),
            stats.docs
        );
        header.extend(body);
        atomic::write_synced(&self.dir.join(ORDS_FILE), &header)?;
        // Bounds of segments tantivy merged away were linked from the base.
        bounds::remove_stale(&self.dir, &segment_ids)?;
        refresh_sidecars(&self.dir)?;
        let dir = &self.dir;
        self.linked.retain(|name| dir.join(name).exists());
        Ok(SparseWritten {
            stats,
            linked: self.linked,
        })
    }
}

/// Files of a sparse folder a search never reads (tantivy's document
/// store) and tantivy's own small files: they get no block-checksum
/// sidecar. Every other file, the term dictionaries included (sorted string
/// tables, read a block at a time), is checked where a search reads it.
fn unchecked_file(name: &str) -> bool {
    name.ends_with(".store")
        || name.ends_with(BLOCKS_SUFFIX)
        || name.ends_with(".json")
        || name.starts_with('.')
}

/// Gives every file of the sparse folder `dir` a block-checksum sidecar
/// ([`crate::store::checked`]) but the [`unchecked_file`]s, and removes the
/// sidecars of files tantivy merged away. A segment file linked from the
/// base came with its sidecar, and keeps it.
fn refresh_sidecars(dir: &Path) -> Result<()> {
    let names: Vec<String> = fs::read_dir(dir)
        .with_context(|| damaged(dir, "cannot be listed"))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    for name in &names {
        match name.strip_suffix(BLOCKS_SUFFIX) {
            Some(file) if !names.iter().any(|n| n == file) => {
                fs::remove_file(dir.join(name))
                    .with_context(|| format!("cannot remove {}", dir.join(name).display()))?;
            }
            Some(_) => {}
            None if unchecked_file(name) => {}
            None if names.contains(&format!("{name}{BLOCKS_SUFFIX}")) => {}
            None => write_sidecar(&dir.join(name))?,
        }
    }
    Ok(())
}

/// Hard-links the files of the tantivy index in `base` into `dir`; its
/// segment files never change once written. The two small files tantivy
/// replaces on commit (`meta.json`, `.managed.json`) are copied, and its
/// lock files and the uid map are left out. Returns the names linked.
fn link_segments(base: &Path, dir: &Path) -> Result<Vec<String>> {
    let mut linked = Vec::new();
    let entries = fs::read_dir(base).with_context(|| damaged(base, "cannot be listed"))?;
    for entry in entries {
        let entry = entry.with_context(|| damaged(base, "cannot be listed"))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let (from, to) = (entry.path(), dir.join(&name));
        // The uid map and its sidecar are written anew (a link would be
        // written through, into the base).
        let rewritten = name.strip_suffix(BLOCKS_SUFFIX).unwrap_or(&name) == ORDS_FILE;
        if rewritten || (name.starts_with(".tantivy-") && name.ends_with(".lock")) {
            continue;
        }
        let copy = || {
            fs::copy(&from, &to)
                .map(|_| ())
                .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))
        };
        if name == "meta.json" || name == ".managed.json" {
            copy()?;
        } else if fs::hard_link(&from, &to).is_ok() {
            linked.push(name);
        } else {
            copy()?;
        }
    }
    Ok(linked)
}

/// One chunk as the sparse list indexes it: its uid, its exact length and
/// its analyzed terms ([`ended_terms`]).
///
/// A document type of memidx's own rather than `TantivyDocument`, which
/// keeps a pre-tokenized value as JSON text: it serialized every token to
/// JSON when the document was built and parsed it back to index it, about a
/// tenth of the whole indexing time. tantivy indexes any [`Document`] from
/// the values it yields.
struct ChunkDoc([(Field, OwnedValue); 3]);

impl Document for ChunkDoc {
    type Value<'a> = &'a OwnedValue;
    type FieldsValuesIter<'a> = std::iter::Map<
        std::slice::Iter<'a, (Field, OwnedValue)>,
        fn(&'a (Field, OwnedValue)) -> (Field, &'a OwnedValue),
    >;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.0.iter().map(|(field, value)| (*field, value))
    }
}

/// What ends each term in the text the sparse list hands tantivy: the
/// analyzer never makes it part of a term (it is no word character).
const TERM_END: char = '\0';

/// Analyzed terms, each ended as [`ended_terms`] ends them: a text's (a
/// chunk's, [`SparseWriter::analyze_texts`]), a part analyzed once to end
/// several documents ([`SparseWriter::analyze`]), or a document joined
/// from them ([`AnalyzedPart::join`]).
#[derive(Debug, Clone, Default)]
pub struct AnalyzedPart {
    /// How many terms.
    count: usize,
    /// The terms, each followed by [`TERM_END`].
    terms: String,
}

impl AnalyzedPart {
    /// One document of `parts` in order, and `last` after them: a file's
    /// chunks' documents joined into the file's, as their texts joined by
    /// line breaks would be analyzed.
    pub fn join<'a>(
        parts: impl IntoIterator<Item = &'a AnalyzedPart>,
        last: &'a AnalyzedPart,
    ) -> Self {
        let mut joined = AnalyzedPart::default();
        for part in parts.into_iter().chain([last]) {
            joined.count += part.count;
            joined.terms.push_str(&part.terms);
        }
        joined
    }
}

/// The terms of `tokens` as the text of a chunk's body field, each followed
/// by [`TERM_END`], with how many there are.
///
/// One string a chunk, read back by [`TermsTokenizer`] into one reused
/// token: a pre-tokenized value, one `String` a term, tantivy clones twice
/// before it indexes it (once in `OwnedValue::as_value`, once more to
/// stream it), three allocations a term where this makes none.
fn ended_terms(tokens: &[Token]) -> (usize, String) {
    let mut terms = String::with_capacity(tokens.iter().map(|t| t.text.len() + 1).sum());
    for token in tokens {
        debug_assert!(!token.text.contains(TERM_END));
        terms.push_str(&token.text);
        terms.push(TERM_END);
    }
    (tokens.len(), terms)
}

impl SparseList {
    /// Opens the sparse index in `dir` of a generation of `chunks` chunks,
    /// scoring with `params` over the live documents `stats` describes;
    /// its files' block-checksum sidecars are found in `checksums` (the
    /// manifest's checks of the files in `dir`, by name in it), and checked
    /// as tantivy reads them.
    pub fn open(
        dir: &Path,
        analyzer: Analyzer,
        params: Bm25Params,
        stats: SparseStats,
        chunks: u64,
        checksums: Checksums,
    ) -> Result<Self> {
        let damaged = || damaged(dir, "cannot be opened");
        let ords = CheckedMap::open(dir, ORDS_FILE, &checksums)?;
        let index = FrozenDirectory::open(dir, checksums.clone())
            .map_err(anyhow::Error::from)
            .and_then(|frozen| Ok(Index::open(frozen)?))
            .with_context(damaged)?;
        let ords_path = dir.join(ORDS_FILE);
        let maps = segment_ranges(ords.all()?)
            .with_context(|| crate::store::damaged(&ords_path, "is malformed"))?;
        register(&index);
        let body = index.schema().get_field(BODY_FIELD).with_context(damaged)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .with_context(damaged)?;
        let mut list = Self {
            body,
            analyzer,
            params,
            stats,
            parts: vec![Part {
                ords,
                ords_path,
                base: 0,
            }],
            segments: Vec::new(),
            pruned_terms: MAX_PRUNED_TERMS,
        };
        for segment in reader.searcher().segment_readers() {
            let part = list.open_segment(dir, segment, &maps, &checksums, chunks);
            let part = part.map_err(|err| list.named_as_damage(0, err))?;
            list.segments.push(part);
        }
        Ok(list)
    }

    /// One list over the generations of `lists`, searched as one index
    /// built over all their chunks: each list's chunks numbered from its
    /// base (ascending; a generation left out leaves a gap), and BM25's
    /// document count, average length and document frequencies summed over
    /// all of them, so every score and tie is the one index's. Every list
    /// must analyze and score alike (the caller leaves out, and names,
    /// those that do not); an error otherwise.
    pub fn merge(lists: Vec<(Self, ChunkOrd)>) -> Result<Self> {
        let mut lists = lists.into_iter();
        let (mut merged, first_base) = lists.next().context("no sparse list to merge")?;
        merged.rebase(first_base, 0);
        for (list, base) in lists {
            ensure!(
                list.analyzer == merged.analyzer && list.params == merged.params,
                "sparse lists that analyze or score differently cannot be merged"
            );
            ensure!(
                list.body == merged.body,
                "sparse lists of different schemas cannot be merged"
            );
            let mut list = list;
            list.rebase(base, merged.parts.len());
            merged.stats.docs += list.stats.docs;
            merged.stats.tokens += list.stats.tokens;
            merged.stats.uids += list.stats.uids;
            merged.parts.extend(list.parts);
            merged.segments.extend(list.segments);
        }
        Ok(merged)
    }

    /// One list over the parts of one index, `lists` (one per part, in
    /// order, each with where its chunks stand in the index's order, `None`
    /// for an index of one part). BM25's statistics are the sum of the
    /// lists' (the first part's must be the index's live documents').
    pub fn of_parts(lists: Vec<(Self, Option<PartOrder>)>) -> Result<Self> {
        let (lists, orders): (Vec<_>, Vec<_>) = lists.into_iter().map(|(l, o)| ((l, 0), o)).unzip();
        let mut merged = Self::merge(lists)?;
        for segment in &mut merged.segments {
            segment.order = orders[segment.part].clone();
        }
        Ok(merged)
    }

    /// Marks dead the documents of the chunks `dead` names: per part of
    /// the index, ascending ranges of its own chunk ordinals (its buried
    /// files', [`Parts::dead_chunks`](crate::store::parts::Parts::dead_chunks)).
    /// They are skipped and left out of document frequencies, as in an
    /// index without them. The list's statistics must already be the live
    /// documents'.
    pub fn bury(&mut self, dead: &[Vec<Range<ChunkOrd>>]) -> Result<()> {
        for at in 0..self.segments.len() {
            let segment = &self.segments[at];
            let Some(ranges) = dead.get(segment.part).filter(|ranges| !ranges.is_empty()) else {
                continue;
            };
            let is_dead = |ord: u32| {
                let at = ranges.partition_point(|range| range.end <= ord);
                ranges.get(at).is_some_and(|range| range.start <= ord)
            };
            let ords = self.ords_of(segment)?;
            let buried: Vec<u32> = (0..ords.len() as u32)
                .filter(|&doc| {
                    let ord = ords[doc as usize];
                    ord != DEAD && is_dead(ord)
                })
                .collect();
            if buried.is_empty() {
                continue;
            }
            let mut bits = vec![0u64; ords.len().div_ceil(64)];
            for &doc in &buried {
                bits[doc as usize / 64] |= 1 << (doc % 64);
            }
            let mut dead: Vec<u32> = segment.dead.iter().copied().chain(buried).collect();
            dead.sort_unstable();
            dead.dedup();
            let segment = &mut self.segments[at];
            segment.dead = dead;
            segment.buried = Some(bits);
        }
        Ok(())
    }

    /// Counts BM25's live documents and tokens from the segments
    /// themselves (dead and buried documents left out), for a list whose
    /// manifest records no statistics: the file list's, a few documents a
    /// file, whose counting costs little.
    pub fn count_live(&mut self) -> Result<()> {
        let (mut docs, mut tokens) = (0, 0);
        for segment in &self.segments {
            let ords = self.ords_of(segment)?;
            for (doc, &ord) in (0u32..).zip(ords) {
                if ord != DEAD && !segment.is_buried(doc) {
                    docs += 1;
                    tokens += segment.lengths.first(doc).unwrap_or(0);
                }
            }
        }
        self.stats.docs = docs;
        self.stats.tokens = tokens;
        Ok(())
    }

    /// Numbers this list's chunks from `base` and its parts from `part`.
    fn rebase(&mut self, base: ChunkOrd, part: usize) {
        for each in &mut self.parts {
            each.base += base;
        }
        for segment in &mut self.segments {
            segment.base += base;
            segment.part += part;
        }
    }

    /// What a search needs of `segment`, whose ordinals `maps` locates
    /// (its bounds' sidecar found in `checksums`, by name in `dir`).
    fn open_segment(
        &self,
        dir: &Path,
        segment: &SegmentReader,
        maps: &[SegmentMap],
        checksums: &Checksums,
        chunks: u64,
    ) -> Result<Segment> {
        let ords_path = &self.parts[0].ords_path;
        let damaged = || crate::store::damaged(ords_path, "does not match the index");
        let id = segment.segment_id().uuid_string();
        let map = maps.iter().find(|map| map.id == id).with_context(damaged)?;
        ensure!(map.range.len() == segment.max_doc() as usize, damaged());
        let mut part = Segment {
            part: 0,
            base: 0,
            chunks,
            inverted: segment.inverted_index(self.body)?,
            lengths: segment.fast_fields().u64(LEN_FIELD)?,
            ords: map.range.clone(),
            dead: Vec::new(),
            buried: None,
            order: None,
            bounds: SegmentBounds::open(dir, &bounds::file_name(&id), checksums)?,
        };
        // An ordinal past the chunk table is caught as a search reaches it
        // (`score::chunk_of`).
        let ords = self.ords_of(&part)?;
        if map.dead > 0 {
            part.dead = (0..ords.len() as u32)
                .filter(|&doc| ords[doc as usize] == DEAD)
                .collect();
        }
        Ok(part)
    }

    /// The chunk ordinal (or [`DEAD`]) of each document of `segment`, in
    /// its own generation.
    fn ords_of(&self, segment: &Segment) -> Result<&[u32]> {
        let part = &self.parts[segment.part];
        let damaged = || crate::store::damaged(&part.ords_path, "does not match the index");
        // Checked whole when the list opened.
        let all: &[u32] = bytemuck::try_cast_slice(part.ords.unchecked())
            .map_err(|_| anyhow::anyhow!(damaged()))?;
        all.get(segment.ords.clone()).with_context(damaged)
    }

    /// The sparse folder of part `part`.
    fn part_dir(&self, part: usize) -> &Path {
        let ords_path = &self.parts[part].ords_path;
        ords_path.parent().unwrap_or(ords_path)
    }

    /// An error tantivy raised while reading the postings of part `part`
    /// means its sparse folder is damaged: say so, naming it (memidx's own
    /// errors already do).
    fn named_as_damage(&self, part: usize, err: anyhow::Error) -> anyhow::Error {
        let from_tantivy = err.downcast_ref::<tantivy::TantivyError>().is_some()
            || err.downcast_ref::<std::io::Error>().is_some();
        if !from_tantivy {
            return err;
        }
        let dir = self.part_dir(part);
        anyhow::anyhow!(damaged(dir, &format!("cannot be read ({err})")))
    }

    /// The query's terms as this list sees them.
    pub fn query_terms(&self, query: &str) -> Vec<String> {
        self.analyzer.terms(query)
    }

    /// The live term closest to `term` that it nearly matches (see
    /// [`crate::text::near`]; `term` itself when it is live, which a filter
    /// may have kept from matching): the candidates sharing its first two
    /// characters, streamed from each segment's term dictionary until one a
    /// slip away is found (nothing nearer is left but the term itself,
    /// looked up first).
    fn nearest_term(&self, term: &str) -> Result<Option<String>> {
        let Some(near) = NearMiss::of(term) else {
            return Ok(None);
        };
        if self.doc_freqs(term)?.1 > 0 {
            return Ok(Some(term.to_string()));
        }
        let mut best: Option<(usize, String)> = None;
        for segment in &self.segments {
            let terms = segment.inverted.terms().range().ge(near.prefix());
            let mut terms = (terms.into_stream())
                .map_err(|err| self.named_as_damage(segment.part, err.into()))?;
            while terms.advance() && terms.key().starts_with(near.prefix().as_bytes()) {
                let Ok(candidate) = std::str::from_utf8(terms.key()) else {
                    continue;
                };
                let Some(distance @ 1..) = near.distance(candidate) else {
                    continue;
                };
                if best
                    .as_ref()
                    .is_some_and(|(d, t)| (*d, t.as_str()) <= (distance, candidate))
                {
                    continue;
                }
                if self.doc_freqs(candidate)?.1 > 0 {
                    best = Some((distance, candidate.to_string()));
                    if distance == 1 {
                        break;
                    }
                }
            }
        }
        Ok(best.map(|(_, term)| term))
    }

    /// The postings of the term `text` (dead chunks' included) and how
    /// many live chunks hold it: what BM25's idf counts, so that every score
    /// equals a fresh index's.
    fn doc_freqs(&self, text: &str) -> Result<(u64, u32)> {
        let term = Term::from_field_text(self.body, text);
        let (mut postings, mut live) = (0, 0);
        for segment in &self.segments {
            let in_part = |err| self.named_as_damage(segment.part, err);
            let all = (segment.inverted.doc_freq(&term)).map_err(|err| in_part(err.into()))?;
            postings += u64::from(all);
            live += all - self.dead_postings(segment, &term, all).map_err(in_part)?;
        }
        Ok((postings, live))
    }
}

impl List for SparseList {
    fn kind(&self) -> ListKind {
        ListKind::Sparse
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let mut list = RankedList::empty(self.kind());
        let (weighed, total) = self.weigh_counting(query)?;
        list.prepare_time = started.elapsed();
        if !weighed.terms.is_empty() && window > 0 && self.stats.docs > 0 {
            let mut out = Collected {
                best: TopWindow::new(window),
                matched: 0,
                filtered_out: 0,
                scored: 0,
                past_the_end: None,
            };
            self.collect(&weighed, allow, &mut out)?;
            if let Some(part) = out.past_the_end {
                let ords_path = &self.parts[part].ords_path;
                bail!(damaged(ords_path, "names a chunk past the end"));
            }
            list.exact = weighed.exact;
            list.matched = out.matched;
            list.filtered_out = out.filtered_out;
            list.postings = Some(PostingCounts {
                total,
                scored: out.scored,
            });
            list.hits = out
                .best
                .into_sorted()
                .into_iter()
                .map(ListHit::from)
                .collect();
        }
        list.elapsed = started.elapsed();
        Ok(list)
    }

    /// Scores each hit's text as a search does ([`WeighedQuery::score`],
    /// the query weighed once, its terms counted by this list's analyzer)
    /// and compares: postings or lengths that disagree with the chunk's
    /// text are damage in the sparse files.
    fn check_hits(&self, query: &str, hits: &[(&str, f32)]) -> Result<()> {
        if hits.is_empty() {
            return Ok(());
        }
        let weighed = self.weigh(query)?;
        // A merged list cannot tell which generation's files a text came
        // from: it names the first, and says how many it searched.
        let dir = self.part_dir(0);
        let of_parts = match self.parts.len() {
            1 => String::new(),
            n => format!(" (one of {n} indexes searched as one)"),
        };
        for &(text, score) in hits {
            let tokens = self.analyzer.tokenize(text);
            let tf = |i: usize| {
                let term = &weighed.terms[i].0;
                tokens.iter().filter(|t| &t.text == term).count() as u32
            };
            let expected = weighed.score(tf, tokens.len() as u64);
            ensure!(
                (expected - score).abs() <= HIT_SCORE_TOLERANCE * expected.abs().max(1.0),
                damaged(
                    dir,
                    &format!(
                        "gives a chunk the score {score}, where its text gives {expected}{of_parts}"
                    )
                )
            );
        }
        Ok(())
    }

    fn coverage(&self, query: &str, documents: &[&str]) -> Result<Option<Coverage>> {
        let weighed = self.weigh(query)?;
        let shares = documents
            .iter()
            .map(|document| {
                let held: HashSet<String> = (self.analyzer.tokenize(document).into_iter())
                    .map(|token| token.text)
                    .collect();
                weighed.coverage(|i| held.contains(&weighed.terms[i].0))
            })
            .collect();
        Ok(Some(Coverage {
            shares,
            terms: weighed.terms.len(),
        }))
    }

    /// The first of the query's terms (of its first [`NEAR_MISS_TERMS`]
    /// distinct ones) that the list holds, or nearly does
    /// ([`crate::text::near`]), with the term held: a misspelt word, which
    /// the dense list may still answer, rather than noise.
    fn near_miss(&self, query: &str) -> Result<Option<(String, String)>> {
        let mut seen = std::collections::HashSet::new();
        let terms = self.query_terms(query).into_iter();
        for term in terms
            .filter(|t| seen.insert(t.clone()))
            .take(NEAR_MISS_TERMS)
        {
            if let Some(indexed) = self.nearest_term(&term)? {
                return Ok(Some((term, indexed)));
            }
        }
        Ok(None)
    }

    /// The query's words the chunk holds, in query order, each as the
    /// query wrote it (lowercased) with the term it was analyzed to when
    /// that differs, which would read as a typo alone (`databases (as
    /// databas)`), and each matched through accent folding marked with the
    /// accented word it came from (the query's or the chunk's): `matched
    /// café, cafe (folded from café)`.
    fn match_reason(&self, query: &str, text: &str) -> Option<String> {
        let held = self.analyzer.tokenize(text);
        let exact_in_text = |term: &str| held.iter().any(|t| t.text == term && !t.folded);
        let mut matched: Vec<String> = Vec::new();
        for token in self.analyzer.tokenize(query) {
            let Some(found) = held.iter().find(|t| t.text == token.text) else {
                continue;
            };
            let accented = if token.folded {
                Some(&query[token.offset_from..token.offset_to])
            } else if !exact_in_text(&token.text) {
                Some(&text[found.offset_from..found.offset_to])
            } else {
                None
            };
            let written = query[token.offset_from..token.offset_to].to_lowercase();
            let shown = match accented {
                Some(word) => format!("{} (folded from {word})", token.text),
                None if written == token.text => token.text,
                None => format!("{written} (as {})", token.text),
            };
            if !matched.contains(&shown) {
                matched.push(shown);
            }
        }
        (!matched.is_empty()).then(|| format!("matched {}", matched.join(", ")))
    }
}

impl SparseList {
    /// `query` weighed by this list's live documents: its distinct terms,
    /// each with idf × its count in the query, and BM25 with the live
    /// average length. What scores a chunk whose terms are known elsewhere
    /// (a remote engine's copy of the index) exactly as a search here would.
    pub fn weigh(&self, query: &str) -> Result<WeighedQuery> {
        let (weighed, _) = self.weigh_counting(query)?;
        Ok(weighed)
    }

    /// [`Self::weigh`], and how many postings the query's terms have.
    fn weigh_counting(&self, query: &str) -> Result<(WeighedQuery, u64)> {
        // Per term, how often the query holds it and whether one of those
        // is a whole query word shaped like an identifier (the first term
        // at a position is the word's own or its identifier's whole form).
        let mut counts: BTreeMap<String, (u32, bool)> = BTreeMap::new();
        let mut position = None;
        for token in self.analyzer.tokenize(query) {
            let whole = position != Some(token.position);
            position = Some(token.position);
            let shaped = whole && looks_like_identifier(&query[token.offset_from..token.offset_to]);
            let (count, any_shaped) = counts.entry(token.text).or_default();
            *count += 1;
            *any_shaped |= shaped;
        }
        let docs = self.stats.docs as f32;
        let Bm25Params { k1, b } = self.params;
        let bm25 = Bm25 {
            k1,
            b,
            avgdl: (self.stats.tokens as f32 / docs).max(f32::MIN_POSITIVE),
        };
        let mut total = 0;
        let mut exact = false;
        let mut terms = Vec::with_capacity(counts.len());
        for (text, (count, shaped)) in counts {
            let (postings, df) = self.doc_freqs(&text)?;
            total += postings;
            exact |= df > 0 && shaped;
            let df = df as f32;
            let idf = (1.0 + (docs - df + 0.5) / (df + 0.5)).ln();
            terms.push((text, idf * count as f32));
        }
        Ok((WeighedQuery { terms, exact, bm25 }, total))
    }

    /// Scores the terms of `weighed` segment by segment into `out`.
    fn collect(&self, weighed: &WeighedQuery, allow: &AllowSet, out: &mut Collected) -> Result<()> {
        let weighted: Vec<QueryTerm> = weighed
            .terms
            .iter()
            .map(|(text, weight)| QueryTerm {
                term: Term::from_field_text(self.body, text),
                weight: *weight,
            })
            .collect();
        for segment in &self.segments {
            let ords = self.ords_of(segment)?;
            let scored = match &segment.bounds {
                Some(_) if weighted.len() <= self.pruned_terms => {
                    score::max_score(segment, ords, &weighted, weighed.bm25, allow, out)
                }
                _ => score::exhaustive(segment, ords, &weighted, weighed.bm25, allow, out),
            };
            scored.map_err(|err| self.named_as_damage(segment.part, err))?;
        }
        Ok(())
    }

    /// How many of `term`'s `all` postings in `segment` are dead documents':
    /// by seeking each dead document when they are few, else by walking
    /// the postings. Document frequencies count live documents only, so
    /// that every score equals a fresh index's.
    fn dead_postings(&self, segment: &Segment, term: &Term, all: u32) -> Result<u32> {
        if segment.dead.is_empty() || all == 0 {
            return Ok(0);
        }
        let Some(mut postings) = segment
            .inverted
            .read_postings(term, IndexRecordOption::Basic)?
        else {
            return Ok(0);
        };
        let mut dead = 0;
        if segment.dead.len() < all as usize {
            for &doc in &segment.dead {
                if postings.doc() < doc {
                    postings.seek(doc);
                }
                if postings.doc() == TERMINATED {
                    break;
                }
                dead += u32::from(postings.doc() == doc);
            }
        } else {
            let ords = self.ords_of(segment)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                let gone = ords.get(doc as usize).is_none_or(|&o| o == DEAD);
                dead += u32::from(gone || segment.is_buried(doc));
                doc = postings.advance();
            }
        }
        Ok(dead)
    }
}

/// The segments listed in an [`ORDS_FILE`] header.
fn segment_ranges(bytes: &[u8]) -> Option<Vec<SegmentMap>> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let count = u32_at(0)? as usize;
    let mut start = (4 + count.checked_mul(SEGMENT_ENTRY_BYTES)?) / 4;
    let mut segments = Vec::with_capacity(count);
    for i in 0..count {
        let entry = 4 + i * SEGMENT_ENTRY_BYTES;
        let id = std::str::from_utf8(bytes.get(entry..entry + 32)?).ok()?;
        let docs = u32_at(entry + 32)? as usize;
        segments.push(SegmentMap {
            id: id.to_string(),
            range: start..start + docs,
            dead: u32_at(entry + 36)?,
        });
        start += docs;
    }
    (start * 4 == bytes.len()).then_some(segments)
}

/// The schema: the analyzed body (term frequencies, no positions), and the
/// chunk's uid and token count as fast fields.
fn schema() -> Schema {
    let mut builder = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER_NAME)
        .set_index_option(IndexRecordOption::WithFreqs);
    builder.add_text_field(
        BODY_FIELD,
        TextOptions::default().set_indexing_options(indexing),
    );
    builder.add_u64_field(UID_FIELD, FAST);
    builder.add_u64_field(LEN_FIELD, FAST);
    builder.build()
}

fn register(index: &Index) {
    index
        .tokenizers()
        .register(TOKENIZER_NAME, TermsTokenizer::default());
}

/// Reads the body field's text back into its terms ([`ended_terms`]),
/// into one reused token, as tantivy's own tokenizers do.
#[derive(Clone, Default)]
struct TermsTokenizer {
    token: TantivyToken,
}

impl Tokenizer for TermsTokenizer {
    type TokenStream<'a> = TermStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TermStream<'a> {
        self.token.reset();
        TermStream {
            terms: text.split_terminator(TERM_END),
            token: &mut self.token,
        }
    }
}

/// The terms of one chunk, one at a time in one token.
struct TermStream<'a> {
    terms: std::str::SplitTerminator<'a, char>,
    token: &'a mut TantivyToken,
}

impl TokenStream for TermStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(term) = self.terms.next() else {
            return false;
        };
        self.token.text.clear();
        self.token.text.push_str(term);
        self.token.position = self.token.position.wrapping_add(1);
        true
    }

    fn token(&self) -> &TantivyToken {
        self.token
    }

    fn token_mut(&mut self) -> &mut TantivyToken {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_is_the_share_of_the_query_weight_a_chunk_holds() {
        let weighed = WeighedQuery {
            terms: vec![("rare".into(), 3.0), ("common".into(), 1.0)],
            exact: false,
            bm25: Bm25 {
                k1: 1.5,
                b: 0.75,
                avgdl: 10.0,
            },
        };
        assert_eq!(weighed.coverage(|_| true), 1.0);
        assert_eq!(weighed.coverage(|i| i == 0), 0.75);
        assert_eq!(weighed.coverage(|i| i == 1), 0.25);
        let none = weighed.coverage(|_| false);
        assert!(none == 0.0 && none.is_sign_positive(), "{none}");
        let empty = WeighedQuery {
            terms: Vec::new(),
            ..weighed
        };
        assert_eq!(empty.coverage(|_| true), 0.0);
    }

    /// An `ORDS_FILE` with the given (id digit, ordinals) segments.
    fn ords_file(segments: &[(char, &[u32])]) -> Vec<u8> {
        let mut bytes = (segments.len() as u32).to_le_bytes().to_vec();
        for (digit, ords) in segments {
            bytes.extend(digit.to_string().repeat(32).as_bytes());
            bytes.extend((ords.len() as u32).to_le_bytes());
            let dead = ords.iter().filter(|&&o| o == DEAD).count() as u32;
            bytes.extend(dead.to_le_bytes());
        }
        for (_, ords) in segments {
            bytes.extend(ords.iter().flat_map(|o| o.to_le_bytes()));
        }
        bytes
    }

    #[test]
    fn the_ordinal_map_header_locates_each_segment_and_counts_its_dead() {
        let bytes = ords_file(&[('a', &[0, DEAD, 2]), ('b', &[1])]);
        let maps = segment_ranges(&bytes).unwrap();
        // Header: 4 + 2 × 40 bytes = 21 u32s; then 3 and 1 ordinals.
        assert_eq!(
            maps,
            [
                SegmentMap {
                    id: "a".repeat(32),
                    range: 21..24,
                    dead: 1
                },
                SegmentMap {
                    id: "b".repeat(32),
                    range: 24..25,
                    dead: 0
                },
            ]
        );
        assert_eq!(segment_ranges(&ords_file(&[])).unwrap(), []);
    }

    /// The terms `tokenizer` reads back from a chunk's body text.
    fn read_back(tokenizer: &mut TermsTokenizer, text: &str) -> Vec<String> {
        let mut stream = tokenizer.token_stream(text);
        let mut terms = Vec::new();
        while stream.advance() {
            terms.push(stream.token().text.clone());
        }
        terms
    }

    #[test]
    fn tantivy_reads_back_every_term_the_analyzer_made_and_no_other() {
        let analyzer = Analyzer::default();
        // One tokenizer for every chunk, as a tantivy indexing thread has.
        let mut tokenizer = TermsTokenizer::default();
        for text in [
            "",
            "  ,; ",
            "Set INC-2023-Q4-011 in ERR_CONN_RESET and café naïve",
            "nul\0inside a\0\0word, and getUserName()",
            "日本語のテキスト and ﬁle ligatures",
        ] {
            let tokens = analyzer.tokenize(text);
            let (count, body) = ended_terms(&tokens);
            let made: Vec<String> = tokens.into_iter().map(|t| t.text).collect();
            assert!(made.iter().all(|term| !term.contains(TERM_END)), "{made:?}");
            assert_eq!(count, made.len());
            assert_eq!(read_back(&mut tokenizer, &body), made, "{text:?}");
        }
        // An empty term (the analyzer makes none) still comes back as one.
        let template = analyzer.tokenize("x").remove(0);
        let odd: Vec<Token> = ["", "x", ""]
            .map(|text| Token {
                text: text.to_string(),
                ..template.clone()
            })
            .into();
        let (count, body) = ended_terms(&odd);
        assert_eq!(count, 3);
        assert_eq!(read_back(&mut tokenizer, &body), ["", "x", ""]);
    }

    #[test]
    fn a_truncated_or_padded_ordinal_map_is_refused() {
        let bytes = ords_file(&[('a', &[0, 1])]);
        assert!(segment_ranges(&bytes[..bytes.len() - 4]).is_none());
        assert!(segment_ranges(&[bytes.as_slice(), &[0; 4]].concat()).is_none());
        assert!(segment_ranges(&bytes[..10]).is_none());
        assert!(segment_ranges(&[]).is_none());
    }
}
