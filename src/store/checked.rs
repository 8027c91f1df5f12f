//! Tables checked block by block as they are read.
//!
//! The quick check at open ([`super::checks`]) finds a file something wrote
//! to, but not damage that keeps the modification time (bit rot, a bad
//! sector, a stray write through a mapping), and re-reading every table at
//! every open would cost more than a search: on a corpus of 500 MB of
//! markdown the chunk table alone is 16 MB. So each table a search reads
//! by record (`chunks.bin`, `headings.bin`, `files.idx`, `files.bin`,
//! `dates.bin`) is written with a sidecar, `NAME.blocks`: the CRC-32 of
//! every [`BLOCK_BYTES`] block, little-endian `u32`s. The sidecar is small
//! (1/1024 of its table) and is checked in full against the manifest when
//! the table opens; a block is checked against it the first time a read
//! touches it, and remembered as checked (a server opens a generation once
//! and reads it many times). A read of a damaged block is an error naming
//! the table, never an answer. A generation written before the sidecars
//! (format 23 and older) is read unchecked, as it was.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, anyhow, bail, ensure};
use memmap2::Mmap;

use super::checks::Checksums;
use super::{atomic, bounded, damaged, map_file};

/// Bytes covered by one checksum: one page, so that checking what a
/// record read touches costs about what reading it costs.
pub const BLOCK_BYTES: usize = 4096;

/// What a table's sidecar name adds to the table's.
pub const BLOCKS_SUFFIX: &str = ".blocks";

/// The CRC-32 of each [`BLOCK_BYTES`] block of `bytes` (the last one
/// shorter), as the sidecar stores them.
fn block_checksums(bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks(BLOCK_BYTES)
        .flat_map(|block| crc32fast::hash(block).to_le_bytes())
        .collect()
}

/// Writes `bytes` to `path` and its block checksums beside it, both
/// fsynced (see the module doc).
pub fn write_with_blocks(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic::write_synced(path, bytes)?;
    atomic::write_synced(&sidecar_path(path), &block_checksums(bytes))
}

/// The sidecar of the table at `path`.
fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(BLOCKS_SUFFIX);
    PathBuf::from(name)
}

/// A mapped table whose blocks are checked as reads touch them.
#[derive(Debug)]
pub struct CheckedMap {
    /// The table (`None` when empty).
    map: Option<Mmap>,
    /// Each block's CRC-32; `None` for a table written without them.
    checksums: Option<Box<[u32]>>,
    /// One bit per block: checked and found intact.
    checked: Box<[AtomicU64]>,
    /// The table, for errors.
    path: PathBuf,
}

