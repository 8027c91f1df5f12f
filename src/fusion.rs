//! Weighted Reciprocal Rank Fusion, as one pure function over any number of
//! ranked lists.
//!
//! `score(d) = Σ_lists w_list / (k + rank_list(d))`, ranks from 1. A list
//! that does not hold `d` contributes nothing. Each contribution is kept, so
//! `explain` can show that the parts add up to the printed score exactly:
//! the score *is* the left-to-right sum of the recorded contributions.
//!
//! Ties are broken deterministically: higher score, then better best rank in
//! any list, then chunk ordinal (chunk-id order).

use std::cmp::Ordering;

use anyhow::{Result, ensure};

use serde::{Deserialize, Serialize};

use crate::embed::ModelKind;
use crate::lists::ListHit;
use crate::lists::dense::DEFAULT_FEEDBACK;
use crate::store::generation::ChunkOrd;

/// Default RRF constant `k`.
pub const DEFAULT_RRF_K: f64 = 60.0;

/// Largest accepted window.
pub const MAX_WINDOW: usize = 100_000;
/// Largest accepted fusion weight: weights only matter relative to each
/// other, and below this bound a fused score (a sum of at most three
/// `weight / (k + rank)` terms) can never overflow to infinity.
pub const MAX_WEIGHT: f64 = 1_000_000.0;

/// Fusion weights (and the dense list's feedback) that suit an embedder,
/// measured on the eval collection and recorded in the index so searches
/// use them unless told otherwise (numbers: README, Quality).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionDefaults {
    /// Weight of the sparse (BM25) list.
    pub sparse_weight: f64,
    /// Weight of the dense list.
    pub dense_weight: f64,
    /// The RRF constant k.
    pub rrf_k: f64,
    /// Candidates per list; `None` means max(50, 2 × top_k).
    pub window: Option<usize>,
    /// How many of its best chunks move the dense list's query before it
    /// ranks (see [`crate::lists::dense`]); 0 turns the step off.
    pub dense_feedback: usize,
}

impl FusionDefaults {
    /// The defaults for a model of `kind`: plain RRF (k 60, the default
    /// window) with query feedback in the dense list; a static model's
    /// dense list, weaker than a transformer's, weighs 0.3 against 1.
    pub fn for_model(kind: ModelKind) -> Self {
        Self {
            sparse_weight: 1.0,
            dense_weight: match kind {
                ModelKind::Static => 0.3,
                ModelKind::Transformer => 1.0,
            },
            rrf_k: DEFAULT_RRF_K,
            window: None,
            dense_feedback: DEFAULT_FEEDBACK,
        }
    }
}

/// Where an index's fusion defaults (and its graph list's weight) come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionSource {
    /// The defaults this build gives the index's model
    /// ([`FusionDefaults::for_model`]): a re-index by a build with other
    /// defaults records those.
    #[default]
    Builtin,
    /// Chosen by `memidx eval --sweep --save`: re-indexing keeps them until
    /// another save or a switch of model.
    Saved,
}

/// One list's ranking and its weight, as input to [`fuse`].
#[derive(Debug, Clone, Copy)]
pub struct Ranking<'a> {
    /// The list's hits, best first (rank = index + 1).
    pub hits: &'a [ListHit],
    /// The list's weight `w`.
    pub weight: f64,
}

/// What one list added to a fused score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contribution {
    /// 1-based rank in the list.
    pub rank: usize,
    /// The list's raw score for the chunk.
    pub raw_score: f32,
    /// `weight / (k + rank)`.
    pub value: f64,
}

/// One fused result.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The chunk.
    pub chunk: ChunkOrd,
    /// Sum of the contributions, in list order.
    pub score: f64,
    /// Per input list (same order as the input): its contribution, or `None`
    /// when the chunk was not among that list's hits.
    pub contributions: Vec<Option<Contribution>>,
}

impl Fused {
    /// The best (smallest) rank this chunk has in any list.
    pub fn best_rank(&self) -> usize {
        self.contributions
            .iter()
            .flatten()
            .map(|c| c.rank)
            .min()
            .unwrap_or(usize::MAX)
    }
}

