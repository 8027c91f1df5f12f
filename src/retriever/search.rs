//! A search: the lists in parallel over the allowed chunks, then the fusion.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rayon::prelude::*;

use super::{Retriever, SearchParams, WeightedList};
use crate::fusion::{self, Fused, Ranking};
use crate::lists::{AllowSet, RankedList, guard};
use crate::store::generation::ChunkOrd;

/// One list's part in a search, for `explain` and the JSON `ranks`.
#[derive(Debug, Clone)]
pub struct ListRun {
    /// The ranking the list returned.
    pub ranked: RankedList,
    /// The weight it was fused with.
    pub weight: f64,
}

/// Everything a search produced.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Fused results, best first, at most `top_k`.
    pub results: Vec<Fused>,
    /// Each list's run, in fusion order (the order of `Fused::contributions`).
    pub lists: Vec<ListRun>,
    /// The RRF constant the fusion used.
    pub rrf_k: f64,
    /// Time spent evaluating filters.
    pub filter_time: Duration,
    /// Time spent fusing.
    pub fuse_time: Duration,
}

impl SearchOutcome {
    /// The chunks a printer shows: the results, in order.
    pub fn shown_chunks(&self) -> impl Iterator<Item = ChunkOrd> + '_ {
        self.results.iter().map(|f| f.chunk)
    }
}

impl Retriever {
    /// Runs `query` through every list in parallel and fuses the rankings.
    pub fn search(&self, query: &str, params: &SearchParams) -> Result<SearchOutcome> {
        let (allow, filter_time) = self.allowed(query, params)?;
        let ranked = self.run_lists(query, self.window(params), &allow)?;
        let mut outcome = self.fuse(ranked, params, filter_time);
        outcome.results.truncate(params.top_k);
        Ok(outcome)
    }

    /// Checks the query and evaluates the filter into the set of chunks the
    /// lists may return (with the time that took).
    pub(super) fn allowed(
        &self,
        query: &str,
        params: &SearchParams,
    ) -> Result<(AllowSet, Duration)> {
        check_query(query)?;
        let started = Instant::now();
        let allow = params.filter.evaluate(self.generation())?;
        Ok((allow, started.elapsed()))
    }

    /// Fuses the lists' rankings (in list order) into every fused candidate.
    pub(super) fn fuse(
        &self,
        ranked: Vec<RankedList>,
        params: &SearchParams,
        filter_time: Duration,
    ) -> SearchOutcome {
        let started = Instant::now();
        let inputs: Vec<Ranking<'_>> = ranked
            .iter()
            .zip(&self.lists)
            .map(|(r, l)| Ranking {
                hits: &r.hits,
                weight: l.weight,
            })
            .collect();
        let rrf_k = self.rrf_k(params);
        let results = fusion::fuse(&inputs, rrf_k);
        let fuse_time = started.elapsed();
        let lists = ranked
            .into_iter()
            .zip(&self.lists)
            .map(|(ranked, l)| ListRun {
                ranked,
                weight: l.weight,
            })
            .collect();
        SearchOutcome {
            results,
            lists,
            rrf_k,
            filter_time,
            fuse_time,
        }
    }

    /// Runs every list, each on its own thread when there are several, and
    /// returns their rankings unfused (in fusion order).
    pub fn run_lists(
        &self,
        query: &str,
        window: usize,
        allow: &AllowSet,
    ) -> Result<Vec<RankedList>> {
        let run = |l: &WeightedList| {
            guard::catch(l.index.kind().name(), self.generation().dir(), || {
                l.index.search(query, window, allow)
            })
        };
        if let [only] = self.lists.as_slice() {
            return Ok(vec![run(only)?]);
        }
        // On rayon's pool, not on threads of their own: a list that itself
        // runs in parallel (the dense scan, a transformer's matrix products)
        // then never waits on a pool whose workers are all blocked joining
        // list threads — which deadlocked `eval` (itself parallel over
        // queries) with a transformer model.
        self.lists.par_iter().map(run).collect()
    }
}

/// Refuses a query with nothing to search for (callers check it before
/// opening an index, so a bad query costs no model load).
pub fn check_query(query: &str) -> Result<()> {
    if query.trim().is_empty() {
        bail!("the query is empty; give words to search for");
    }
    if !query.chars().any(char::is_alphanumeric) {
        bail!("the query '{query}' has no letters or digits to search for");
    }
    Ok(())
}
