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
//! measured only for a query the sparse list matched nothing of.

use anyhow::Result;

use super::Retriever;
use crate::lists::{RankedList, guard};

/// How one list stands toward a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Confidence {
    /// Not judged: the list does not read the query (recency), or a list
    /// before it matched.
    NotJudged,
    /// It matches the query with confidence.
    Matched {
        /// The noise floor its best score reached, for a list with one.
        floor: Option<f32>,
    },
    /// It returned no chunk.
    NoHits,
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
    /// Whether the list matches the query with confidence.
    pub fn is_match(self) -> bool {
        matches!(self, Self::Matched { .. })
    }

    /// The list's noise floor, when judging it measured one.
    pub fn floor(self) -> Option<f32> {
        match self {
            Self::Matched { floor } => floor,
            Self::BelowFloor { floor, .. } => Some(floor),
            Self::NotJudged | Self::NoHits => None,
        }
    }
}

/// Whether `confidence` (one per list) says no list matched the query:
/// some list was judged and none matched.
pub(super) fn nothing_matched(confidence: &[Confidence]) -> bool {
    !confidence.iter().any(|c| c.is_match())
        && confidence.iter().any(|c| *c != Confidence::NotJudged)
}

impl Retriever {
    /// Judges each list's `ranked` result (in fusion order) for the query
    /// it ran (see the module doc).
    pub(super) fn judge(&self, ranked: &[RankedList]) -> Result<Vec<Confidence>> {
        let mut judged = vec![Confidence::NotJudged; ranked.len()];
        for ((slot, ranking), list) in judged.iter_mut().zip(ranked).zip(&self.lists) {
            if !list.index.reads_query() {
                continue;
            }
            let floor = || {
                guard::catch(list.index.kind().name(), self.generation().dir(), || {
                    list.index.noise_floor()
                })
            };
            *slot = match ranking.query_best() {
                None => Confidence::NoHits,
                Some(best) => match floor()? {
                    Some(floor) if best < floor => Confidence::BelowFloor { best, floor },
                    floor => Confidence::Matched { floor },
                },
            };
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
    fn nothing_matched_needs_a_judged_list_and_no_match() {
        use Confidence::*;
        let below = BelowFloor {
            best: 0.2,
            floor: 0.3,
        };
        assert!(nothing_matched(&[NoHits, below]));
        assert!(nothing_matched(&[NoHits, NotJudged]));
        let matched = Matched { floor: None };
        assert!(!nothing_matched(&[NoHits, matched]));
        assert!(!nothing_matched(&[matched, NotJudged]));
        // A search of lists that do not read the query (recency alone).
        assert!(!nothing_matched(&[NotJudged]));
        assert!(!nothing_matched(&[]));
    }
}
