//! Printing, separated from searching (as ripgrep separates its searcher
//! from its printers): commands build the message types here, and the
//! [`human`] or [`json`] printer renders them. Nothing else writes to stdout.

pub mod compact;
pub mod explain;
pub mod get;
pub mod graph;
pub mod here;
pub mod human;
pub mod json;
pub mod progress;
#[cfg(feature = "milvus")]
pub mod push;
pub mod remember;

use std::borrow::Cow;
use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::corpus::Metadata;
use crate::corpus::date::DocDate;
use crate::lists::ListKind;
use crate::retriever::{Confidence, Decoded, SearchOutcome};

/// `text` with every control character (Unicode category Cc: the C0
/// controls, DEL and the C1 controls U+0080–U+009F) written as its Rust
/// escape — `\n`, `\t`, `\r`, `\u{1b}`, `\u{9b}` — and everything else
/// kept; borrowed when there is nothing to escape.
///
/// Every human printer passes indexed content (headings, text, metadata,
/// entity names) and paths through it, whatever the colour setting, so a
/// file can neither send escape sequences to the terminal (clear the
/// screen, set the title, make links, ring the bell, move the cursor) nor
/// forge a line of output with a newline in its name.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// An error message as exactly one line: its control characters (newlines
/// in a request's field names, say) escaped by [`escape_controls`].
pub fn one_line(message: &str) -> String {
    escape_controls(message).into_owned()
}

/// The first `max_chars` characters of `text`, cut back to the end of its
/// last whole word (trailing spaces dropped); cut at `max_chars` when the
/// first word alone is longer.
pub fn cut_at_word(text: &str, max_chars: usize) -> &str {
    let Some((end, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    let head = &text[..end];
    let at_boundary = text[end..].starts_with(char::is_whitespace);
    let kept = if at_boundary {
        head
    } else {
        match head.rfind(char::is_whitespace) {
            Some(space) => &head[..space],
            None => head,
        }
    };
    match kept.trim_end() {
        "" => head,
        trimmed => trimmed,
    }
}

/// The line under a file's last shown result saying how many more of its
/// chunks matched (see `retriever::fold`), naming the setting (`option`)
/// that shows them.
pub fn folded_note(more: usize, option: &str) -> String {
    let matches = if more == 1 { "match" } else { "matches" };
    format!("[{more} more {matches} in this file; {option} 0 shows them]")
}

/// The line a printer adds when no result holds a word of the query.
pub const BY_MEANING_ALONE: &str =
    "[no result holds a word of the query: these are ranked by meaning alone]";

/// The line a printer adds when the results are the best available rather
/// than a strong match ([`SearchResponse::strong_match`]), unless
/// [`BY_MEANING_ALONE`] says more.
pub fn weak_note(response: &SearchResponse) -> Option<String> {
    if response.strong_match != Some(false) || response.by_meaning_alone {
        return None;
    }
    let best = response.results.first()?.coverage?;
    let strong = response.strong_coverage?;
    Some(format!(
        "[no result holds {:.0}% of the query's term weight (the best holds {:.0}%): these are the closest chunks, not strong matches]",
        strong * 100.0,
        best * 100.0
    ))
}

/// Why a search dropped its results, when no list matched the query with
/// confidence (see `retriever::confidence`): one clause per judged list
/// and the option (`keep_option`) that keeps them; `None` when nothing was
/// dropped.
pub fn nothing_matched_note(outcome: &SearchOutcome, keep_option: &str) -> Option<String> {
    if !outcome.dropped {
        return None;
    }
    let why: Vec<String> = outcome
        .lists
        .iter()
        .filter_map(|run| {
            let list = run.ranked.kind.name();
            match &run.confidence {
                Confidence::NoHits => Some(format!("the {list} list matched no chunk")),
                Confidence::BelowFloor { best, floor } => Some(format!(
                    "no chunk is nearer the query in meaning than random letters come (the {list} list's best cosine {best:.3}; random letters reach {floor:.3} in this index)"
                )),
                Confidence::UnknownWords { share, floor } => Some(format!(
                    "the {list} list's model knows none of the query's words: it reads them in fragments, as it reads made-up words (a word's first piece carries {share:.2} of it at most; made-up words reach {floor:.2})"
                )),
                Confidence::Matched { .. } | Confidence::NearMiss { .. } | Confidence::NotJudged => {
                    None
                }
            }
        })
        .collect();
    Some(format!(
        "nothing matches the query with confidence ({}); {keep_option} shows the closest chunks anyway",
        why.join("; "),
    ))
}

/// The search response (the JSON response shape of the design, §3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResponse {
    /// The request's `query_id`, or null.
    pub query_id: Option<String>,
    /// Number of results (equals `results.len()`).
    pub total_retrieved: usize,
    /// Fused results, best first.
    pub results: Vec<SearchResult>,
    /// True when the `max_chars` budget left results out or cut one.
    pub truncated: bool,
    /// Results left out by the budget (after the last one kept).
    pub omitted: usize,
    /// What a search over several indexes left out, one sentence each (an
    /// index embedded with another model is not in the dense list, say);
    /// absent for one index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Whether the best result holds the share of the query's term weight
    /// (its `coverage`) a strong match holds ([`Self::strong_coverage`]):
    /// `false` says the results are the closest chunks, not strong matches,
    /// which `rrf_score` cannot say (it puts the best result at the top
    /// whatever it holds). Absent without results or without a coverage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strong_match: Option<bool>,
    /// The least `coverage` a result holds of this query to be a strong
    /// match ([`crate::retriever::strong_coverage`]: 0.4, less for a query
    /// of more than nine terms), so a reader can judge every result as
    /// `strong_match` judges the best. Absent without a coverage.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "share_of")]
    pub strong_coverage: Option<f32>,
    /// The sparse list ran and matched no chunk the search allows, so the
    /// results are ranked by meaning alone: printers say so, since a
    /// dense list always ranks something (not in the JSON shape).
    #[serde(skip)]
    pub by_meaning_alone: bool,
    /// Why there are no results, when no list matched the query with
    /// confidence ([`nothing_matched_note`], set by the caller, which names
    /// its own option; not in the JSON shape, whose empty results say it).
    #[serde(skip)]
    pub nothing_matched: Option<String>,
}

/// A share from 0 to 1 rounded to four decimals: what a reader compares,
/// without the digits an `f32` gains on its way to `f64`.
fn share(value: f32) -> f64 {
    (f64::from(value) * 1e4).round() / 1e4
}

/// Serializes an optional share as [`share`] rounds it.
fn share_of<S: serde::Serializer>(value: &Option<f32>, serializer: S) -> Result<S::Ok, S::Error> {
    value.map(share).serialize(serializer)
}

/// How much of the results' text a response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextBudget {
    /// At most this many characters of `text` over all results: results
    /// are kept whole, in rank order, until the next would pass it; a
    /// first result longer than it is cut at a word boundary.
    pub max_chars: Option<usize>,
    /// Leave `text` out of every result (`--no-text`).
    pub no_text: bool,
}

