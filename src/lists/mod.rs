//! Ranked lists: the retrieval methods whose rankings the fusion combines.
//!
//! Each list implements [`List`]: given a query, the set of chunks the
//! filters allow, and a window size, it returns its best `window` allowed
//! chunks in rank order. A new list joins the fusion by implementing this
//! trait, as the graph list ([`graph`]) does; nothing else changes.

mod allow;
pub mod dense;
pub mod files;
mod frozen_dir;
pub mod graph;
pub mod guard;
pub mod recency;
pub mod sparse;
pub mod vector_cache;

pub use allow::AllowSet;

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Duration;

use anyhow::Result;

use crate::store::generation::ChunkOrd;

/// One ranked candidate from a list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListHit {
    /// The chunk.
    pub chunk: ChunkOrd,
    /// The list's own raw score (BM25 for sparse; cosine with the query,
    /// as its feedback step moved it, for dense; a decay with age for
    /// recency).
    pub score: f32,
}

/// What one list returned for one query.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedList {
    /// The list it comes from (its name is the key in `ranks`).
    pub kind: ListKind,
    /// Candidates, best first; rank = position + 1.
    pub hits: Vec<ListHit>,
    /// How many allowed chunks matched at all (≥ `hits.len()`); for the
    /// sparse list, those its pruned walk reached (a chunk found only by
    /// terms that could not lift it into the window is not counted).
    pub matched: usize,
    /// How many chunks matched but were removed by the filters (for the
    /// sparse list, of those reached).
    pub filtered_out: usize,
    /// Per hit, in the same order, why the list ranks it (for `explain`);
    /// empty for a list whose score needs no reason.
    pub reasons: Vec<String>,
    /// The chunks whose vectors moved the query before it was ranked (the
    /// dense list's feedback step), best first; empty for other lists.
    pub feedback_chunks: Vec<ChunkOrd>,
    /// For a list that ranked twice ([`List::refine`]), the best score of
    /// its first ranking, by the query as given: what its confidence reads
    /// ([`RankedList::query_best`]), since feedback lifts every score it
    /// moves toward; `None` for a list that ranked once.
    pub unmoved_best: Option<f32>,
    /// How many postings of the query's terms there are and how many the
    /// list scored (the sparse list, which skips those that cannot enter
    /// its window); `None` for other lists.
    pub postings: Option<PostingCounts>,
    /// How the dense list's sign codes served the search; `None` when
    /// every allowed row was scored exactly, and for other lists.
    pub approximate: Option<Approximate>,
    /// The search a list running on a remote engine sent it (the last one,
    /// for a list that searched twice); `None` for a local list.
    pub request: Option<RemoteRequest>,
    /// Whether the query names something exact that this list holds (the
    /// sparse list: a word of the query shaped like an identifier): fusion then gives nothing to a chunk this list did not
    /// return (see [`crate::fusion`]).
    pub exact: bool,
    /// For the file list once its hits stand for their files' chunks, how
    /// many files they stand for; its `matched` and `filtered_out` count
    /// files. `None` for other lists.
    pub files: Option<usize>,
    /// Time spent preparing the query (tokenizing, embedding, and the dense
    /// list's feedback scan).
    pub prepare_time: Duration,
    /// How the query was embedded, for a list that embeds it.
    pub embedding: Option<QueryEmbedding>,
    /// Time the list took, query preparation included.
    pub elapsed: Duration,
}

impl RankedList {
    /// The first `window` hits of this ranking (with their reasons): what
    /// the list returns for that window, since a window only cuts.
    pub fn prefix(&self, window: usize) -> Self {
        let mut cut = self.clone();
        cut.hits.truncate(window);
        cut.reasons.truncate(window);
        cut
    }

    /// The best score the query as given reached in this list: before
    /// feedback moved it ([`RankedList::unmoved_best`]), else the first
    /// hit's; `None` without hits.
    pub fn query_best(&self) -> Option<f32> {
        self.unmoved_best
            .or_else(|| self.hits.first().map(|hit| hit.score))
    }

    /// A ranking of the list `kind` with no hits yet.
    pub fn empty(kind: ListKind) -> Self {
        Self {
            kind,
            hits: Vec::new(),
            matched: 0,
            filtered_out: 0,
            reasons: Vec::new(),
            feedback_chunks: Vec::new(),
            unmoved_best: None,
            postings: None,
            approximate: None,
            request: None,
            exact: false,
            files: None,
            prepare_time: Duration::ZERO,
            embedding: None,
            elapsed: Duration::ZERO,
        }
    }
}

/// How a list's query was embedded: `explain` shows a remote model's
/// network time apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryEmbedding {
    /// Time spent embedding the query (zero when a recent search's vector
    /// was reused).
    pub time: Duration,
    /// Of it, the time spent waiting on the endpoint that runs the model;
    /// `None` for a local model.
    pub network: Option<Duration>,
}

