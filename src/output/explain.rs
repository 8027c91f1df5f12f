//! The message type of `memidx explain`, shared by the human and JSON
//! printers: per result and per list, rank, raw score, weight and
//! contribution — `w × score / best` for relative scores, `w/(k+rank)` for
//! RRF — or why the list did not contribute, plus each list's best score,
//! candidate counts and the per-stage timings.
//!
//! `lists` of a result is an array in fusion order: adding its
//! `contribution`s left to right gives `rrf_score` exactly.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::filter::Filter;
use crate::lists::{Approximate, ListKind, PostingCounts, RemoteRequest};
use crate::retriever::{Absence, Confidence, Decoded, Explanation, Standing};

/// The whole explanation.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainReport {
    /// The query.
    pub query: String,
    /// The fusion method used, `relative` or `rrf`.
    pub fusion: &'static str,
    /// The RRF constant used (by RRF only).
    pub rrf_k: f64,
    /// Candidates each list contributed at most.
    pub window: usize,
    /// Filter conditions, `key=value`.
    pub filter: Vec<String>,
    /// No list matched the query with confidence (`lists[].confident`):
    /// `memidx search` returns no results for it unless asked to keep
    /// them; explain still shows the candidates.
    pub nothing_matched: bool,
    /// What a search over several indexes left out, one sentence each;
    /// absent for one index (see [`crate::output::SearchResponse::notices`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Per list: weight, counts, timings.
    pub lists: Vec<ListSummary>,
    /// Time spent opening the index (manifest, memory maps, lists and
    /// model), milliseconds.
    pub open_ms: f64,
    /// Time spent evaluating the filter, milliseconds.
    pub filter_ms: f64,
    /// Time spent fusing, milliseconds.
    pub fuse_ms: f64,
    /// Time spent reading the results' texts and metadata for printing,
    /// milliseconds.
    pub report_ms: f64,
    /// The explained chunks.
    pub results: Vec<ExplainedResult>,
}

/// One list's part in the search.
#[derive(Debug, Clone, Serialize)]
pub struct ListSummary {
    /// The list.
    pub name: &'static str,
    /// Where it ran: `local`, or the address of the remote collection
    /// (`milvus://host:port/collection`) for a search with `--backend`.
    pub ran_on: String,
    /// Its weight.
    pub weight: f64,
    /// The weight it was fused with for this query: `weight`, unless
    /// adaptive fusion moved it by the list's spread.
    pub query_weight: f64,
    /// Under adaptive fusion, how far its scores fall over its best 10
    /// (`1 − mean(score / best)`), what moved its weight; null otherwise.
    pub spread: Option<f64>,
    /// Its best score among its candidates (at least 0; null when it has
    /// none): what relative scores divide by.
    pub best_score: Option<f64>,
    /// Its best score for the query as given, before feedback moved it
    /// (null when it has no candidates): what its confidence reads.
    pub query_best: Option<f64>,
    /// Whether it matches the query with confidence: it returned a chunk,
    /// its `query_best` reaches its `noise_floor` and its `word_share`
    /// rises above its `word_floor` (where it has them), or it returned none
    /// but holds a query word or one a slip from it (`near_miss`); null
    /// when not judged (a list before it matched, it does not read the
    /// query, or it weighs nothing).
    pub confident: Option<bool>,
    /// The best score random strings reach in this index, when this search
    /// measured it (the dense list under a transformer, judged); else null.
    pub noise_floor: Option<f64>,
    /// For a list judged by a word floor (the dense list under the bundled
    /// static model): the largest share of a query word's weight (its
    /// pieces' vector lengths) its first piece carries; else null.
    pub word_share: Option<f64>,
    /// Its word floor: the largest share among fixed made-up words (a
    /// query none of whose words rises above it is noise to the model);
    /// else null.
    pub word_floor: Option<f64>,
    /// For a list that matched no chunk but vouches for the query: the
    /// query's word and the word it holds one typing slip away
    /// (`[sirutin, sirtuin]`), or the word itself twice when the index holds
    /// it outside what the search allows; else null.
    pub near_miss: Option<[String; 2]>,
    /// Candidates it contributed (≤ window).
    pub candidates: usize,
    /// Allowed chunks it matched.
    pub matched: usize,
    /// Matching chunks the filter removed.
    pub filtered_out: usize,
    /// The postings of the query's terms and how many were scored (the
    /// sparse list skips those that cannot enter its window); null for
    /// other lists.
    pub postings: Option<PostingCounts>,
    /// How the dense list's sign codes served the search: how many allowed
    /// rows' codes were scored and how many of the best rescored exactly;
    /// null when every allowed row was scored exactly (no codes, `--exact`,
    /// a filter as selective as the rescoring), and for other lists.
    pub approximate: Option<Approximate>,
    /// The search sent to the remote engine (field, query, filter
    /// expression, limit); null for a list that ran locally.
    pub request: Option<RemoteRequest>,
    /// Chunk ids whose vectors moved the query before the list ranked (the
    /// dense list's feedback), best first; empty for other lists.
    pub feedback: Vec<String>,
    /// Time to analyze (tokenize or embed) the query, milliseconds; for the
    /// dense list, its feedback scan included.
    pub prepare_ms: f64,
    /// Time to embed the query (part of `prepare_ms`), milliseconds: 0 when
    /// a recent search's vector was reused; absent for lists that embed
    /// nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_ms: Option<f64>,
    /// Of `embed_ms`, the time spent waiting on the endpoint that runs the
    /// model, milliseconds; absent for a local model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_ms: Option<f64>,
    /// Time of the whole list, query preparation included, milliseconds.
    pub total_ms: f64,
}

