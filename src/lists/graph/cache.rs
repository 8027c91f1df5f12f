//! Every file's extracted entities, kept in the generation as
//! `graph-files.bin`, so the next build decodes unchanged files instead of
//! extracting them again.
//!
//! Extraction ([`EntityExtractor::file`]) is the costly, per-file part of a
//! graph build and depends on the file alone; pruning, relations and
//! communities depend on the whole corpus and are rebuilt every time.
//!
//! The file is framed as [`super::sections`] describes (magic `MIDXGENT`).
//! Its header ([`CacheHeader`]) names the extractor settings; its sections:
//!
//! ```text
//! file_offsets   u64 per file, plus the end: where its entry starts in the entry stream
//! fingerprints   u64 per file: xxh3 of everything extraction read (see [`fingerprint`])
//! block_offsets  u64 pairs (entry-stream start, compressed start) per block, plus the end
//! blocks         the entry stream, zstd-compressed in blocks of ~64 KiB ending on entries
//! ```
//! The entry stream is one postcard-encoded [`FileEntities`] per file —
//! files.idx/files.bin's per-file postcard with texts.bin's zstd blocks
//! (entity names repeat across files, so blocks compress about fivefold
//! where a lone entry would not).
//!
//! A reuse is trusted only when the new file's fingerprint equals the
//! stored one; a missing, foreign or damaged entry means "extract again",
//! never a failed build.

use std::fs::File;
use std::io::ErrorKind;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use memmap2::Mmap;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use super::entity::{EntityExtractor, FileEntities};
use super::sections::Framing;
use crate::store::atomic;
use crate::store::blocks::{self, BlockWriter};
use crate::store::generation::{ChunkRecord, FileEntry};

/// Name of the entity cache inside a generation folder.
pub const CACHE_FILE: &str = "graph-files.bin";

/// The format version this code writes and reads. Bump it whenever the
/// layout **or what [`EntityExtractor::file`] produces** changes: a cache of
/// another version is ignored (everything is extracted again).
pub const FORMAT_VERSION: u32 = 2;

/// How the cache file is framed.
const FRAMING: Framing = Framing {
    magic: b"MIDXGENT",
    version: FORMAT_VERSION,
    section_count: 4,
    what: "entity cache",
};

/// What the cache was made with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct CacheHeader {
    /// The extractor's settings; another extractor's entries are not reused.
    extractor: EntityExtractor,
    /// Files (entries) held.
    file_count: u32,
}

/// What identifies one file's extraction input: its path, metadata, and
/// each chunk's heading path, text length and text CRC-32 (the chunk table
/// already holds them, so no text is read). Equal fingerprints mean the
/// extractor would produce the same entities.
pub fn fingerprint(file: &FileEntry, chunks: &[ChunkRecord]) -> u64 {
    fn write_str(hasher: &mut Xxh3, text: &str) {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    let mut hasher = Xxh3::new();
    write_str(&mut hasher, &file.path);
    hasher.update(&(file.metadata.len() as u64).to_le_bytes());
    for (key, values) in &file.metadata {
        write_str(&mut hasher, key);
        hasher.update(&(values.len() as u64).to_le_bytes());
        for value in values {
            write_str(&mut hasher, value);
        }
    }
    hasher.update(&(chunks.len() as u64).to_le_bytes());
    for chunk in chunks {
        hasher.update(&(chunk.heading_path.len() as u64).to_le_bytes());
        for heading in chunk.heading_path.iter() {
            write_str(&mut hasher, heading);
        }
        hasher.update(&chunk.text_len.to_le_bytes());
        hasher.update(&chunk.text_crc.to_le_bytes());
    }
    hasher.digest()
}

/// Per-file extracted entities of a previous generation, memory-mapped;
/// entries are decoded on demand.
#[derive(Debug)]
pub struct EntityCache {
    map: Mmap,
    /// Byte ranges of the sections in `map`, in file order.
    spans: Vec<Range<usize>>,
    /// Per rayon thread, the last block it decompressed (a build reads
    /// files in order, each thread a run of them).
    last_blocks: Vec<Mutex<Option<Block>>>,
}

/// A decompressed block: its number and bytes.
type Block = (usize, Arc<Vec<u8>>);

/// The typed sections of a mapped cache.
struct Tables<'a> {
    /// Per file, where its entry starts in the entry stream, plus the end.
    offsets: &'a [u64],
    /// Per file, its fingerprint.
    fingerprints: &'a [u64],
    /// Per block, (entry-stream start, compressed start), plus the ends.
    blocks: &'a [[u64; 2]],
}