impl QueryEmbedding {
    /// The cost of two passes that each may have embedded the query (a
    /// search and its feedback pass, which reuses the first's vector).
    pub fn both(first: Option<Self>, second: Option<Self>) -> Option<Self> {
        let (Some(first), Some(second)) = (first, second) else {
            return first.or(second);
        };
        let network = match (first.network, second.network) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or_default() + b.unwrap_or_default()),
        };
        Some(Self {
            time: first.time + second.time,
            network,
        })
    }
}

/// A search a list sent to a remote engine, as `explain` reports it:
/// enough to send the same search again.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RemoteRequest {
    /// The field searched.
    pub field: &'static str,
    /// The query as sent.
    pub query: RemoteQuery,
    /// The boolean expression applied inside the search (empty: none).
    pub filter: String,
    /// Hits asked for.
    pub limit: usize,
}

/// A remote search's query: text for a text field (the sparse list's
/// encoded terms), or a vector.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum RemoteQuery {
    /// Text, analyzed by the engine.
    Text(String),
    /// A vector, compared by the field's metric.
    Vector(Vec<f32>),
}

/// The work of a search over postings: how many the query's terms have
/// in all, and how many were scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PostingCounts {
    /// Postings of the query's terms, dead documents' included.
    pub total: u64,
    /// Postings whose score was computed.
    pub scored: u64,
}

/// The work of a dense search through the sign codes: how many allowed
/// rows' codes were scored, in how many of the cells when they were
/// probed, and how many rows were rescored exactly (the codes' best, and
/// every allowed row of a generation without codes searched with others
/// that have them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Approximate {
    /// Rows whose codes were scored: every allowed row that has a code, or
    /// every row of the probed cells' blocks.
    pub scanned: usize,
    /// The cells probed, when the search read only the nearest; `None`
    /// when it scored every allowed row's code.
    pub cells: Option<CellsProbed>,
    /// Rows rescored with their int8 vectors.
    pub rescored: usize,
}

/// How many of the dense list's cells a search probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CellsProbed {
    /// Cells whose codes were scored.
    pub probed: usize,
    /// Cells of the generations probed.
    pub of: usize,
}

/// Which list a ranking comes from: fusion, eval and the printers name
/// lists by it, never by a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListKind {
    /// BM25 over the identifier-aware tokens ([`sparse`]).
    Sparse,
    /// BM25 over whole files, each hit standing for every chunk of its
    /// file ([`files`]).
    Files,
    /// Cosine over the chunks' embeddings ([`dense`]).
    Dense,
    /// Through the entity graph ([`graph`]).
    Graph,
    /// By document date, newest first ([`recency`]).
    Recency,
}

impl ListKind {
    /// The short stable name used in output and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sparse => "sparse",
            Self::Files => "file",
            Self::Dense => "dense",
            Self::Graph => "graph",
            Self::Recency => "recency",
        }
    }
}

/// A retrieval method over the chunks of one generation.
pub trait List: Send + Sync {
    /// Which list this is.
    fn kind(&self) -> ListKind;

    /// Returns the best `window` chunks of `allow` for `query`, best first,
    /// ties broken by chunk ordinal.
    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList>;

    /// Whether the list's ranking depends on the query (the recency list's
    /// does not): only such lists make the fused first pass that seeds the
    /// refining lists, so a query's feedback is drawn from what matches it.
    fn reads_query(&self) -> bool {
        true
    }

    /// How many of the best chunks of a search's fused first pass this list
    /// refines its ranking with ([`List::refine`]); 0 (the default): it
    /// ranks once.
    fn feedback_seeds(&self) -> usize {
        0
    }

    /// Ranks `query` again with `seeds`, the best chunks of the fused first
    /// pass (at most [`List::feedback_seeds`] of them), for a list that
    /// takes feedback; a list that takes none ranks as [`List::search`].
    fn refine(
        &self,
        query: &str,
        window: usize,
        allow: &AllowSet,
        seeds: &[ChunkOrd],
    ) -> Result<RankedList> {
        let _ = seeds;
        self.search(query, window, allow)
    }

    /// The score below which this list's best hit ([`RankedList::query_best`])
    /// shows no more than noise would: a list that ranks every chunk for any
    /// query (the dense list) matches nothing with confidence below it.
    /// `None` (the default): any hit the list returns is a match.
    fn noise_floor(&self) -> Result<Option<f32>> {
        Ok(None)
    }

    /// For a list whose model says how well it knows words (the dense list
    /// under the bundled static model): the largest share of a `query`
    /// word's weight its first piece carries, with the list's word floor
    /// (the largest among made-up words', [`dense::floor`]); `None` (the
    /// default) from a list that cannot tell.
    fn word_floor(&self, query: &str) -> Result<Option<(f32, f32)>> {
        let _ = query;
        Ok(None)
    }

