//! The sparse and dense lists run on Milvus, as a [`Backend`] of the
//! retriever: each returns its window of allowed chunks, by local ordinal,
//! so the first pass, the dense feedback, the fusion, ties and explain stay
//! the retriever's own code.
//!
//! - **Sparse**: the query's terms by the index's own tokenizer, encoded as
//!   the rows' terms are ([`super::rows`]), searched on the BM25 function's
//!   field for [`RESCORE_DEPTH`] × the window candidates, each with its
//!   encoded terms. Milvus's BM25 counts N, average length and document
//!   frequencies its own way — a cluster keeps replaced and deleted rows in
//!   them until it compacts, milvus-lite counts each segment apart — so its
//!   scores only choose the candidates: each is scored again from its terms
//!   with the index's live statistics ([`WeighedQuery`]), which gives the
//!   local list's score bit for bit. (Elasticsearch's
//!   `dfs_query_then_fetch` makes the same trade: global statistics, scoring
//!   where the postings are.)
//! - **Dense**: the query embedded here with the index's model, quantized
//!   to int8 and back as the local scan quantizes it, searched by inner
//!   product over the dequantized rows: the local scan's cosines up to f32
//!   rounding. The feedback step moves the query toward its seeds' vectors
//!   as the local list does, and the moved query is searched again.
//!
//! Each search takes [`TIE_MARGIN`] more hits than it keeps and orders them
//! as the local lists do (score, then ordinal), so chunks tied at the
//! window's edge are cut where memidx cuts them. A hit the local filter
//! rejects is an error (the collection's metadata would then differ from
//! the index's), so a filtered search never returns such a chunk.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use milvus::v2::prelude::*;

use super::Target;
use super::collection::{Collection, pushed_mark};
use super::connection::Connection;
use super::expr::expression;
use super::rows::{encode_term, field};
use crate::embed::Embedder;
use crate::filter::Filter;
use crate::index::Index;
use crate::lists::dense::{
    DenseOptions, StoredVectors, cached_floor, floor, moved_query, quantize,
};
use crate::lists::sparse::{SparseList, WeighedQuery};
use crate::lists::{
    AllowSet, Coverage, List, ListHit, ListKind, RankedList, RemoteQuery, RemoteRequest,
};
use crate::retriever::{Backend, local_sparse};
use crate::store::generation::{ChunkOrd, VectorFlags};
use crate::store::parts::Parts;

/// Hits taken beyond the window, to cut ties as the local lists do.
pub const TIE_MARGIN: usize = 16;

/// How many times the window the sparse list takes from Milvus to score
/// again: room for Milvus's statistics to order the candidates otherwise
/// than the index's.
pub const RESCORE_DEPTH: usize = 2;

/// Most hits one Milvus search returns (its `topk` limit).
pub const MAX_HITS: usize = 16_384;

/// A search's lists run on the Milvus collection `target`.
pub struct Milvus {
    target: Target,
    shared: OnceLock<Arc<Shared>>,
    filter: Arc<Mutex<String>>,
}

/// What both lists of one search share: the collection and the filter.
struct Shared {
    collection: Collection,
    filter: Arc<Mutex<String>>,
}

impl Milvus {
    /// The backend of `target` (connected when the lists are opened).
    pub fn new(target: Target) -> Self {
        Self {
            target,
            shared: OnceLock::new(),
            filter: Arc::new(Mutex::new(String::new())),
        }
    }

    /// The collection, opened and checked against `index` once.
    fn shared(&self, index: &Index) -> Result<Arc<Shared>> {
        if let Some(shared) = self.shared.get() {
            if shared.collection.pushed.as_deref() == Some(&pushed_mark(index.manifest())) {
                return Ok(Arc::clone(shared));
            }
            bail!("the index changed while its lists were opened; search again");
        }
        let collection =
            Collection::open_for_search(Connection::open(&self.target)?, index.manifest())?;
        let shared = Arc::new(Shared {
            collection,
            filter: Arc::clone(&self.filter),
        });
        Ok(Arc::clone(self.shared.get_or_init(|| shared)))
    }
}