/// One fused result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    /// Stable chunk id, `path#n`.
    pub chunk_id: String,
    /// Fused RRF score, at full precision.
    pub rrf_score: f64,
    /// The share of the query's term weight (each term's idf × count) the
    /// chunk holds, from 0 to 1, whatever the other results hold: where
    /// `rrf_score` always puts the best result at the top, this says how
    /// much of the query it matches. Absent when no list can say (no
    /// sparse list ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    /// The chunk's markdown text (absent under `--no-text`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Source file, relative to the indexed root.
    pub source: String,
    /// Heading path, `A > B > C`.
    pub heading: String,
    /// First and last source line, 1-based, inclusive.
    pub lines: [u32; 2],
    /// The file's document date and where it came from.
    pub date: ResultDate,
    /// The file's metadata (front matter + `path`, `dir`, `title`).
    pub metadata: Metadata,
    /// Per list that ran: the chunk's rank and raw score there, or null when
    /// the list did not return it.
    pub ranks: BTreeMap<&'static str, Option<ListRank>>,
    /// How many more of this file's chunks ranked among the shown results
    /// but were folded away (at most `per_file` results of one file are
    /// shown); counted on the file's last result, 0 on the others.
    pub more_in_file: usize,
}

/// A file's document date as printed: an RFC 3339 UTC timestamp and its
/// source (`front matter`, `path` or `mtime`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResultDate {
    /// `2024-02-07T00:00:00Z`.
    pub value: String,
    /// Where the date came from.
    pub from: &'static str,
}

impl From<DocDate> for ResultDate {
    fn from(date: DocDate) -> Self {
        Self {
            value: date.rfc3339(),
            from: date.source.name(),
        }
    }
}

/// A chunk's place in one list.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ListRank {
    /// 1-based rank.
    pub rank: usize,
    /// The list's raw score.
    pub score: f32,
}

