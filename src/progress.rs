//! How a long engine task says how far it got, without printing.
//!
//! Indexing and evaluation report their stages through this trait; the
//! binary hands them an implementation that draws bars on a terminal (or
//! [`Silent`]), so the engine never writes to the screen itself.

/// Receives the progress of one task, stage by stage. Calls may come from
/// several threads at once.
pub trait Progress: Sync {
    /// A stage of `total` items (`unit`: "files", "queries") begins; it
    /// replaces the stage before it.
    fn stage(&self, name: &str, total: usize, unit: &str);
    /// `items` more items of the current stage are done.
    fn advance(&self, items: usize);
    /// A note on the current stage, e.g. a second count.
    fn note(&self, note: &str);
    /// The current stage is over.
    fn finish(&self);
}

/// Progress that goes nowhere (`--quiet`, tests, library callers).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn stage(&self, _name: &str, _total: usize, _unit: &str) {}
    fn advance(&self, _items: usize) {}
    fn note(&self, _note: &str) {}
    fn finish(&self) {}
}
