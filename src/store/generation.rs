//! One generation folder: the chunk table and the chunk texts, laid out to
//! be memory-mapped, so opening an index costs the same for ten files or a
//! hundred thousand.
//!
//! ```text
//! chunks.bin    one fixed-size little-endian record per chunk (RawChunk)
//! headings.bin  heading paths, UTF-8, parts separated by U+001F; each
//!               distinct path once, shared by every chunk under it
//! files.idx     u64 offsets into files.bin, one per file plus the end
//! files.bin     one postcard-encoded FileEntry per file (decoded on demand),
//!               without the metadata keys its path gives (from format 21)
//! paths.idx     u64 offsets into paths.bin, one per file plus the end
//! paths.bin     every file's path, UTF-8, one after another
//! stamps.bin    one fixed-size record per file: its size and modification
//!               time (RawStamp). These three repeat what files.bin holds,
//!               in columns a walk's change check reads alone (a tenth of
//!               the entries' bytes); absent before format 27, when the
//!               paths and stamps are read from files.bin
//! dates.bin     one little-endian i64 per file: its document date, seconds
//!               since the epoch (see [`crate::corpus::date`]); absent
//!               before format 19, when dates are worked out from files.bin
//! file_chunks.u32  one little-endian u32 per file: its first chunk's
//!               ordinal, then the number of chunks; absent before format
//!               24, when it is worked out from chunks.bin
//! metadata.bin  each metadata key's values and the files that have them
//!               (see [`super::metadata_index`]; absent before format 19)
//! texts.bin     every chunk's text, zstd-compressed in blocks (see [`super::texts`])
//! texts.idx     u64 pairs (uncompressed start, compressed start) per block, plus the end
//! NAME.blocks   beside each table above but the texts: a CRC-32 per 4 KiB
//!               block, checked as reads touch it (see [`super::checked`];
//!               absent before format 24)
//! ```
//! `memmap2` maps the files and `bytemuck` views the records in place (it
//! checks size and alignment); `zstd` compresses the texts (markdown shrinks
//! about fourfold, and a search decompresses only the blocks it prints); `postcard` encodes the per-file entries —
//! compact, serde-based and maintained, unlike bincode. Opening runs the
//! quick file checks of [`checks`]; each chunk's text also has its own CRC,
//! checked when it is read.

use std::borrow::Borrow;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use bytemuck::{Pod, Zeroable};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::corpus::Metadata;
use crate::corpus::date::{DocDate, document_date};
use crate::corpus::read::{PATH_KEYS, add_path_metadata};

use super::checked::{CheckedMap, write_with_blocks};
use super::checks::{self, Checksums};
use super::damaged;
use super::metadata_index::{self, METADATA_INDEX_FILE, MetadataIndex};
use super::texts::{TEXT_INDEX_FILE, TEXTS_FILE, TextStore};

/// File holding one [`RawChunk`] per chunk.
pub const CHUNKS_FILE: &str = "chunks.bin";
/// File holding the heading paths.
pub const HEADINGS_FILE: &str = "headings.bin";
/// File holding the offsets of the file entries.
pub const FILE_INDEX_FILE: &str = "files.idx";
/// File holding the postcard-encoded file entries.
pub const FILES_FILE: &str = "files.bin";
/// File holding the offsets of the file paths (absent before format 27).
pub const PATH_INDEX_FILE: &str = "paths.idx";
/// File holding every file's path (absent before format 27).
pub const PATHS_FILE: &str = "paths.bin";
/// File holding each file's size and modification time (absent before
/// format 27).
pub const STAMPS_FILE: &str = "stamps.bin";
/// File holding each file's document date.
pub const DATES_FILE: &str = "dates.bin";
/// File holding each file's first chunk ordinal (absent before format 24).
pub const FILE_CHUNKS_FILE: &str = "file_chunks.u32";
/// Folder holding the sparse (tantivy) index.
pub const SPARSE_DIR: &str = "sparse";
/// Folder holding the file list's tantivy index, one document a file
/// (absent from an index built without it; see [`crate::lists::files`]).
pub const FILES_DIR: &str = "sparse-files";

/// The files every generation must have.
const REQUIRED_FILES: [&str; 4] = [CHUNKS_FILE, HEADINGS_FILE, FILE_INDEX_FILE, FILES_FILE];

/// Separates the parts of a stored heading path.
const HEADING_SEPARATOR: &str = "\u{1f}";

/// The headings above a chunk, outermost first, held joined by
/// [`HEADING_SEPARATOR`] the way `headings.bin` stores them: a carried
/// chunk's path is one copy of its stored bytes, and writing it is one
/// more, where a list would take a string per heading both ways.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeadingPath(String);

impl HeadingPath {
    /// The path of `headings`, outermost first.
    pub fn new<S: Borrow<str>>(headings: &[S]) -> Self {
        Self(headings.join(HEADING_SEPARATOR))
    }

    /// The headings, outermost first.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let none = self.0.is_empty();
        self.0.split(HEADING_SEPARATOR).filter(move |_| !none)
    }

    /// How many headings there are.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True when the chunk has no heading above it.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The headings joined for display: `A > B > C`.
    pub fn display(&self) -> String {
        self.0.replace(HEADING_SEPARATOR, " > ")
    }
}

/// Position of a chunk in the chunk table; lists identify hits by it.
///
/// Chunks are stored sorted by (file path, position in file), so ordinal
/// order is chunk-id order, which the fusion uses as its last tie-break.
pub type ChunkOrd = u32;