/// Fuses `lists` with weighted RRF and constant `k`; returns every chunk that
/// appears in any list, best first.
pub fn fuse(lists: &[Ranking<'_>], k: f64) -> Vec<Fused> {
    let mut by_chunk: std::collections::HashMap<ChunkOrd, Vec<Option<Contribution>>> =
        std::collections::HashMap::new();
    for (index, list) in lists.iter().enumerate() {
        for (position, hit) in list.hits.iter().enumerate() {
            let rank = position + 1;
            let slots = by_chunk
                .entry(hit.chunk)
                .or_insert_with(|| vec![None; lists.len()]);
            // A list names each chunk once; should it repeat one, the better rank counts.
            if slots[index].is_none() {
                slots[index] = Some(Contribution {
                    rank,
                    raw_score: hit.score,
                    value: list.weight / (k + rank as f64),
                });
            }
        }
    }
    let mut fused: Vec<Fused> = by_chunk
        .into_iter()
        .map(|(chunk, contributions)| Fused {
            chunk,
            score: contributions.iter().flatten().map(|c| c.value).sum(),
            contributions,
        })
        .collect();
    fused.sort_by(compare);
    fused
}

/// Result order: higher score, then better best rank, then chunk ordinal.
fn compare(a: &Fused, b: &Fused) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.best_rank().cmp(&b.best_rank()))
        .then_with(|| a.chunk.cmp(&b.chunk))
}

/// A window (candidates per list) within 1…[`MAX_WINDOW`].
pub fn check_window(window: usize) -> Result<usize> {
    ensure!(
        (1..=MAX_WINDOW).contains(&window),
        "window must be between 1 and {MAX_WINDOW}, got {window}"
    );
    Ok(window)
}

/// An RRF constant k: finite and ≥ 0.
pub fn check_rrf_k(k: f64) -> Result<f64> {
    ensure!(
        k.is_finite() && k >= 0.0,
        "the RRF k must be a finite number ≥ 0, got {k:?}"
    );
    Ok(k)
}

/// The fusion weight of `list`: within 0…[`MAX_WEIGHT`] (so finite).
pub fn check_weight(list: &str, weight: f64) -> Result<f64> {
    ensure!(
        (0.0..=MAX_WEIGHT).contains(&weight),
        "the {list} weight must be between 0 and {MAX_WEIGHT}, got {weight:?}"
    );
    Ok(weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(chunks: &[ChunkOrd]) -> Vec<ListHit> {
        chunks
            .iter()
            .map(|&chunk| ListHit { chunk, score: 1.0 })
            .collect()
    }

    #[test]
    fn first_in_one_list_and_third_in_the_other() {
        let (a, b) = (hits(&[7, 1, 2]), hits(&[3, 4, 7]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 1.0,
                },
                Ranking {
                    hits: &b,
                    weight: 1.0,
                },
            ],
            60.0,
        );
        assert_eq!(fused[0].chunk, 7);
        assert_eq!(fused[0].score, 1.0 / 61.0 + 1.0 / 63.0);
        assert!((fused[0].score - 0.0323).abs() < 5e-5);
    }

    #[test]
    fn k_one_worked_example_orders_first_third_second() {
        // Documents 1, 2, 3 with ranks (1,2), (2,3), (3,1).
        let (a, b) = (hits(&[1, 2, 3]), hits(&[3, 1, 2]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 1.0,
                },
                Ranking {
                    hits: &b,
                    weight: 1.0,
                },
            ],
            1.0,
        );
        let order: Vec<_> = fused.iter().map(|f| f.chunk).collect();
        assert_eq!(order, [1, 3, 2]);
        let scores: Vec<_> = fused
            .iter()
            .map(|f| (f.score * 1e4).round() / 1e4)
            .collect();
        assert_eq!(scores, [0.8333, 0.75, 0.5833]);
    }

    #[test]
    fn weights_scale_contributions_and_absent_lists_add_nothing() {
        let (a, b) = (hits(&[1]), hits(&[2]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 0.5,
                },
                Ranking {
                    hits: &b,
                    weight: 2.0,
                },
            ],
            60.0,
        );
        assert_eq!(fused[0].chunk, 2);
        assert_eq!(fused[0].score, 2.0 / 61.0);
        assert_eq!(fused[0].contributions[0], None);
        assert_eq!(fused[1].score, 0.5 / 61.0);
    }

    #[test]
    fn ties_break_by_best_rank_then_chunk() {
        // Equal scores and equal best ranks: the ordinal decides.
        let (a, b) = (hits(&[9]), hits(&[4]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 1.0,
                },
                Ranking {
                    hits: &b,
                    weight: 1.0,
                },
            ],
            60.0,
        );
        assert_eq!(fused.iter().map(|f| f.chunk).collect::<Vec<_>>(), [4, 9]);
        // Equal scores, different best ranks: weight 2 at rank 2 of k=0 vs weight 1 at rank 1.
        let (a, b) = (hits(&[3]), hits(&[8, 2]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 1.0,
                },
                Ranking {
                    hits: &b,
                    weight: 2.0,
                },
            ],
            0.0,
        );
        let order: Vec<_> = fused.iter().map(|f| (f.chunk, f.score)).collect();
        assert_eq!(order, [(8, 2.0), (3, 1.0), (2, 1.0)]);
    }

    #[test]
    fn empty_input_fuses_to_nothing() {
        assert!(fuse(&[], 60.0).is_empty());
    }
}
