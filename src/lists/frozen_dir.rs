//! A tantivy `Directory` over a generation's `sparse/` folder that only reads.
//!
//! tantivy's own `MmapDirectory` takes a lock file (`.tantivy-meta.lock`)
//! each time a reader loads its segments, so a search of an index the user
//! may only read would fail. A generation folder never changes once the
//! manifest names it, and no writer is ever opened on it, so that lock
//! guards nothing here: this directory delegates every read to
//! `MmapDirectory`, hands out locks that touch no file, and refuses writes.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// Reads a frozen tantivy folder; never writes, never locks.
#[derive(Clone, Debug)]
pub(super) struct FrozenDirectory {
    inner: MmapDirectory,
}

impl FrozenDirectory {
    /// Opens `dir` for reading.
    pub(super) fn open(dir: &Path) -> Result<Self, OpenDirectoryError> {
        Ok(Self {
            inner: MmapDirectory::open(dir)?,
        })
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
        self.inner.get_file_handle(path)
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
