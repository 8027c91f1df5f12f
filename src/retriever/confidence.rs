//! Knowing when nothing matches: whether any list matches a query with
//! confidence.
//!
//! The dense list ranks every chunk for any query, so a search always has
//! results unless told what a match is. A list that reads the query
//! matches it with confidence when it returns a hit and, for a list with a
//! noise floor ([`crate::lists::List::noise_floor`]: the dense list under a
//! transformer), when its best score before feedback reaches the floor. A
//! search that no list matches with confidence returns nothing (exit 1),
//! unless asked to keep its results (`--keep-all`). Lists are judged in
//! fusion order and judging stops at the first match, so the floor is
//! measured only when no list before the dense one vouched for the query
//! (in hybrid mode: the sparse list matched nothing and holds no word one
//! slip from a query word). A list that weighs nothing in the fusion is
//! not judged, and a search that keeps its results judges nothing.

use anyhow::Result;

/// The least share of a query's term weight ([`crate::lists::List::coverage`])
/// the best result of a search holds for its results to be a strong match
/// rather than the best available: 40 %, and for a query of more than nine
/// terms 1.2 / √terms (a chunk holds a smaller share of a longer query: 0.30
/// at 16 terms, 0.24 at 25). Measured on the dev collections' queries
/// (`bench/coverage.py`): the share the relevant top result holds falls
/// with the query's length (median 1.0 at one or two terms, 0.57 at six to
/// ten, 0.29 past twenty), and so does what a query searched in another
/// collection's index, where nothing answers it, finds (95th percentile
/// 0.61 at three to five, 0.34 at six to ten, 0.14 past twenty).
pub fn strong_coverage(terms: usize) -> f32 {
    (1.2 / (terms.max(1) as f32).sqrt()).min(STRONG_COVERAGE)
}

/// The least share [`strong_coverage`] asks of a query of up to nine terms.
const STRONG_COVERAGE: f32 = 0.4;

use super::Retriever;
use crate::lists::{RankedList, guard};

/// How one list stands toward a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Confidence {
    /// Not judged: the list does not read the query (recency), or a list
    /// before it matched.
    NotJudged,
    /// It matches the query with confidence.
    Matched {
        /// The noise floor its best score reached, for a list with one.
        floor: Option<f32>,
        /// For a list with a word floor: the largest share of a query
        /// word's weight its first piece carries, and the floor it rose
        /// above.
        words: Option<(f32, f32)>,
    },
    /// It returned no chunk.
    NoHits,
    /// It returned no chunk, but a query word is one typing slip from a
    /// word it holds: it vouches for the query.
    NearMiss {
        /// The query's word, as the list analyzed it.
        word: String,
        /// The word the list holds.
        held: String,
    },
    /// Its model knows no query word better than it knows made-up words
    /// (the static model's word floor, [`crate::lists::dense::floor`]):
    /// the query is noise to it.
    UnknownWords {
        /// The largest share of a query word's weight its first piece
        /// carries.
        share: f32,
        /// The word floor: the largest share among made-up words.
        floor: f32,
    },
    /// Its best score, before feedback moved the query, stays below its
    /// noise floor.
    BelowFloor {
        /// The best score.
        best: f32,
        /// The floor.
        floor: f32,
    },
}

impl Confidence {
    /// Whether the list matches the query with confidence (a near miss
    /// counts).
    pub fn is_match(&self) -> bool {
        matches!(self, Self::Matched { .. } | Self::NearMiss { .. })
    }

    /// The largest share of a query word's weight its first piece carries
    /// and the list's word floor, when judging read them.
    pub fn words(&self) -> Option<(f32, f32)> {
        match self {
            Self::Matched { words, .. } => *words,
            Self::UnknownWords { share, floor } => Some((*share, *floor)),
            _ => None,
        }
    }

    /// The list's noise floor, when judging it measured one.
    pub fn floor(&self) -> Option<f32> {
        match self {
            Self::Matched { floor, .. } => *floor,
            Self::BelowFloor { floor, .. } => Some(*floor),
            Self::NotJudged | Self::NoHits | Self::NearMiss { .. } | Self::UnknownWords { .. } => {
                None
            }
        }
    }
}

/// Whether `confidence` (one per list) says no list matched the query:
/// some list was judged and none matched.
pub(super) fn nothing_matched<'a>(confidence: impl IntoIterator<Item = &'a Confidence>) -> bool {
    let (mut judged, mut matched) = (false, false);
    for c in confidence {
        judged |= *c != Confidence::NotJudged;
        matched |= c.is_match();
    }
    judged && !matched
}

impl Retriever {
    /// Judges each list's `ranked` result (in fusion order) for `query`
    /// (see the module doc).
    pub(super) fn judge(&self, query: &str, ranked: &[RankedList]) -> Result<Vec<Confidence>> {
        let mut judged = vec![Confidence::NotJudged; ranked.len()];
        for ((slot, ranking), list) in judged.iter_mut().zip(ranked).zip(&self.lists) {
            if !list.index.reads_query() || list.weight <= 0.0 {
                continue;
            }
            *slot = guard::catch(list.index.kind().name(), &self.damage_site(), || {
                Ok(match ranking.query_best() {
                    None => match list.index.near_miss(query)? {
                        Some((word, held)) => Confidence::NearMiss { word, held },
                        None => Confidence::NoHits,
                    },
                    Some(best) => {
                        match (list.index.noise_floor()?, list.index.word_floor(query)?) {
                            (Some(floor), _) if best < floor => {
                                Confidence::BelowFloor { best, floor }
                            }
                            (_, Some((share, floor))) if share <= floor => {
                                Confidence::UnknownWords { share, floor }
                            }
                            (floor, words) => Confidence::Matched { floor, words },
                        }
                    }
                })
            })?;
            if slot.is_match() {
                break;
            }
        }
        Ok(judged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strong_match_holds_less_of_a_longer_query() {
        for terms in [0, 1, 3, 9] {
            assert_eq!(strong_coverage(terms), 0.4, "{terms}");
        }
        assert!((strong_coverage(16) - 0.3).abs() < 1e-6);
        assert!((strong_coverage(25) - 0.24).abs() < 1e-6);
        assert!(strong_coverage(100) < strong_coverage(25));
    }

    #[test]
    fn nothing_matched_needs_a_judged_list_and_no_match() {
        use Confidence::*;
        let below = BelowFloor {
            best: 0.2,
            floor: 0.3,
        };
        assert!(nothing_matched(&[NoHits, below.clone()]));
        assert!(nothing_matched(&[NoHits, NotJudged]));
        let matched = Matched {
            floor: None,
            words: None,
        };
        assert!(!nothing_matched(&[NoHits, matched.clone()]));
        assert!(!nothing_matched(&[matched, NotJudged]));
        let near = NearMiss {
            word: "sirutin".into(),
            held: "sirtuin".into(),
        };
        assert!(!nothing_matched(&[near, below]));
        // A search of lists that do not read the query (recency alone).
        assert!(!nothing_matched(&[NotJudged]));
        assert!(!nothing_matched(&[]));
    }
}
