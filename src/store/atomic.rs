//! Durable file writes: write to a temporary file in the same folder, fsync,
//! rename over the target, fsync the folder. Uses `tempfile` for the
//! uniquely named temporary and its `persist` (an atomic rename on POSIX).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// Name prefix of the temporary files [`write_atomic`] renames into place;
/// one left by a killed run is removed by the next.
pub const TEMP_PREFIX: &str = ".tmp-";

/// Atomically replaces `path` with `bytes`: readers see the old content or
/// the new one, never a partial file, even if the process dies mid-way.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    // Like any file the user creates: 0666 less the umask (tempfile's own
    // default, 0600, would hide a shared index from its other readers).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", tmp.path().display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    sync_dir(dir).with_context(|| format!("cannot sync folder {}", dir.display()))
}

/// Writes `bytes` to a new file at `path` and fsyncs it (used inside a
/// generation folder, which becomes visible only through the manifest).
pub fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file =
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Flushes the entries of `dir` and of every folder below it, deepest
/// first (a new generation's `sparse/` gains names after its own writes).
pub fn sync_tree(dir: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        if entry.file_type().is_dir() {
            sync_dir(entry.path())
                .with_context(|| format!("cannot sync folder {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Flushes a folder's entries (new names, renames) to disk. A no-op where
/// folders cannot be opened as files.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("meta.json");
        write_atomic(&target, b"one").unwrap();
        write_atomic(&target, b"two").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["meta.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn an_atomic_write_follows_the_umask_like_any_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        File::create(&plain).unwrap();
        let target = dir.path().join("meta.json");
        write_atomic(&target, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&target), mode(&plain));
    }
}