impl CheckedMap {
    /// Maps table `name` of the generation in `dir`, with its sidecar when
    /// the manifest's `checksums` list one: the sidecar is read whole and
    /// must match its manifest CRC-32 and cover the table exactly.
    pub fn open(dir: &Path, name: &str, checksums: &Checksums) -> Result<Self> {
        let path = dir.join(name);
        let map = map_file(&path)?;
        let sidecar_name = format!("{name}{BLOCKS_SUFFIX}");
        let table_checksums = match checksums.get(&sidecar_name) {
            None => None,
            Some(check) => {
                let sidecar = dir.join(&sidecar_name);
                let bytes = bounded::read_regular(&sidecar, check.size)
                    .map_err(|err| anyhow!(damaged(&sidecar, &err.to_string())))?;
                ensure!(
                    crc32fast::hash(&bytes) == check.crc32,
                    damaged(&sidecar, "checksum mismatch")
                );
                let len = map.as_deref().map_or(0, <[u8]>::len);
                ensure!(
                    bytes.len() == len.div_ceil(BLOCK_BYTES) * 4,
                    damaged(&sidecar, "does not cover its table")
                );
                let words = bytes.chunks_exact(4);
                let sums: Box<[u32]> = words
                    .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                    .collect();
                Some(sums)
            }
        };
        let blocks = table_checksums.as_deref().map_or(0, <[u32]>::len);
        Ok(Self {
            map,
            checksums: table_checksums,
            checked: (0..blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            path,
        })
    }

    /// The table's length in bytes.
    pub fn len(&self) -> usize {
        self.map.as_deref().map_or(0, <[u8]>::len)
    }

    /// True when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes `range` of the table, every block they touch checked; an
    /// error naming the table when the range lies past its end or a block
    /// is damaged.
    pub fn bytes(&self, range: Range<usize>) -> Result<&[u8]> {
        let bytes = self
            .map
            .as_deref()
            .unwrap_or_default()
            .get(range.clone())
            .ok_or_else(|| anyhow!(damaged(&self.path, "is too short")))?;
        if !range.is_empty() {
            self.check_blocks(range.start / BLOCK_BYTES..(range.end - 1) / BLOCK_BYTES + 1)?;
        }
        Ok(bytes)
    }

    /// The whole table, every block checked.
    pub fn all(&self) -> Result<&[u8]> {
        self.bytes(0..self.len())
    }

    /// The whole table, unchecked: for a caller that only sizes it.
    pub fn unchecked(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    /// Checks the blocks `blocks` not checked before.
    fn check_blocks(&self, blocks: Range<usize>) -> Result<()> {
        let (Some(checksums), Some(map)) = (&self.checksums, &self.map) else {
            return Ok(());
        };
        for block in blocks {
            let (word, bit) = (&self.checked[block / 64], 1u64 << (block % 64));
            if word.load(Ordering::Relaxed) & bit != 0 {
                continue;
            }
            let start = block * BLOCK_BYTES;
            let bytes = &map[start..map.len().min(start + BLOCK_BYTES)];
            if crc32fast::hash(bytes) != checksums[block] {
                bail!(damaged(
                    &self.path,
                    &format!(
                        "checksum mismatch in bytes {start}..{}",
                        start + bytes.len()
                    )
                ));
            }
            word.fetch_or(bit, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::checks;

    /// A table of `bytes` written with its sidecar into `dir`, opened.
    fn written(dir: &Path, bytes: &[u8]) -> CheckedMap {
        write_with_blocks(&dir.join("t.bin"), bytes).unwrap();
        let sums = checks::compute(dir, &Checksums::new()).unwrap();
        CheckedMap::open(dir, "t.bin", &sums).unwrap()
    }

    #[test]
    fn an_intact_table_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let table = written(dir.path(), &bytes);
        assert_eq!(table.bytes(4090..4100).unwrap(), &bytes[4090..4100]);
        assert_eq!(table.all().unwrap(), &bytes[..]);
        assert_eq!(table.bytes(10..10).unwrap(), b"");
        assert!(table.bytes(9_999..10_001).is_err());
    }

    #[test]
    fn a_flipped_bit_is_named_by_every_read_that_touches_it() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = vec![7u8; 3 * BLOCK_BYTES + 10];
        write_with_blocks(&dir.path().join("t.bin"), &bytes).unwrap();
        let sums = checks::compute(dir.path(), &Checksums::new()).unwrap();
        let mut damaged = bytes.clone();
        damaged[BLOCK_BYTES + 5] ^= 0x10;
        std::fs::write(dir.path().join("t.bin"), &damaged).unwrap();
        let table = CheckedMap::open(dir.path(), "t.bin", &sums).unwrap();
        assert_eq!(table.bytes(0..10).unwrap(), &bytes[..10]);
        for range in [
            BLOCK_BYTES..BLOCK_BYTES + 1,
            10..BLOCK_BYTES * 2,
            0..damaged.len(),
        ] {
            let err = table.bytes(range).unwrap_err().to_string();
            assert!(
                err.contains("t.bin") && err.contains("checksum mismatch"),
                "{err}"
            );
        }
        assert_eq!(
            table.bytes(2 * BLOCK_BYTES..2 * BLOCK_BYTES + 3).unwrap(),
            &[7; 3]
        );
    }

    #[test]
    fn a_damaged_or_missing_sidecar_is_named_and_none_means_unchecked() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t.bin");
        write_with_blocks(&table, &[1u8; 5000]).unwrap();
        let sums = checks::compute(dir.path(), &Checksums::new()).unwrap();
        std::fs::write(sidecar_path(&table), [0u8; 8]).unwrap();
        let err = CheckedMap::open(dir.path(), "t.bin", &sums)
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.bin.blocks"), "{err}");
        let without: Checksums = sums.into_iter().filter(|(n, _)| n == "t.bin").collect();
        std::fs::write(&table, [2u8; 5000]).unwrap();
        let unchecked = CheckedMap::open(dir.path(), "t.bin", &without).unwrap();
        assert_eq!(unchecked.all().unwrap(), &[2u8; 5000][..]);
    }
}
