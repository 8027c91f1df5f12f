//! A search: the lists in parallel over the allowed chunks, then the fusion.
//!
//! A list that refines its ranking with feedback (the dense list, see
//! [`crate::lists::dense`]) ranks twice: its first ranking is fused with
//! the other lists' as the search would fuse them, and the best fused chunks
//! seed its second ranking, which is the one fused. Seeds from the fused
//! first pass are right more often than the dense list's own best chunks,
//! most of all when the dense list is the weaker one, where its own best
//! chunks would pull its query further off (measured: docs/eval.md).
//! Run alone, such a list is seeded by its own first ranking. Lists that
//! do not read the query (recency) take no part in the first pass.

use std::time::{Duration, Instant};

use std::path::Path;

use anyhow::{Result, bail, ensure};
use rayon::prelude::*;

use super::confidence::{Confidence, nothing_matched};
use super::{Folded, Retriever, SearchParams, WeightedList, fold};
use crate::filter::Filter;
use crate::fusion::{self, Fused, Fusion, Ranking};
use crate::lists::{AllowSet, ListHit, ListKind, QueryEmbedding, RankedList, guard};
use crate::store::generation::ChunkOrd;
use crate::store::parts::Parts;

/// One list's part in a search, for `explain` and the JSON `ranks`.
#[derive(Debug, Clone)]
pub struct ListRun {
    /// The ranking the list returned.
    pub ranked: RankedList,
    /// Its weight.
    pub weight: f64,
    /// The weight it was fused with for this query: `weight`, moved by the
    /// list's spread under adaptive fusion, with that spread.
    pub query_weight: fusion::QueryWeight,
    /// Whether it matches the query with confidence (see
    /// [`super::confidence`]).
    pub confidence: Confidence,
}

/// Everything a search produced.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Fused results, best first, at most `top_k` and at most `per_file`
    /// of one file.
    pub results: Vec<Fused>,
    /// For each result: how many more of its file's candidates were folded
    /// away (on the file's last result; 0 on the others).
    pub more_in_file: Vec<usize>,
    /// Each list's run, in fusion order (the order of `Fused::contributions`).
    pub lists: Vec<ListRun>,
    /// The fusion method and constant used.
    pub fusion: Fusion,
    /// Whether the fused candidates were dropped because no list matched
    /// the query with confidence (see [`super::confidence`]).
    pub dropped: bool,
    /// What a search over several indexes left out, one sentence each
    /// ([`Retriever::notices`]); empty for one index.
    pub notices: Vec<String>,
    /// Time spent evaluating filters.
    pub filter_time: Duration,
    /// Time spent fusing.
    pub fuse_time: Duration,
}

impl SearchOutcome {
    /// Keeps of the fused candidates the ones `folded` shows, with their
    /// counts of what was folded away.
    pub(super) fn keep(&mut self, folded: Folded) {
        self.results = folded
            .shown
            .iter()
            .map(|&i| self.results[i].clone())
            .collect();
        self.more_in_file = folded.more_in_file;
    }

    /// Whether no list matched the query with confidence (the results are
    /// dropped unless the search keeps them).
    pub fn nothing_matched(&self) -> bool {
        nothing_matched(self.lists.iter().map(|run| &run.confidence))
    }

    /// The chunks a printer shows: the results, in order.
    pub fn shown_chunks(&self) -> impl Iterator<Item = ChunkOrd> + '_ {
        self.results.iter().map(|f| f.chunk)
    }
}

impl Retriever {
    /// Runs `query` through every list in parallel and fuses the rankings.
    pub fn search(&self, query: &str, params: &SearchParams) -> Result<SearchOutcome> {
        let (allow, filter_time) = self.allowed(query, params)?;
        let first_pass = self.first_pass(params);
        let ranked = self.run_lists(query, first_pass.window, first_pass, &allow)?;
        let mut outcome = self.fuse(query, ranked, params, filter_time)?;
        if outcome.nothing_matched() {
            outcome.dropped = !outcome.results.is_empty();
            outcome.results.clear();
            outcome.more_in_file.clear();
            return Ok(outcome);
        }
        let folded = self.fold(&outcome.results, params)?;
        outcome.keep(folded);
        Ok(outcome)
    }

    /// Which of the fused `results` a search with `params` shows: the best
    /// `top_k`, at most `per_file` of one file (see [`super::fold`]).
    pub(super) fn fold(&self, results: &[Fused], params: &SearchParams) -> Result<Folded> {
        let indexes = &self.indexes;
        fold(results, params.top_k, params.per_file, |chunk| {
            let (member, local) = indexes.locate(chunk)?;
            let file = indexes.members()[member]
                .index()
                .parts()
                .file_of_chunk(local)?;
            Ok(((member as u64) << 32) | u64::from(file))
        })
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
        let filters = self.member_filters(params)?;
        let members = self.indexes.members();
        let each: Vec<(Option<&Filter>, &Parts)> = (filters.iter().zip(members))
            .map(|(filter, member)| (filter.as_ref(), member.index().parts()))
            .collect();
        let mut allowed = Filter::evaluate_several(&each)?;
        let allow = match allowed.len() {
            1 => allowed.remove(0),
            _ => {
                let sized: Vec<(AllowSet, usize)> = (allowed.into_iter().zip(members))
                    .map(|(allow, member)| (allow, member.len()))
                    .collect();
                AllowSet::concat(&sized)
            }
        };
        if let Some(Some(filter)) = filters.first() {
            self.backend.restrict(filter);
        }
        Ok((allow, started.elapsed()))
    }