/// One explained chunk.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainedResult {
    /// Position among the fused candidates (null when it is none).
    pub fused_rank: Option<usize>,
    /// Chunk id, `path#n`.
    pub chunk_id: String,
    /// Source file.
    pub source: String,
    /// Heading path.
    pub heading: String,
    /// Source lines.
    pub lines: [u32; 2],
    /// The fused score: the sum of `lists[].contribution`, in order.
    pub rrf_score: f64,
    /// Whether the query named something exact (a word shaped like an
    /// identifier) that this chunk does not hold, so meaning alone gave it
    /// nothing: every contribution is 0.
    pub gated: bool,
    /// One entry per list, in fusion order.
    pub lists: Vec<ListPart>,
    /// How many more of its file's chunks the search folded away, as the
    /// search result's `more_in_file` (0 when it is not a result).
    pub more_in_file: usize,
}

/// A chunk's standing in one list.
#[derive(Debug, Clone, Serialize)]
pub struct ListPart {
    /// The list.
    pub list: &'static str,
    /// Rank in the list (also given when outside the window).
    pub rank: Option<usize>,
    /// Raw score in the list.
    pub score: Option<f32>,
    /// The list's weight.
    pub weight: f64,
    /// `weight × max(score, 0) / best_score` (relative scores) or
    /// `weight / (k + rank)` (RRF) when among the candidates, else 0.
    pub contribution: f64,
    /// Why the list did not contribute, or null.
    pub absent: Option<String>,
    /// Why the list ranks the chunk, from a list that says (the sparse list:
    /// the query terms the chunk holds, a folded match marked; the graph
    /// list: the query entities and community members the chunk mentions),
    /// or null.
    pub reason: Option<String>,
}

