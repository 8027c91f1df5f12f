//! Reading one walked file safely: bounded, never blocking, never outside the root.
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

use super::walk::SourceFile;

/// Reads `file` as walked, refusing more than `limit` bytes; the error is the
/// reason to give in a skip warning (lowercase, no path).
pub fn read_walked(file: &SourceFile, limit: u64) -> Result<Vec<u8>, String> {
    let opened = open_walked(file)?;
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

/// Opens `file` without following a final symlink or blocking, and checks
/// the descriptor is the regular file the walk found.
fn open_walked(file: &SourceFile) -> Result<File, String> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let opened = options.open(&file.abs_path).map_err(|e| {
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::corpus::walk::{WalkOptions, walk};
    use std::fs;
    use std::path::Path;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Walks `root`, lets `swap` replace its one file, then reads it, giving
    /// up after five seconds (a blocking open would otherwise hang the test).
    fn read_after_swap(root: &Path, swap: impl FnOnce(&Path)) -> Result<Vec<u8>, String> {
        let walked = walk(root, &WalkOptions::default()).unwrap();
        assert_eq!(walked.files.len(), 1);
        let file = walked.files.into_iter().next().unwrap();
        swap(&file.abs_path);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(read_walked(&file, 1 << 20)));
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
        let err = read_walked(&walked.files[0], 2).unwrap_err();
        assert_eq!(err, "grew over the 2-byte limit while being read");
    }
}
