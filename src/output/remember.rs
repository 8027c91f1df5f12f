//! What `memidx remember` (and the MCP `remember` tool) reports.

use serde::Serialize;

/// A note written and indexed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RememberReport {
    /// The new file, relative to the indexed folder.
    pub path: String,
    /// Its chunks' ids, in file order.
    pub chunk_ids: Vec<String>,
    /// Its document date (the time of writing, RFC 3339 UTC).
    pub date: String,
    /// The generation now live.
    pub generation: u64,
    /// Chunks embedded by the run (the note's, when nothing else changed).
    pub embedded: usize,
    /// Wall-clock time of writing and indexing, milliseconds.
    pub elapsed_ms: f64,
}
