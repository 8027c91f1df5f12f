//! A stream of records stored as zstd-compressed blocks, with an index.
//!
//! The chunk texts (`texts.bin`) and the graph's entity cache
//! (`graph-files.bin`) are both streams of small records read one at a
//! time: compressed alone, a record hardly shrinks; compressed in blocks of
//! ~64 KiB (words and names repeat across records), markdown shrinks about
//! fourfold. A block always ends on a record's end, so a record is read by
//! decompressing exactly one block. The index holds, per block, its start
//! in the uncompressed stream and in the compressed one, then the end of
//! both: `[u64; 2]` pairs, little-endian. `zstd` (bulk API) compresses.

use std::io::{self, Write};

/// Uncompressed size a block reaches before it is closed.
pub const BLOCK_BYTES: usize = 64 * 1024;

/// zstd compression level of the blocks (zstd's default).
const ZSTD_LEVEL: i32 = 3;

/// Writes records into blocks as they arrive; only the open block is held
/// in memory.
#[derive(Debug)]
pub struct BlockWriter<W> {
    sink: W,
    /// (uncompressed start, compressed start) of every closed block, flat.
    index: Vec<u64>,
    /// The open block's records, and its start in the stream.
    block: Vec<u8>,
    block_start: u64,
    /// Length of the compressed stream written so far.
    compressed_len: u64,
}

impl<W: Write> BlockWriter<W> {
    /// A writer of a new stream into `sink`.
    pub fn new(sink: W) -> Self {
        Self::resume(sink, Vec::new(), [0, 0])
    }

    /// A writer that appends to a stream already in `sink`: `closed` is its
    /// index without the end pair, `end` that pair.
    pub fn resume(sink: W, closed: Vec<u64>, end: [u64; 2]) -> Self {
        Self {
            sink,
            index: closed,
            block: Vec::new(),
            block_start: end[0],
            compressed_len: end[1],
        }
    }

    /// Length of the uncompressed stream so far: where the next record starts.
    pub fn stream_len(&self) -> u64 {
        self.block_start + self.block.len() as u64
    }

    /// Appends one record; returns its start in the stream.
    pub fn push(&mut self, record: &[u8]) -> io::Result<u64> {
        let start = self.stream_len();
        self.block.extend_from_slice(record);
        if self.block.len() >= BLOCK_BYTES {
            self.close_block()?;
        }
        Ok(start)
    }

    fn close_block(&mut self) -> io::Result<()> {
        let compressed = zstd::bulk::compress(&self.block, ZSTD_LEVEL)?;
        self.sink.write_all(&compressed)?;
        self.index.extend([self.block_start, self.compressed_len]);
        self.compressed_len += compressed.len() as u64;
        self.block_start += self.block.len() as u64;
        self.block.clear();
        Ok(())
    }

    /// Closes the last block; returns the sink and the whole index (with
    /// the end pair).
    pub fn finish(mut self) -> io::Result<(W, Vec<u64>)> {
        if !self.block.is_empty() {
            self.close_block()?;
        }
        self.index.extend([self.block_start, self.compressed_len]);
        Ok((self.sink, self.index))
    }
}

/// The block holding uncompressed offset `offset`, given the index as
/// pairs (the end pair last): the last block starting at or before it, or
/// `None` when there is none.
pub fn block_of(index: &[[u64; 2]], offset: u64) -> Option<usize> {
    let (_, starts) = index.split_last()?;
    starts
        .partition_point(|pair| pair[0] <= offset)
        .checked_sub(1)
}

thread_local! {
    /// One decompression context per thread, kept between blocks: creating
    /// one for every block read showed in every search's profile (`None`
    /// if zstd could not allocate one; each read then fails as a damaged
    /// block, as a failed allocation did before).
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        std::cell::RefCell::new(zstd::bulk::Decompressor::new().ok());
}

/// Decompresses block `block` of the stream whose compressed bytes are
/// `compressed`: its uncompressed start and bytes, or `None` when the index
/// or the block is damaged.
pub fn decompress(index: &[[u64; 2]], compressed: &[u8], block: usize) -> Option<(u64, Vec<u8>)> {
    let ([start, compressed_start], [end, compressed_end]) =
        (*index.get(block)?, *index.get(block + 1)?);
    let bytes = compressed
        .get(usize::try_from(compressed_start).ok()?..usize::try_from(compressed_end).ok()?)?;
    let capacity = usize::try_from(end.checked_sub(start)?).ok()?;
    let block = DECOMPRESSOR
        .with_borrow_mut(|decompressor| decompressor.as_mut()?.decompress(bytes, capacity).ok())?;
    (block.len() as u64 == end - start).then_some((start, block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_from_their_block_and_a_resumed_stream_continues() {
        let records: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| format!("record {i} with some repeated words ").into_bytes())
            .collect();
        let mut writer = BlockWriter::new(Vec::new());
        let starts: Vec<u64> = records
            .iter()
            .take(2000)
            .map(|r| writer.push(r).unwrap())
            .collect();
        let (compressed, index) = writer.finish().unwrap();
        let pairs: Vec<[u64; 2]> = index.chunks(2).map(|p| [p[0], p[1]]).collect();
        assert!(pairs.len() > 2, "several blocks");
        assert!(compressed.len() < starts[1999] as usize / 3, "compresses");

        // Resume: carry the stream and append the rest.
        let (end, closed) = pairs.split_last().unwrap();
        let closed: Vec<u64> = closed.iter().flatten().copied().collect();
        let mut writer = BlockWriter::resume(compressed, closed, *end);
        let more: Vec<u64> = records[2000..]
            .iter()
            .map(|r| writer.push(r).unwrap())
            .collect();
        let (compressed, index) = writer.finish().unwrap();
        let pairs: Vec<[u64; 2]> = index.chunks(2).map(|p| [p[0], p[1]]).collect();
        for (record, start) in records.iter().zip(starts.iter().chain(&more)) {
            let block = block_of(&pairs, *start).unwrap();
            let (block_start, bytes) = decompress(&pairs, &compressed, block).unwrap();
            let at = (start - block_start) as usize;
            assert_eq!(&bytes[at..at + record.len()], &record[..]);
        }
        assert_eq!(block_of(&pairs[..1], 0), None, "no block, only the end");
        assert_eq!(decompress(&pairs, &compressed[..10], 0), None);
    }
}
