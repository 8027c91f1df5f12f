//! Scoring one segment's postings into the top window: exhaustively, or
//! with MaxScore pruning, to the same window, scores and order.
//!
//! **MaxScore** (Turtle and Flood, 1995). Each query term has a bound, the
//! most it can add to a chunk's score in this segment ([`super::bounds`]).
//! With the terms sorted by bound, the longest run of the smallest bounds
//! whose sum cannot reach the window's current threshold (the worst score
//! it keeps, once full) is *non-essential*: a chunk matching only those
//! terms cannot enter the window, so only the *essential* terms' postings
//! are walked to find candidates, document at a time. A candidate's
//! non-essential terms are then looked up by seeking, highest bound first,
//! and it is dropped as soon as its score so far plus the bounds left
//! cannot reach the threshold. The threshold only rises, so more terms
//! become non-essential as the search goes on.
//!
//! Exact results: a chunk is dropped only when its bound is below the
//! threshold by more than any rounding of the sum could account for, and a
//! kept chunk's score is summed term by term in the query's term order, the
//! order the exhaustive scorer adds them in, so both give identical `f32`
//! scores and the window's ties fall the same way (by chunk ordinal).

use anyhow::Result;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, TERMINATED, Term};

use super::DEAD;
use super::Segment;
use super::bounds::{self, FrontierPoint};
use crate::lists::{AllowSet, Candidate, TopWindow};
use crate::store::generation::ChunkOrd;

/// How much a bound must fall below the threshold before a chunk is
/// dropped: far more than the rounding of an `f32` sum of a query's terms.
const BOUND_MARGIN: f64 = 1e-3;

/// The BM25 formula with the query-time parameters and the live documents'
/// average length.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bm25 {
    /// Term-frequency saturation.
    pub(super) k1: f32,
    /// Length normalisation.
    pub(super) b: f32,
    /// Average live chunk length in tokens.
    pub(super) avgdl: f32,
}

impl Bm25 {
    /// What a term of query weight `weight` (idf × its count in the query)
    /// adds for `tf` occurrences in a chunk of `dl` tokens.
    #[inline]
    pub(super) fn term(&self, weight: f32, tf: u32, dl: u64) -> f32 {
        let (tf, dl) = (tf as f32, dl as f32);
        let Self { k1, b, avgdl } = *self;
        weight * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl))
    }

    /// The most a term of weight `weight` adds to any chunk of `frontier`.
    fn bound(&self, weight: f32, frontier: &[FrontierPoint]) -> f32 {
        frontier
            .iter()
            .map(|&[tf, dl]| self.term(weight, tf, u64::from(dl)))
            .fold(0.0, f32::max)
    }
}

/// One query term: its tantivy term and its weight (idf over the live
/// documents × its count in the query).
pub(super) struct QueryTerm {
    /// The term in the body field.
    pub(super) term: Term,
    /// Its weight.
    pub(super) weight: f32,
}

/// What a search collects across segments.
pub(super) struct Collected {
    /// The best allowed chunks so far.
    pub(super) best: TopWindow,
    /// Allowed chunks reached.
    pub(super) matched: usize,
    /// Chunks reached that the filters removed.
    pub(super) filtered_out: usize,
    /// Postings whose contribution was computed.
    pub(super) scored: u64,
    /// The part (generation) of a document whose ordinal was at or past its
    /// generation's chunk count, if one was.
    pub(super) past_the_end: Option<usize>,
}

/// Scores every live posting of `terms` in `segment`.
pub(super) fn exhaustive(
    segment: &Segment,
    ords: &[u32],
    terms: &[QueryTerm],
    bm25: Bm25,
    allow: &AllowSet,
    out: &mut Collected,
) -> Result<()> {
    let mut scores = vec![0.0f32; ords.len()];
    let mut touched = Vec::new();
    for query_term in terms {
        let Some(mut postings) = segment
            .inverted
            .read_postings(&query_term.term, IndexRecordOption::WithFreqs)?
        else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if chunk_of(segment, ords, doc, out) != DEAD {
                let dl = segment.lengths.first(doc).unwrap_or(0);
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += bm25.term(query_term.weight, postings.term_freq(), dl);
                out.scored += 1;
            }
            doc = postings.advance();
        }
    }
    for doc in touched {
        offer(
            segment.global(ords[doc as usize]),
            scores[doc as usize],
            allow,
            out,
        );
    }
    Ok(())
}

/// The list-wide chunk of document `doc` of `segment` (whose ordinals in
/// its own generation are `ords`): [`DEAD`] also for a document past the
/// map, which only damaged postings could name, and for an ordinal past
/// its generation's chunk table, which only a damaged map could hold:
/// noted in `out`. Checked here, as the postings reach them, rather than
/// every ordinal when the list opens, which cost every search a pass over
/// the map.
#[inline]
fn chunk_of(segment: &Segment, ords: &[u32], doc: u32, out: &mut Collected) -> ChunkOrd {
    let chunk = ords.get(doc as usize).copied().unwrap_or(DEAD);
    if chunk == DEAD {
        return DEAD;
    }
    if segment.is_buried(doc) {
        return DEAD;
    }
    if u64::from(chunk) >= segment.chunks {
        out.past_the_end = Some(segment.part);
        return DEAD;
    }
    segment.global(chunk)
}

/// Offers one reached chunk to the window, counting it.
fn offer(chunk: ChunkOrd, score: f32, allow: &AllowSet, out: &mut Collected) {
    if allow.allows(chunk) {
        out.matched += 1;
        out.best.push(Candidate { score, chunk });
    } else {
        out.filtered_out += 1;
    }
}

