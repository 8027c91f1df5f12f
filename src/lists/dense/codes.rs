//! The dense list's approximate index: one sign bit per dimension of every
//! row (`codes.b1`), scanned first, so that only the best few thousand rows
//! are scored exactly.
//!
//! A row's code is the signs of its int8 values, 32 bytes for 256
//! dimensions: an eighth of the row. A search scores every allowed row's
//! code against the query as it is (asymmetric: the query keeps its
//! values, quantized to int8 like the rows', `Σ qᵢ · sign(xᵢ)`, which ranks
//! far better than comparing signs with signs), through one table of 256
//! integer partial sums per code byte, and
//! rescores the best `max(20 × window, rows / 64)` rows with the exact
//! scan's integer dot product. So a returned chunk's score is its exact
//! cosine; only recall is approximate, and it is measured
//! (bench/README.md). Each returned row's code is checked against its
//! vector, so a damaged code file is named, not trusted.
//!
//! Chosen against an inverted file (k-means cells, probed nearest first)
//! and an HNSW graph, measured on corpus-big with real queries
//! (bench/README.md): the cells of short queries' neighbours are too many
//! for either to reach 0.99 recall cheaply, and a graph took longer to
//! build than the rest of an index run. Codes cost one pass over the rows
//! to write and nothing to update, and a filter costs nothing extra: rows
//! it removes are skipped before their codes are scored.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use memmap2::Mmap;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::vectors::{VECTORS_FILE, map_exact};
use crate::lists::AllowSet;
use crate::store::generation::ChunkOrd;
use crate::store::{atomic, damaged};

/// The codes' file in a generation folder.
pub const CODES_FILE: &str = "codes.b1";

/// Rows with a vector from which `auto` writes codes: below it an exact
/// scan takes a few milliseconds, and a small index keeps exact recall
/// (the codes already save a third at 76,000 rows: bench/README.md).
pub const AUTO_MIN_ROWS: usize = 100_000;

/// Rows rescored per window chunk, at least.
pub const RESCORE_PER_WINDOW: usize = 20;

/// At least one row in this many is rescored.
pub const RESCORE_SHARE: usize = 64;

/// Fewest rows whose codes one parallel task scores.
const CODE_BLOCK: usize = 8192;

/// When an index run writes the codes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DenseIndexSetting {
    /// From [`AUTO_MIN_ROWS`] rows with a vector.
    #[default]
    Auto,
    /// Whatever the size.
    Always,
    /// Never: every search scans every row.
    Never,
}

impl DenseIndexSetting {
    /// Whether an index of `rows` rows with a vector gets codes.
    pub fn builds(self, rows: usize) -> bool {
        match self {
            Self::Auto => rows >= AUTO_MIN_ROWS,
            Self::Always => rows > 0,
            Self::Never => false,
        }
    }

    /// The setting's name, as the command line and `meta.json` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        }
    }
}

/// Rows a search of `window` chunks over `rows` rows rescores by default.
pub fn default_rescored(window: usize, rows: usize) -> usize {
    (RESCORE_PER_WINDOW * window).max(rows / RESCORE_SHARE)
}

/// Bytes of one row's code.
fn code_len(dim: usize) -> usize {
    dim.div_ceil(8)
}

/// The code of one row: bit `b` of byte `j` is set when value `8j + b` is
/// positive.
fn encode(values: &[i8], code: &mut [u8]) {
    for (byte, values) in code.iter_mut().zip(values.chunks(8)) {
        *byte = code_byte(values);
    }
}

/// The code byte of up to eight values.
#[inline]
fn code_byte(values: &[i8]) -> u8 {
    values
        .iter()
        .enumerate()
        .fold(0, |byte, (b, value)| byte | (u8::from(*value > 0) << b))
}

/// Rows read at a time when writing the codes.
const WRITE_BLOCK: usize = 1 << 16;