/// Every indexed file and chunk of one generation, in memory (as the
/// indexer builds it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkTable {
    /// Indexed files, sorted by path.
    pub files: Vec<FileEntry>,
    /// Chunks, sorted by file then position; index = [`ChunkOrd`].
    pub chunks: Vec<ChunkRecord>,
}

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// Front matter plus the built-in keys `path`, `dir` and `title`.
    pub metadata: Metadata,
    /// What the file was when indexed, for change detection.
    pub stamp: FileStamp,
}

impl FileEntry {
    /// The file's document date and where it came from: a function of its
    /// metadata, path and stamp, so nothing else needs storing.
    pub fn date(&self) -> DocDate {
        document_date(&self.path, &self.metadata, self.stamp.mtime_ns)
    }
}

/// What identifies one indexed file's content, for change detection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
    /// xxh3-64 of the content, as 16 hex digits.
    pub hash: String,
}

impl FileStamp {
    /// True when a file of `size` bytes modified at `mtime_ns` looks
    /// unchanged since this stamp: the quick check, without reading it.
    pub fn matches(&self, size: u64, mtime_ns: i128) -> bool {
        self.size == size && self.mtime_ns == mtime_ns
    }
}

/// One chunk: where it comes from and where its text is.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkRecord {
    /// Index into [`ChunkTable::files`].
    pub file: u32,
    /// 1-based position of the chunk in its file (the `n` of `path#n`).
    pub n: u32,
    /// Headings above the chunk, outermost first.
    pub heading_path: HeadingPath,
    /// First and last line in the source file, 1-based, inclusive.
    pub lines: (u32, u32),
    /// Byte offset of the text in the uncompressed stream of all texts.
    pub text_start: u64,
    /// Byte length of the text.
    pub text_len: u32,
    /// CRC-32 of the text, checked whenever the text is read.
    pub text_crc: u32,
    /// True when the chunk's vector is non-zero (the model knew some of its
    /// tokens); lets a search tell a zeroed vector file from real zeros.
    pub has_vector: bool,
    /// The chunk's identity in the sparse list: kept while the chunk is
    /// carried from generation to generation, so the sparse index is
    /// updated rather than rebuilt (see [`crate::lists::sparse`]).
    pub uid: u32,
}

/// A chunk record as stored in `chunks.bin` (little-endian, 48 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub struct RawChunk {
    text_start: u64,
    file: u32,
    n: u32,
    line_first: u32,
    line_last: u32,
    text_len: u32,
    text_crc: u32,
    heading_start: u32,
    heading_len: u32,
    flags: u32,
    uid: u32,
}

/// A file's size and modification time as `stamps.bin` stores them.
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[repr(C)]
struct RawStamp {
    size: u64,
    /// The low and high 64 bits of the modification time, nanoseconds
    /// since the Unix epoch.
    mtime_low: u64,
    mtime_high: i64,
}

impl RawStamp {
    fn of(stamp: &FileStamp) -> Self {
        Self {
            size: stamp.size,
            mtime_low: stamp.mtime_ns as u64,
            mtime_high: (stamp.mtime_ns >> 64) as i64,
        }
    }

    fn mtime_ns(&self) -> i128 {
        (i128::from(self.mtime_high) << 64) | i128::from(self.mtime_low)
    }
}

/// A [`FileEntry`] as `files.bin` stores it (the same postcard shape):
/// its metadata without the [`PATH_KEYS`], which repeat the path and
/// which decoding puts back. Before format 21 they were stored.
#[derive(Serialize)]
struct StoredEntry<'a> {
    path: &'a str,
    metadata: WithoutPathKeys<'a>,
    stamp: &'a FileStamp,
}

/// Metadata serialized without its [`PATH_KEYS`].
struct WithoutPathKeys<'a>(&'a Metadata);

impl Serialize for WithoutPathKeys<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let kept = || {
            self.0
                .iter()
                .filter(|(key, _)| !PATH_KEYS.contains(&key.as_str()))
        };
        // postcard writes a map's length first, so it must be exact.
        let mut map = serializer.serialize_map(Some(kept().count()))?;
        for (key, values) in kept() {
            map.serialize_entry(key, values)?;
        }
        map.end()
    }
}

/// A file entry encoded for `files.bin`, without its [`PATH_KEYS`].
fn encode_entry(entry: &FileEntry) -> postcard::Result<Vec<u8>> {
    postcard::to_stdvec(&StoredEntry {
        path: &entry.path,
        metadata: WithoutPathKeys(&entry.metadata),
        stamp: &entry.stamp,
    })
}

/// A file entry decoded from `files.bin`, with its [`PATH_KEYS`] put back
/// (an entry written before format 21 still holds them, with the same
/// values).
fn decode_entry(bytes: &[u8]) -> postcard::Result<FileEntry> {
    let mut entry: FileEntry = postcard::from_bytes(bytes)?;
    add_path_metadata(&mut entry.metadata, &entry.path);
    Ok(entry)
}

/// `RawChunk::flags` bit: the chunk has a non-zero vector.
const HAS_VECTOR: u32 = 1;

/// Writes the chunk table into `gen_dir`, fsynced (the texts are written
/// by a [`TextWriter`]). Its three parts — the chunk records with their
/// headings, the file entries, and the dates and metadata index — are
/// built and written at once, on any core (`rayon::join`).
pub fn write_table(gen_dir: &Path, table: &ChunkTable) -> Result<()> {
    let (chunks, (files, dates)) = rayon::join(
        || write_chunks(gen_dir, table),
        || {
            rayon::join(
                || write_files(gen_dir, table),
                || write_dates_and_metadata(gen_dir, table),
            )
        },
    );
    chunks.and(files).and(dates)
}

