//! Reading one walked file safely: bounded, never blocking, never outside the
//! root, and (for indexing) only as UTF-8 text; plus the metadata every file
//! has built in (`path`, `dir`, `title`).
//!
//! Between the walk and the read a file can be replaced. A FIFO put in its
//! place would block a plain `open` forever (while the run holds the index
//! lock), and a symlink would make a plain `open` read whatever it points to,
//! inside the root or not. So on Unix the file is opened with `O_NOFOLLOW`
//! (a symlink in the last component fails) and `O_NONBLOCK` (a FIFO or device
//! opens at once instead of waiting), and the opened descriptor must be a
//! regular file and the very file the walk saw (same device and inode), which
//! also catches a folder on the path swapped for a link. The flags come from
//! the `libc` crate. Only then is it read, and never more than the size bound.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use super::Metadata;
use super::walk::SourceFile;

/// Reads `file` as walked under `root`, refusing more than `limit` bytes;
/// the error is the reason to give in a skip warning (lowercase, no path).
pub fn read_walked(root: &Path, file: &SourceFile, limit: u64) -> Result<Vec<u8>, String> {
    let opened = open_walked(root, file)?;
    let mut bytes = Vec::new();
    opened
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {}", lowercase(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(format!("grew over the {limit}-byte limit while being read"));
    }
    Ok(bytes)
}

/// Reads `file` as walked ([`read_walked`]) and checks that it is text:
/// no NUL byte, valid UTF-8. The error is the reason to give in a skip
/// warning.
pub fn read_markdown(root: &Path, file: &SourceFile, limit: u64) -> Result<String, String> {
    let bytes = read_walked(root, file, limit)?;
    if bytes.contains(&0) {
        return Err("looks binary (contains NUL bytes)".into());
    }
    String::from_utf8(bytes).map_err(|err| {
        format!(
            "not valid UTF-8 (at byte {})",
            err.utf8_error().valid_up_to()
        )
    })
}

/// Adds `path`, `dir` and `title` (front matter `title`, else the first
/// level-1 heading, else the file stem) to the metadata of the file at
/// `rel_path`. Built-in keys win over front matter.
pub fn add_builtin_metadata(metadata: &mut Metadata, rel_path: &str, heading_title: Option<&str>) {
    let name = rel_path.rsplit_once('/').map_or(rel_path, |(_, name)| name);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    if metadata.get("title").is_none_or(|t| t.is_empty()) {
        let title = heading_title.unwrap_or(stem).to_string();
        metadata.insert("title".into(), vec![title]);
    }
    add_path_metadata(metadata, rel_path);
}

/// The built-in key holding a file's path.
pub const PATH_KEY: &str = "path";

/// The built-in key holding a file's folder.
pub const DIR_KEY: &str = "dir";

/// The built-in keys a file's path alone gives: an index need not store
/// them, since [`add_path_metadata`] puts them back from the path.
pub const PATH_KEYS: [&str; 2] = [PATH_KEY, DIR_KEY];

/// Sets the [`PATH_KEYS`] of the file at `rel_path`: `path` is the path,
/// `dir` its folder (`.` at the root).
pub fn add_path_metadata(metadata: &mut Metadata, rel_path: &str) {
    let dir = rel_path.rsplit_once('/').map_or(".", |(dir, _)| dir);
    metadata.insert(PATH_KEY.into(), vec![rel_path.to_string()]);
    metadata.insert(DIR_KEY.into(), vec![dir.to_string()]);
}

/// Opens `file` (under `root`) without following a final symlink or
/// blocking, and checks the descriptor is the regular file the walk found.
fn open_walked(root: &Path, file: &SourceFile) -> Result<File, String> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let opened = options.open(file.abs_path(root)).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return "became a symbolic link after the walk; not followed".to_string();
        }
        format!("cannot be read: {}", lowercase(&e))
    })?;
    let meta = opened
        .metadata()
        .map_err(|e| format!("cannot be read: {}", lowercase(&e)))?;
    if !meta.is_file() {
        return Err("is no longer a regular file (replaced after the walk); not read".into());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (meta.dev(), meta.ino()) != file.identity {
            return Err("was replaced by another file after the walk; not read".into());
        }
    }
    Ok(opened)
}

