//! Checksums of a generation's files: computed once when the generation is
//! written, recorded in the manifest, checked cheaply (sizes) on every open
//! and fully (CRC-32 over every byte) by `memidx status --verify`.
//!
//! `crc32fast` computes the CRC with SIMD where the CPU has it.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use walkdir::WalkDir;

use super::damaged;

/// Size and CRC-32 of one generation file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCheck {
    /// Length in bytes.
    pub size: u64,
    /// CRC-32 of the content.
    pub crc32: u32,
}

/// Every file under a generation folder, by `/`-separated relative path.
pub type Checksums = BTreeMap<String, FileCheck>;

/// Computes the checks of every file under `gen_dir`.
pub fn compute(gen_dir: &Path) -> Result<Checksums> {
    let mut checks = Checksums::new();
    for entry in WalkDir::new(gen_dir).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot list {}", gen_dir.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let bytes = fs::read(entry.path())
            .with_context(|| format!("cannot read {}", entry.path().display()))?;
        checks.insert(
            relative(gen_dir, entry.path()),
            FileCheck {
                size: bytes.len() as u64,
                crc32: crc32fast::hash(&bytes),
            },
        );
    }
    Ok(checks)
}

/// Checks that every recorded file exists with its recorded size (a stat
/// per file: cheap enough for every search; catches truncation and loss).
pub fn check_sizes(gen_dir: &Path, checks: &Checksums) -> Result<()> {
    for (name, check) in checks {
        let path = gen_dir.join(name);
        let size = fs::metadata(&path)
            .map_err(|_| anyhow::anyhow!(damaged(&path, "is missing")))?
            .len();
        if size != check.size {
            bail!(damaged(
                &path,
                &format!("has {size} bytes, expected {}", check.size)
            ));
        }
    }
    Ok(())
}

/// Re-reads every recorded file and compares its CRC-32; returns the
/// message of each damaged file (empty when all are intact).
pub fn verify(gen_dir: &Path, checks: &Checksums) -> Vec<String> {
    verify_matching(gen_dir, checks, |_| true)
}

/// Like [`verify`], for the files whose relative path satisfies `select`
/// (e.g. the sparse index's files, which are checked before every search
/// because tantivy trusts its files and may panic on damaged ones).
pub fn verify_matching(
    gen_dir: &Path,
    checks: &Checksums,
    select: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, check) in checks.iter().filter(|(name, _)| select(name)) {
        let path = gen_dir.join(name);
        match fs::read(&path) {
            Err(_) => problems.push(damaged(&path, "cannot be read")),
            Ok(bytes) if bytes.len() as u64 != check.size => problems.push(damaged(
                &path,
                &format!("has {} bytes, expected {}", bytes.len(), check.size),
            )),
            Ok(bytes) if crc32fast::hash(&bytes) != check.crc32 => {
                problems.push(damaged(&path, "checksum mismatch"))
            }
            Ok(_) => {}
        }
    }
    problems
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
        let checks = compute(dir.path()).unwrap();
        assert_eq!(checks.keys().collect::<Vec<_>>(), ["a.bin", "sub/b.bin"]);
        assert_eq!(
            checks["a.bin"],
            FileCheck {
                size: 5,
                crc32: crc32fast::hash(b"hello")
            }
        );
        check_sizes(dir.path(), &checks).unwrap();
        assert!(verify(dir.path(), &checks).is_empty());

        fs::write(dir.path().join("sub/b.bin"), b"worle!").unwrap();
        check_sizes(dir.path(), &checks).unwrap();
        let problems = verify(dir.path(), &checks);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("b.bin checksum mismatch") && problems[0].contains("--full"),
            "{problems:?}"
        );

        fs::write(dir.path().join("a.bin"), b"he").unwrap();
        let err = check_sizes(dir.path(), &checks).unwrap_err().to_string();
        assert!(err.contains("a.bin has 2 bytes, expected 5"), "{err}");
        fs::remove_file(dir.path().join("a.bin")).unwrap();
        let err = check_sizes(dir.path(), &checks).unwrap_err().to_string();
        assert!(err.contains("a.bin is missing"), "{err}");
    }
}