/// Writes `table`'s chunk records and their heading paths.
fn write_chunks(gen_dir: &Path, table: &ChunkTable) -> Result<()> {
    // A path is written once and shared: sections repeat their headings
    // across chunks and files (a split section, the same outline in every
    // page of a folder), and a record points at its path by offset.
    let mut headings = String::new();
    let mut written: FxHashMap<&str, u32> = FxHashMap::default();
    let mut raw = Vec::with_capacity(table.chunks.len());
    for c in &table.chunks {
        let path = c.heading_path.0.as_str();
        let heading_start = *written.entry(path).or_insert_with(|| {
            let start = headings.len() as u32;
            headings.push_str(path);
            start
        });
        raw.push(RawChunk {
            text_start: c.text_start,
            file: c.file,
            n: c.n,
            line_first: c.lines.0,
            line_last: c.lines.1,
            text_len: c.text_len,
            text_crc: c.text_crc,
            heading_start,
            heading_len: path.len() as u32,
            flags: if c.has_vector { HAS_VECTOR } else { 0 },
            uid: c.uid,
        });
    }
    write_with_blocks(&gen_dir.join(CHUNKS_FILE), bytemuck::cast_slice(&raw))?;
    write_with_blocks(&gen_dir.join(HEADINGS_FILE), headings.as_bytes())
}

/// Writes `table`'s file entries and their offsets, the paths and stamps
/// columns, and each file's chunks.
fn write_files(gen_dir: &Path, table: &ChunkTable) -> Result<()> {
    let mut files = Vec::new();
    let mut offsets: Vec<u64> = vec![0];
    let mut paths = String::new();
    let mut path_offsets: Vec<u64> = vec![0];
    let mut stamps = Vec::with_capacity(table.files.len());
    for entry in &table.files {
        files.extend(encode_entry(entry).context("cannot encode a file entry")?);
        offsets.push(files.len() as u64);
        paths.push_str(&entry.path);
        path_offsets.push(paths.len() as u64);
        stamps.push(RawStamp::of(&entry.stamp));
    }
    let le =
        |offsets: &[u64]| -> Vec<u8> { offsets.iter().flat_map(|o| o.to_le_bytes()).collect() };
    write_with_blocks(&gen_dir.join(FILE_INDEX_FILE), &le(&offsets))?;
    write_with_blocks(&gen_dir.join(FILES_FILE), &files)?;
    write_with_blocks(&gen_dir.join(PATH_INDEX_FILE), &le(&path_offsets))?;
    write_with_blocks(&gen_dir.join(PATHS_FILE), paths.as_bytes())?;
    write_with_blocks(&gen_dir.join(STAMPS_FILE), bytemuck::cast_slice(&stamps))?;
    let starts = chunk_starts(table.files.len(), table.chunks.iter().map(|c| c.file));
    write_with_blocks(
        &gen_dir.join(FILE_CHUNKS_FILE),
        bytemuck::cast_slice(&starts),
    )
}

/// Each of `files` files' first chunk ordinal, then the number of chunks,
/// given every chunk's file in ordinal order (chunks are sorted by file).
fn chunk_starts(files: usize, chunk_files: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut starts = vec![0u32; files + 1];
    for file in chunk_files {
        if let Some(next) = starts.get_mut(file as usize + 1) {
            *next += 1;
        }
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    starts
}

/// Writes each of `table`'s files' document date and the metadata index.
fn write_dates_and_metadata(gen_dir: &Path, table: &ChunkTable) -> Result<()> {
    let dates: Vec<u8> = table
        .files
        .iter()
        .flat_map(|f| f.date().seconds.to_le_bytes())
        .collect();
    write_with_blocks(&gen_dir.join(DATES_FILE), &dates)?;
    metadata_index::write(gen_dir, table.files.iter().map(|f| &f.metadata))
}

/// The chunk records in `bytes` of `chunks.bin` (empty for an empty file).
fn raw_records(bytes: &[u8]) -> Result<&[RawChunk], bytemuck::PodCastError> {
    match bytes {
        [] => Ok(&[]),
        bytes => bytemuck::try_cast_slice(bytes),
    }
}

/// Reads record `index` of a table of fixed-size records (`chunks.bin`'s
/// chunks, `stamps.bin`'s stamps), its bytes checked (`None` past the end).
fn checked_record<T: Pod>(table: &CheckedMap, index: u32) -> Result<Option<&T>> {
    let size = std::mem::size_of::<T>();
    let start = index as usize * size;
    if start + size > table.len() {
        return Ok(None);
    }
    let bytes = table.bytes(start..start + size)?;
    Ok(Some(bytemuck::from_bytes(bytes)))
}

/// Per chunk, whether its vector is non-zero: a shared view of the chunk
/// table, cheap to clone and to open.
#[derive(Debug, Clone)]
pub struct VectorFlags {
    chunks: Arc<CheckedMap>,
}

impl VectorFlags {
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.chunks.len() / std::mem::size_of::<RawChunk>()
    }

    /// True when there is no chunk.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether chunk `ord` has a non-zero vector (`None` past the end); an
    /// error when its record is damaged.
    pub fn get(&self, ord: ChunkOrd) -> Result<Option<bool>> {
        Ok(checked_record::<RawChunk>(&self.chunks, ord)?.map(|c| c.flags & HAS_VECTOR != 0))
    }
}