fn lowercase(err: &std::io::Error) -> String {
    err.to_string().to_lowercase()
}

#[cfg(test)]
mod metadata_tests {
    use super::*;

    #[test]
    fn builtin_metadata_prefers_front_matter_title() {
        let mut m = Metadata::new();
        add_builtin_metadata(&mut m, "runbooks/db/pool.md", Some("Pool"));
        assert_eq!(m["title"], ["Pool"]);
        assert_eq!(m["dir"], ["runbooks/db"]);
        assert_eq!(m["path"], ["runbooks/db/pool.md"]);
        let mut m = Metadata::from([("title".to_string(), vec!["Given".to_string()])]);
        add_builtin_metadata(&mut m, "top.md", None);
        assert_eq!(m["title"], ["Given"]);
        assert_eq!(m["dir"], ["."]);
        let mut m = Metadata::new();
        add_builtin_metadata(&mut m, "notes.markdown", None);
        assert_eq!(m["title"], ["notes"]);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::corpus::walk::{WalkOptions, walk};
    use std::fs;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Walks `root`, lets `swap` replace its one file, then reads it, giving
    /// up after five seconds (a blocking open would otherwise hang the test).
    fn read_after_swap(root: &Path, swap: impl FnOnce(&Path)) -> Result<Vec<u8>, String> {
        let walked = walk(root, &WalkOptions::default()).unwrap();
        assert_eq!(walked.files.len(), 1);
        let file = walked.files.into_iter().next().unwrap();
        swap(&file.abs_path(root));
        let (tx, rx) = mpsc::channel();
        let root = root.to_path_buf();
        std::thread::spawn(move || tx.send(read_walked(&root, &file, 1 << 20)));
        rx.recv_timeout(Duration::from_secs(5))
            .expect("reading a swapped file must not block")
    }

    #[test]
    fn an_unchanged_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "# A\n").unwrap();
        assert_eq!(read_after_swap(dir.path(), |_| {}).unwrap(), b"# A\n");
    }

    #[test]
    fn a_fifo_put_in_place_of_a_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "# A\n").unwrap();
        let err = read_after_swap(dir.path(), |path| {
            fs::remove_file(path).unwrap();
            let made = std::process::Command::new("mkfifo")
                .arg(path)
                .status()
                .unwrap();
            assert!(made.success());
        })
        .unwrap_err();
        assert_eq!(
            err,
            "is no longer a regular file (replaced after the walk); not read"
        );
    }

    #[test]
    fn a_symlink_put_in_place_of_a_file_is_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.md");
        fs::write(&secret, "# Secret\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "# A\n").unwrap();
        let err = read_after_swap(dir.path(), |path| {
            fs::remove_file(path).unwrap();
            std::os::unix::fs::symlink(&secret, path).unwrap();
        })
        .unwrap_err();
        assert_eq!(err, "became a symbolic link after the walk; not followed");
    }

    #[test]
    fn a_folder_swapped_for_a_link_outside_is_caught_by_identity() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("a.md"), "# Secret\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/a.md"), "# A\n").unwrap();
        let err = read_after_swap(dir.path(), |path| {
            let sub = path.parent().unwrap();
            fs::remove_dir_all(sub).unwrap();
            std::os::unix::fs::symlink(outside.path(), sub).unwrap();
        })
        .unwrap_err();
        assert_eq!(err, "was replaced by another file after the walk; not read");
    }

    #[test]
    fn a_file_that_grew_past_the_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "# A\n").unwrap();
        let walked = walk(dir.path(), &WalkOptions::default()).unwrap();
        let err = read_walked(dir.path(), &walked.files[0], 2).unwrap_err();
        assert_eq!(err, "grew over the 2-byte limit while being read");
    }
}
