//! The metadata value index (`metadata.bin`): for every metadata key but
//! [`UNINDEXED_KEY`], its values, and for every value, the files that have
//! it — so a filter costs in proportion to what it selects, not to the
//! number of files (it would otherwise decode every file entry).
//!
//! ```text
//! header   5 × u32: magic, keys, values, file references, string bytes
//! keys     per key, sorted: name (offset, length), its values (first, count)
//! values   per value, sorted within its key: text (offset, length), its files (first, count)
//! files    file indices, ascending within each value
//! strings  the keys' and values' UTF-8 bytes
//! ```
//! Every section is a run of little-endian `u32`, viewed in place with
//! `bytemuck`; keys and values are found by binary search over their bytes
//! (the order `String` sorts in). A bad offset or length is named as damage
//! when it is read.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use bytemuck::{Pod, Zeroable};
use rayon::slice::ParallelSliceMut;

use super::checked::{CheckedMap, write_with_blocks};
use super::damaged;
use crate::corpus::Metadata;
use crate::corpus::read::PATH_KEY;

/// The file's name in a generation.
pub const METADATA_INDEX_FILE: &str = "metadata.bin";

/// First word of the file: "MDX1".
const MAGIC: u32 = u32::from_le_bytes(*b"MDX1");

/// Words in the header.
const HEADER_WORDS: usize = 5;

/// The key left out: each file's `path` is its own, and files are sorted
/// by path, so the file table answers it in place
/// ([`Generation::file_index`](super::generation::Generation::file_index),
/// [`Generation::files_with_prefix`](super::generation::Generation::files_with_prefix)).
/// Generations written before format 21 still hold it.
pub const UNINDEXED_KEY: &str = PATH_KEY;

/// One key or one value: its text and the range of what it lists.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Entry {
    text_start: u32,
    text_len: u32,
    first: u32,
    count: u32,
}

/// Writes the value index of the files whose metadata `files` yields (in
/// file-index order) into `gen_dir`.
pub fn write<'a>(gen_dir: &Path, files: impl IntoIterator<Item = &'a Metadata>) -> Result<()> {
    // Every (key, value, file) once, sorted: the layout is then one pass
    // over runs (a re-index writes this for every file). The pairs are
    // gathered per key and sorted within it, so a comparison never looks
    // at the key, which most share with their neighbours.
    let mut pairs_by_key: BTreeMap<&str, Vec<(&str, u32)>> = BTreeMap::new();
    for (index, metadata) in files.into_iter().enumerate() {
        let index = u32::try_from(index).context("too many files")?;
        for (key, values) in metadata
            .iter()
            .filter(|(key, _)| key.as_str() != UNINDEXED_KEY)
        {
            let pairs = pairs_by_key.entry(key.as_str()).or_default();
            pairs.extend(values.iter().map(|value| (value.as_str(), index)));
        }
    }
    for pairs in pairs_by_key.values_mut() {
        pairs.par_sort_unstable();
        pairs.dedup();
    }
    let triples = pairs_by_key.iter().flat_map(|(key, pairs)| {
        pairs
            .iter()
            .map(move |&(value, index)| (*key, value, index))
    });
    let references: usize = pairs_by_key.values().map(Vec::len).sum();
    let mut strings: Vec<u8> = Vec::new();
    // A key or value entry: its text appended to the strings, listing
    // from `first` on (counted as the runs go by).
    let mut entry = |s: &str, first: usize| -> Result<Entry> {
        let entry = Entry {
            text_start: u32::try_from(strings.len()).context("metadata too large")?,
            text_len: u32::try_from(s.len()).context("metadata too large")?,
            first: u32::try_from(first).context("metadata too large")?,
            count: 0,
        };
        strings.extend_from_slice(s.as_bytes());
        Ok(entry)
    };
    let (mut keys, mut values) = (Vec::<Entry>::new(), Vec::<Entry>::new());
    let mut refs = Vec::<u32>::with_capacity(references);
    let mut previous: Option<(&str, &str)> = None;
    for (key, value, index) in triples {
        if previous.is_none_or(|(k, _)| k != key) {
            keys.push(entry(key, values.len())?);
        }
        if previous != Some((key, value)) {
            values.push(entry(value, refs.len())?);
            if let Some(key) = keys.last_mut() {
                key.count += 1;
            }
        }
        refs.push(index);
        if let Some(value) = values.last_mut() {
            value.count += 1;
        }
        previous = Some((key, value));
    }
    let header = [
        MAGIC,
        keys.len() as u32,
        values.len() as u32,
        refs.len() as u32,
        u32::try_from(strings.len()).context("metadata too large")?,
    ];
    let mut bytes = Vec::with_capacity(
        4 * HEADER_WORDS + 16 * (keys.len() + values.len()) + 4 * refs.len() + strings.len(),
    );
    bytes.extend_from_slice(bytemuck::cast_slice(&header));
    bytes.extend_from_slice(bytemuck::cast_slice(&keys));
    bytes.extend_from_slice(bytemuck::cast_slice(&values));
    bytes.extend_from_slice(bytemuck::cast_slice(&refs));
    bytes.extend_from_slice(&strings);
    write_with_blocks(&gen_dir.join(METADATA_INDEX_FILE), &bytes)
}

