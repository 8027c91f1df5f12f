//! Reading a whole file that must be a regular one, up to a size limit.
//!
//! Every file memidx reads whole — `meta.json`, a cache's `cache.json`, a
//! generation file under `status --verify`, a search request, eval queries
//! and judgments — goes through [`read_regular`]: a path that is a device
//! (`/dev/zero`), a FIFO, a socket or a folder is refused at once instead of
//! being read forever or blocking, and no read grows past its limit. On Unix
//! the file is opened with `O_NONBLOCK`, so opening a FIFO with no writer
//! returns at once; the check is made on the opened descriptor, so a path
//! swapped after a check cannot slip a different kind of file in.

use std::fmt;
use std::fs::{File, FileType, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// Why [`read_regular`] or [`read_limited`] returned no bytes. Its message
/// is a predicate to follow the file's name (`/dev/zero is a character
/// device, not a regular file`).
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(io::Error),
    /// The path is not a regular file; the kind of file it is.
    NotRegular(&'static str),
    /// The file holds more than this many bytes.
    TooLarge(u64),
}

impl ReadError {
    /// True when the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io(err) if err.kind() == io::ErrorKind::NotFound)
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(err) => write!(f, "cannot be read: {err}"),
            Self::NotRegular(kind) => write!(f, "is {kind}, not a regular file"),
            Self::TooLarge(limit) => write!(f, "is larger than the limit of {}", size(*limit)),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(err) => Some(err),
            _ => None,
        }
    }
}

/// Reads all of `path`, which must be a regular file (a symlink to one is
/// followed) of at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_limited(open_regular(path, limit)?, limit)
}

/// Opens `path` for reading as [`read_regular`] does (without blocking on
/// a FIFO), refusing anything but a regular file of at most `limit` bytes;
/// for a caller that streams the content.
pub fn open_regular(path: &Path, limit: u64) -> Result<File, ReadError> {
    let file = open_nonblocking(path).map_err(ReadError::Io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    check_regular(&meta)?;
    if meta.len() > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(file)
}

/// Reads `reader` to its end, refusing more than `limit` bytes (for input
/// that has no file to check, such as stdin).
pub fn read_limited(reader: impl Read, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// Refuses anything but a regular file, naming what `meta` describes.
pub fn check_regular(meta: &Metadata) -> Result<(), ReadError> {
    match kind(meta.file_type()) {
        None => Ok(()),
        Some(kind) => Err(ReadError::NotRegular(kind)),
    }
}

/// What a file that is not a regular one is; `None` for a regular file.
fn kind(file_type: FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("a special file")
}

/// Opens `path` for reading without blocking on a FIFO (on Unix); check
/// the descriptor with [`check_regular`] before reading it.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// A limit in words: whole MiB as such, else bytes.
fn size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_up_to_the_limit_and_refuses_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(read_regular(&path, 5).unwrap(), b"hello");
        let err = read_regular(&path, 4).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge(4)), "{err}");
        assert_eq!(err.to_string(), "is larger than the limit of 4 bytes");
        assert!(
            read_regular(&dir.path().join("none"), 5)
                .unwrap_err()
                .is_not_found()
        );
    }

    #[test]
    fn a_stream_is_cut_at_the_limit() {
        assert_eq!(read_limited(&b"abc"[..], 3).unwrap(), b"abc");
        let err = read_limited(io::repeat(0), 2 << 20).unwrap_err();
        assert_eq!(err.to_string(), "is larger than the limit of 2 MiB");
    }

    #[test]
    fn folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_regular(dir.path(), 5).unwrap_err();
        assert_eq!(err.to_string(), "is a folder, not a regular file");
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_refused_without_blocking() {
        let err = read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "is a character device, not a regular file");

        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // No writer: a blocking open would wait here forever.
        let err = read_regular(&fifo, 1 << 20).unwrap_err();
        assert_eq!(err.to_string(), "is a FIFO, not a regular file");

        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(
            read_regular(&link, 1 << 20),
            Err(ReadError::NotRegular("a character device"))
        ));
    }
}