    /// Each index's filter: the search's, restricted under `--here` to the
    /// files at or below the folder it names (`None`: an index none of
    /// whose files lie there); an error when that is so of every index.
    fn member_filters(&self, params: &SearchParams) -> Result<Vec<Option<Filter>>> {
        let Some(here) = &params.here else {
            return Ok(vec![
                Some(params.filter.clone());
                self.indexes.members().len()
            ]);
        };
        let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or(path.to_path_buf());
        let here = canonical(here);
        let filters: Vec<Option<Filter>> = (self.indexes.members().iter())
            .map(|member| {
                let root = canonical(member.index().root());
                if let Ok(folder) = here.strip_prefix(&root) {
                    let parts: Vec<String> = folder
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    Some(params.filter.clone().within_folder(&parts.join("/")))
                } else {
                    root.starts_with(&here).then(|| params.filter.clone())
                }
            })
            .collect();
        ensure!(
            filters.iter().any(Option::is_some),
            "--here: the current folder is not inside the indexed folder{} ({})",
            match self.indexes.several() {
                true => "s",
                false => "",
            },
            here.display()
        );
        Ok(filters)
    }

    /// Judges the lists' rankings for `query` (in list order) and fuses
    /// them into every fused candidate.
    pub(super) fn fuse(
        &self,
        query: &str,
        ranked: Vec<RankedList>,
        params: &SearchParams,
        filter_time: Duration,
    ) -> Result<SearchOutcome> {
        let confidence = match params.keep_all {
            true => vec![Confidence::NotJudged; ranked.len()],
            false => self.judge(query, &ranked)?,
        };
        let started = Instant::now();
        let inputs: Vec<Ranking<'_>> = ranked
            .iter()
            .zip(&self.lists)
            .map(|(r, l)| Ranking {
                hits: &r.hits,
                weight: l.weight,
                exact: r.exact,
                tied: r.kind == ListKind::Files,
            })
            .collect();
        let fusion = self.fusion(params);
        let query_weights = fusion::query_weights(&inputs, fusion);
        let results = fusion::fuse_at(&inputs, fusion, &query_weights);
        let fuse_time = started.elapsed();
        let lists = ranked
            .into_iter()
            .zip(&self.lists)
            .zip(query_weights)
            .zip(confidence)
            .map(|(((ranked, l), query_weight), confidence)| ListRun {
                ranked,
                weight: l.weight,
                query_weight,
                confidence,
            })
            .collect();
        Ok(SearchOutcome {
            more_in_file: vec![0; results.len()],
            results,
            lists,
            fusion,
            dropped: false,
            notices: self.notices.clone(),
            filter_time,
            fuse_time,
        })
    }

    /// How a search with `params` fuses the first pass that seeds the
    /// refining lists: as it fuses the final rankings.
    pub fn first_pass(&self, params: &SearchParams) -> FirstPass {
        FirstPass {
            window: self.window(params),
            fusion: self.fusion(params),
        }
    }

    /// Runs every list, each on its own thread when there are several, the
    /// refining ones seeded by `first_pass` (see the module doc), and
    /// returns their rankings of up to `depth` chunks (≥ the first pass's
    /// window), unfused, in fusion order.
    pub fn run_lists(
        &self,
        query: &str,
        depth: usize,
        first_pass: FirstPass,
        allow: &AllowSet,
    ) -> Result<Vec<RankedList>> {
        let lists: Vec<&WeightedList> = self.lists.iter().collect();
        self.run_selected(&lists, query, depth, first_pass, allow)
    }

    /// Runs the list `index` (in fusion order) alone, as `--mode` naming
    /// only it would: a refining list is seeded by its own first ranking.
    pub fn run_alone(
        &self,
        index: usize,
        query: &str,
        depth: usize,
        first_pass: FirstPass,
        allow: &AllowSet,
    ) -> Result<RankedList> {
        let list = &self.lists[index];
        let mut ranked = self.run_selected(&[list], query, depth, first_pass, allow)?;
        Ok(ranked.remove(0))
    }

