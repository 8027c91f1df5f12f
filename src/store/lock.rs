//! The writer lock: one `memidx index` at a time per index folder.
//!
//! Uses the standard library's advisory `File::try_lock` (stable since Rust
//! 1.89), which the OS releases when the process dies, so a killed run never
//! leaves a stale lock behind.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Held for as long as the indexing run owns the index folder.
#[derive(Debug)]
pub struct IndexLock {
    _file: File,
}

impl IndexLock {
    /// Takes the lock at `path`, failing at once with a clear message when
    /// another process holds it.
    pub fn acquire(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => bail!(
                "another 'memidx index' is running on this index (lock held on {}); wait for it to finish",
                path.display()
            ),
            Err(TryLockError::Error(err)) => {
                Err(err).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_until_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = IndexLock::acquire(&path).unwrap();
        let err = IndexLock::acquire(&path).unwrap_err().to_string();
        assert!(err.contains("another 'memidx index' is running"), "{err}");
        drop(first);
        IndexLock::acquire(&path).unwrap();
    }
}