/// A read-only, memory-mapped view of one generation.
#[derive(Debug)]
pub struct Generation {
    dir: PathBuf,
    chunks: Arc<CheckedMap>,
    headings: CheckedMap,
    file_index: CheckedMap,
    files: CheckedMap,
    /// The paths column and its offsets, when written (format 27).
    paths: Option<(CheckedMap, CheckedMap)>,
    /// The stamps column, when written (format 27).
    stamps: Option<CheckedMap>,
    dates: Option<CheckedMap>,
    file_chunks: Option<CheckedMap>,
    metadata: Option<MetadataIndex>,
    texts: TextStore,
}

/// One chunk as shown in results.
#[derive(Debug, Clone)]
pub struct ChunkView {
    /// The file the chunk comes from.
    pub file: FileEntry,
    /// The chunk record.
    pub record: ChunkRecord,
    /// The chunk's text.
    pub text: String,
}

impl ChunkView {
    /// The stable chunk id, `"{path}#{n}"`.
    pub fn id(&self) -> String {
        format!("{}#{}", self.file.path, self.record.n)
    }

    /// The heading path joined for display: `A > B > C`.
    pub fn heading(&self) -> String {
        self.record.heading_path.display()
    }

    /// The text the lists index for this chunk (see [`searchable_text`]).
    pub fn searchable_text(&self) -> String {
        searchable_text(&self.record.heading_path, &self.text)
    }
}

impl Generation {
    /// Opens generation `generation` under `index_dir`, whose files the
    /// manifest records in `checksums`, after the
    /// checks of [`checks::check_on_open`].
    pub fn open(index_dir: &Path, generation: u64, checksums: &Checksums) -> Result<Self> {
        ensure!(
            cfg!(target_endian = "little"),
            "memidx reads indexes on little-endian machines only"
        );
        let dir = super::generation_dir(index_dir, generation);
        checks::check_on_open(&dir, checksums)?;
        for name in REQUIRED_FILES.iter().chain([&TEXTS_FILE, &TEXT_INDEX_FILE]) {
            ensure!(
                checksums.contains_key(*name),
                damaged(&dir.join(name), "is not in the manifest")
            );
        }
        let table = |name| CheckedMap::open(&dir, name, checksums);
        let generation = Self {
            chunks: Arc::new(table(CHUNKS_FILE)?),
            headings: table(HEADINGS_FILE)?,
            file_index: table(FILE_INDEX_FILE)?,
            files: table(FILES_FILE)?,
            paths: match checksums.contains_key(PATHS_FILE) {
                true => Some((table(PATH_INDEX_FILE)?, table(PATHS_FILE)?)),
                false => None,
            },
            stamps: match checksums.contains_key(STAMPS_FILE) {
                true => Some(table(STAMPS_FILE)?),
                false => None,
            },
            dates: match checksums.contains_key(DATES_FILE) {
                true => Some(table(DATES_FILE)?),
                false => None,
            },
            file_chunks: match checksums.contains_key(FILE_CHUNKS_FILE) {
                true => Some(table(FILE_CHUNKS_FILE)?),
                false => None,
            },
            metadata: match checksums.contains_key(METADATA_INDEX_FILE) {
                true => Some(MetadataIndex::open(
                    &dir.join(METADATA_INDEX_FILE),
                    table(METADATA_INDEX_FILE)?,
                )?),
                false => None,
            },
            texts: TextStore::open(&dir)?,
            dir,
        };
        generation.raw_chunks()?;
        generation.file_offsets()?;
        Ok(generation)
    }

    /// The generation folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The chunk records, viewed in place, unchecked: for sizing only.
    fn raw_chunks(&self) -> Result<&[RawChunk]> {
        raw_records(self.chunks.unchecked())
            .map_err(|_| anyhow::anyhow!(damaged(&self.dir.join(CHUNKS_FILE), "has a bad length")))
    }

    /// The file offsets (one per file, plus the end), unchecked: for
    /// sizing only ([`Generation::file_range`] reads them checked).
    fn file_offsets(&self) -> Result<&[u64]> {
        // Called once per file entry read: the path is built only for an error.
        let path = || self.dir.join(FILE_INDEX_FILE);
        let offsets: &[u64] = match self.file_index.unchecked() {
            [] => &[],
            bytes => bytemuck::try_cast_slice(bytes)
                .map_err(|_| anyhow::anyhow!(damaged(&path(), "has a bad length")))?,
        };
        ensure!(
            !offsets.is_empty() || self.files.is_empty(),
            damaged(&path(), "is empty")
        );
        Ok(offsets)
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.raw_chunks().map_or(0, <[RawChunk]>::len)
    }

