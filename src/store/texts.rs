//! The chunk texts of one generation: `texts.bin`, every chunk's text in
//! zstd blocks ([`super::blocks`]), and `texts.idx`, the blocks' offsets.
//!
//! The text store only grows: a re-index copies the previous generation's
//! blocks and appends the texts of new chunks ([`TextWriter`]), so a
//! carried chunk keeps its `text_start`. The texts of removed chunks stay
//! behind as garbage until the indexer compacts (rewrites everything). Each
//! chunk's text has its own CRC, checked when it is read.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, ensure};
use memmap2::Mmap;

use super::blocks::{self, BlockWriter};
use super::{atomic, damaged, map_file};

/// File holding all chunk texts, compressed in blocks.
pub const TEXTS_FILE: &str = "texts.bin";
/// File holding the text blocks' offsets.
pub const TEXT_INDEX_FILE: &str = "texts.idx";

/// Writes a generation's text store as chunks arrive: the previous
/// generation's store is carried whole (copied) and new texts are appended
/// after it, compressed a block at a time, so only the open block is held
/// in memory.
pub struct TextWriter {
    path: PathBuf,
    blocks: BlockWriter<BufWriter<File>>,
}

impl TextWriter {
    /// Starts `gen_dir`'s text store: a copy of `base`'s (a previous
    /// generation folder) when given, else an empty one.
    pub fn create(gen_dir: &Path, base: Option<&Path>) -> Result<Self> {
        let path = gen_dir.join(TEXTS_FILE);
        let (closed, end) = match base {
            Some(base) => {
                let store = TextStore::open(base)?;
                let (starts, end) = store.blocks_and_end()?;
                fs::copy(base.join(TEXTS_FILE), &path)
                    .with_context(|| format!("cannot copy the texts into {}", gen_dir.display()))?;
                (starts.to_vec(), end)
            }
            None => {
                File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
                (Vec::new(), [0, 0])
            }
        };
        let file = fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(Self {
            path,
            blocks: BlockWriter::resume(BufWriter::new(file), closed, end),
        })
    }

    /// Appends one chunk's text; returns its start in the stream (a chunk
    /// always lies in one block).
    pub fn push(&mut self, text: &str) -> Result<u64> {
        self.blocks
            .push(text.as_bytes())
            .with_context(|| format!("cannot write {}", self.path.display()))
    }

    /// Closes the last block and writes the block index, fsynced.
    pub fn finish(self) -> Result<()> {
        let write_error = || format!("cannot write {}", self.path.display());
        let (file, index) = self.blocks.finish().with_context(write_error)?;
        let file = file
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(write_error)?;
        file.sync_all().with_context(write_error)?;
        let index: Vec<u8> = index.iter().flat_map(|v| v.to_le_bytes()).collect();
        let dir = self.path.parent().unwrap_or(Path::new("."));
        atomic::write_synced(&dir.join(TEXT_INDEX_FILE), &index)
    }
}

/// The compressed chunk texts of one generation folder, memory-mapped.
#[derive(Debug)]
pub struct TextStore {
    dir: PathBuf,
    texts: Option<Mmap>,
    text_index: Option<Mmap>,
    /// The last decompressed block (a re-index reads chunks in order).
    cache: Mutex<Option<(usize, Arc<Vec<u8>>)>>,
}

impl TextStore {
    /// Maps the text store of generation folder `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        Ok(Self {
            texts: map_file(&dir.join(TEXTS_FILE))?,
            text_index: map_file(&dir.join(TEXT_INDEX_FILE))?,
            cache: Mutex::new(None),
            dir: dir.to_path_buf(),
        })
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join(TEXT_INDEX_FILE)
    }

    /// The block index: (uncompressed start, compressed start) per block,
    /// then the end of both streams.
    fn index(&self) -> Result<&[u64]> {
        let index: &[u64] = match self.text_index.as_deref() {
            None => &[],
            Some(bytes) => bytemuck::try_cast_slice(bytes)
                .map_err(|_| anyhow::anyhow!(damaged(&self.index_path(), "has a bad length")))?,
        };
        ensure!(
            index.len() >= 2 && index.len().is_multiple_of(2),
            damaged(&self.index_path(), "is malformed")
        );
        Ok(index)
    }

    /// The block index split into the blocks' (uncompressed start,
    /// compressed start) pairs, flat, and the end of both streams.
    fn blocks_and_end(&self) -> Result<(&[u64], [u64; 2])> {
        let (starts, end) = self
            .index()?
            .split_last_chunk::<2>()
            .with_context(|| damaged(&self.index_path(), "is malformed"))?;
        Ok((starts, *end))
    }

    /// Length of the uncompressed stream.
    pub fn stream_len(&self) -> Result<u64> {
        Ok(self.blocks_and_end()?.1[0])
    }

    /// The `len` bytes at `start` of the uncompressed stream, checked
    /// against `crc`, as a string.
    pub fn read(&self, start: u64, len: u32, crc: u32) -> Result<String> {
        let path = self.dir.join(TEXTS_FILE);
        let (block_start, block) = self.block(start)?;
        let offset = (start - block_start) as usize;
        let bytes = block
            .get(offset..offset + len as usize)
            .with_context(|| damaged(&path, "holds a block that is too short"))?;
        ensure!(
            crc32fast::hash(bytes) == crc,
            damaged(&path, "checksum mismatch")
        );
        String::from_utf8(bytes.to_vec()).with_context(|| damaged(&path, "holds invalid UTF-8"))
    }

    /// The decompressed block holding uncompressed offset `offset`, with its start.
    fn block(&self, offset: u64) -> Result<(u64, Arc<Vec<u8>>)> {
        let index = self.index()?;
        let pairs: &[[u64; 2]] = bytemuck::cast_slice(index);
        let block = blocks::block_of(pairs, offset)
            .with_context(|| damaged(&self.index_path(), "does not cover a chunk"))?;
        if let Ok(cache) = self.cache.lock()
            && let Some((cached, bytes)) = cache.as_ref()
            && *cached == block
        {
            return Ok((pairs[block][0], Arc::clone(bytes)));
        }
        let path = self.dir.join(TEXTS_FILE);
        let (ustart, bytes) =
            blocks::decompress(pairs, self.texts.as_deref().unwrap_or_default(), block)
                .with_context(|| damaged(&path, "holds a block that does not decompress"))?;
        let bytes = Arc::new(bytes);
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some((block, Arc::clone(&bytes)));
        }
        Ok((ustart, bytes))
    }
}
