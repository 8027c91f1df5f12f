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

    /// The chunks `base..base + len` as a set of their own, numbered from 0:
    /// what one of several indexes searched as one allows of its chunks.
    pub fn part(&self, base: ChunkOrd, len: usize) -> Self {
        match self {
            Self::All => Self::All,
            Self::Only(flags) if base == 0 && flags.len() == len => self.clone(),
            Self::Only(flags) => {
                let start = (base as usize).min(flags.len());
                let end = (start + len).min(flags.len());
                let mut part = flags[start..end].to_vec();
                part.resize(len, false);
                Self::Only(part.into())
            }
        }
    }

    /// The sets of several indexes' chunks, in order, as one set over the
    /// chunks of all of them (each index's `len` chunks following the
    /// last's): [`AllowSet::All`] when every part allows all.
    pub fn concat(parts: &[(Self, usize)]) -> Self {
        if parts.iter().all(|(part, _)| *part == Self::All) {
            return Self::All;
        }
        let mut flags = Vec::with_capacity(parts.iter().map(|(_, len)| len).sum());
        for (part, len) in parts {
            flags.extend((0..*len as ChunkOrd).map(|chunk| part.allows(chunk)));
        }
        Self::Only(flags.into())
    }

    /// This set narrowed to the chunks `live` marks (one flag per chunk):
    /// what a search of an index whose later parts buried some chunks
    /// allows.
    pub fn and(&self, live: &[bool]) -> Self {
        Self::Only(
            (0..live.len() as ChunkOrd)
                .map(|chunk| live[chunk as usize] && self.allows(chunk))
                .collect(),
        )
    }

    /// How many of the chunks `0..total` pass.
    pub fn count(&self, total: usize) -> usize {
        match self {
            Self::All => total,
            Self::Only(flags) => flags.iter().take(total).filter(|f| **f).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_cut_into_parts_and_joined_again_allow_the_same_chunks() {
        let flags = [true, false, true, true, false];
        let whole = AllowSet::Only(flags.as_slice().into());
        let (first, second) = (whole.part(0, 2), whole.part(2, 3));
        assert_eq!(first, AllowSet::Only([true, false].as_slice().into()));
        assert!(second.allows(0) && second.allows(1) && !second.allows(2));
        // A part reaching past the flags allows nothing there.
        assert!(!whole.part(4, 3).allows(1));
        assert_eq!(AllowSet::concat(&[(first, 2), (second, 3)]), whole);
        let all = AllowSet::concat(&[(AllowSet::All, 2), (AllowSet::All, 3)]);
        assert_eq!(all, AllowSet::All);
        assert_eq!(AllowSet::All.part(7, 2), AllowSet::All);
        let mixed = AllowSet::concat(&[(AllowSet::All, 1), (AllowSet::part(&whole, 1, 1), 1)]);
        assert_eq!(mixed, AllowSet::Only([true, false].as_slice().into()));
    }
}