    /// True when the generation holds no chunk.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.file_offsets().map_or(0, |o| o.len().saturating_sub(1))
    }

    /// The index of the file chunk `ord` comes from (a search folds its
    /// results by file with it, reading only the chunk's record).
    pub fn file_of_chunk(&self, ord: ChunkOrd) -> Result<u32> {
        Ok(self.raw(ord)?.file)
    }

    /// Chunk record `ord`, its bytes checked.
    fn raw(&self, ord: ChunkOrd) -> Result<&RawChunk> {
        checked_record(&self.chunks, ord)?.with_context(|| {
            damaged(
                &self.dir.join(CHUNKS_FILE),
                "names a chunk it does not hold",
            )
        })
    }

    /// Each file's first chunk ordinal, then the number of chunks (chunks
    /// are sorted by file): read from `file_chunks.u32`, checked, or for a
    /// generation written before it, worked out from the chunk records.
    pub fn chunk_starts(&self) -> Result<std::borrow::Cow<'_, [u32]>> {
        let Some(table) = &self.file_chunks else {
            let files = self.raw_chunks()?.iter().map(|c| c.file);
            return Ok(std::borrow::Cow::Owned(chunk_starts(
                self.file_count(),
                files,
            )));
        };
        let path = || self.dir.join(FILE_CHUNKS_FILE);
        let starts: &[u32] = bytemuck::try_cast_slice(table.all()?)
            .map_err(|_| anyhow::anyhow!(damaged(&path(), "has a bad length")))?;
        ensure!(
            starts.len() == self.file_count() + 1
                && starts.first() == Some(&0)
                && starts.last().copied() == Some(self.len() as u32)
                && starts.is_sorted(),
            damaged(&path(), "does not hold each file's chunks")
        );
        Ok(std::borrow::Cow::Borrowed(starts))
    }

    /// The file index of every chunk, in ordinal order.
    pub fn chunk_files(&self) -> Result<impl Iterator<Item = u32> + '_> {
        let starts = self.chunk_starts()?;
        let files = starts.len().saturating_sub(1);
        Ok((0..files).flat_map(move |file| {
            std::iter::repeat_n(file as u32, (starts[file + 1] - starts[file]) as usize)
        }))
    }

    /// Which chunks have a non-zero vector, read on demand (a search checks
    /// only its hits, so opening costs nothing per chunk).
    pub fn vector_flags(&self) -> VectorFlags {
        VectorFlags {
            chunks: self.chunks.clone(),
        }
    }

    /// The chunks of file `file`, as an ordinal range.
    pub fn chunks_of_file(&self, file: u32) -> Result<Range<ChunkOrd>> {
        if let Some(table) = &self.file_chunks {
            let start = file as usize * 4;
            let bad = || {
                anyhow::anyhow!(damaged(
                    &self.dir.join(FILE_CHUNKS_FILE),
                    "names chunks it does not hold"
                ))
            };
            let bytes = table.bytes(start..start + 8).map_err(|_| bad())?;
            let bounds: &[u32] = bytemuck::cast_slice(bytes);
            ensure!(
                bounds[0] <= bounds[1] && bounds[1] as usize <= self.len(),
                bad()
            );
            return Ok(bounds[0]..bounds[1]);
        }
        let start = self.partition_chunks(0..self.len() as ChunkOrd, |c| c.file < file)?;
        let end = self.partition_chunks(start..self.len() as ChunkOrd, |c| c.file <= file)?;
        Ok(start..end)
    }

    /// The first chunk in `chunks` whose record fails `before`, which holds
    /// for a leading run of them.
    fn partition_chunks(
        &self,
        chunks: Range<ChunkOrd>,
        before: impl Fn(&RawChunk) -> bool,
    ) -> Result<ChunkOrd> {
        partition(chunks, |ord| Ok(before(self.raw(ord)?)))
    }

    /// Where file `index`'s entry lies in `files.bin`.
    fn file_range(&self, index: u32) -> Result<Range<usize>> {
        span(&self.file_index, index, || self.dir.join(FILE_INDEX_FILE))
    }

    /// The bytes of file `index`'s entry in `files.bin`.
    fn entry_bytes(&self, index: u32) -> Result<&[u8]> {
        self.files.bytes(self.file_range(index)?)
    }

    /// The file entry at `index`, decoded.
    pub fn file(&self, index: u32) -> Result<FileEntry> {
        decode_entry(self.entry_bytes(index)?)
            .with_context(|| damaged(&self.dir.join(FILES_FILE), "does not decode"))
    }

    /// The size and modification time file `index` had when indexed: from
    /// the stamps column, or its decoded entry.
    pub fn file_size_and_time(&self, index: u32) -> Result<(u64, i128)> {
        let Some(stamps) = &self.stamps else {
            let stamp = self.file(index)?.stamp;
            return Ok((stamp.size, stamp.mtime_ns));
        };
        let stamp: &RawStamp = checked_record(stamps, index)?.with_context(|| {
            damaged(&self.dir.join(STAMPS_FILE), "names a file it does not hold")
        })?;
        Ok((stamp.size, stamp.mtime_ns()))
    }

    /// Every file's document date in seconds, in file order: viewed in
    /// place, or worked out from the file entries for a generation written
    /// before dates were stored.
    pub fn file_dates(&self) -> Result<std::borrow::Cow<'_, [i64]>> {
        let Some(table) = &self.dates else {
            let dates = self.files()?.iter().map(|f| f.date().seconds).collect();
            return Ok(std::borrow::Cow::Owned(dates));
        };
        let bytes = table.all()?;
        let path = self.dir.join(DATES_FILE);
        let dates: &[i64] = match bytes {
            // A generation of no file (a delta that only deletes).
            [] => &[],
            bytes => bytemuck::try_cast_slice(bytes)
                .map_err(|_| anyhow::anyhow!(damaged(&path, "has a bad length")))?,
        };
        ensure!(
            dates.len() == self.file_count(),
            damaged(&path, "does not hold one date per file")
        );
        Ok(std::borrow::Cow::Borrowed(dates))
    }

    /// The metadata value index, or `None` for a generation written before
    /// it existed (filters then read the file entries).
    pub fn metadata_index(&self) -> Option<&MetadataIndex> {
        self.metadata.as_ref()
    }

    /// Every file entry, decoded (for filters, status and re-indexing).
    pub fn files(&self) -> Result<Vec<FileEntry>> {
        (0..self.file_count() as u32)
            .map(|i| self.file(i))
            .collect()
    }

    /// The chunk record at `ord`, with its heading path decoded.
    pub fn record(&self, ord: ChunkOrd) -> Result<ChunkRecord> {
        let raw = self.raw(ord)?;
        let start = raw.heading_start as usize;
        let bytes = self
            .headings
            .bytes(start..start + raw.heading_len as usize)?;
        let joined = std::str::from_utf8(bytes)
            .with_context(|| damaged(&self.dir.join(HEADINGS_FILE), "holds invalid UTF-8"))?;
        let heading_path = HeadingPath(joined.to_string());
        Ok(ChunkRecord {
            file: raw.file,
            n: raw.n,
            heading_path,
            lines: (raw.line_first, raw.line_last),
            text_start: raw.text_start,
            text_len: raw.text_len,
            text_crc: raw.text_crc,
            has_vector: raw.flags & HAS_VECTOR != 0,
            uid: raw.uid,
        })
    }

    /// The text of chunk `ord`, checked against its CRC.
    pub fn text(&self, ord: ChunkOrd) -> Result<String> {
        let raw = self.raw(ord)?;
        self.texts.read(raw.text_start, raw.text_len, raw.text_crc)
    }

    /// The length in bytes of chunk `ord`'s text.
    pub fn text_len(&self, ord: ChunkOrd) -> Result<u64> {
        Ok(u64::from(self.raw(ord)?.text_len))
    }

    /// Length of the uncompressed text stream (live texts and garbage).
    pub fn text_stream_len(&self) -> Result<u64> {
        self.texts.stream_len()
    }

    /// The chunk at `ord`, with its file and text.
    pub fn chunk(&self, ord: ChunkOrd) -> Result<ChunkView> {
        let record = self.record(ord)?;
        let file = self.file(record.file)?;
        Ok(ChunkView {
            file,
            record,
            text: self.text(ord)?,
        })
    }

    /// Finds a chunk by its id `path#n`.
    pub fn find(&self, id: &str) -> Option<ChunkOrd> {
        let (path, n) = id.rsplit_once('#')?;
        let n: u32 = n.parse().ok()?;
        let file = self.file_index(path)?;
        self.chunks_of_file(file)
            .ok()?
            .find(|&o| self.raw(o).is_ok_and(|raw| raw.n == n))
    }

    /// The index of the file at `path` (files are sorted by path).
    pub fn file_index(&self, path: &str) -> Option<u32> {
        let count = self.file_count() as u32;
        let found = self.partition_files(0..count, |p| p < path).ok()?;
        (found < count && self.file_path(found).ok()? == path).then_some(found)
    }

    /// The files whose path starts with `prefix`: one run, since files
    /// are sorted by path, found by two binary searches.
    pub fn files_with_prefix(&self, prefix: &str) -> Result<Range<u32>> {
        let count = self.file_count() as u32;
        let first = self.partition_files(0..count, |path| path < prefix)?;
        let end = self.partition_files(first..count, |path| path.starts_with(prefix))?;
        Ok(first..end)
    }

    /// How many files have a path before `path` (files are sorted by
    /// path): where a file at `path` would stand among them.
    pub fn files_before(&self, path: &str) -> Result<u32> {
        self.partition_files(0..self.file_count() as u32, |p| p < path)
    }

    /// The first file in `files` whose path fails `before`, which holds
    /// for a leading run of them.
    fn partition_files(&self, files: Range<u32>, before: impl Fn(&str) -> bool) -> Result<u32> {
        partition(files, |index| Ok(before(self.file_path(index)?)))
    }

    /// The path of file `index`: from the paths column, or read from its
    /// entry without decoding the rest (the path is its first field).
    pub fn file_path(&self, index: u32) -> Result<&str> {
        if let Some((offsets, paths)) = &self.paths {
            let range = span(offsets, index, || self.dir.join(PATH_INDEX_FILE))?;
            return std::str::from_utf8(paths.bytes(range)?)
                .map_err(|_| anyhow::anyhow!(damaged(&self.dir.join(PATHS_FILE), "is not UTF-8")));
        }
        let (file_path, _) = postcard::take_from_bytes::<&str>(self.entry_bytes(index)?)
            .with_context(|| damaged(&self.dir.join(FILES_FILE), "does not decode"))?;
        Ok(file_path)
    }
}