impl ExplainReport {
    /// Builds the report from an explanation and its decoded chunks;
    /// `open_time` is how long opening the index took, `decode_time` how
    /// long decoding the chunks took.
    pub fn build(
        query: &str,
        filter: &Filter,
        explanation: &Explanation,
        decoded: &Decoded,
        open_time: Duration,
        decode_time: Duration,
    ) -> Result<Self> {
        let started = Instant::now();
        let outcome = &explanation.outcome;
        let lists = outcome
            .lists
            .iter()
            .map(|run| {
                Ok(ListSummary {
                    name: run.ranked.kind.name(),
                    ran_on: ran_on(run.ranked.kind, &explanation.ran_on),
                    weight: run.weight,
                    query_weight: run.query_weight.weight,
                    spread: run.query_weight.spread,
                    best_score: run.ranked.hits.first().map(|h| f64::from(h.score).max(0.0)),
                    query_best: run.ranked.query_best().map(f64::from),
                    confident: (run.confidence != Confidence::NotJudged)
                        .then(|| run.confidence.is_match()),
                    noise_floor: run.confidence.floor().map(f64::from),
                    word_share: run.confidence.words().map(|(s, _)| f64::from(s)),
                    word_floor: run.confidence.words().map(|(_, f)| f64::from(f)),
                    near_miss: match &run.confidence {
                        Confidence::NearMiss { word, held } => Some([word.clone(), held.clone()]),
                        _ => None,
                    },
                    candidates: run.ranked.files.unwrap_or(run.ranked.hits.len()),
                    matched: run.ranked.matched,
                    filtered_out: run.ranked.filtered_out,
                    postings: run.ranked.postings,
                    approximate: run.ranked.approximate,
                    request: run.ranked.request.clone(),
                    feedback: run
                        .ranked
                        .feedback_chunks
                        .iter()
                        .map(|&ord| Ok(decoded.get(ord)?.view.id()))
                        .collect::<Result<_>>()?,
                    prepare_ms: millis(run.ranked.prepare_time),
                    embed_ms: run.ranked.embedding.map(|e| millis(e.time)),
                    network_ms: run.ranked.embedding.and_then(|e| e.network).map(millis),
                    total_ms: millis(run.ranked.elapsed),
                })
            })
            .collect::<Result<_>>()?;
        let mut results = Vec::with_capacity(explanation.chunks.len());
        for explained in &explanation.chunks {
            let chunk = &decoded.get(explained.chunk)?.view;
            let parts = explained
                .standings
                .iter()
                .zip(&explained.reasons)
                .zip(&outcome.lists)
                .map(|((standing, reason), run)| ListPart {
                    reason: reason.clone(),
                    ..list_part(
                        run.ranked.kind.name(),
                        run.query_weight.weight,
                        standing,
                        explanation.window,
                    )
                })
                .collect();
            results.push(ExplainedResult {
                fused_rank: explained.fused_rank,
                chunk_id: chunk.id(),
                source: chunk.file.path.clone(),
                heading: chunk.heading(),
                lines: [chunk.record.lines.0, chunk.record.lines.1],
                rrf_score: explained.score,
                gated: explained.gated,
                lists: parts,
                more_in_file: outcome
                    .results
                    .iter()
                    .position(|f| f.chunk == explained.chunk)
                    .map_or(0, |i| outcome.more_in_file[i]),
            });
        }
        Ok(Self {
            query: query.to_string(),
            fusion: outcome.fusion.method.name(),
            rrf_k: outcome.fusion.rrf_k,
            window: explanation.window,
            nothing_matched: outcome.nothing_matched(),
            notices: outcome.notices.clone(),
            filter: filter
                .conditions()
                .iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| format!("{k}={v}")))
                .chain(filter.time().parts())
                .collect(),
            lists,
            open_ms: millis(open_time),
            filter_ms: millis(outcome.filter_time),
            fuse_ms: millis(outcome.fuse_time),
            report_ms: millis(decode_time + started.elapsed()),
            results,
        })
    }
}

fn list_part(list: &'static str, weight: f64, standing: &Standing, window: usize) -> ListPart {
    let part = |rank, score, contribution, absent| ListPart {
        list,
        rank,
        score,
        weight,
        contribution,
        absent,
        reason: None,
    };
    match standing {
        Standing::Ranked(c) => part(Some(c.rank), Some(c.raw_score), c.value, None),
        Standing::Absent(Absence::OutsideWindow { rank, score }) => part(
            Some(*rank),
            Some(*score),
            0.0,
            Some(format!("outside the window of {window} at rank {rank}")),
        ),
        Standing::Absent(Absence::NotRescored { rank, score }) => part(
            Some(*rank),
            Some(*score),
            0.0,
            Some(format!(
                "not among the rows its sign code chose to rescore (rank {rank} by exact scan)"
            )),
        ),
        Standing::Absent(Absence::NoMatch { reason }) => {
            part(None, None, 0.0, Some(reason.to_string()))
        }
        Standing::Absent(Absence::Filtered { condition }) => part(
            None,
            None,
            0.0,
            Some(format!("removed by filter {condition}")),
        ),
    }
}

/// Where the list `kind` ran: the graph, file and recency lists always run
/// on the index.
fn ran_on(kind: ListKind, backend: &str) -> String {
    match kind {
        // A remote engine holds the chunks' sparse and dense lists only.
        ListKind::Graph | ListKind::Files | ListKind::Recency => "local".to_string(),
        ListKind::Sparse | ListKind::Dense => backend.to_string(),
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