impl EntityCache {
    /// Opens `gen_dir`'s cache: `Ok(None)` when there is none, or it was
    /// written by another format version or extractor; an error when it is
    /// damaged (a caller builds without it: that only costs extraction).
    pub fn open(gen_dir: &Path) -> Result<Option<Self>> {
        let path = gen_dir.join(CACHE_FILE);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(err).with_context(|| format!("cannot open {}", path.display()));
            }
        };
        let damaged = || crate::store::damaged(&path, "cannot be read as an entity cache");
        let map = crate::store::map_opened(&file, &path)?.with_context(damaged)?;
        if FRAMING.version_of(&map).with_context(damaged)? != FORMAT_VERSION {
            return Ok(None);
        }
        let (header, spans) = FRAMING.parse(&map).with_context(damaged)?;
        let header: CacheHeader = postcard::from_bytes(header).with_context(damaged)?;
        if header.extractor != EntityExtractor::new() {
            return Ok(None);
        }
        let threads = rayon::current_num_threads().max(1);
        let cache = Self {
            map,
            spans,
            last_blocks: (0..threads).map(|_| Mutex::new(None)).collect(),
        };
        let tables = cache.tables().with_context(damaged)?;
        anyhow::ensure!(
            tables.offsets.len() == header.file_count as usize + 1
                && tables.fingerprints.len() == header.file_count as usize
                && !tables.blocks.is_empty(),
            damaged()
        );
        Ok(Some(cache))
    }

    /// The typed sections.
    fn tables(&self) -> Result<Tables<'_>> {
        let bytes = |index: usize| &self.map[self.spans[index].clone()];
        let misshapen = |e| anyhow::anyhow!("a section is misshapen: {e}");
        Ok(Tables {
            offsets: bytemuck::try_cast_slice(bytes(0)).map_err(misshapen)?,
            fingerprints: bytemuck::try_cast_slice(bytes(1)).map_err(misshapen)?,
            blocks: bytemuck::try_cast_slice(bytes(2)).map_err(misshapen)?,
        })
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.tables().map_or(0, |t| t.offsets.len() - 1)
    }

    /// True when it holds no file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entities of file `index`, if it is there, its fingerprint is
    /// `fingerprint` and it decodes; `None` means "extract it".
    pub fn get(&self, index: u32, fingerprint: u64) -> Option<FileEntities> {
        let Tables {
            offsets,
            fingerprints,
            ..
        } = self.tables().ok()?;
        if *fingerprints.get(index as usize)? != fingerprint {
            return None;
        }
        let start = *offsets.get(index as usize)?;
        let end = *offsets.get(index as usize + 1)?;
        let (block_start, block) = self.block_at(start)?;
        let range = start.checked_sub(block_start)?..end.checked_sub(block_start)?;
        let bytes =
            block.get(usize::try_from(range.start).ok()?..usize::try_from(range.end).ok()?)?;
        postcard::from_bytes(bytes).ok()
    }

    /// The decompressed block holding entry-stream offset `offset`, with
    /// the block's own start offset.
    fn block_at(&self, offset: u64) -> Option<(u64, Arc<Vec<u8>>)> {
        let blocks = self.tables().ok()?.blocks;
        let block = blocks::block_of(blocks, offset)?;
        let thread = rayon::current_thread_index().unwrap_or(0);
        let mut last = self.last_blocks[thread % self.last_blocks.len()]
            .lock()
            .ok()?;
        if let Some((cached, bytes)) = last.as_ref()
            && *cached == block
        {
            return Some((blocks[block][0], Arc::clone(bytes)));
        }
        let (start, bytes) =
            blocks::decompress(blocks, self.map.get(self.spans[3].clone())?, block)?;
        let bytes = Arc::new(bytes);
        *last = Some((block, Arc::clone(&bytes)));
        Some((start, bytes))
    }
}

/// A new generation's cache, built file after file, compressed as it goes;
/// [`NewEntityCache::write`] puts it into the generation folder.
#[derive(Debug)]
pub struct NewEntityCache {
    file_offsets: Vec<u64>,
    fingerprints: Vec<u64>,
    /// The entry stream, compressed as it grows.
    entries: BlockWriter<Vec<u8>>,
    /// Files whose entities came from the previous cache.
    reused: usize,
}

impl Default for NewEntityCache {
    fn default() -> Self {
        Self::new()
    }
}

impl NewEntityCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self {
            file_offsets: vec![0],
            fingerprints: Vec::new(),
            entries: BlockWriter::new(Vec::new()),
            reused: 0,
        }
    }

    /// Appends the next file's entities and fingerprint; `reused` tells
    /// whether they came from the previous cache (for [`Self::reused`]).
    pub fn push(&mut self, file: &FileEntities, fingerprint: u64, reused: bool) -> Result<()> {
        let entry = postcard::to_stdvec(file).context("cannot encode a file's entities")?;
        self.entries
            .push(&entry)
            .context("cannot compress the entity cache")?;
        self.file_offsets.push(self.entries.stream_len());
        self.fingerprints.push(fingerprint);
        self.reused += usize::from(reused);
        Ok(())
    }

    /// How many files' entities came from the previous cache.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// Writes it as `graph-files.bin` into `gen_dir` (fsynced; the folder
    /// becomes visible through the manifest, like `graph.bin`). Write it
    /// before the generation's checksums are computed, so they cover it.
    pub fn write(self, gen_dir: &Path) -> Result<()> {
        let (blocks, block_offsets) = self
            .entries
            .finish()
            .context("cannot compress the entity cache")?;
        let header = CacheHeader {
            extractor: EntityExtractor::new(),
            file_count: self.fingerprints.len() as u32,
        };
        let header = postcard::to_stdvec(&header).context("cannot encode the cache header")?;
        let bytes = FRAMING.encode(
            &header,
            &[
                bytemuck::cast_slice(&self.file_offsets),
                bytemuck::cast_slice(&self.fingerprints),
                bytemuck::cast_slice(&block_offsets),
                &blocks,
            ],
        );
        atomic::write_synced(&gen_dir.join(CACHE_FILE), &bytes)
    }
}