    /// For a query this list matched no chunk of: a query word one typing
    /// slip from a word the list holds, with that word
    /// ([`crate::text::near`]), which makes the query misspelt rather than
    /// meaningless; `None` (the default) from a list that cannot tell.
    fn near_miss(&self, query: &str) -> Result<Option<(String, String)>> {
        let _ = query;
        Ok(None)
    }

    /// Why this list may not match a chunk at all, for `explain`.
    fn no_match_reason(&self) -> &'static str {
        "no query term matched"
    }

    /// Checks that each of `hits`, the searchable text (heading path and
    /// text) of a chunk this list ranked for `query` with its raw score, has
    /// the score the text itself gives: for a list that can tell (the
    /// sparse list, whose postings and lengths must agree with the text they
    /// were made from), so that damage in its files is named rather than
    /// served. `Ok` (the default) from a list that cannot.
    fn check_hits(&self, query: &str, hits: &[(&str, f32)]) -> Result<()> {
        let _ = (query, hits);
        Ok(())
    }

    /// For each of `documents` (a chunk's text as this list indexed it: the
    /// sparse list's document), the share of `query` it holds, from 0 to 1
    /// ([`sparse::WeighedQuery::coverage`]), for a list that can say how
    /// much of a query a text matches on its own; `None` (the default) from
    /// a list that cannot.
    fn coverage(&self, query: &str, documents: &[&str]) -> Result<Option<Coverage>> {
        let _ = (query, documents);
        Ok(None)
    }

    /// Why this list matches a chunk whose searchable text (heading path
    /// and text) is `text`, for `explain`, when its ranking does not say
    /// already; `None` (the default) from a list with nothing to add.
    fn match_reason(&self, query: &str, text: &str) -> Option<String> {
        let _ = (query, text);
        None
    }
}

/// How much of a query some texts hold ([`List::coverage`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Per text, the share of the query's weight it holds, from 0 to 1.
    pub shares: Vec<f32>,
    /// How many distinct terms the query has: the longer a query, the
    /// smaller the share of it one chunk holds.
    pub terms: usize,
}

/// A scored chunk, ordered so that "greater" means "ranks higher": higher
/// score first, then lower ordinal (chunk-id order).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    /// The list's raw score.
    pub score: f32,
    /// The chunk.
    pub chunk: ChunkOrd,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.chunk.cmp(&self.chunk))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// A bounded min-heap holding the best `window` candidates seen so far.
pub(crate) struct TopWindow {
    window: usize,
    heap: BinaryHeap<Reverse<Candidate>>,
}

impl TopWindow {
    /// An empty window keeping at most `window` candidates.
    pub(crate) fn new(window: usize) -> Self {
        Self {
            window,
            heap: BinaryHeap::new(),
        }
    }

    /// Offers a candidate; it is kept if it beats the worst kept one.
    pub(crate) fn push(&mut self, candidate: Candidate) {
        if self.heap.len() < self.window {
            self.heap.push(Reverse(candidate));
        } else if self
            .heap
            .peek()
            .is_some_and(|Reverse(worst)| candidate > *worst)
        {
            self.heap.pop();
            self.heap.push(Reverse(candidate));
        }
    }

    /// The worst kept score once the window is full: what a candidate must
    /// beat (or tie with a lower ordinal) to enter; `None` before.
    pub(crate) fn threshold(&self) -> Option<f32> {
        if self.heap.len() < self.window {
            return None;
        }
        self.heap.peek().map(|Reverse(worst)| worst.score)
    }

    /// The kept candidates, best first.
    pub(crate) fn into_sorted(self) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self.heap.into_iter().map(|Reverse(c)| c).collect();
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }
}

impl From<Candidate> for ListHit {
    fn from(c: Candidate) -> Self {
        Self {
            chunk: c.chunk,
            score: c.score,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_window_keeps_the_best_with_ties_to_the_lower_ordinal() {
        let mut window = TopWindow::new(3);
        for (chunk, score) in [(5, 1.0), (1, 3.0), (9, 2.0), (2, 2.0), (7, 0.5), (3, 2.0)] {
            window.push(Candidate { score, chunk });
        }
        let kept: Vec<_> = window
            .into_sorted()
            .iter()
            .map(|c| (c.chunk, c.score))
            .collect();
        assert_eq!(kept, [(1, 3.0), (2, 2.0), (3, 2.0)]);
        let mut empty = TopWindow::new(0);
        empty.push(Candidate {
            score: 1.0,
            chunk: 0,
        });
        assert!(empty.into_sorted().is_empty());
    }
}
