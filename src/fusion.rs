//! Fusion of any number of ranked lists, as one pure function, by one of
//! two methods:
//!
//! - **Reciprocal Rank Fusion**: `score(d) = Σ_lists w / (k + rank(d))`,
//!   ranks from 1. Only ranks count, so lists with incomparable scores fuse
//!   without calibration; but adjacent ranks of a strong list differ by
//!   little (1/61 − 1/62 at the top), so even a lightly weighted weak list
//!   reorders the strong list's top.
//! - **Relative scores**: `score(d) = Σ_lists w × s(d) / best`, where `best`
//!   is the list's best score for the query (BM25 and cosine scores are
//!   read from 0; a negative score counts as 0). A list whose top stands far
//!   above the rest (a rare identifier in BM25) keeps that lead; a list
//!   whose scores are all alike (a weak embedding of a short query) barely
//!   reorders anything. It is the convex combination of theoretically
//!   min-max normalized scores (Bruch, Gai and Ingber, 2023, "An Analysis of
//!   Fusion Functions for Hybrid Retrieval").
//!
//! A list that does not hold `d` contributes nothing. Each contribution is
//! kept, so `explain` can show that the parts add up to the printed score
//! exactly: the score *is* the left-to-right sum of the recorded
//! contributions.
//!
//! **Exact terms come first** ([`Fusion::own`]: the index's own
//! fusion, not one a search spells out). When a list says the query names something
//! exact that it holds ([`Ranking::exact`]: the sparse list, for an
//! identifier-shaped word the index holds), a chunk that no such list
//! returned — one holding no word of the query — gets nothing from the
//! other lists: meaning alone cannot lift it over a chunk that holds the
//! identifier, however long that chunk is or however small its share of
//! the keyword list's best score. Such a chunk is still listed (it is
//! [`Fused::gated`], scored 0), after every chunk the exact list returned,
//! in the order of its best rank.
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

/// How fused scores are made from the lists' rankings (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMethod {
    /// Reciprocal Rank Fusion, `w / (k + rank)`.
    #[default]
    Rrf,
    /// Relative scores, `w × score / best score of the list`.
    Relative,
    /// Relative scores with weights moved per query by each list's spread.
    Adaptive,
}

impl FusionMethod {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rrf => "rrf",
            Self::Relative => "relative",
            Self::Adaptive => "adaptive",
        }
    }
}

/// How many of a list's best hits its spread is measured over
/// ([`FusionMethod::Adaptive`]): a page of results.
pub const SPREAD_DEPTH: usize = 10;

/// A fusion method with its constant: what [`fuse`] needs besides the lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The method.
    pub method: FusionMethod,
    /// The RRF constant `k` (unused by relative scores).
    pub rrf_k: f64,
    /// Whether this is the index's own fusion, not one a search spelled
    /// out: exact terms then come first (see the module doc) and the file
    /// list adds its files' evidence ([`crate::lists::files`]); a search
    /// that gives its own method, k or weights fuses by exactly the formula
    /// it asked for, over the lists it named.
    pub own: bool,
}

/// Fusion weights (and the dense list's feedback) that suit an embedder,
/// measured on the eval collections and recorded in the index so searches
/// use them unless told otherwise (numbers: docs/eval.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionDefaults {
    /// How the lists are fused (absent before format 18: RRF).
    #[serde(default)]
    pub method: FusionMethod,
    /// Weight of the sparse (BM25) list.
    pub sparse_weight: f64,
    /// Weight of the dense list.
    pub dense_weight: f64,
    /// Weight of the file list ([`crate::lists::files`]) in the index's own
    /// fusion of the sparse and dense lists (absent before it was built, and
    /// from defaults saved then: 0, no file list).
    #[serde(default)]
    pub file_weight: f64,
    /// The RRF constant k.
    pub rrf_k: f64,
    /// Candidates per list; `None` means max(200, 2 × top_k).
    pub window: Option<usize>,
    /// How many of its best chunks move the dense list's query before it
    /// ranks (see [`crate::lists::dense`]); 0 turns the step off.
    pub dense_feedback: usize,
}

