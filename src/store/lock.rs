//! The writer lock: one `memidx index` at a time per index folder.
//!
//! Uses the standard library's advisory `File::try_lock` (stable since Rust
//! 1.89), which the OS releases when the process dies, so a killed run never
//! leaves a stale lock behind. The lock file is opened without following a
//! symlink (a `LOCK` link must not make memidx create a file elsewhere), and
//! a lock is only good while `LOCK` is still the file locked: one deleted or
//! replaced under a run would let a second writer in, so the holder checks
//! [`IndexLock::still_held`] before it commits.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::error::IndexError;

/// How often taking the lock is retried when `LOCK` was replaced between
/// opening and locking it.
const ATTEMPTS: usize = 3;

/// Held for as long as the indexing run owns the index folder.
#[derive(Debug)]
pub struct IndexLock {
    file: File,
    path: PathBuf,
}

impl IndexLock {
    /// Takes the lock at `path`, failing at once with a clear message when
    /// another process holds it.
    pub fn acquire(path: &Path) -> Result<Self> {
        for _ in 0..ATTEMPTS {
            let file = open_no_follow(path)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => bail!(IndexError::Locked {
                    lock: path.to_path_buf()
                }),
                Err(TryLockError::Error(err)) => {
                    return Err(err).with_context(|| format!("cannot lock {}", path.display()));
                }
            }
            let lock = Self {
                file,
                path: path.to_path_buf(),
            };
            if lock.is_current() {
                return Ok(lock);
            }
        }
        bail!(
            "cannot lock {}: it keeps being replaced; is another program removing it?",
            path.display()
        )
    }

    /// Fails when `LOCK` is no longer the file this lock holds (it was
    /// deleted or replaced during the run, so another writer may be in).
    pub fn still_held(&self) -> Result<()> {
        if self.is_current() {
            return Ok(());
        }
        bail!(
            "the lock file {} was removed or replaced during this run, so another 'memidx index' may be writing; nothing was committed: run it again",
            self.path.display()
        )
    }

    /// True when the path still names the locked file.
    fn is_current(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let (Ok(held), Ok(named)) =
                (self.file.metadata(), std::fs::symlink_metadata(&self.path))
            else {
                return false;
            };
            (held.dev(), held.ino()) == (named.dev(), named.ino())
        }
        #[cfg(not(unix))]
        {
            self.path.exists()
        }
    }
}

/// Opens (creating) the lock file, refusing to follow a symlink.
fn open_no_follow(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path).with_context(|| {
        let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if link {
            format!(
                "{} is a symbolic link; memidx does not follow it: remove it",
                path.display()
            )
        } else {
            format!("cannot open lock file {}", path.display())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_until_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = IndexLock::acquire(&path).unwrap();
        let err = IndexLock::acquire(&path).unwrap_err();
        assert!(matches!(
            IndexError::find(&err),
            Some(IndexError::Locked { .. })
        ));
        assert!(
            err.to_string()
                .contains("another 'memidx index' is running")
        );
        drop(first);
        IndexLock::acquire(&path).unwrap();
    }

    #[test]
    fn a_lock_whose_file_was_removed_is_no_longer_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = IndexLock::acquire(&path).unwrap();
        first.still_held().unwrap();
        std::fs::remove_file(&path).unwrap();
        let second = IndexLock::acquire(&path).unwrap();
        let err = first.still_held().unwrap_err().to_string();
        assert!(
            err.contains("was removed or replaced during this run"),
            "{err}"
        );
        second.still_held().unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        let path = dir.path().join("LOCK");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = format!("{:#}", IndexLock::acquire(&path).unwrap_err());
        assert!(err.contains("is a symbolic link"), "{err}");
        assert!(!target.exists());
    }
}