/// A mapped value index.
#[derive(Debug)]
pub struct MetadataIndex {
    path: PathBuf,
    map: CheckedMap,
    keys: Range<usize>,
    values: Range<usize>,
    refs: Range<usize>,
    strings: Range<usize>,
}

/// One key of the index: its values, sorted.
#[derive(Debug, Clone, Copy)]
pub struct KeyValues<'a> {
    index: &'a MetadataIndex,
    values: &'a [Entry],
}

impl MetadataIndex {
    /// Views the mapped file at `path`, checking its header and sections
    /// (and, as they are read, its blocks: see [`super::checked`]).
    pub fn open(path: &Path, map: CheckedMap) -> Result<Self> {
        let bad = |what: &str| anyhow::anyhow!(damaged(path, what));
        ensure!(map.len() >= 4 * HEADER_WORDS, bad("is too short"));
        let header: &[u32] = bytemuck::try_cast_slice(map.bytes(0..4 * HEADER_WORDS)?)
            .map_err(|_| bad("is too short"))?;
        ensure!(header[0] == MAGIC, bad("is not a metadata index"));
        let sizes = [
            16 * header[1] as usize,
            16 * header[2] as usize,
            4 * header[3] as usize,
            header[4] as usize,
        ];
        let mut start = 4 * HEADER_WORDS;
        let mut sections = sizes.iter().map(|size| {
            let range = start..start + size;
            start += size;
            range
        });
        let (keys, values, refs, strings) = (
            sections.next().expect("four sections"),
            sections.next().expect("four sections"),
            sections.next().expect("four sections"),
            sections.next().expect("four sections"),
        );
        ensure!(strings.end == map.len(), bad("has a bad length"));
        Ok(Self {
            path: path.to_path_buf(),
            map,
            keys,
            values,
            refs,
            strings,
        })
    }

    /// The bytes of items `first..first + count`, each `size` bytes, of
    /// `section`, checked; `what` names them in the error when the section
    /// does not hold them.
    fn items(
        &self,
        section: &Range<usize>,
        size: usize,
        (first, count): (u32, u32),
        what: &str,
    ) -> Result<&[u8]> {
        let start = section.start + first as usize * size;
        let end = start + count as usize * size;
        ensure!(
            end <= section.end,
            damaged(&self.path, &format!("names {what} it does not hold"))
        );
        self.map.bytes(start..end)
    }

    fn text(&self, entry: &Entry) -> Result<&str> {
        let bytes = self.items(&self.strings, 1, (entry.text_start, entry.text_len), "text")?;
        std::str::from_utf8(bytes).with_context(|| damaged(&self.path, "holds invalid UTF-8"))
    }

