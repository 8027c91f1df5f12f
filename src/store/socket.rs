//! The index folder's socket, `serve.sock`: where a server that serves the
//! index (`memidx mcp`) answers the CLI's reading commands (the binary's
//! `cmd/resident.rs` speaks over it).
//!
//! The socket is owner-only, bound under a name of the server's and moved
//! into place, so no other user can connect in between; a command uses it
//! only when it is a socket this user owns and nobody else may open. A
//! socket whose server is gone (killed) is stale: a command's connection is
//! refused and it answers itself; the next server removes it. A file of
//! that name that is no socket is never touched.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The socket's name in the index folder.
pub const SOCKET: &str = "serve.sock";

/// The socket of the index folder `index_dir`, when one is there that this
/// user owns and nobody else may open.
pub fn usable(index_dir: &Path) -> Option<PathBuf> {
    let path = index_dir.join(SOCKET);
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let meta = std::fs::symlink_metadata(&path).ok()?;
    (meta.file_type().is_socket() && meta.uid() == me && meta.mode() & 0o077 == 0).then_some(path)
}

/// A socket listened on in an index folder; [`remove`] takes it away.
pub struct Listening {
    /// The listener.
    pub listener: UnixListener,
    /// Where it is.
    pub path: PathBuf,
}

/// Removes the socket at `path` (its server stops answering there).
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Listens on the socket of the index folder `index_dir`: `Ok(None)` when
/// another server answers there already, or when what holds the name is no
/// socket (left alone). A stale socket is replaced.
pub fn listen(index_dir: &Path) -> Result<Option<Listening>> {
    let path = index_dir.join(SOCKET);
    if let Ok(meta) = std::fs::symlink_metadata(&path) {
        if !meta.file_type().is_socket() || UnixStream::connect(&path).is_ok() {
            return Ok(None);
        }
        std::fs::remove_file(&path)
            .with_context(|| format!("cannot remove the stale {}", path.display()))?;
    }
    let bound = index_dir.join(format!("{SOCKET}.{}", std::process::id()));
    let _ = std::fs::remove_file(&bound);
    let listener = UnixListener::bind(&bound)
        .with_context(|| format!("cannot listen on {}", bound.display()))?;
    std::fs::set_permissions(&bound, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&bound, &path)?;
    Ok(Some(Listening { listener, path }))
}

/// Which file a process runs: its device, inode, length and modification
/// time. A server answers only a command that runs the same file: after an
/// upgrade its output may differ.
#[derive(Serialize, Deserialize, PartialEq, Eq, Clone, Copy, Debug)]
pub struct Binary(u64, u64, u64, i64);

impl Binary {
    /// The file this process runs, when it can be told (not once it was
    /// replaced or removed: a rebuilt binary is another file).
    pub fn this() -> Option<Self> {
        let meta = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
        Some(Self(meta.dev(), meta.ino(), meta.len(), meta.mtime()))
    }
}
