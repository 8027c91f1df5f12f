//! `explain`: for each explained chunk, each list's rank, raw score, weight
//! and contribution, or why the list did not contribute.

use anyhow::Result;

use super::{Retriever, SearchOutcome, SearchParams};
use crate::filter::Filter;
use crate::fusion::{Contribution, Fused};
use crate::lists::{AllowSet, List, ListKind, RankedList};
use crate::store::generation::ChunkOrd;

/// Why a list did not contribute to a chunk's score.
#[derive(Debug, Clone, PartialEq)]
pub enum Absence {
    /// The list ranks it, but below the window.
    OutsideWindow {
        /// Its rank in the list.
        rank: usize,
        /// Its raw score there.
        score: f32,
    },
    /// The dense list ranks it within the window by an exact scan, but the
    /// search went through the sign codes, which did not choose it for
    /// rescoring.
    NotRescored {
        /// Its rank by the exact scan.
        rank: usize,
        /// Its raw score there.
        score: f32,
    },
    /// The list does not match it at all.
    NoMatch {
        /// What that means in this list ("no query term matched").
        reason: &'static str,
    },
    /// A metadata filter removed it before the lists ran.
    Filtered {
        /// The condition it fails, `key=value`.
        condition: String,
    },
}

/// A chunk's standing in one list.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Among the list's candidates, contributing to the fused score.
    Ranked(Contribution),
    /// Not contributing, and why.
    Absent(Absence),
}

/// One explained chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedChunk {
    /// The chunk.
    pub chunk: ChunkOrd,
    /// Its position among all fused candidates, if it is one.
    pub fused_rank: Option<usize>,
    /// Its fused score: the sum of the ranked standings' contributions, in list order.
    pub score: f64,
    /// One standing per list, in fusion order.
    pub standings: Vec<Standing>,
    /// Whether the query named something exact that no list holding it
    /// returned for this chunk, so its contributions count 0
    /// ([`Fused::gated`]).
    pub gated: bool,
    /// Per list, in fusion order: why it ranks the chunk, for a list that
    /// says (the sparse list: the query terms the chunk holds; the graph
    /// list: the entities it mentions), when it ranks it at all.
    pub reasons: Vec<Option<String>>,
}

/// What `explain` reports: the search itself and the explained chunks.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The search (results as a search shows them, lists, timings).
    pub outcome: SearchOutcome,
    /// The window each list used.
    pub window: usize,
    /// The explained chunks.
    pub chunks: Vec<ExplainedChunk>,
    /// Where the sparse and dense lists ran (see [`Retriever::ran_on`]).
    pub ran_on: String,
}

impl Explanation {
    /// The chunks a printer shows: the explained ones, then each list's
    /// feedback chunks.
    pub fn shown_chunks(&self) -> impl Iterator<Item = ChunkOrd> + '_ {
        self.chunks.iter().map(|c| c.chunk).chain(
            self.outcome
                .lists
                .iter()
                .flat_map(|run| run.ranked.feedback_chunks.iter().copied()),
        )
    }
}

impl Retriever {
    /// Explains a search: for every fused result (or only for `focus`, even
    /// when it is not among them), each list's rank, raw score, weight and
    /// contribution, or why the list did not contribute.
    pub fn explain(
        &self,
        query: &str,
        params: &SearchParams,
        focus: Option<ChunkOrd>,
    ) -> Result<Explanation> {
        let (allow, filter_time) = self.allowed(query, params)?;
        // The lists run as the search runs them, for the results and each
        // list's work; then once more ranking every allowed chunk (which
        // scans exactly), to tell "outside the window" (with the rank) from
        // "no match", and a chunk the dense list's codes missed.
        let first_pass = self.first_pass(params);
        let window = first_pass.window;
        let windowed = self.run_lists(query, window, first_pass, &allow)?;
        let complete = self.run_lists(query, self.indexes.len(), first_pass, &allow)?;
        let mut outcome = self.fuse(query, windowed, params, filter_time)?;
        let folded = self.fold(&outcome.results, params)?;
        let targets: Vec<(Option<usize>, Fused)> = match focus {
            None => folded
                .shown
                .iter()
                .map(|&i| (Some(i + 1), outcome.results[i].clone()))
                .collect(),
            Some(chunk) => vec![
                match outcome.results.iter().position(|f| f.chunk == chunk) {
                    Some(i) => (Some(i + 1), outcome.results[i].clone()),
                    None => (
                        None,
                        Fused {
                            chunk,
                            score: 0.0,
                            contributions: vec![None; self.lists.len()],
                            gated: false,
                        },
                    ),
                },
            ],
        };
        let chunks = targets
            .into_iter()
            .map(|(fused_rank, fused)| {
                let standings = fused
                    .contributions
                    .iter()
                    .zip(&complete)
                    .zip(&self.lists)
                    .zip(&outcome.lists)
                    .map(|(((contribution, full), list), run)| match contribution {
                        Some(c) => Ok(Standing::Ranked(*c)),
                        None => self
                            .absence(
                                fused.chunk,
                                full,
                                run.ranked.approximate.is_some().then_some(window),
                                list.index.no_match_reason(),
                                &allow,
                                &params.filter,
                            )
                            .map(Standing::Absent),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let reasons = complete
                    .iter()
                    .zip(&self.lists)
                    .map(|(full, list)| self.reason(query, fused.chunk, full, list.index.as_ref()))
                    .collect::<Result<_>>()?;
                Ok(ExplainedChunk {
                    chunk: fused.chunk,
                    fused_rank,
                    score: fused.score,
                    standings,
                    gated: fused.gated,
                    reasons,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        outcome.keep(folded);
        Ok(Explanation {
            outcome,
            window,
            chunks,
            ran_on: self.ran_on(),
        })
    }

    /// Why `list` ranks `chunk`: from its `complete` ranking if it says,
    /// else from [`List::match_reason`]; `None` when it does not rank it.
    fn reason(
        &self,
        query: &str,
        chunk: ChunkOrd,
        complete: &RankedList,
        list: &dyn List,
    ) -> Result<Option<String>> {
        let Some(position) = complete.hits.iter().position(|h| h.chunk == chunk) else {
            return Ok(None);
        };
        if let Some(reason) = complete.reasons.get(position) {
            return Ok(Some(reason.clone()));
        }
        let text = match list.kind() {
            ListKind::Sparse => self.indexes.sparse_document(chunk)?,
            _ => self.indexes.chunk(chunk)?.searchable_text(),
        };
        Ok(list.match_reason(query, &text))
    }

    /// Why `chunk` is not among a list's candidates, given the list's
    /// `complete` ranking and, when the list went through its approximate
    /// index, the window it took that way.
    fn absence(
        &self,
        chunk: ChunkOrd,
        complete: &RankedList,
        approximate_window: Option<usize>,
        no_match: &'static str,
        allow: &AllowSet,
        filter: &Filter,
    ) -> Result<Absence> {
        if !allow.allows(chunk) {
            let file = &self.indexes.chunk(chunk)?.file;
            return Ok(Absence::Filtered {
                condition: filter.failing_condition(file).unwrap_or_default(),
            });
        }
        Ok(match complete.hits.iter().position(|h| h.chunk == chunk) {
            Some(i) if approximate_window.is_some_and(|window| i < window) => {
                Absence::NotRescored {
                    rank: i + 1,
                    score: complete.hits[i].score,
                }
            }
            Some(i) => Absence::OutsideWindow {
                rank: i + 1,
                score: complete.hits[i].score,
            },
            None => Absence::NoMatch { reason: no_match },
        })
    }
}