    /// The key entries, checked.
    fn key_entries(&self) -> Result<&[Entry]> {
        Ok(bytemuck::cast_slice(self.map.bytes(self.keys.clone())?))
    }

    /// Every key, sorted.
    pub fn keys(&self) -> Result<Vec<&str>> {
        self.key_entries()?.iter().map(|k| self.text(k)).collect()
    }

    /// The values of `key`, or `None` when no file has it.
    pub fn key(&self, key: &str) -> Result<Option<KeyValues<'_>>> {
        let keys = self.key_entries()?;
        let Some(found) = search(keys, key, |k| self.text(k))? else {
            return Ok(None);
        };
        let entry = keys[found];
        let values = self.items(&self.values, 16, (entry.first, entry.count), "values")?;
        Ok(Some(KeyValues {
            index: self,
            values: bytemuck::cast_slice(values),
        }))
    }

    fn files_of(&self, entry: &Entry) -> Result<&[u32]> {
        let refs = self.items(&self.refs, 4, (entry.first, entry.count), "files")?;
        Ok(bytemuck::cast_slice(refs))
    }
}

impl<'a> KeyValues<'a> {
    /// The files (ascending indices) that have `value` for this key.
    pub fn files_with(&self, value: &str) -> Result<&'a [u32]> {
        match search(self.values, value, |v| self.index.text(v))? {
            Some(found) => self.index.files_of(&self.values[found]),
            None => Ok(&[]),
        }
    }

    /// Every value with how many files have it, in value order.
    pub fn counts(&self) -> Result<Vec<(&'a str, usize)>> {
        self.values
            .iter()
            .map(|v| Ok((self.index.text(v)?, v.count as usize)))
            .collect()
    }
}

/// The position of the entry whose text is `wanted` among `entries`
/// (sorted by text bytes).
fn search<'a>(
    entries: &'a [Entry],
    wanted: &str,
    text: impl Fn(&'a Entry) -> Result<&'a str>,
) -> Result<Option<usize>> {
    let (mut low, mut high) = (0, entries.len());
    while low < high {
        let mid = low + (high - low) / 2;
        match text(&entries[mid])?.as_bytes().cmp(wanted.as_bytes()) {
            std::cmp::Ordering::Less => low = mid + 1,
            std::cmp::Ordering::Greater => high = mid,
            std::cmp::Ordering::Equal => return Ok(Some(mid)),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, &[&str])]) -> Metadata {
        pairs
            .iter()
            .map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect()))
            .collect()
    }

    #[test]
    fn values_list_their_files_and_keys_are_found_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            entry(&[("env", &["prod", "prod"]), ("path", &["a.md"])]),
            entry(&[("env", &["staging", "prod"]), ("path", &["b/c.md"])]),
            entry(&[("path", &["b/d.md"])]),
        ];
        write(dir.path(), &files).unwrap();
        let path = dir.path().join(METADATA_INDEX_FILE);
        let unchecked = crate::store::checks::Checksums::new();
        let map = CheckedMap::open(dir.path(), METADATA_INDEX_FILE, &unchecked).unwrap();
        let index = MetadataIndex::open(&path, map).unwrap();
        assert_eq!(index.keys().unwrap(), ["env"]);
        let env = index.key("env").unwrap().unwrap();
        assert_eq!(env.files_with("prod").unwrap(), [0, 1]);
        assert_eq!(env.files_with("staging").unwrap(), [1]);
        assert!(env.files_with("qa").unwrap().is_empty());
        assert_eq!(env.counts().unwrap(), [("prod", 2), ("staging", 1)]);
        assert!(index.key("envv").unwrap().is_none());
        // A truncated file is named, not misread.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let map = CheckedMap::open(dir.path(), METADATA_INDEX_FILE, &unchecked).unwrap();
        let err = MetadataIndex::open(&path, map).unwrap_err().to_string();
        assert!(err.contains("has a bad length"), "{err}");
    }
}