impl Backend for Milvus {
    fn sparse(&self, index: &Index) -> Result<Box<dyn List>> {
        Ok(Box::new(SparseOnMilvus {
            shared: self.shared(index)?,
            parts: reopen(index)?,
            local: local_sparse(index)?,
        }))
    }

    fn dense(
        &self,
        index: &Index,
        embedder: &'static dyn Embedder,
        options: DenseOptions,
    ) -> Result<Box<dyn List>> {
        // The collection's dense index is FLAT (see `collection`): Milvus
        // already scans every vector, so `options.exact` holds as it is,
        // and there are no sign codes for `options.rescore` to size.
        let feedback = options.feedback;
        let parts = reopen(index)?;
        let manifest = index.manifest();
        let vectors = (parts.parts().iter().zip(manifest.parts()))
            .map(|(part, (_, checksums))| {
                let generation = part.generation();
                let vectors =
                    StoredVectors::open(generation.dir(), generation.len(), embedder.info().dim)?
                        .checked(checksums)?;
                Ok((vectors, generation.vector_flags()))
            })
            .collect::<Result<_>>()?;
        Ok(Box::new(DenseOnMilvus {
            shared: self.shared(index)?,
            parts,
            vectors,
            embedder,
            feedback,
            floor: known(manifest.noise_floor),
            word_floor: known(manifest.word_floor),
        }))
    }

    fn name(&self) -> String {
        self.target.to_string()
    }

    fn graph_refusal(&self) -> Option<String> {
        Some(format!(
            "the graph list is not pushed to Milvus; leave graph out of --mode to search {}",
            self.target
        ))
    }

    /// Applies `filter` inside each sub-search from now on, as a boolean
    /// expression (one search at a time: the lists read it when they run).
    fn restrict(&self, filter: &Filter) {
        *self.filter.lock().unwrap_or_else(|e| e.into_inner()) = expression(filter);
    }
}

/// The index's parts, opened again for a list to keep (to find the
/// ordinals of the chunk ids Milvus returns).
fn reopen(index: &Index) -> Result<Parts> {
    Parts::open(index.dir(), &index.manifest().parts())
}

/// One hit of a Milvus search: the chunk, Milvus's raw score, and the
/// chunk's encoded terms when they were asked for.
struct Found {
    chunk: ChunkOrd,
    raw: f32,
    terms: Option<String>,
}

