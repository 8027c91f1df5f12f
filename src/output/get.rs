//! What `memidx get` and the MCP `get` tool print: a chunk from the index,
//! or lines of an indexed file (`schemas/get-response.schema.json`).

use serde::Serialize;

use super::cut_at_word;
use crate::corpus::Metadata;
use crate::index::get::Fetched;

/// The get response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GetResponse {
    /// `chunk` (by id, text from the index) or `lines` (of a file, from disk).
    pub kind: &'static str,
    /// The chunk id, `path#n`, or null for lines of a file.
    pub chunk_id: Option<String>,
    /// The file, relative to the indexed root.
    pub source: String,
    /// The chunk's heading path, `A > B > C`, or null for lines of a file.
    pub heading: Option<String>,
    /// First and last line shown, 1-based, inclusive.
    pub lines: [u32; 2],
    /// Number of lines in the file (for lines of a file), else null.
    pub total_lines: Option<u32>,
    /// The text (cut at a word boundary when over the budget).
    pub text: String,
    /// Characters of the whole text, before any cut.
    pub chars: usize,
    /// True when `text` was cut to the budget.
    pub truncated: bool,
    /// True when the chunk's file changed on disk since indexing (the text
    /// is the indexed one).
    pub changed: bool,
    /// The file's metadata (front matter + `path`, `dir`, `title`).
    pub metadata: Metadata,
}

impl GetResponse {
    /// Builds the response for `fetched`, its text cut to `max_chars`
    /// characters (at a word boundary) when given.
    pub fn build(fetched: Fetched, max_chars: Option<usize>) -> Self {
        let (kind, chunk_id, heading, lines, total_lines, text, changed, file) = match fetched {
            Fetched::Chunk { view, changed } => (
                "chunk",
                Some(view.id()),
                Some(view.heading()),
                [view.record.lines.0, view.record.lines.1],
                None,
                view.text,
                changed,
                view.file,
            ),
            Fetched::Lines {
                file,
                lines,
                total_lines,
                text,
            } => (
                "lines",
                None,
                None,
                [lines.0, lines.1],
                Some(total_lines),
                text,
                false,
                file,
            ),
        };
        let chars = text.chars().count();
        let (text, truncated) = match max_chars {
            Some(max) if chars > max => (cut_at_word(&text, max).to_string(), true),
            _ => (text, false),
        };
        Self {
            kind,
            chunk_id,
            source: file.path,
            heading,
            lines,
            total_lines,
            text,
            chars,
            truncated,
            changed,
            metadata: file.metadata,
        }
    }
}