impl FusionDefaults {
    /// The defaults for a model of `kind`, relative scores (the default
    /// window) with query feedback in the dense list: a static model's
    /// dense list, weaker than BM25, weighs 0.4 against 0.6; a
    /// transformer's, stronger, 0.7 against 0.3, moved per query by the
    /// lists' spreads (adaptive), which lifts the transformer's mean and the
    /// queries only BM25 can answer, and lowered the static model's. The
    /// words' weight is shared between a chunk's own BM25 (the sparse list)
    /// and its file's (the file list): half and half with the static model,
    /// a quarter to the file with a transformer, whose dense list already
    /// reads a page's sections well. Where a file is one chunk the two
    /// lists are one and the sharing moves nothing (measured: docs/eval.md).
    pub fn for_model(kind: ModelKind) -> Self {
        // The words' weight, 0.6 and 0.3, shared between the chunk's and
        // the file's BM25.
        let (method, sparse_weight, dense_weight, file_weight) = match kind {
            ModelKind::Static => (FusionMethod::Relative, 0.3, 0.4, 0.3),
            ModelKind::Transformer => (FusionMethod::Adaptive, 0.225, 0.7, 0.075),
        };
        Self {
            method,
            sparse_weight,
            dense_weight,
            file_weight,
            rrf_k: DEFAULT_RRF_K,
            window: None,
            dense_feedback: DEFAULT_FEEDBACK,
        }
    }

