//! A tantivy `Directory` over a generation's `sparse/` folder that only reads.
//!
//! tantivy's own `MmapDirectory` takes a lock file (`.tantivy-meta.lock`)
//! each time a reader loads its segments, so a search of an index the user
//! may only read would fail. A generation folder never changes once the
//! manifest names it, and no writer is ever opened on it, so that lock
//! guards nothing here: this directory delegates every read to
//! `MmapDirectory`, hands out locks that touch no file, and refuses writes.
//!
//! A segment file with a block-checksum sidecar (see
//! [`crate::store::checked`]) is handed out checked: each range tantivy
//! reads has its blocks checked the first time, and a damaged one is an
//! I/O error, which the sparse list names as damage.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::HasLen;
use tantivy::directory::OwnedBytes;

use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

use crate::store::checked::BlockChecks;
use crate::store::checks::Checksums;

/// Reads a frozen tantivy folder; never writes, never locks.
#[derive(Clone, Debug)]
pub(super) struct FrozenDirectory {
    inner: MmapDirectory,
    dir: PathBuf,
    /// The manifest's checks of the folder's files, by name in it.
    checksums: Arc<Checksums>,
}

impl FrozenDirectory {
    /// Opens `dir` for reading, its files' sidecars found in `checksums`
    /// (the manifest's, by names relative to `dir`).
    pub(super) fn open(dir: &Path, checksums: Checksums) -> Result<Self, OpenDirectoryError> {
        Ok(Self {
            inner: MmapDirectory::open(dir)?,
            dir: dir.to_path_buf(),
            checksums: Arc::new(checksums),
        })
    }
}

/// A file whose reads are checked block by block against its sidecar.
#[derive(Debug)]
struct CheckedHandle {
    inner: Arc<dyn FileHandle>,
    /// The whole file, mapped (what the checks read).
    whole: OwnedBytes,
    checks: BlockChecks,
}

impl HasLen for CheckedHandle {
    fn len(&self) -> usize {
        self.inner.len()
    }
}

impl FileHandle for CheckedHandle {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        self.checks
            .check(self.whole.as_slice(), range.clone())
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, format!("{err:#}")))?;
        self.inner.read_bytes(range)
    }
}

/// The error of every write: the folder is frozen.
fn read_only() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "a generation's sparse folder is read-only",
    )
}

impl Directory for FrozenDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let inner = self.inner.get_file_handle(path)?;
        let failed = |err: anyhow::Error| OpenReadError::IoError {
            io_error: Arc::new(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{err:#}"),
            )),
            filepath: path.to_path_buf(),
        };
        let name = path.to_string_lossy();
        let Some(checks) =
            BlockChecks::load(&self.dir, &name, &self.checksums, inner.len()).map_err(failed)?
        else {
            return Ok(inner);
        };
        let whole = inner
            .read_bytes(0..inner.len())
            .map_err(|err| OpenReadError::IoError {
                io_error: Arc::new(err),
                filepath: path.to_path_buf(),
            })?;
        Ok(Arc::new(CheckedHandle {
            inner,
            whole,
            checks,
        }))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, _callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        Ok(WatchHandle::empty())
    }
}