/// Where item `index` lies in the table that `offsets` (one little-endian
/// u64 per item, plus the end; the file at `path`) cuts.
fn span(offsets: &CheckedMap, index: u32, path: impl Fn() -> PathBuf) -> Result<Range<usize>> {
    let start = index as usize * 8;
    let bounds = match start + 16 <= offsets.len() {
        true => offsets.bytes(start..start + 16)?,
        false => &[],
    };
    let offset = |i: usize| u64::from_le_bytes(bounds[i..i + 8].try_into().unwrap_or_default());
    match bounds.len() {
        16 if offset(0) <= offset(8) => Ok(offset(0) as usize..offset(8) as usize),
        _ => bail!(damaged(&path(), "names a file it does not hold")),
    }
}

/// The first index in `range` for which `before` is false, where it is true
/// for a leading run of them (a binary search; reading an item may fail).
fn partition(range: Range<u32>, before: impl Fn(u32) -> Result<bool>) -> Result<u32> {
    let (mut low, mut high) = (range.start, range.end);
    while low < high {
        let mid = low + (high - low) / 2;
        if before(mid)? {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    Ok(low)
}

/// The text a chunk is indexed under: its heading path, then its text.
///
/// The path is added even when the text opens with the chunk's own heading,
/// so heading words count twice — a deliberate boost: dropping the repeat
/// measured lower (docs/how-it-works.md).
pub fn searchable_text(heading_path: &HeadingPath, text: &str) -> String {
    if heading_path.is_empty() {
        text.to_string()
    } else {
        format!("{}\n{text}", heading_path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::manifest::{Counts, FORMAT_VERSION, Manifest};
    use crate::store::checks::Checksums;
    use crate::store::texts::TextWriter;
    use std::fs;

    fn sample_table() -> (ChunkTable, Vec<u8>) {
        let texts = b"alphabeta".to_vec();
        let file = |path: &str| {
            let mut metadata = Metadata::new();
            add_path_metadata(&mut metadata, path);
            FileEntry {
                path: path.into(),
                metadata,
                stamp: FileStamp::default(),
            }
        };
        let chunk = |file, n, start, len| ChunkRecord {
            file,
            n,
            heading_path: HeadingPath::new(&["H"]),
            lines: (1, 2),
            text_start: start,
            text_len: len,
            text_crc: crc32fast::hash(&texts[start as usize..(start + u64::from(len)) as usize]),
            has_vector: n == 1,
            uid: n,
        };
        let table = ChunkTable {
            files: vec![file("a.md"), file("b/c.md")],
            chunks: vec![chunk(0, 1, 0, 5), chunk(1, 1, 5, 2), chunk(1, 2, 7, 2)],
        };
        (table, texts)
    }

    fn write_sample(index_dir: &Path) -> Manifest {
        let (table, texts) = sample_table();
        write_generation(index_dir, &table, &texts)
    }

    fn write_generation(index_dir: &Path, table: &ChunkTable, texts: &[u8]) -> Manifest {
        let gen_dir = crate::store::generation_dir(index_dir, 1);
        fs::create_dir_all(&gen_dir).unwrap();
        write_table(&gen_dir, table).unwrap();
        let mut writer = TextWriter::create(&gen_dir, None).unwrap();
        for chunk in &table.chunks {
            let text = &texts[chunk.text_start as usize..][..chunk.text_len as usize];
            let start = writer.push(std::str::from_utf8(text).unwrap()).unwrap();
            assert_eq!(start, chunk.text_start);
        }
        writer.finish().unwrap();
        let checksums = checks::compute(&gen_dir, &Checksums::new()).unwrap();
        Manifest {
            delta: None,
            dense_index: Default::default(),
            format_version: FORMAT_VERSION,
            generation: 1,
            tool_version: String::new(),
            created_unix_ms: 0,
            root: String::new(),
            index_in_root: None,
            walk: Default::default(),
            tokenizer: Default::default(),
            bm25: Default::default(),
            sparse_fields: Default::default(),
            file_list: false,
            noise_floor: None,
            word_floor: None,
            chunker: Default::default(),
            model_dir: None,
            model_endpoint: None,
            model_files: None,
            embedder: crate::embed::EmbedderInfo {
                id: String::new(),
                dim: 1,
                fingerprint: String::new(),
            },
            fusion: crate::fusion::FusionDefaults {
                method: crate::fusion::FusionMethod::Rrf,
                sparse_weight: 1.0,
                dense_weight: 1.0,
                file_weight: 0.0,
                dense_feedback: 3,
                rrf_k: 60.0,
                window: None,
            },
            fusion_source: Default::default(),
            sparse: Default::default(),
            graph: None,
            counts: Counts::default(),
            skipped: Vec::new(),
            checksums,
        }
    }

    #[test]
    fn written_generation_reads_back_and_finds_ids() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = write_sample(dir.path());
        let generation =
            Generation::open(dir.path(), manifest.generation, &manifest.checksums).unwrap();
        assert_eq!(generation.len(), 3);
        let view = generation.chunk(2).unwrap();
        assert_eq!((view.id().as_str(), view.text.as_str()), ("b/c.md#2", "ta"));
        assert_eq!(view.record.heading_path.iter().collect::<Vec<_>>(), ["H"]);
        assert_eq!(generation.file_count(), 2);
        assert_eq!(generation.chunks_of_file(1).unwrap(), 1..3);
        let flags = generation.vector_flags();
        assert_eq!(
            (0..4)
                .map(|ord| flags.get(ord).unwrap())
                .collect::<Vec<_>>(),
            [Some(true), Some(true), Some(false), None]
        );
        assert_eq!(
            generation.chunk_files().unwrap().collect::<Vec<_>>(),
            [0, 1, 1]
        );
        assert_eq!(generation.find("b/c.md#1"), Some(1));
        assert_eq!(generation.find("a.md#1"), Some(0));
        assert_eq!(generation.find("a.md#2"), None);
        assert_eq!(generation.find("nope"), None);
        assert!(generation.chunk(3).is_err());
    }

    #[test]
    fn paths_are_stored_once_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (mut table, texts) = sample_table();
        for entry in &mut table.files {
            entry.metadata.insert("team".into(), vec!["db".into()]);
        }
        table.chunks[2].heading_path = HeadingPath::new(&["H", "I"]);
        let manifest = write_generation(dir.path(), &table, &texts);
        let gen_dir = crate::store::generation_dir(dir.path(), 1);

        // Three chunks, two distinct heading paths: "H" once, then "H\u{1f}I".
        let headings = fs::read(gen_dir.join(HEADINGS_FILE)).unwrap();
        assert_eq!(headings, "HH\u{1f}I".as_bytes());
        // Each file's path once: not again as its `path` key, nor its folder as `dir`.
        let files = fs::read(gen_dir.join(FILES_FILE)).unwrap();
        let count = |needle: &[u8]| files.windows(needle.len()).filter(|w| *w == needle).count();
        assert_eq!((count(b"b/c.md"), count(b"path"), count(b"dir")), (1, 0, 0));

        let generation =
            Generation::open(dir.path(), manifest.generation, &manifest.checksums).unwrap();
        assert_eq!(generation.files().unwrap(), table.files);
        let paths: Vec<HeadingPath> = (0..3)
            .map(|ord| generation.record(ord).unwrap().heading_path)
            .collect();
        let expected: Vec<_> = table
            .chunks
            .iter()
            .map(|c| c.heading_path.clone())
            .collect();
        assert_eq!(paths, expected);
    }

    #[test]
    fn paths_and_stamps_read_alike_from_their_columns_or_the_entries() {
        let dir = tempfile::tempdir().unwrap();
        let (mut table, texts) = sample_table();
        table.files[0].stamp.size = 7;
        table.files[0].stamp.mtime_ns = 1_700_000_000_123_456_789;
        table.files[1].stamp.size = u64::MAX;
        table.files[1].stamp.mtime_ns = -(1 << 70) - 3;
        let mut manifest = write_generation(dir.path(), &table, &texts);
        let read = |checksums: &Checksums| {
            let generation = Generation::open(dir.path(), 1, checksums).unwrap();
            (0..2)
                .map(|file| {
                    let path = generation.file_path(file).unwrap().to_string();
                    (path, generation.file_size_and_time(file).unwrap())
                })
                .collect::<Vec<_>>()
        };
        let expected: Vec<_> = (table.files.iter())
            .map(|f| (f.path.clone(), (f.stamp.size, f.stamp.mtime_ns)))
            .collect();
        assert_eq!(read(&manifest.checksums), expected);
        // A generation written before format 27 has no columns.
        let gen_dir = crate::store::generation_dir(dir.path(), 1);
        for name in [PATH_INDEX_FILE, PATHS_FILE, STAMPS_FILE] {
            fs::remove_file(gen_dir.join(name)).unwrap();
            manifest.checksums.retain(|file, _| !file.starts_with(name));
        }
        assert_eq!(read(&manifest.checksums), expected);
    }

    #[test]
    fn entries_decode_the_same_with_or_without_their_path_keys() {
        let (table, _) = sample_table();
        let mut entry = table.files[1].clone();
        entry.metadata.insert("team".into(), vec!["db".into()]);
        let new = encode_entry(&entry).unwrap();
        // Before format 21 the whole entry was stored.
        let old = postcard::to_stdvec(&entry).unwrap();
        assert!(new.len() < old.len());
        assert_eq!(decode_entry(&new).unwrap(), entry);
        assert_eq!(decode_entry(&old).unwrap(), entry);
    }

    #[test]
    fn searchable_text_puts_the_heading_path_first() {
        let path = HeadingPath::new(&["Runbook", "Pool"]);
        assert_eq!(path.len(), 2);
        assert_eq!(
            searchable_text(&path, "## Pool\nbody"),
            "Runbook > Pool\n## Pool\nbody"
        );
        let none = HeadingPath::default();
        assert_eq!((none.len(), none.iter().count()), (0, 0));
        assert_eq!(searchable_text(&none, "body"), "body");
    }

    #[test]
    fn corrupt_or_truncated_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = write_sample(dir.path());
        let gen_dir = crate::store::generation_dir(dir.path(), 1);
        let texts_path = gen_dir.join(TEXTS_FILE);
        let original = fs::read(&texts_path).unwrap();
        let message = |result: Result<Generation>| result.unwrap_err().to_string();

        fs::write(&texts_path, &original[..original.len() / 2]).unwrap();
        let err = message(Generation::open(
            dir.path(),
            manifest.generation,
            &manifest.checksums,
        ));
        assert!(
            err.contains("index is damaged") && err.contains(TEXTS_FILE),
            "{err}"
        );

        // Rewritten in place (new mtime): the open re-reads it and names it.
        let mut flipped = original.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0xff;
        fs::write(&texts_path, &flipped).unwrap();
        let err = message(Generation::open(
            dir.path(),
            manifest.generation,
            &manifest.checksums,
        ));
        assert!(
            err.contains("checksum mismatch") && err.contains(TEXTS_FILE),
            "{err}"
        );

        // Changed under the file system (mtime still sealed): reading a chunk names it.
        checks::seal(&texts_path).unwrap();
        let generation =
            Generation::open(dir.path(), manifest.generation, &manifest.checksums).unwrap();
        let errors: Vec<String> = (0..3)
            .filter_map(|ord| generation.chunk(ord).err())
            .map(|e| e.to_string())
            .collect();
        assert!(!errors.is_empty(), "a flipped byte went unnoticed");
        assert!(
            errors
                .iter()
                .all(|e| e.contains("index is damaged") && e.contains(TEXTS_FILE)),
            "{errors:?}"
        );

        fs::write(&texts_path, &original).unwrap();
        checks::seal(&texts_path).unwrap();
        assert_eq!(
            Generation::open(dir.path(), manifest.generation, &manifest.checksums)
                .unwrap()
                .chunk(0)
                .unwrap()
                .text,
            "alpha"
        );

        let mut bytes = fs::read(gen_dir.join(CHUNKS_FILE)).unwrap();
        bytes[3] ^= 0xff;
        fs::write(gen_dir.join(CHUNKS_FILE), bytes).unwrap();
        let err = message(Generation::open(
            dir.path(),
            manifest.generation,
            &manifest.checksums,
        ));
        assert!(
            err.contains("checksum mismatch") && err.contains(CHUNKS_FILE),
            "{err}"
        );
    }
}