impl Shared {
    /// The best `limit` chunks of `allow` on `vector_field` for `query`, as
    /// Milvus ranks them, with their encoded terms if `with_terms`.
    fn fetch(
        &self,
        parts: &Parts,
        query: RemoteQuery,
        vector_field: &'static str,
        limit: usize,
        allow: &AllowSet,
        with_terms: bool,
    ) -> Result<(Vec<Found>, RemoteRequest)> {
        let request = RemoteRequest {
            field: vector_field,
            query,
            filter: self
                .filter
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            limit: limit.min(MAX_HITS),
        };
        let query = match &request.query {
            RemoteQuery::Text(text) => SearchVectors::EmbeddedText(vec![text.clone()]),
            RemoteQuery::Vector(vector) => SearchVectors::Float(vec![vector.clone()]),
        };
        let (filter, limit) = (request.filter.clone(), request.limit);
        let outputs: &[&str] = if with_terms { &[field::TERMS] } else { &[] };
        let name = self.collection.name();
        let response = self.collection.connection.call("search", |c| async move {
            c.search(
                SearchRequest::builder()
                    .collection_name(name)
                    .vector_field(vector_field)
                    .vectors(query)
                    .filter(filter)
                    .limit(limit as i64)
                    .output_fields(outputs.iter().copied())
                    .consistency_level(ConsistencyLevel::Strong)
                    .build()?,
            )
            .await
        })?;
        let Some(result) = response.results().iter().next() else {
            return Ok((Vec::new(), request));
        };
        let Ids::VarChar(ids) = result.get_ids() else {
            bail!(
                "{} answered with integer ids; it is not a memidx collection",
                self.collection.connection.target()
            );
        };
        let mut rows = result.rows()?;
        let mut found = Vec::with_capacity(ids.len());
        for (id, &raw) in ids.iter().zip(result.get_scores()) {
            let row = rows.next();
            let chunk = parts.find(id).with_context(|| {
                format!(
                    "{} holds chunk {id}, which this index does not; run 'memidx push {0}'",
                    self.collection.connection.target()
                )
            })?;
            if !allow.allows(chunk) {
                bail!(
                    "{} returned chunk {id}, which the filter excludes; the collection's metadata differs from the index's: run 'memidx push {0}'",
                    self.collection.connection.target()
                );
            }
            let terms = match (with_terms, row) {
                (false, _) => None,
                (true, Some(row)) => Some(row.get_str(field::TERMS)?.to_string()),
                (true, None) => bail!(
                    "{} returned chunk {id} without its terms",
                    self.collection.connection.target()
                ),
            };
            found.push(Found { chunk, raw, terms });
        }
        Ok((found, request))
    }
}

/// The best `window` of `hits`, ordered as the local lists order them.
fn best(mut hits: Vec<ListHit>, window: usize) -> Vec<ListHit> {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
    hits.truncate(window);
    hits
}

/// The score `query` gives a chunk whose encoded terms are `terms`.
fn rescore(query: &WeighedQuery, encoded: &[String], terms: &str) -> f32 {
    let mut tf = vec![0u32; encoded.len()];
    let mut dl = 0u64;
    for token in terms.split_ascii_whitespace() {
        dl += 1;
        if let Some(i) = encoded.iter().position(|e| e == token) {
            tf[i] += 1;
        }
    }
    query.score(|i| tf[i], dl)
}

/// The BM25 list on Milvus.
struct SparseOnMilvus {
    shared: Arc<Shared>,
    parts: Parts,
    /// The index's own list, for its live statistics.
    local: SparseList,
}

impl List for SparseOnMilvus {
    fn kind(&self) -> ListKind {
        ListKind::Sparse
    }

    /// From the index's own term dictionaries, as a local search says it.
    fn near_miss(&self, query: &str) -> Result<Option<(String, String)>> {
        self.local.near_miss(query)
    }

    /// As a local search measures it: the query weighed by the index's
    /// statistics, the texts by its analyzer.
    fn coverage(&self, query: &str, documents: &[&str]) -> Result<Option<Coverage>> {
        self.local.coverage(query, documents)
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let weighed = self.local.weigh(query)?;
        let encoded: Vec<String> = weighed.terms.iter().map(|(t, _)| encode_term(t)).collect();
        let text: Vec<String> = self
            .local
            .query_terms(query)
            .iter()
            .map(|t| encode_term(t))
            .collect();
        let mut list = RankedList::empty(self.kind());
        list.exact = weighed.exact;
        list.prepare_time = started.elapsed();
        if !encoded.is_empty() && window > 0 {
            let (found, request) = self.shared.fetch(
                &self.parts,
                RemoteQuery::Text(text.join(" ")),
                field::SPARSE,
                window * RESCORE_DEPTH + TIE_MARGIN,
                allow,
                true,
            )?;
            list.request = Some(request);
            list.matched = found.len();
            let hits = found
                .into_iter()
                .map(|f| ListHit {
                    chunk: f.chunk,
                    score: rescore(&weighed, &encoded, f.terms.as_deref().unwrap_or_default()),
                })
                .collect();
            list.hits = best(hits, window);
        }
        list.elapsed = started.elapsed();
        Ok(list)
    }
}

