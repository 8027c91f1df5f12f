//! The sparse list: BM25 over chunk text + heading path, stored with tantivy.
//!
//! tantivy keeps the persistent, memory-mapped inverted index (terms,
//! postings with term frequencies) and two fast fields per chunk: its
//! ordinal and its exact length in tokens. Scoring is done here, term at a
//! time over tantivy's postings, with the Lucene BM25 formula
//! `idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`,
//! `idf = ln(1 + (N − n + 0.5)/(n + 0.5))`, but with exact document lengths
//! (tantivy's own scorer quantizes them to one byte and fixes k1 = 1.2) and
//! with [`Bm25Params`] recorded in the index. The filter [`AllowSet`] is
//! applied to every match before the top window is taken.
//!
//! Text is analyzed once by the identifier-aware [`Analyzer`], in parallel
//! (`rayon`), and handed to tantivy pre-tokenized; the analyzer is also
//! registered with tantivy as the tokenizer [`TOKENIZER_NAME`], so the index
//! is self-describing. Queries use the same analyzer.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tantivy::postings::Postings;
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{PreTokenizedString, Token as TantivyToken, TokenStream, Tokenizer};
use tantivy::{
    DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, TantivyDocument, Term,
};

use super::{Candidate, ListHit, RankedList, SearchIndex, TopWindow};
use crate::filter::AllowSet;
use crate::store::damaged;
use crate::store::generation::ChunkOrd;
use crate::text::tokenize::{Analyzer, Token};

/// Name under which the analyzer is registered with tantivy.
pub const TOKENIZER_NAME: &str = "memidx";

const BODY_FIELD: &str = "body";
const ORD_FIELD: &str = "ord";
const LEN_FIELD: &str = "len";

/// Indexing memory budget for tantivy's writer, all threads together.
const WRITER_MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// Chunks analyzed per parallel batch while building (bounds the memory
/// held by tokens in flight).
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

/// k1 = 1.5 (the bm25s default; Lucene uses 1.2), b = 0.75. Measured on
/// shared/eval/cranfield with exact lengths, sparse nDCG@10: k1 1.2 → 0.3615,
/// 1.5 → 0.3676, 2.0 → 0.3684; 1.5 is the common middle ground, not the
/// collection's best.
impl Default for Bm25Params {
    fn default() -> Self {
        Self { k1: 1.5, b: 0.75 }
    }
}

/// The BM25 list of one generation.
pub struct SparseIndex {
    reader: IndexReader,
    body: Field,
    analyzer: Analyzer,
    params: Bm25Params,
}

/// Builds the sparse index in `dir` from the searchable texts, ordinal = position.
pub fn build(dir: &Path, analyzer: Analyzer, texts: &[String]) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (schema, body, ord, len) = schema();
    let index = Index::create_in_dir(dir, schema)
        .with_context(|| format!("cannot create the sparse index in {}", dir.display()))?;
    register(&index, analyzer);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let mut writer: IndexWriter = index.writer_with_num_threads(threads, WRITER_MEMORY_BYTES)?;
    for (batch_index, batch) in texts.chunks(ANALYZE_BATCH).enumerate() {
        let analyzed: Vec<Vec<Token>> = batch.par_iter().map(|t| analyzer.tokenize(t)).collect();
        for (offset, tokens) in analyzed.into_iter().enumerate() {
            let chunk = (batch_index * ANALYZE_BATCH + offset) as u64;
            let mut doc = TantivyDocument::default();
            doc.add_u64(ord, chunk);
            doc.add_u64(len, tokens.len() as u64);
            doc.add_pre_tokenized_text(
                body,
                PreTokenizedString {
                    text: String::new(),
                    tokens: tokens.into_iter().map(to_tantivy).collect(),
                },
            );
            writer.add_document(doc)?;
        }
    }
    writer.commit().context("cannot commit the sparse index")?;
    writer.wait_merging_threads()?;
    Ok(())
}

fn to_tantivy(t: Token) -> TantivyToken {
    TantivyToken {
        offset_from: t.offset_from,
        offset_to: t.offset_to,
        position: t.position,
        text: t.text,
        position_length: 1,
    }
}

impl SparseIndex {
    /// Opens the sparse index in `dir`, scoring with `params`.
    pub fn open(dir: &Path, analyzer: Analyzer, params: Bm25Params) -> Result<Self> {
        let damaged = || damaged(dir, "cannot be opened");
        let index = Index::open_in_dir(dir).with_context(damaged)?;
        register(&index, analyzer);
        let body = index.schema().get_field(BODY_FIELD).with_context(damaged)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .with_context(damaged)?;
        Ok(Self {
            reader,
            body,
            analyzer,
            params,
        })
    }