/// One term's postings in a MaxScore walk.
struct Cursor {
    /// Position of the term in the query's term order.
    position: usize,
    postings: SegmentPostings,
    weight: f32,
    bound: f32,
}

/// Scores `terms` in `segment` with MaxScore pruning (see the module doc),
/// bounding each term by the segment's stored frontier where it has one.
pub(super) fn max_score(
    segment: &Segment,
    ords: &[u32],
    terms: &[QueryTerm],
    bm25: Bm25,
    allow: &AllowSet,
    out: &mut Collected,
) -> Result<()> {
    let mut cursors = Vec::with_capacity(terms.len());
    for (position, query_term) in terms.iter().enumerate() {
        let dictionary = segment.inverted.terms();
        let key = query_term.term.serialized_value_bytes();
        let (Some(ord), Some(info)) = (dictionary.term_ord(key)?, dictionary.get(key)?) else {
            continue;
        };
        let read = || {
            segment
                .inverted
                .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)
        };
        let frontier = match segment.bounds.as_ref().and_then(|b| b.frontier(ord)) {
            Some(frontier) if info.doc_freq >= bounds::STORED_MIN_DF => frontier,
            _ => bounds::frontier(&mut read()?, &segment.lengths),
        };
        cursors.push(Cursor {
            position,
            postings: read()?,
            weight: query_term.weight,
            bound: bm25.bound(query_term.weight, &frontier),
        });
    }
    cursors.sort_by(|a, b| a.bound.total_cmp(&b.bound));
    // below[i]: the sum of the bounds of cursors 0..i.
    let mut below = vec![0.0f64];
    for cursor in &cursors {
        below.push(below.last().copied().unwrap_or(0.0) + f64::from(cursor.bound));
    }
    let reaches = |bound: f64, threshold: Option<f32>| {
        threshold.is_none_or(|t| bound * (1.0 + BOUND_MARGIN) >= f64::from(t))
    };
    // Cursors 0..essential are non-essential.
    let essential_from = |threshold: Option<f32>| {
        (1..below.len())
            .take_while(|&i| !reaches(below[i], threshold))
            .count()
    };
    let mut threshold = out.best.threshold();
    let mut essential = essential_from(threshold);
    let mut sum = Sum::new(terms.len());
    let mut doc = next_doc(&cursors[essential..]);
    while doc != TERMINATED {
        let chunk = chunk_of(segment, ords, doc, out);
        let live_and_allowed = chunk != DEAD && allow.allows(chunk);
        if chunk != DEAD && !live_and_allowed {
            out.filtered_out += 1;
        }
        let dl = match live_and_allowed {
            true => segment.lengths.first(doc).unwrap_or(0),
            false => 0,
        };
        sum.clear();
        let mut next = TERMINATED;
        for cursor in &mut cursors[essential..] {
            if cursor.postings.doc() == doc {
                if live_and_allowed {
                    sum.add(cursor, bm25, dl);
                    out.scored += 1;
                }
                cursor.postings.advance();
            }
            next = next.min(cursor.postings.doc());
        }
        if live_and_allowed {
            out.matched += 1;
            let mut reached = true;
            for i in (0..essential).rev() {
                if !reaches(sum.partial + below[i + 1], threshold) {
                    reached = false;
                    break;
                }
                let cursor = &mut cursors[i];
                if cursor.postings.doc() < doc {
                    cursor.postings.seek(doc);
                }
                if cursor.postings.doc() == doc {
                    sum.add(cursor, bm25, dl);
                    out.scored += 1;
                }
            }
            if reached {
                out.best.push(Candidate {
                    score: sum.total(),
                    chunk,
                });
                let raised = out.best.threshold();
                if raised != threshold {
                    threshold = raised;
                    let now = essential_from(threshold);
                    // Every essential cursor is past `doc`: the walk goes on
                    // from the lowest of those still essential.
                    if now != essential {
                        essential = now;
                        next = next_doc(&cursors[essential..]);
                    }
                }
            }
        }
        doc = next;
    }
    Ok(())
}

/// One candidate's score as its terms are added: each term's
/// contribution, and their running sum for the bound checks.
struct Sum {
    /// By the term's position in the query's term order.
    contributions: Vec<f32>,
    /// Positions added so far.
    present: Vec<usize>,
    /// Their sum, for comparing with bounds (not the exact score).
    partial: f64,
}

impl Sum {
    fn new(terms: usize) -> Self {
        Self {
            contributions: vec![0.0; terms],
            present: Vec::with_capacity(terms),
            partial: 0.0,
        }
    }

    fn clear(&mut self) {
        self.present.clear();
        self.partial = 0.0;
    }

    /// Adds what `cursor`'s term contributes at its current document, of
    /// `dl` tokens.
    fn add(&mut self, cursor: &Cursor, bm25: Bm25, dl: u64) {
        let score = bm25.term(cursor.weight, cursor.postings.term_freq(), dl);
        self.contributions[cursor.position] = score;
        self.present.push(cursor.position);
        self.partial += f64::from(score);
    }

    /// The score, added up in the query's term order as the exhaustive
    /// scorer does, so both give the same `f32`.
    fn total(&mut self) -> f32 {
        self.present.sort_unstable();
        self.present
            .iter()
            .fold(0.0f32, |total, &p| total + self.contributions[p])
    }
}

/// The lowest current document of `cursors` ([`TERMINATED`] when all are
/// done).
fn next_doc(cursors: &[Cursor]) -> u32 {
    cursors
        .iter()
        .map(|c| c.postings.doc())
        .min()
        .unwrap_or(TERMINATED)
}
