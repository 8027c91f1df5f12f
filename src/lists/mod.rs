//! Ranked lists: the retrieval methods whose rankings the fusion combines.
//!
//! Each list implements [`SearchIndex`]: given a query, the set of chunks the
//! filters allow, and a window size, it returns its best `window` allowed
//! chunks in rank order. A new list (titles, a link graph, …) joins the
//! fusion by implementing this trait; nothing else changes.

pub mod sparse;

use std::time::Duration;

use anyhow::Result;

use crate::filter::AllowSet;
use crate::store::generation::ChunkOrd;

/// One ranked candidate from a list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListHit {
    /// The chunk.
    pub chunk: ChunkOrd,
    /// The list's own raw score (BM25 for sparse, cosine for dense).
    pub score: f32,
}

/// What one list returned for one query.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedList {
    /// The list's name (`sparse`, `dense`, …), the key in `ranks`.
    pub name: &'static str,
    /// Candidates, best first; rank = position + 1.
    pub hits: Vec<ListHit>,
    /// How many allowed chunks matched at all (≥ `hits.len()`).
    pub matched: usize,
    /// How many chunks matched but were removed by the filters.
    pub filtered_out: usize,
    /// Time the list took, query preparation included.
    pub elapsed: Duration,
}

/// A retrieval method over the chunks of one generation.
pub trait SearchIndex: Sync {
    /// Short stable name used in output (`sparse`, `dense`).
    fn name(&self) -> &'static str;

    /// Returns the best `window` chunks of `allow` for `query`, best first,
    /// ties broken by chunk ordinal.
    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList>;
}