    /// The query's terms as this list sees them.
    pub fn query_terms(&self, query: &str) -> Vec<String> {
        self.analyzer.terms(query)
    }
}

impl SearchIndex for SparseIndex {
    fn name(&self) -> &'static str {
        "sparse"
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let mut terms: BTreeMap<String, u32> = BTreeMap::new();
        for term in self.query_terms(query) {
            *terms.entry(term).or_default() += 1;
        }
        let mut list = RankedList::empty(self.name());
        list.prepare_time = started.elapsed();
        if !terms.is_empty() && window > 0 {
            let mut best = TopWindow::new(window);
            self.score(&terms, |chunk, score| {
                if allow.allows(chunk) {
                    list.matched += 1;
                    best.push(Candidate { score, chunk });
                } else {
                    list.filtered_out += 1;
                }
            })?;
            list.hits = best.into_sorted().into_iter().map(ListHit::from).collect();
        }
        list.elapsed = started.elapsed();
        Ok(list)
    }
}

impl SparseIndex {
    /// Scores every chunk that holds at least one of `terms` (term → its
    /// count in the query) and hands each `(chunk, score)` to `emit`.
    fn score(
        &self,
        terms: &BTreeMap<String, u32>,
        mut emit: impl FnMut(ChunkOrd, f32),
    ) -> Result<()> {
        let searcher = self.reader.searcher();
        let docs = searcher.num_docs() as f32;
        let mut total_tokens = 0u64;
        for segment in searcher.segment_readers() {
            total_tokens += segment.inverted_index(self.body)?.total_num_tokens();
        }
        if docs == 0.0 {
            return Ok(());
        }
        let avgdl = (total_tokens as f32 / docs).max(f32::MIN_POSITIVE);
        let Bm25Params { k1, b } = self.params;
        let mut weighted = Vec::with_capacity(terms.len());
        for (text, count) in terms {
            let term = Term::from_field_text(self.body, text);
            let df = searcher.doc_freq(&term)? as f32;
            let idf = (1.0 + (docs - df + 0.5) / (df + 0.5)).ln();
            weighted.push((term, idf * *count as f32));
        }
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.body)?;
            let lengths = segment.fast_fields().u64(LEN_FIELD)?;
            let ords = segment.fast_fields().u64(ORD_FIELD)?;
            let mut scores = vec![0.0f32; segment.max_doc() as usize];
            let mut touched = Vec::new();
            for (term, weight) in &weighted {
                let Some(mut postings) =
                    inverted.read_postings(term, IndexRecordOption::WithFreqs)?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let tf = postings.term_freq() as f32;
                    let dl = lengths.first(doc).unwrap_or(0) as f32;
                    let slot = &mut scores[doc as usize];
                    if *slot == 0.0 {
                        touched.push(doc);
                    }
                    *slot += weight * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl));
                    doc = postings.advance();
                }
            }
            let alive = segment.alive_bitset();
            for doc in touched {
                if alive.is_some_and(|a| !a.is_alive(doc)) {
                    continue;
                }
                if let Some(chunk) = ords.first(doc).and_then(|o| ChunkOrd::try_from(o).ok()) {
                    emit(chunk, scores[doc as usize]);
                }
            }
        }
        Ok(())
    }
}

/// The schema: the analyzed body (term frequencies, no positions), and the
/// chunk ordinal and token count as fast fields.
fn schema() -> (Schema, Field, Field, Field) {
    let mut builder = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER_NAME)
        .set_index_option(IndexRecordOption::WithFreqs);
    let body = builder.add_text_field(
        BODY_FIELD,
        TextOptions::default().set_indexing_options(indexing),
    );
    let ord = builder.add_u64_field(ORD_FIELD, FAST);
    let len = builder.add_u64_field(LEN_FIELD, FAST);
    (builder.build(), body, ord, len)
}

fn register(index: &Index, analyzer: Analyzer) {
    index
        .tokenizers()
        .register(TOKENIZER_NAME, AnalyzerTokenizer(analyzer));
}

/// Adapts [`Analyzer`] to tantivy's tokenizer interface.
#[derive(Clone)]
struct AnalyzerTokenizer(Analyzer);

impl Tokenizer for AnalyzerTokenizer {
    type TokenStream<'a> = VecTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let tokens = self.0.tokenize(text).into_iter().map(to_tantivy).collect();
        VecTokenStream { tokens, next: 0 }
    }
}

/// A token stream over pre-computed tokens.
struct VecTokenStream {
    tokens: Vec<TantivyToken>,
    next: usize,
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &TantivyToken {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut TantivyToken {
        &mut self.tokens[self.next - 1]
    }
}
