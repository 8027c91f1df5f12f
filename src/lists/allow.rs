//! The chunks a search may return, as every list consults them.
//!
//! Filters (metadata now, dates to come) are evaluated once per search, a
//! floor above, into one [`AllowSet`] over chunk ordinals; each list checks
//! it before a chunk can enter its window, so a filtered search never comes
//! back short and all lists agree on what the filter means.

use std::sync::Arc;

use crate::store::generation::ChunkOrd;

/// Which chunks a search may return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowSet {
    /// No filter: every chunk.
    All,
    /// One flag per chunk ordinal (shared, so lists can hold it cheaply).
    Only(Arc<[bool]>),
}

impl AllowSet {
    /// True when the chunk passes the filters.
    pub fn allows(&self, chunk: ChunkOrd) -> bool {
        match self {
            Self::All => true,
            Self::Only(flags) => flags.get(chunk as usize).copied().unwrap_or(false),
        }
    }

    /// How many of the chunks `0..total` pass.
    pub fn count(&self, total: usize) -> usize {
        match self {
            Self::All => total,
            Self::Only(flags) => flags.iter().take(total).filter(|f| **f).count(),
        }
    }
}