    /// The fusion a search uses given its own `method` and `rrf_k`, if any:
    /// those, else these defaults; an RRF constant given without a method
    /// asks for RRF (it means nothing to relative scores), and weights given
    /// without a method (`weights_given`) are kept as given: adaptive
    /// defaults become plain relative scores.
    pub fn resolve(
        &self,
        method: Option<FusionMethod>,
        rrf_k: Option<f64>,
        weights_given: bool,
    ) -> Fusion {
        let method_given = method;
        let method = match (method, rrf_k) {
            (Some(method), _) => method,
            (None, Some(_)) => FusionMethod::Rrf,
            (None, None) if weights_given && self.method == FusionMethod::Adaptive => {
                FusionMethod::Relative
            }
            (None, None) => self.method,
        };
        Fusion {
            method,
            rrf_k: rrf_k.unwrap_or(self.rrf_k),
            own: method_given.is_none() && rrf_k.is_none() && !weights_given,
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
    /// The list's hits, best first (rank = index + 1, or shared, below).
    pub hits: &'a [ListHit],
    /// The list's weight `w`.
    pub weight: f64,
    /// Whether the query names something exact this list holds (see the
    /// module doc): a chunk it did not return is then [`Fused::gated`].
    pub exact: bool,
    /// Whether hits of equal score one after another share a rank, the
    /// ranks counting distinct scores (the file list, whose hits are the
    /// chunks of each file at its file's score: a chunk ranks as its file).
    pub tied: bool,
}

/// What one list added to a fused score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contribution {
    /// 1-based rank in the list.
    pub rank: usize,
    /// The list's raw score for the chunk.
    pub raw_score: f32,
    /// What the weighted term is divided by: `k + rank` for RRF, the list's
    /// best score for relative scores.
    pub divisor: f64,
    /// `weight / (k + rank)` for RRF, `weight × max(raw_score, 0) / best`
    /// for relative scores (0 when the best score is not positive), with the
    /// list's weight for this query ([`query_weights`]).
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
    /// Whether the query named something exact and no list that holds it
    /// returned this chunk: its contributions count 0 (see the module doc).
    pub gated: bool,
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

/// How far a list's scores fall over its best [`SPREAD_DEPTH`] hits:
/// `1 − mean(score / best)`, a hit it lacks and a negative score counting
/// 0; 0 for a list without a positive best score.
pub fn spread(hits: &[ListHit]) -> f64 {
    let best = hits.first().map_or(0.0, |h| f64::from(h.score));
    if best <= 0.0 {
        return 0.0;
    }
    let kept: f64 = hits
        .iter()
        .take(SPREAD_DEPTH)
        .map(|h| f64::from(h.score).max(0.0) / best)
        .sum();
    1.0 - kept / SPREAD_DEPTH as f64
}

/// A list's weight for one query, and the spread that moved it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryWeight {
    /// The weight its contributions are made with.
    pub weight: f64,
    /// Under [`FusionMethod::Adaptive`], the list's [`spread`]; `None`
    /// under the other methods, which keep the weight as given.
    pub spread: Option<f64>,
}

/// The weights `fuse` gives `lists` for this query, in list order: their
/// own, except under [`FusionMethod::Adaptive`], where each is scaled by
/// the square root of its list's [`spread`] and all are rescaled to their
/// old sum (kept as they are when no list spreads at all).
pub fn query_weights(lists: &[Ranking<'_>], fusion: Fusion) -> Vec<QueryWeight> {
    let adaptive = fusion.method == FusionMethod::Adaptive;
    let spreads: Vec<Option<f64>> = lists
        .iter()
        .map(|l| adaptive.then(|| spread(l.hits)))
        .collect();
    let scaled: Vec<f64> = lists
        .iter()
        .zip(&spreads)
        .map(|(l, s)| l.weight * s.map_or(1.0, f64::sqrt))
        .collect();
    let sum_given: f64 = lists.iter().map(|l| l.weight).sum();
    let sum_scaled: f64 = scaled.iter().sum();
    let moved = adaptive && sum_scaled > 0.0;
    lists
        .iter()
        .zip(scaled)
        .zip(spreads)
        .map(|((l, w), spread)| QueryWeight {
            weight: if moved {
                w * sum_given / sum_scaled
            } else {
                l.weight
            },
            spread,
        })
        .collect()
}

/// Fuses `lists` by `fusion`; returns every chunk that appears in any list,
/// best first.
pub fn fuse(lists: &[Ranking<'_>], fusion: Fusion) -> Vec<Fused> {
    fuse_at(lists, fusion, &query_weights(lists, fusion))
}

/// Fuses `lists` by `fusion` with this query's `weights`, from
/// [`query_weights`] (for a caller that also reports them).
pub fn fuse_at(lists: &[Ranking<'_>], fusion: Fusion, weights: &[QueryWeight]) -> Vec<Fused> {
    let mut by_chunk: std::collections::HashMap<ChunkOrd, Vec<Option<Contribution>>> =
        std::collections::HashMap::new();
    for (index, (list, &QueryWeight { weight, .. })) in lists.iter().zip(weights).enumerate() {
        // Hits come best first: the first one's score is the list's best.
        let best = list
            .hits
            .first()
            .map_or(0.0, |h| f64::from(h.score).max(0.0));
        let mut rank = 0;
        for (position, hit) in list.hits.iter().enumerate() {
            let shares = list.tied && position > 0 && list.hits[position - 1].score == hit.score;
            if !shares {
                rank = if list.tied { rank + 1 } else { position + 1 };
            }
            let slots = by_chunk
                .entry(hit.chunk)
                .or_insert_with(|| vec![None; lists.len()]);
            // A list names each chunk once; should it repeat one, the better rank counts.
            if slots[index].is_none() {
                let (divisor, value) = match fusion.method {
                    FusionMethod::Rrf => {
                        let divisor = fusion.rrf_k + rank as f64;
                        (divisor, weight / divisor)
                    }
                    FusionMethod::Relative | FusionMethod::Adaptive if best > 0.0 => {
                        (best, weight * f64::from(hit.score).max(0.0) / best)
                    }
                    FusionMethod::Relative | FusionMethod::Adaptive => (best, 0.0),
                };
                slots[index] = Some(Contribution {
                    rank,
                    raw_score: hit.score,
                    divisor,
                    value,
                });
            }
        }
    }
    let exact = fusion.own && lists.iter().any(|l| l.exact);
    let mut fused: Vec<Fused> = by_chunk
        .into_iter()
        .map(|(chunk, mut contributions)| {
            let held = (contributions.iter().zip(lists)).any(|(c, l)| l.exact && c.is_some());
            let gated = exact && !held;
            if gated {
                contributions
                    .iter_mut()
                    .flatten()
                    .for_each(|c| c.value = 0.0);
            }
            Fused {
                chunk,
                score: contributions.iter().flatten().map(|c| c.value).sum(),
                contributions,
                gated,
            }
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

    fn rrf(rrf_k: f64) -> Fusion {
        Fusion {
            method: FusionMethod::Rrf,
            rrf_k,
            own: true,
        }
    }

    fn hits(chunks: &[ChunkOrd]) -> Vec<ListHit> {
        chunks
            .iter()
            .map(|&chunk| ListHit { chunk, score: 1.0 })
            .collect()
    }

    #[test]
    fn a_tied_list_ranks_equal_scores_alike_counting_distinct_scores() {
        // The file list: chunks 4, 5, 6 of one file, then chunk 9 of another.
        let scored = |pairs: &[(ChunkOrd, f32)]| -> Vec<ListHit> {
            (pairs.iter())
                .map(|&(chunk, score)| ListHit { chunk, score })
                .collect()
        };
        let files = scored(&[(4, 2.0), (5, 2.0), (6, 2.0), (9, 1.0)]);
        let ranks = |tied| -> Vec<(ChunkOrd, usize)> {
            let list = Ranking {
                hits: &files,
                weight: 1.0,
                exact: false,
                tied,
            };
            let fused = fuse(&[list], rrf(60.0));
            (fused.iter())
                .map(|f| (f.chunk, f.contributions[0].unwrap().rank))
                .collect()
        };
        assert_eq!(ranks(true), [(4, 1), (5, 1), (6, 1), (9, 2)]);
        assert_eq!(ranks(false), [(4, 1), (5, 2), (6, 3), (9, 4)]);
    }

    #[test]
    fn first_in_one_list_and_third_in_the_other() {
        let (a, b) = (hits(&[7, 1, 2]), hits(&[3, 4, 7]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 1.0,
                    exact: false,
                    tied: false,
                },
                Ranking {
                    hits: &b,
                    weight: 1.0,
                    exact: false,
                    tied: false,
                },
            ],
            rrf(60.0),
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
                    exact: false,
                    tied: false,
                },
                Ranking {
                    hits: &b,
                    weight: 1.0,
                    exact: false,
                    tied: false,
                },
            ],
            rrf(1.0),
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
                    exact: false,
                    tied: false,
                },
                Ranking {
                    hits: &b,
                    weight: 2.0,
                    exact: false,
                    tied: false,
                },
            ],
            rrf(60.0),
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
                    exact: false,
                    tied: false,
                },
                Ranking {
                    hits: &b,
                    weight: 1.0,
                    exact: false,
                    tied: false,
                },
            ],
            rrf(60.0),
        );
        assert_eq!(fused.iter().map(|f| f.chunk).collect::<Vec<_>>(), [4, 9]);
        // Equal scores, different best ranks: weight 2 at rank 2 of k=0 vs weight 1 at rank 1.
        let (a, b) = (hits(&[3]), hits(&[8, 2]));
        let fused = fuse(
            &[
                Ranking {
                    hits: &a,
                    weight: 1.0,
                    exact: false,
                    tied: false,
                },
                Ranking {
                    hits: &b,
                    weight: 2.0,
                    exact: false,
                    tied: false,
                },
            ],
            rrf(0.0),
        );
        let order: Vec<_> = fused.iter().map(|f| (f.chunk, f.score)).collect();
        assert_eq!(order, [(8, 2.0), (3, 1.0), (2, 1.0)]);
    }

    #[test]
    fn empty_input_fuses_to_nothing() {
        assert!(fuse(&[], rrf(60.0)).is_empty());
    }

    #[test]
    fn relative_scores_divide_by_each_list_s_best_and_keep_a_lead() {
        // BM25 puts chunk 1 far ahead; the cosines are all alike and favour 2.
        let sparse = scored(&[(1, 12.0), (2, 3.0), (3, 2.0)]);
        let dense = scored(&[(2, 0.5), (3, 0.49), (1, 0.48), (4, -0.1)]);
        let relative = Fusion {
            method: FusionMethod::Relative,
            rrf_k: 60.0,
            own: true,
        };
        let lists = [
            Ranking {
                hits: &sparse,
                weight: 0.6,
                exact: false,
                tied: false,
            },
            Ranking {
                hits: &dense,
                weight: 0.4,
                exact: false,
                tied: false,
            },
        ];
        let fused = fuse(&lists, relative);
        let order: Vec<_> = fused.iter().map(|f| f.chunk).collect();
        assert_eq!(order, [1, 2, 3, 4]);
        let first = fused[0].contributions[1].unwrap();
        assert_eq!(first.divisor, f64::from(0.5f32));
        assert_eq!(first.value, 0.4 * f64::from(0.48f32) / f64::from(0.5f32));
        assert_eq!(fused[0].score, 0.6 * 12.0 / 12.0 + first.value);
        // A negative score counts as 0; RRF would have ranked 2 first.
        assert_eq!(fused[3].score, 0.0);
        let by_rank = fuse(&lists, rrf(60.0));
        assert_eq!(by_rank[0].chunk, 2);
    }

    fn scored(pairs: &[(ChunkOrd, f32)]) -> Vec<ListHit> {
        pairs
            .iter()
            .map(|&(chunk, score)| ListHit { chunk, score })
            .collect()
    }

    #[test]
    fn spread_is_how_far_the_best_ten_fall_below_the_best() {
        // Two hits, at the best and at half of it; the eight missing count 0.
        let even = scored(&[(1, 4.0), (2, 2.0)]);
        assert!((spread(&even) - (1.0 - 1.5 / 10.0)).abs() < 1e-12);
        let flat: Vec<ListHit> = (0..20)
            .map(|c| ListHit {
                chunk: c,
                score: 0.5,
            })
            .collect();
        assert_eq!(spread(&flat), 0.0);
        assert_eq!(spread(&[]), 0.0);
        assert_eq!(spread(&scored(&[(1, -0.2), (2, -0.3)])), 0.0);
    }

    #[test]
    fn an_exact_term_puts_every_chunk_holding_it_above_meaning_alone() {
        // The EADDRINUSE shape: short mentions lead BM25, the long chunk
        // that defines the code holds a small share of their score, and
        // many chunks without any query word are near the query in meaning.
        let sparse = scored(&[(1, 9.0), (2, 8.8), (3, 8.7), (4, 1.2)]);
        let dense: Vec<ListHit> = (10..40)
            .map(|c| ListHit {
                chunk: c,
                score: 0.8 - c as f32 * 0.001,
            })
            .chain(scored(&[(1, 0.5), (2, 0.5), (3, 0.5), (4, 0.3)]))
            .collect();
        let holders = [1, 2, 3, 4];
        for method in [
            FusionMethod::Relative,
            FusionMethod::Adaptive,
            FusionMethod::Rrf,
        ] {
            let fusion = Fusion {
                method,
                rrf_k: DEFAULT_RRF_K,
                own: true,
            };
            let lists = |exact| {
                [
                    Ranking {
                        hits: &sparse,
                        weight: 0.6,
                        exact,
                        tied: false,
                    },
                    Ranking {
                        hits: &dense,
                        weight: 0.4,
                        exact: false,
                        tied: false,
                    },
                ]
            };
            // Without an exact term, relative scores let meaning alone
            // outrank the long chunk.
            let plain = fuse(&lists(false), fusion);
            let at = |chunk| plain.iter().position(|f| f.chunk == chunk).unwrap();
            if method == FusionMethod::Relative {
                assert!(at(10) < at(4));
            }
            assert!(plain.iter().all(|f| !f.gated));
            // With one, every chunk holding it comes first, and the others
            // follow in their dense order, gated to 0.
            let fused = fuse(&lists(true), fusion);
            let (first, rest) = fused.split_at(holders.len());
            assert!(
                first.iter().all(|f| holders.contains(&f.chunk) && !f.gated),
                "{method:?}"
            );
            assert!(rest.iter().all(|f| f.gated && f.score == 0.0));
            let rest: Vec<ChunkOrd> = rest.iter().map(|f| f.chunk).collect();
            assert_eq!(rest, (10..40).collect::<Vec<_>>());
            // A fusion spelled out by the search keeps its formula.
            let spelled = Fusion {
                own: false,
                ..fusion
            };
            assert_eq!(fuse(&lists(true), spelled), plain, "{method:?}");
        }
    }

    #[test]
    fn adaptive_weights_follow_the_list_that_stands_apart_and_keep_their_sum() {
        // BM25: one chunk holds the query's rare word; the cosines are all
        // alike, and that chunk is not among the dense list's candidates.
        let sparse = scored(&[(1, 12.0), (2, 3.0), (3, 3.0), (4, 2.5)]);
        let dense: Vec<ListHit> = (2..40)
            .map(|c| ListHit {
                chunk: c,
                score: 0.6 - c as f32 * 0.001,
            })
            .collect();
        let lists = [
            Ranking {
                hits: &sparse,
                weight: 0.3,
                exact: false,
                tied: false,
            },
            Ranking {
                hits: &dense,
                weight: 0.7,
                exact: false,
                tied: false,
            },
        ];
        let adaptive = Fusion {
            method: FusionMethod::Adaptive,
            rrf_k: DEFAULT_RRF_K,
            own: true,
        };
        let relative = Fusion {
            method: FusionMethod::Relative,
            rrf_k: DEFAULT_RRF_K,
            own: true,
        };
        let weights_of = |fusion| -> Vec<f64> {
            query_weights(&lists, fusion)
                .iter()
                .map(|w| w.weight)
                .collect()
        };
        assert_eq!(weights_of(relative), [0.3, 0.7]);
        let weights = weights_of(adaptive);
        assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(weights[0] > 0.5, "the sparse list leads: {weights:?}");
        let expected = 0.3 * spread(&sparse).sqrt();
        let scale = 1.0 / (expected + 0.7 * spread(&dense).sqrt());
        assert!((weights[0] - expected * scale).abs() < 1e-12);
        // Fixed weights bury the note that holds the word; adaptive ones do not.
        assert_ne!(fuse(&lists, relative)[0].chunk, 1);
        let fused = fuse(&lists, adaptive);
        assert_eq!(fused[0].chunk, 1);
        // The contributions are made with the query's weights and add up.
        let first = &fused[0];
        let parts: Vec<f64> = first
            .contributions
            .iter()
            .flatten()
            .map(|c| c.value)
            .collect();
        assert_eq!(first.score, parts.iter().sum::<f64>());
        assert_eq!(parts[0], weights[0]);
    }

    #[test]
    fn an_empty_list_gets_no_adaptive_weight_and_lists_that_do_not_spread_keep_theirs() {
        let flat = scored(&[(1, 1.0)]);
        let none: Vec<ListHit> = Vec::new();
        let lists = [
            Ranking {
                hits: &none,
                weight: 0.6,
                exact: false,
                tied: false,
            },
            Ranking {
                hits: &flat,
                weight: 0.4,
                exact: false,
                tied: false,
            },
        ];
        let adaptive = Fusion {
            method: FusionMethod::Adaptive,
            rrf_k: DEFAULT_RRF_K,
            own: true,
        };
        let weights_of = |lists: &[Ranking<'_>]| -> Vec<f64> {
            query_weights(lists, adaptive)
                .iter()
                .map(|w| w.weight)
                .collect()
        };
        // One hit spreads (the nine missing count 0); an empty list does not.
        assert_eq!(weights_of(&lists), [0.0, 1.0]);
        let still: Vec<ListHit> = (0..10)
            .map(|c| ListHit {
                chunk: c,
                score: 1.0,
            })
            .collect();
        let lists = [
            Ranking {
                hits: &still,
                weight: 0.6,
                exact: false,
                tied: false,
            },
            Ranking {
                hits: &none,
                weight: 0.4,
                exact: false,
                tied: false,
            },
        ];
        assert_eq!(weights_of(&lists), [0.6, 0.4]);
    }

    #[test]
    fn weights_given_keep_adaptive_defaults_from_moving_them() {
        let defaults = FusionDefaults {
            method: FusionMethod::Adaptive,
            ..FusionDefaults::for_model(ModelKind::Transformer)
        };
        assert_eq!(
            defaults.resolve(None, None, false).method,
            FusionMethod::Adaptive
        );
        assert_eq!(
            defaults.resolve(None, None, true).method,
            FusionMethod::Relative
        );
        assert_eq!(
            defaults.resolve(None, Some(60.0), true).method,
            FusionMethod::Rrf
        );
        let asked = defaults.resolve(Some(FusionMethod::Adaptive), None, true);
        assert_eq!(asked.method, FusionMethod::Adaptive);
    }
}