impl SearchResponse {
    /// Builds the response from a search outcome and its decoded chunks.
    pub fn build(
        query_id: Option<String>,
        outcome: &SearchOutcome,
        decoded: &Decoded,
    ) -> Result<Self> {
        let mut results = Vec::with_capacity(outcome.results.len());
        for (fused, &more_in_file) in outcome.results.iter().zip(&outcome.more_in_file) {
            let decoded_chunk = decoded.get(fused.chunk)?;
            let chunk = &decoded_chunk.view;
            let ranks = outcome
                .lists
                .iter()
                .zip(&fused.contributions)
                .map(|(run, c)| {
                    (
                        run.ranked.kind.name(),
                        c.map(|c| ListRank {
                            rank: c.rank,
                            score: c.raw_score,
                        }),
                    )
                })
                .collect();
            results.push(SearchResult {
                chunk_id: chunk.id(),
                rrf_score: fused.score,
                coverage: decoded_chunk.coverage.map(share),
                text: Some(chunk.text.clone()),
                source: chunk.file.path.clone(),
                heading: chunk.heading(),
                lines: [chunk.record.lines.0, chunk.record.lines.1],
                date: chunk.file.date().into(),
                metadata: chunk.file.metadata.clone(),
                ranks,
                more_in_file,
            });
        }
        let sparse_empty = outcome
            .lists
            .iter()
            .any(|run| run.ranked.kind == ListKind::Sparse && run.ranked.hits.is_empty());
        let strong_match = (results.first().and_then(|best| best.coverage))
            .zip(decoded.strong_coverage)
            .map(|(best, strong)| best >= share(strong));
        Ok(Self {
            query_id,
            total_retrieved: results.len(),
            strong_match,
            strong_coverage: decoded.strong_coverage,
            by_meaning_alone: sparse_empty && !results.is_empty(),
            results,
            truncated: false,
            omitted: 0,
            notices: outcome.notices.clone(),
            nothing_matched: None,
        })
    }

    /// Applies `budget`: drops every text under `no_text`, else keeps
    /// results whole in rank order while their texts fit `max_chars`, and
    /// cuts a first result that alone is longer (at a word boundary).
    pub fn within(mut self, budget: TextBudget) -> Self {
        if budget.no_text {
            for result in &mut self.results {
                result.text = None;
            }
        } else if let Some(max) = budget.max_chars {
            let mut spent = 0;
            let mut kept = 0;
            for result in &mut self.results {
                let chars = result.text.as_deref().map_or(0, |t| t.chars().count());
                if spent + chars <= max {
                    spent += chars;
                    kept += 1;
                } else if kept == 0 {
                    result.text = result
                        .text
                        .as_deref()
                        .map(|t| cut_at_word(t, max).to_string());
                    self.truncated = true;
                    kept = 1;
                    break;
                } else {
                    break;
                }
            }
            self.omitted = self.results.len() - kept;
            self.truncated |= self.omitted > 0;
            self.results.truncate(kept);
            self.total_retrieved = kept;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_the_last_word_boundary_within_the_budget() {
        assert_eq!(cut_at_word("alpha beta gamma", 100), "alpha beta gamma");
        assert_eq!(cut_at_word("alpha beta gamma", 12), "alpha beta");
        assert_eq!(cut_at_word("alpha beta gamma", 10), "alpha beta");
        assert_eq!(cut_at_word("alpha beta gamma", 11), "alpha beta");
        assert_eq!(cut_at_word("alphabetagamma", 5), "alpha");
        assert_eq!(cut_at_word("é é é", 3), "é é");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(
            escape_controls("plain é → text\\n"),
            Cow::Borrowed("plain é → text\\n")
        ));
        assert_eq!(
            escape_controls("a\u{1b}]0;t\u{7}b\u{8}c\rd\ne\tf\u{7f}g\u{9b}2Jh\u{85}i\u{0}"),
            "a\\u{1b}]0;t\\u{7}b\\u{8}c\\rd\\ne\\tf\\u{7f}g\\u{9b}2Jh\\u{85}i\\u{0}"
        );
        // Format characters and other non-Cc code points are not controls.
        assert_eq!(
            escape_controls("\u{a0}\u{200b}\u{202e}"),
            "\u{a0}\u{200b}\u{202e}"
        );
        assert_eq!(one_line("line 1\nline 2"), "line 1\\nline 2");
    }
}