/// The dense list on Milvus.
struct DenseOnMilvus {
    shared: Arc<Shared>,
    parts: Parts,
    /// Each part's own vectors and which rows have one, for the feedback
    /// seeds (the rows in Milvus are these, dequantized).
    vectors: Vec<(StoredVectors, VectorFlags)>,
    embedder: &'static dyn Embedder,
    feedback: usize,
    /// The noise floor, as the index recorded it, or measured over the
    /// local vectors when first needed.
    floor: OnceLock<Option<f32>>,
    /// The word floor, as the index recorded it, or measured when first
    /// needed.
    word_floor: OnceLock<Option<f32>>,
}

/// A floor the index recorded, known from the start; else measured when
/// first needed.
fn known(recorded: Option<f32>) -> OnceLock<Option<f32>> {
    recorded.map_or_else(OnceLock::new, |floor| OnceLock::from(Some(floor)))
}

impl DenseOnMilvus {
    /// Ranks by the unit vector `vector`, quantized as the local scan
    /// quantizes its query.
    fn rank(
        &self,
        vector: &[f32],
        window: usize,
        allow: &AllowSet,
        started: Instant,
    ) -> Result<RankedList> {
        let mut list = RankedList::empty(self.kind());
        list.prepare_time = started.elapsed();
        if vector.iter().all(|v| *v == 0.0) || window == 0 {
            list.elapsed = list.prepare_time;
            return Ok(list);
        }
        let (values, scale) = quantize(vector);
        let query: Vec<f32> = values.iter().map(|v| f32::from(*v) * scale).collect();
        let (found, request) = self.shared.fetch(
            &self.parts,
            RemoteQuery::Vector(query),
            field::DENSE,
            window + TIE_MARGIN,
            allow,
            false,
        )?;
        list.request = Some(request);
        let hits = found
            .into_iter()
            .map(|f| ListHit {
                chunk: f.chunk,
                score: f.raw,
            })
            .collect();
        list.hits = best(hits, window);
        list.matched = list.hits.len();
        list.elapsed = started.elapsed();
        Ok(list)
    }
}

impl List for DenseOnMilvus {
    fn kind(&self) -> ListKind {
        ListKind::Dense
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let vector = self.embedder.embed(&[query.to_string()])?;
        self.rank(&vector, window, allow, started)
    }

    fn feedback_seeds(&self) -> usize {
        self.feedback
    }

    fn word_floor(&self, query: &str) -> Result<Option<(f32, f32)>> {
        Ok(floor::word_standing(self.embedder, query, &self.word_floor))
    }

    /// Measured over the index's own vectors (the rows in Milvus are
    /// these): the floor a local search uses, and no probe sent away.
    fn noise_floor(&self) -> Result<Option<f32>> {
        cached_floor(&self.floor, self.embedder, |vector| {
            let mut best: Option<f32> = None;
            for (vectors, _) in &self.vectors {
                if let Some(part) = vectors.best_similarity(vector)? {
                    best = Some(best.map_or(part, |b| b.max(part)));
                }
            }
            Ok(best)
        })
    }

    fn refine(
        &self,
        query: &str,
        window: usize,
        allow: &AllowSet,
        seeds: &[ChunkOrd],
    ) -> Result<RankedList> {
        let started = Instant::now();
        let vector = self.embedder.embed(&[query.to_string()])?;
        let seeds = &seeds[..seeds.len().min(self.feedback)];
        let row_of = |chunk| {
            let (at, row) = self.parts.locate(chunk)?;
            let (vectors, has_vector) = &self.vectors[at];
            Ok((has_vector.get(row)? == Some(true)).then_some((vectors, row)))
        };
        let (vector, used) = moved_query(&vector, seeds, row_of)?;
        let mut list = self.rank(&vector, window, allow, started)?;
        list.feedback_chunks = used;
        Ok(list)
    }
}