/// Writes the codes of the `rows` int8 vectors of dimension `dim` in `dir`
/// (durably), reading the vector file a block at a time rather than mapping
/// it, so an index run's memory does not grow by the vectors' size.
pub fn write(dir: &Path, rows: usize, dim: usize) -> Result<()> {
    let path = dir.join(VECTORS_FILE);
    let mut file = File::open(&path).with_context(|| damaged(&path, "cannot be opened"))?;
    let len = code_len(dim);
    let mut codes = vec![0u8; rows * len];
    let mut block = vec![0u8; WRITE_BLOCK * dim];
    for codes in codes.chunks_mut(WRITE_BLOCK * len.max(1)) {
        let values = &mut block[..codes.len() / len.max(1) * dim];
        file.read_exact(values)
            .with_context(|| damaged(&path, "is shorter than its rows"))?;
        let values: &[i8] = bytemuck::cast_slice(values);
        codes
            .par_chunks_mut(len.max(1))
            .zip(values.par_chunks(dim.max(1)))
            .for_each(|(code, row)| encode(row, code));
    }
    atomic::write_synced(&dir.join(CODES_FILE), &codes)
}

/// A generation's codes, memory-mapped.
pub struct SignCodes {
    path: PathBuf,
    map: Option<Mmap>,
    rows: usize,
    len: usize,
}

/// The query's partial sums, in integers: per code byte, per byte value,
/// the sum of the int8-quantized query's values at the byte's dimensions,
/// added where the bit is set and subtracted where it is not (at most
/// 8 × 127 in size, so a whole code's sum fits an `i32` with room).
struct Tables(Vec<[i16; 256]>);

impl Tables {
    /// The tables of the int8-quantized `query`, for codes of `len` bytes.
    fn new(query: &[i8], len: usize) -> Self {
        let mut tables = vec![[0i16; 256]; len];
        for (j, table) in tables.iter_mut().enumerate() {
            let values: Vec<i16> = (0..8)
                .map(|b| query.get(8 * j + b).map_or(0, |q| i16::from(*q)))
                .collect();
            for (byte, sum) in table.iter_mut().enumerate() {
                *sum = values
                    .iter()
                    .enumerate()
                    .map(|(b, q)| if byte >> b & 1 == 1 { *q } else { -q })
                    .sum();
            }
        }
        Self(tables)
    }

    /// The quantized query's dot product with the signs `code` stands for,
    /// summed in four independent lanes (one chain of dependent additions
    /// would take four times as long).
    #[inline(always)]
    fn score(&self, code: &[u8]) -> i32 {
        let mut lanes = [0i32; 4];
        let (codes, tables) = (code.chunks_exact(4), self.0.chunks_exact(4));
        let (code_rest, table_rest) = (codes.remainder(), tables.remainder());
        for (bytes, tables) in codes.zip(tables) {
            for lane in 0..4 {
                lanes[lane] += i32::from(tables[lane][bytes[lane] as usize]);
            }
        }
        for (byte, table) in code_rest.iter().zip(table_rest) {
            lanes[0] += i32::from(table[*byte as usize]);
        }
        lanes.iter().sum()
    }
}

/// A row and its code's score, ordered best first (ties: lower row first).
#[derive(Clone, Copy)]
struct Scored(i32, ChunkOrd);

