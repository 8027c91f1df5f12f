//! What `memidx remember` (and the MCP `remember` tool) reports.

use serde::Serialize;

/// A note written and indexed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RememberReport {
    /// The new file, relative to the indexed folder.
    pub path: String,
    /// Its chunks' ids, in file order (none when not `indexed`).
    pub chunk_ids: Vec<String>,
    /// Whether the live generation holds it. False when another run held
    /// the index's lock past the wait: the note is written, and the next
    /// run (or the watcher holding the lock) indexes it.
    pub indexed: bool,
    /// Its document date (the time of writing, RFC 3339 UTC).
    pub date: String,
    /// The generation now live.
    pub generation: u64,
    /// Chunks embedded by the run (the note's, when nothing else changed).
    pub embedded: usize,
    /// Wall-clock time of writing and indexing, milliseconds.
    pub elapsed_ms: f64,
}