    fn run_selected(
        &self,
        lists: &[&WeightedList],
        query: &str,
        depth: usize,
        first_pass: FirstPass,
        allow: &AllowSet,
    ) -> Result<Vec<RankedList>> {
        let catch = |l: &WeightedList, run: &dyn Fn() -> Result<RankedList>| {
            guard::catch(l.index.kind().name(), &self.damage_site(), run)
        };
        let search = |l: &&WeightedList| catch(l, &|| l.index.search(query, depth, allow));
        let mut ranked: Vec<RankedList> = match lists {
            [only] => vec![search(only)?],
            // On rayon's pool, not on threads of their own: a list that
            // itself runs in parallel (the dense scan, a transformer's
            // matrix products) then never waits on a pool whose workers are
            // all blocked joining list threads — which deadlocked `eval`
            // (itself parallel over queries) with a transformer model.
            _ => lists.par_iter().map(search).collect::<Result<_>>()?,
        };
        self.uncount_buried(&mut ranked);
        self.stand_for_files(&mut ranked, allow, depth)?;
        let wanted = lists.iter().map(|l| l.index.feedback_seeds()).max();
        let Some(wanted @ 1..) = wanted else {
            return Ok(ranked);
        };
        let inputs: Vec<Ranking<'_>> = ranked
            .iter()
            .zip(lists)
            .filter(|(_, l)| l.index.reads_query())
            .map(|(r, l)| Ranking {
                hits: &r.hits[..r.hits.len().min(first_pass.window)],
                weight: l.weight,
                exact: r.exact,
                tied: r.kind == ListKind::Files,
            })
            .collect();
        let best: Vec<ChunkOrd> = fusion::fuse(&inputs, first_pass.fusion)
            .iter()
            .take(wanted)
            .map(|f| f.chunk)
            .collect();
        for (slot, list) in ranked.iter_mut().zip(lists) {
            let seeds = list.index.feedback_seeds();
            if seeds == 0 {
                continue;
            }
            let seeds = &best[..seeds.min(best.len())];
            let mut refined = catch(list, &|| list.index.refine(query, depth, allow, seeds))?;
            self.uncount_buried(std::slice::from_mut(&mut refined));
            refined.unmoved_best = slot.query_best();
            refined.prepare_time += slot.elapsed;
            refined.embedding = QueryEmbedding::both(slot.embedding, refined.embedding);
            refined.elapsed += slot.elapsed;
            *slot = refined;
        }
        Ok(ranked)
    }

    /// Stands each hit of the file list (its file's first chunk) for every
    /// allowed chunk of its file, at the file's score, in chunk order (see
    /// [`crate::lists::files`]), up to `depth` chunks: a list returns no
    /// more than its window.
    fn stand_for_files(
        &self,
        ranked: &mut [RankedList],
        allow: &AllowSet,
        depth: usize,
    ) -> Result<()> {
        for list in ranked.iter_mut().filter(|l| l.kind == ListKind::Files) {
            let mut hits = Vec::with_capacity(depth.min(list.hits.len() * 4));
            let mut files = 0;
            for hit in &list.hits {
                if hits.len() >= depth {
                    break;
                }
                files += 1;
                let (member, local) = self.indexes.locate(hit.chunk)?;
                let parts = self.indexes.members()[member].index().parts();
                let chunks = parts.chunks_of_file(parts.file_of_chunk(local)?)?;
                let base = hit.chunk - local;
                hits.extend(
                    (chunks.map(|chunk| base + chunk))
                        .filter(|&chunk| allow.allows(chunk))
                        .map(|chunk| ListHit {
                            chunk,
                            score: hit.score,
                        }),
                );
            }
            hits.truncate(depth);
            list.hits = hits;
            list.files = Some(files);
            list.reasons.clear();
        }
        Ok(())
    }

    /// The lists that visit every chunk (the dense scan, recency) count
    /// the buried ones among those the allowed set removed; they were
    /// removed by no filter, and are not counted as filtered out.
    fn uncount_buried(&self, ranked: &mut [RankedList]) {
        for list in ranked {
            if matches!(list.kind, ListKind::Dense | ListKind::Recency) {
                list.filtered_out = list.filtered_out.saturating_sub(self.buried);
            }
        }
    }
}

/// How the first pass of a search is fused to seed the refining lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstPass {
    /// Candidates each list contributes.
    pub window: usize,
    /// The fusion method and constant.
    pub fusion: Fusion,
}

/// The longest query searched, in bytes: far above any question or
/// identifier, and a bound on what one search may cost (a query is
/// tokenized and embedded whole), which matters to a long-running server.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// Refuses a query with nothing to search for, or too long to search
/// (callers check it before opening an index, so a bad query costs no
/// model load).
pub fn check_query(query: &str) -> Result<()> {
    if query.len() > MAX_QUERY_BYTES {
        bail!(
            "the query is {} bytes long; at most {MAX_QUERY_BYTES} are searched",
            query.len()
        );
    }
    if query.trim().is_empty() {
        bail!("the query is empty; give words to search for");
    }
    if !query.chars().any(char::is_alphanumeric) {
        bail!("the query '{query}' has no letters or digits to search for");
    }
    Ok(())
}