fn best_first(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Keeps the `depth` best of `scored`, in no particular order.
fn keep_best(scored: &mut Vec<Scored>, depth: usize) {
    if scored.len() > depth && depth > 0 {
        scored.select_nth_unstable_by(depth - 1, best_first);
    }
    scored.truncate(depth);
}

/// The `depth` best rows offered, kept in a buffer of twice that which is
/// cut back to the best `depth` when full: a row that cannot beat the
/// last cut's worst is not even stored.
struct Best {
    depth: usize,
    kept: Vec<Scored>,
    /// The worst score kept at the last cut (`i32::MIN` before one).
    floor: i32,
}

impl Best {
    fn new(depth: usize) -> Self {
        Self {
            depth,
            kept: Vec::with_capacity(2 * depth.max(1)),
            floor: i32::MIN,
        }
    }

    #[inline]
    fn offer(&mut self, score: i32, ord: ChunkOrd) {
        // A row tying the floor may still win on its ordinal only if it is
        // lower than the kept one's, never true for rows offered in order.
        if score <= self.floor {
            return;
        }
        self.kept.push(Scored(score, ord));
        if self.kept.len() == self.kept.capacity() {
            keep_best(&mut self.kept, self.depth);
            self.floor = self.kept.iter().map(|s| s.0).min().unwrap_or(i32::MIN);
        }
    }

    fn into_kept(mut self) -> Vec<Scored> {
        keep_best(&mut self.kept, self.depth);
        self.kept
    }
}

impl SignCodes {
    /// Maps `dir`'s codes of `rows` rows of dimension `dim`, or `None` when
    /// the generation has none. A file of another length is damaged.
    pub fn open(dir: &Path, rows: usize, dim: usize) -> Result<Option<Self>> {
        let path = dir.join(CODES_FILE);
        if !path
            .try_exists()
            .with_context(|| damaged(&path, "cannot be opened"))?
        {
            return Ok(None);
        }
        let len = code_len(dim);
        let map = map_exact(&path, (rows * len) as u64, true)?;
        Ok(Some(Self {
            path,
            map,
            rows,
            len,
        }))
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    fn code(&self, ord: ChunkOrd) -> &[u8] {
        &self.bytes()[ord as usize * self.len..][..self.len]
    }

    /// How many rows there are.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The `depth` rows of `allow` whose codes score best against `query`
    /// (a unit vector's int8 values, as [`super::quantize`] gives them), best
    /// first (ties: lower row first).
    pub fn candidates(&self, query: &[i8], depth: usize, allow: &AllowSet) -> Vec<ChunkOrd> {
        let tables = Tables::new(query, self.len);
        // A few blocks per thread: each keeps its own best, then they merge.
        let block = self
            .rows
            .div_ceil(4 * rayon::current_num_threads())
            .max(CODE_BLOCK);
        let blocks: Vec<Vec<Scored>> = (0..self.rows.div_ceil(block))
            .into_par_iter()
            .map(|index| {
                let first = index * block;
                let rows = first..self.rows.min(first + block);
                // The common code lengths (256 and 384 dimensions) get loops
                // compiled for them: a known length unrolls.
                match self.len {
                    32 => self.best_of::<32>(&tables, rows, depth, allow),
                    48 => self.best_of::<48>(&tables, rows, depth, allow),
                    _ => self.best_of::<0>(&tables, rows, depth, allow),
                }
            })
            .collect();
        let mut scored: Vec<Scored> = blocks.into_iter().flatten().collect();
        keep_best(&mut scored, depth);
        scored.sort_unstable_by(best_first);
        scored.into_iter().map(|Scored(_, ord)| ord).collect()
    }

    /// The `depth` best of `rows` that `allow` lets through, for codes of
    /// `LEN` bytes (0: of the codes' own length).
    fn best_of<const LEN: usize>(
        &self,
        tables: &Tables,
        rows: std::ops::Range<usize>,
        depth: usize,
        allow: &AllowSet,
    ) -> Vec<Scored> {
        let len = if LEN == 0 { self.len } else { LEN };
        let codes = self.bytes()[rows.start * len..rows.end * len].chunks_exact(len);
        let rows = (rows.start as ChunkOrd..).zip(codes);
        let mut best = Best::new(depth);
        match allow {
            // Without a filter the loop tests nothing per row.
            AllowSet::All => rows.for_each(|(ord, code)| best.offer(tables.score(code), ord)),
            _ => rows
                .filter(|(ord, _)| allow.allows(*ord))
                .for_each(|(ord, code)| best.offer(tables.score(code), ord)),
        }
        best.into_kept()
    }

    /// Checks that row `ord`'s code is the signs of its int8 `values`.
    pub fn check(&self, ord: ChunkOrd, values: &[i8]) -> Result<()> {
        let code = self.code(ord);
        ensure!(
            values
                .chunks(8)
                .zip(code)
                .all(|(v, byte)| code_byte(v) == *byte),
            damaged(&self.path, "holds a code that does not match its vector")
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::normalize;
    use crate::lists::dense::{QuantizedVectors, StoredVectors, VectorWriter, quantize};

    const DIM: usize = 20;

    fn vector(i: usize) -> Vec<f32> {
        let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut v: Vec<f32> = (0..DIM)
            .map(|_| {
                x ^= x >> 29;
                x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
                (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        normalize(&mut v);
        v
    }

    fn written(dir: &Path, rows: usize) -> StoredVectors {
        let mut vectors = QuantizedVectors::zeros(rows, DIM);
        for row in 0..rows {
            vectors.set(row, &vector(row));
        }
        let mut writer = VectorWriter::create(dir).unwrap();
        writer.append(&vectors, &vec![0; rows]).unwrap();
        writer.finish().unwrap();
        write(dir, rows, DIM).unwrap();
        StoredVectors::open(dir, rows, DIM).unwrap()
    }

    #[test]
    fn a_code_scores_the_query_against_the_signs_of_the_row() {
        let query = vector(7);
        let values: Vec<i8> = (0..DIM as i8)
            .map(|i| if i % 3 == 0 { 5 } else { -2 })
            .collect();
        let mut code = vec![0u8; code_len(DIM)];
        encode(&values, &mut code);
        assert_eq!(code.len(), 3);
        let (quantized, _) = quantize(&query);
        let expected: i32 = quantized
            .iter()
            .zip(&values)
            .map(|(q, v)| {
                if *v > 0 {
                    i32::from(*q)
                } else {
                    -i32::from(*q)
                }
            })
            .sum();
        assert_eq!(Tables::new(&quantized, code.len()).score(&code), expected);
    }

    #[test]
    fn candidates_are_the_best_codes_of_the_allowed_rows() {
        let dir = tempfile::tempdir().unwrap();
        let rows = 20_000;
        let vectors = written(dir.path(), rows);
        let codes = SignCodes::open(dir.path(), rows, DIM).unwrap().unwrap();
        let (query, _) = quantize(&vector(123));
        let tables = Tables::new(&query, code_len(DIM));
        let mut all: Vec<Scored> = (0..rows as ChunkOrd)
            .map(|ord| Scored(tables.score(codes.code(ord)), ord))
            .collect();
        all.sort_unstable_by(best_first);
        let best: Vec<ChunkOrd> = all.iter().take(300).map(|s| s.1).collect();
        assert_eq!(codes.candidates(&query, 300, &AllowSet::All), best);
        // The row itself, whose code matches the query's signs, comes first.
        assert_eq!(best[0], 123);
        // A filter removes rows before they compete.
        let flags: Vec<bool> = (0..rows).map(|i| i % 2 == 1).collect();
        let odd = codes.candidates(&query, 300, &AllowSet::Only(flags.into()));
        let expected: Vec<ChunkOrd> = all
            .iter()
            .map(|s| s.1)
            .filter(|o| o % 2 == 1)
            .take(300)
            .collect();
        assert_eq!(odd, expected);
        for ord in [0, 5, 19_999] {
            codes
                .check(ord, vectors.quantized_row(ord).unwrap().0)
                .unwrap();
        }
    }

    #[test]
    fn a_damaged_code_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let vectors = written(dir.path(), 100);
        let path = dir.path().join(CODES_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3 * 3] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let codes = SignCodes::open(dir.path(), 100, DIM).unwrap().unwrap();
        let err = codes
            .check(3, vectors.quantized_row(3).unwrap().0)
            .unwrap_err();
        assert!(format!("{err:#}").contains("codes.b1"), "{err:#}");
        std::fs::write(&path, &bytes[1..]).unwrap();
        assert!(SignCodes::open(dir.path(), 100, DIM).is_err());
        std::fs::remove_file(&path).unwrap();
        assert!(SignCodes::open(dir.path(), 100, DIM).unwrap().is_none());
    }
}
