//! The sparse list: BM25 over chunk text + heading path, stored with tantivy.
//!
//! tantivy gives a persistent, memory-mapped inverted index with Lucene's
//! BM25 (k1 = 1.2, b = 0.75, IDF `ln(1 + (N − n + 0.5)/(n + 0.5))`, document
//! lengths quantized to one byte as in Lucene). Text is analyzed by the
//! identifier-aware [`Analyzer`], registered with tantivy as the tokenizer
//! [`TOKENIZER_NAME`]; queries are analyzed by the same analyzer and run as a
//! disjunction of term queries. Each document stores only its chunk ordinal
//! (a fast field), which a custom collector uses to apply the filter
//! [`AllowSet`] before the top window is taken.

use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::query::BooleanQuery;
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{Token as TantivyToken, TokenStream, Tokenizer};
use tantivy::{
    DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, SegmentReader, TantivyDocument,
    Term,
};

use super::{Candidate, ListHit, RankedList, SearchIndex, TopWindow};
use crate::filter::AllowSet;
use crate::store::generation::ChunkOrd;
use crate::text::tokenize::Analyzer;

/// Name under which the analyzer is registered with tantivy.
pub const TOKENIZER_NAME: &str = "memidx";

const BODY_FIELD: &str = "body";
const ORD_FIELD: &str = "ord";

/// Indexing memory budget for tantivy's writer, all threads together.
const WRITER_MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// The BM25 list of one generation.
pub struct SparseIndex {
    reader: IndexReader,
    body: Field,
    analyzer: Analyzer,
}

/// Builds the sparse index in `dir` from `(ordinal, searchable text)` pairs.
pub fn build<I>(dir: &Path, analyzer: Analyzer, docs: I) -> Result<()>
where
    I: IntoIterator<Item = (ChunkOrd, String)>,
{
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (schema, body, ord) = schema();
    let index = Index::create_in_dir(dir, schema)
        .with_context(|| format!("cannot create the sparse index in {}", dir.display()))?;
    register(&index, analyzer);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let mut writer: IndexWriter = index.writer_with_num_threads(threads, WRITER_MEMORY_BYTES)?;
    for (chunk, text) in docs {
        let mut doc = TantivyDocument::default();
        doc.add_u64(ord, u64::from(chunk));
        doc.add_text(body, text);
        writer.add_document(doc)?;
    }
    writer.commit().context("cannot commit the sparse index")?;
    writer.wait_merging_threads()?;
    Ok(())
}

impl SparseIndex {
    /// Opens the sparse index in `dir`.
    pub fn open(dir: &Path, analyzer: Analyzer) -> Result<Self> {
        let damaged = || {
            format!(
                "index is damaged: {} cannot be opened; run 'memidx index' to rebuild it",
                dir.display()
            )
        };
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
        let terms: Vec<Term> = self
            .query_terms(query)
            .iter()
            .map(|t| Term::from_field_text(self.body, t))
            .collect();
        let mut list = RankedList::empty(self.name());
        list.prepare_time = started.elapsed();
        if !terms.is_empty() && window > 0 {
            let query = BooleanQuery::new_multiterms_query(terms);
            let collector = WindowCollector {
                window,
                allow: allow.clone(),
            };
            let fruit = self.reader.searcher().search(&query, &collector)?;
            list.hits = fruit.candidates.into_iter().map(ListHit::from).collect();
            list.matched = fruit.matched;
            list.filtered_out = fruit.filtered_out;
        }
        list.elapsed = started.elapsed();
        Ok(list)
    }
}

/// The schema: the analyzed body (term frequencies, no positions) and the
/// chunk ordinal as a fast field.
fn schema() -> (Schema, Field, Field) {
    let mut builder = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER_NAME)
        .set_index_option(IndexRecordOption::WithFreqs);
    let body = builder.add_text_field(
        BODY_FIELD,
        TextOptions::default().set_indexing_options(indexing),
    );
    let ord = builder.add_u64_field(ORD_FIELD, FAST);
    (builder.build(), body, ord)
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
        let tokens = self
            .0
            .tokenize(text)
            .into_iter()
            .map(|t| TantivyToken {
                offset_from: t.offset_from,
                offset_to: t.offset_to,
                position: t.position,
                text: t.text,
                position_length: 1,
            })
            .collect();
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

/// Keeps the best `window` candidates the filter allows, and counts matches.
struct WindowCollector {
    window: usize,
    allow: AllowSet,
}

/// What one segment (or all, after merging) collected.
#[derive(Default)]
struct WindowFruit {
    candidates: Vec<Candidate>,
    matched: usize,
    filtered_out: usize,
}

struct WindowSegmentCollector {
    ords: Column<u64>,
    allow: AllowSet,
    best: TopWindow,
    matched: usize,
    filtered_out: usize,
}

impl Collector for WindowCollector {
    type Fruit = WindowFruit;
    type Child = WindowSegmentCollector;

    fn for_segment(&self, _segment: u32, reader: &SegmentReader) -> tantivy::Result<Self::Child> {
        Ok(WindowSegmentCollector {
            ords: reader.fast_fields().u64(ORD_FIELD)?,
            allow: self.allow.clone(),
            best: TopWindow::new(self.window),
            matched: 0,
            filtered_out: 0,
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<WindowFruit>) -> tantivy::Result<WindowFruit> {
        let mut best = TopWindow::new(self.window);
        let mut merged = WindowFruit::default();
        for fruit in fruits {
            merged.matched += fruit.matched;
            merged.filtered_out += fruit.filtered_out;
            fruit.candidates.into_iter().for_each(|c| best.push(c));
        }
        merged.candidates = best.into_sorted();
        Ok(merged)
    }
}

impl SegmentCollector for WindowSegmentCollector {
    type Fruit = WindowFruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        let Some(chunk) = self
            .ords
            .first(doc)
            .and_then(|o| ChunkOrd::try_from(o).ok())
        else {
            return;
        };
        if !self.allow.allows(chunk) {
            self.filtered_out += 1;
            return;
        }
        self.matched += 1;
        self.best.push(Candidate { score, chunk });
    }

    fn harvest(self) -> WindowFruit {
        WindowFruit {
            candidates: self.best.into_sorted(),
            matched: self.matched,
            filtered_out: self.filtered_out,
        }
    }
}
