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
//!
//! The vector files get sidecars too ([`BlockHasher`] makes them as the rows
//! stream out), and the dense list checks the rows of the chunks it returns
//! with [`BlockChecks`] (see `lists::dense`); so do the sparse folder's files,
//! which its read-only tantivy directory hands out checked (see
//! `lists::frozen_dir`).

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

/// Computes a sidecar from a file's bytes as they are written, in any
/// pieces: the CRC-32 of each [`BLOCK_BYTES`] block (the last one shorter).
#[derive(Default)]
pub struct BlockHasher {
    /// The sidecar so far.
    sums: Vec<u8>,
    /// The open block's CRC and length.
    open: crc32fast::Hasher,
    open_len: usize,
}

impl BlockHasher {
    /// Takes the next bytes of the file.
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = bytes.len().min(BLOCK_BYTES - self.open_len);
            self.open.update(&bytes[..take]);
            self.open_len += take;
            bytes = &bytes[take..];
            if self.open_len == BLOCK_BYTES {
                self.close();
            }
        }
    }

    /// Closes the open block.
    fn close(&mut self) {
        let hasher = std::mem::take(&mut self.open);
        self.sums.extend(hasher.finalize().to_le_bytes());
        self.open_len = 0;
    }

    /// The sidecar's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        if self.open_len > 0 {
            self.close();
        }
        self.sums
    }
}

/// Writes `bytes` to `path` and its block checksums beside it, both
/// fsynced (see the module doc).
pub fn write_with_blocks(path: &Path, bytes: &[u8]) -> Result<()> {
    atomic::write_synced(path, bytes)?;
    let mut sums = BlockHasher::default();
    sums.push(bytes);
    atomic::write_synced(&sidecar_path(path), &sums.finish())
}

/// Writes the sidecar of the file at `path` from its content, fsynced.
pub fn write_sidecar(path: &Path) -> Result<()> {
    let mut sums = BlockHasher::default();
    if let Some(map) = map_file(path)? {
        sums.push(&map);
    }
    atomic::write_synced(&sidecar_path(path), &sums.finish())
}

/// The sidecar of the file at `path`.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(BLOCKS_SUFFIX);
    PathBuf::from(name)
}

/// A file's block checksums, with which blocks were found intact.
#[derive(Debug)]
pub struct BlockChecks {
    /// Each block's CRC-32.
    checksums: Box<[u32]>,
    /// One bit per block: checked and found intact.
    checked: Box<[AtomicU64]>,
    /// The file, for errors.
    path: PathBuf,
}

impl BlockChecks {
    /// The checks of file `name` of `dir`, `len` bytes long, from its
    /// sidecar when `checksums` (the manifest's, by names relative to
    /// `dir`) list one (`None` when not): the sidecar is read whole and
    /// must match its manifest CRC-32 and cover the file exactly.
    pub fn load(dir: &Path, name: &str, checksums: &Checksums, len: usize) -> Result<Option<Self>> {
        let sidecar_name = format!("{name}{BLOCKS_SUFFIX}");
        let Some(check) = checksums.get(&sidecar_name) else {
            return Ok(None);
        };
        let sidecar = dir.join(&sidecar_name);
        let bytes = bounded::read_regular(&sidecar, check.size)
            .map_err(|err| anyhow!(damaged(&sidecar, &err.to_string())))?;
        ensure!(
            crc32fast::hash(&bytes) == check.crc32,
            damaged(&sidecar, "checksum mismatch")
        );
        ensure!(
            bytes.len() == len.div_ceil(BLOCK_BYTES) * 4,
            damaged(&sidecar, "does not cover its table")
        );
        let checksums: Box<[u32]> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        Ok(Some(Self {
            checked: (0..checksums.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            checksums,
            path: dir.join(name),
        }))
    }

    /// Checks the blocks of `file` (the file's bytes) that `range` touches
    /// and no check found intact before.
    pub fn check(&self, file: &[u8], range: Range<usize>) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        for block in range.start / BLOCK_BYTES..(range.end - 1) / BLOCK_BYTES + 1 {
            let (word, bit) = (&self.checked[block / 64], 1u64 << (block % 64));
            if word.load(Ordering::Relaxed) & bit != 0 {
                continue;
            }
            let start = block * BLOCK_BYTES;
            let bytes = &file[start..file.len().min(start + BLOCK_BYTES)];
            if crc32fast::hash(bytes) != self.checksums[block] {
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

/// A mapped table whose blocks are checked as reads touch them.
#[derive(Debug)]
pub struct CheckedMap {
    /// The table (`None` when empty).
    map: Option<Mmap>,
    /// Its block checks; `None` for a table written without them.
    checks: Option<BlockChecks>,
    /// The table, for errors.
    path: PathBuf,
}

impl CheckedMap {
    /// Maps table `name` of the generation in `dir`, with its block checks
    /// when the manifest's `checksums` list a sidecar ([`BlockChecks::load`]).
    pub fn open(dir: &Path, name: &str, checksums: &Checksums) -> Result<Self> {
        let path = dir.join(name);
        let map = map_file(&path)?;
        let len = map.as_deref().map_or(0, <[u8]>::len);
        Ok(Self {
            checks: BlockChecks::load(dir, name, checksums, len)?,
            map,
            path,
        })
    }

    /// The table's length in bytes.
    pub fn len(&self) -> usize {
        self.unchecked().len()
    }

    /// True when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes `range` of the table, every block they touch checked; an
    /// error naming the table when the range lies past its end or a block
    /// is damaged.
    pub fn bytes(&self, range: Range<usize>) -> Result<&[u8]> {
        let table = self.unchecked();
        let bytes = table
            .get(range.clone())
            .ok_or_else(|| anyhow!(damaged(&self.path, "is too short")))?;
        if let Some(checks) = &self.checks {
            checks.check(table, range)?;
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
    fn a_streamed_sidecar_equals_one_made_at_once() {
        let bytes: Vec<u8> = (0..3 * BLOCK_BYTES as u32 + 77)
            .map(|i| (i * 7) as u8)
            .collect();
        let mut whole = BlockHasher::default();
        whole.push(&bytes);
        let mut pieces = BlockHasher::default();
        for piece in bytes.chunks(1000) {
            pieces.push(piece);
        }
        let sums = whole.finish();
        assert_eq!(sums.len(), 16);
        assert_eq!(pieces.finish(), sums);
        assert_eq!(
            sums[..4],
            crc32fast::hash(&bytes[..BLOCK_BYTES]).to_le_bytes()
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
