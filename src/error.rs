//! The engine's typed errors: the failures a caller may want to tell apart
//! (no index yet, a format it cannot read, damage, a lock held, no graph).
//!
//! They travel inside `anyhow::Error` like every other error, so a message
//! reads the same whatever carried it; a caller that must decide
//! (`Index::open_with` retrying a race, a test) looks for one in the chain
//! with [`IndexError::find`]. `thiserror` derives them.

use std::path::PathBuf;

/// A failure of the index as a whole.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The folder holds no complete index.
    #[error("{} holds no complete index (no meta.json); run 'memidx index DIR' first", .dir.display())]
    NoIndex {
        /// The index folder looked in.
        dir: PathBuf,
    },
    /// The index has a format this build cannot read.
    #[error(
        "index format version {found} in {} is not supported (this memidx reads {oldest}..={newest}); rebuild it with 'memidx index'",
        .path.display()
    )]
    Unsupported {
        /// The manifest.
        path: PathBuf,
        /// The version it records.
        found: u32,
        /// The oldest version this build reads.
        oldest: u32,
        /// The newest.
        newest: u32,
    },
    /// A file of the index is missing, damaged or not what it should be.
    #[error("index is damaged: {} {what}; run 'memidx index --full' to rebuild it", .path.display())]
    Damaged {
        /// The file (or folder).
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// Another indexing run holds the index.
    #[error(
        "another 'memidx index' is running on this index (lock held on {}); wait for it to finish (a watcher, 'memidx index --watch' or 'memidx mcp --watch', holds it until stopped)",
        .lock.display()
    )]
    Locked {
        /// The lock file.
        lock: PathBuf,
    },
    /// The graph list was asked of an index built without it.
    #[error("this index has no graph; build one with 'memidx index --graph {root}'")]
    NoGraph {
        /// The indexed folder.
        root: String,
    },
}

impl IndexError {
    /// The first `IndexError` in `err`'s chain of causes and contexts.
    ///
    /// One given as context (`.with_context(|| damaged(…))`) is not a link
    /// of `chain()` of its own type (the link is anyhow's wrapper), so
    /// anyhow's own downcast, which sees through contexts, is asked first.
    pub fn find(err: &anyhow::Error) -> Option<&Self> {
        err.downcast_ref::<Self>()
            .or_else(|| err.chain().find_map(|cause| cause.downcast_ref::<Self>()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn an_index_error_is_found_as_the_error_as_a_context_and_as_a_cause() {
        let damaged = || IndexError::Damaged {
            path: PathBuf::from("/idx/gen-2/sparse"),
            what: "cannot be opened".into(),
        };
        let plain = anyhow::Error::new(damaged());
        let context = Err::<(), _>(std::io::Error::other("no meta.json"))
            .with_context(damaged)
            .context("opening the sparse list")
            .unwrap_err();
        let cause = anyhow::Error::new(damaged()).context("searching");
        for err in [plain, context, cause] {
            assert!(
                matches!(IndexError::find(&err), Some(IndexError::Damaged { .. })),
                "{err:#}"
            );
        }
        assert!(IndexError::find(&anyhow::anyhow!("something else")).is_none());
    }
}
