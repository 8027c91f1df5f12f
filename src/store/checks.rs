//! Checksums of a generation's files: computed once when the generation is
//! written and recorded in the manifest with each file's size and
//! modification time.
//!
//! When a generation is finished, each of its files gets the same fixed,
//! long-past modification time ([`SEALED_MTIME_SECS`]). Every open stats
//! each file: a missing file or a wrong size is damage; a file whose
//! modification time is no longer the sealed one (something wrote to it — a
//! truncation, a zeroing, an editor) is re-read in full and its CRC-32
//! compared, so such damage is named before anything trusts the
//! file, while an untouched index costs no reading at all. Damage that
//! bypasses the file system (bit rot on the medium) keeps the mtime and is
//! found by `memidx status --verify`, which re-reads everything — the quick
//! check rsync uses, with the full check one flag away.
//!
//! `crc32fast` computes the CRC with SIMD where the CPU has it; `rayon`
//! reads a generation's files in parallel.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use walkdir::WalkDir;

use super::bounded::{self, ReadError};
use super::damaged;
use crate::corpus::walk::mtime_ns;
use crate::error::IndexError;

/// Size, modification time and CRC-32 of one generation file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCheck {
    /// Length in bytes.
    pub size: u64,
    /// CRC-32 of the content.
    pub crc32: u32,
    /// Modification time when written, nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
}

/// The modification time given to every finished generation file
/// (2001-09-09T01:46:40Z): no later write can produce it.
pub const SEALED_MTIME_SECS: u64 = 1_000_000_000;

/// Gives `path` the sealed modification time (its content is untouched).
pub fn seal(path: &Path) -> std::io::Result<()> {
    let sealed = std::time::UNIX_EPOCH + std::time::Duration::from_secs(SEALED_MTIME_SECS);
    fs::File::options()
        .write(true)
        .open(path)?
        .set_modified(sealed)
}

/// Every file under a generation folder, by `/`-separated relative path.
pub type Checksums = BTreeMap<String, FileCheck>;

/// Seals every file under `gen_dir` (see the module doc) and computes its
/// checks. Files hard-linked from the previous generation, given with
/// their checks in `linked`, keep those checks without being re-read.
pub fn compute(gen_dir: &Path, linked: &Checksums) -> Result<Checksums> {
    let mut checks = Checksums::new();
    let mut fresh = Vec::new();
    for entry in WalkDir::new(gen_dir).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot list {}", gen_dir.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let name = relative(gen_dir, entry.path());
        match linked.get(&name) {
            Some(check) => {
                checks.insert(name, *check);
            }
            None => fresh.push((name, entry.into_path())),
        }
    }
    // Each file is read once, on any core (the largest take most of the time).
    let computed: Vec<(String, FileCheck)> = fresh
        .into_par_iter()
        .map(|(name, path)| Ok((name, seal_and_check(&path)?)))
        .collect::<Result<_>>()?;
    checks.extend(computed);
    Ok(checks)
}

/// Seals the file at `path` and computes its check.
fn seal_and_check(path: &Path) -> Result<FileCheck> {
    seal(path).with_context(|| format!("cannot seal {}", path.display()))?;
    let (size, crc32) = fs::File::open(path)
        .and_then(crc32_of)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let meta = fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))?;
    Ok(FileCheck {
        size,
        crc32,
        mtime_ns: mtime_ns(&meta),
    })
}

/// The check every open makes: each recorded file must exist as a regular
/// file with its recorded size (else an error naming it), and each file whose
/// modification time changed is re-read and must match its CRC-32.
pub fn check_on_open(gen_dir: &Path, checks: &Checksums) -> Result<()> {
    let mut touched = Vec::new();
    for (name, check) in checks {
        let path = gen_dir.join(name);
        let meta =
            fs::metadata(&path).map_err(|_| anyhow::anyhow!(damaged(&path, "is missing")))?;
        bounded::check_regular(&meta)
            .map_err(|err| anyhow::anyhow!(damaged(&path, &err.to_string())))?;
        if meta.len() != check.size {
            bail!(damaged(
                &path,
                &format!("has {} bytes, expected {}", meta.len(), check.size)
            ));
        }
        if mtime_ns(&meta) != check.mtime_ns {
            touched.push(name.as_str());
        }
    }
    match verify_matching(gen_dir, checks, |name| touched.contains(&name))
        .into_iter()
        .next()
    {
        Some(problem) => bail!(problem),
        None => Ok(()),
    }
}

/// Re-reads every recorded file (never more than its recorded size, and
/// only a regular file) and compares its CRC-32; returns the damage of
/// each damaged file (empty when all are intact).
pub fn verify(gen_dir: &Path, checks: &Checksums) -> Vec<IndexError> {
    verify_matching(gen_dir, checks, |_| true)
}

/// Like [`verify`], for the files whose relative path satisfies `select`.
/// The files are read in parallel (a re-index re-reads the ones it
/// carries, the largest of which take most of the time); the damage is
/// listed in the files' order.
pub fn verify_matching(
    gen_dir: &Path,
    checks: &Checksums,
    select: impl Fn(&str) -> bool + Sync,
) -> Vec<IndexError> {
    checks
        .par_iter()
        .filter(|(name, _)| select(name))
        .filter_map(|(name, check)| verify_one(&gen_dir.join(name), check))
        .collect()
}

/// The damage of the file at `path` against its `check`, if any.
fn verify_one(path: &Path, check: &FileCheck) -> Option<IndexError> {
    let read = bounded::open_regular(path, check.size).and_then(|file| {
        crc32_of(io::Read::take(file, check.size.saturating_add(1))).map_err(ReadError::Io)
    });
    match read {
        Err(ReadError::TooLarge(_)) => Some(too_large(path, check)),
        Err(err) => Some(damaged(path, &err.to_string())),
        Ok((size, crc32)) => judged(path, size, crc32, check),
    }
}

/// The damage of the file at `path`, read whole as `size` bytes of CRC-32
/// `crc32`, against its `check`, if any.
fn judged(path: &Path, size: u64, crc32: u32, check: &FileCheck) -> Option<IndexError> {
    if size > check.size {
        Some(too_large(path, check))
    } else if size != check.size {
        let what = format!("has {size} bytes, expected {}", check.size);
        Some(damaged(path, &what))
    } else if crc32 != check.crc32 {
        Some(damaged(path, "checksum mismatch"))
    } else {
        None
    }
}

/// Checks `bytes`, read whole from the file at `path`, against the file's
/// `check`: a file a run reads whole anyway is checked as it is read, not
/// read twice.
pub fn verify_bytes(path: &Path, bytes: &[u8], check: &FileCheck) -> Result<(), IndexError> {
    let size = bytes.len() as u64;
    match judged(path, size, crc32fast::hash(bytes), check) {
        Some(damage) => Err(damage),
        None => Ok(()),
    }
}

/// The damage of a file that grew past its recorded size.
fn too_large(path: &Path, check: &FileCheck) -> IndexError {
    damaged(
        path,
        &format!("has more than the {} bytes expected", check.size),
    )
}

/// The length and CRC-32 of everything `reader` yields, read a block at a
/// time (a generation's largest files are hundreds of megabytes, and
/// reading one whole into memory cost more than the CRC).
fn crc32_of(mut reader: impl io::Read) -> io::Result<(u64, u32)> {
    let mut buffer = vec![0u8; 1 << 18];
    let (mut size, mut hasher) = (0u64, crc32fast::Hasher::new());
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok((size, hasher.finalize())),
            Ok(n) => {
                hasher.update(&buffer[..n]);
                size += n as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}

/// `path` relative to `base`, `/`-separated.
fn relative(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computed_checks_detect_truncation_and_flips() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("a.bin"), b"hello").unwrap();
        fs::write(dir.path().join("sub/b.bin"), b"world!").unwrap();
        let checks = compute(dir.path(), &Checksums::new()).unwrap();
        assert_eq!(checks.keys().collect::<Vec<_>>(), ["a.bin", "sub/b.bin"]);
        assert_eq!(
            (checks["a.bin"].size, checks["a.bin"].crc32),
            (5, crc32fast::hash(b"hello"))
        );
        check_on_open(dir.path(), &checks).unwrap();
        assert!(verify(dir.path(), &checks).is_empty());

        assert_eq!(
            checks["a.bin"].mtime_ns,
            i128::from(SEALED_MTIME_SECS) * 1_000_000_000
        );

        // A write changes the mtime: the next open re-reads the file and names it.
        fs::write(dir.path().join("sub/b.bin"), b"worle!").unwrap();
        let err = check_on_open(dir.path(), &checks).unwrap_err().to_string();
        assert!(
            err.contains("b.bin checksum mismatch") && err.contains("--full"),
            "{err}"
        );
        let problems = verify(dir.path(), &checks);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].to_string().contains("b.bin checksum mismatch"),
            "{problems:?}"
        );

        fs::write(dir.path().join("a.bin"), b"he").unwrap();
        let err = check_on_open(dir.path(), &checks).unwrap_err().to_string();
        assert!(err.contains("a.bin has 2 bytes, expected 5"), "{err}");
        fs::remove_file(dir.path().join("a.bin")).unwrap();
        let err = check_on_open(dir.path(), &checks).unwrap_err().to_string();
        assert!(err.contains("a.bin is missing"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_replaced_by_a_device_or_fifo_is_named_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.bin"), b"hello").unwrap();
        fs::write(dir.path().join("b.bin"), b"").unwrap();
        let checks = compute(dir.path(), &Checksums::new()).unwrap();
        fs::remove_file(dir.path().join("a.bin")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("a.bin")).unwrap();
        fs::remove_file(dir.path().join("b.bin")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("b.bin"))
            .status()
            .unwrap();
        assert!(made.success());
        let problems = verify(dir.path(), &checks);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0]
                .to_string()
                .contains("a.bin is a character device, not a regular file"),
            "{problems:?}"
        );
        assert!(
            problems[1]
                .to_string()
                .contains("b.bin is a FIFO, not a regular file"),
            "{problems:?}"
        );
        let err = check_on_open(dir.path(), &checks).unwrap_err().to_string();
        assert!(err.contains("a.bin is a character device"), "{err}");
    }

    #[test]
    fn a_longer_file_is_read_only_to_its_recorded_size() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.bin"), b"hello").unwrap();
        let checks = compute(dir.path(), &Checksums::new()).unwrap();
        fs::write(dir.path().join("a.bin"), b"hello world").unwrap();
        let problems = verify(dir.path(), &checks);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .to_string()
                .contains("a.bin has more than the 5 bytes expected"),
            "{problems:?}"
        );
    }
}
