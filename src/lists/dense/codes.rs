//! The dense list's approximate index: one sign bit per dimension of every
//! row (`codes.b32`), scanned first, so that only the best few thousand rows
//! are scored exactly.
//!
//! A row's code is the signs of its int8 values, 32 bytes for 256
//! dimensions: an eighth of the row. A search scores every allowed row's
//! code against the query as it is (asymmetric: the query keeps its
//! values, quantized to int8 like the rows', `Σ qᵢ · sign(xᵢ)`, which ranks
//! far better than comparing signs with signs), in exact integers, a block
//! of 32 rows at a time ([`code_scan`](super::code_scan): the file keeps
//! each block's codes byte by byte for it), and
//! rescores the best `max(20 × window, 9 × √rows)` rows with the exact
//! scan's integer dot product. So a returned chunk's score is its exact
//! cosine; only recall is approximate, and it is measured
//! (bench/README.md). Each returned row's code is checked against its
//! vector, so a damaged code file is named, not trusted.
//!
//! The codes are stored by cell ([`cells`]): a search scores the codes of
//! the cells nearest its query that hold [`PROBE_PER_RESCORED`] times the
//! rows it rescores (all of them in an index too small for that to save
//! anything), or the share `--dense-probe` gives. An HNSW graph was
//! measured too and took longer to build than the rest of an index run.
//! A filter costs little extra: rows it removes are skipped before their
//! codes compete, and only the rows it allows count towards the probe, so
//! a filtered search probes more cells, and one that allows under
//! [`PROBE_PER_RESCORED`] times the rows it rescores over
//! [`MAX_DEFAULT_PROBE`] scores every code (measured: bench/README.md).

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use memmap2::Mmap;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::cells::{self, Cells, Probe};
use super::code_scan::{BLOCK_ROWS, QueryTables, byte_offset};
use super::prefetch::prefetch;
use super::vectors::{VECTORS_FILE, map_exact, present};
use crate::lists::AllowSet;
use crate::store::generation::ChunkOrd;
use crate::store::{atomic, damaged};

/// The codes' file in a generation folder. (Formats 20 and 21 kept the
/// codes row by row in `codes.b1`, which this build does not read: such an
/// index scans every row until its next index run.)
pub const CODES_FILE: &str = "codes.b32";

/// Rows (chunks) from which `auto` writes codes. They cost an eighth
/// of the vectors and one pass to write; a search uses them only when it
/// covers [`AUTO_SEARCH_MIN_ROWS`] rows, so a small index's codes serve
/// when it is searched together with others (several small indexes must
/// not each be scanned row by row where one index of them all would not).
pub const AUTO_MIN_ROWS: usize = 10_000;

/// Rows a search must cover (all the indexes it searches together) for
/// `auto`'s codes to serve it: below it an exact scan takes a few
/// milliseconds, and a small index keeps exact recall (the codes already
/// save a third at 76,000 rows: bench/README.md).
pub const AUTO_SEARCH_MIN_ROWS: usize = 100_000;

/// Rows rescored per window chunk, at least.
pub const RESCORE_PER_WINDOW: usize = 20;

/// Rows rescored per square root of the rows, at least: the rows a search
/// must rescore to find its window grow far slower than the index
/// (measured at 1×, 4× and 10× corpus-big, bench/README.md).
pub const RESCORE_PER_ROOT: usize = 9;

/// How many blocks ahead of the one it scores a scan asks for codes
/// ([`prefetch`]): a page (4 KiB) and more at every code length.
const PREFETCH_BLOCKS: usize = 8;

/// Fewest blocks of codes one parallel task scores.
const TASK_BLOCKS: usize = 256;

/// When an index run writes the codes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DenseIndexSetting {
    /// Written from [`AUTO_MIN_ROWS`] rows, used by searches
    /// of [`AUTO_SEARCH_MIN_ROWS`] rows.
    #[default]
    Auto,
    /// Whatever the size.
    Always,
    /// Never: every search scans every row.
    Never,
}

impl DenseIndexSetting {
    /// Whether an index of `rows` rows (chunks, the unit of
    /// [`DenseIndexSetting::serves`] too) gets codes.
    pub fn builds(self, rows: usize) -> bool {
        match self {
            Self::Auto => rows >= AUTO_MIN_ROWS,
            Self::Always => rows > 0,
            Self::Never => false,
        }
    }

    /// Whether codes written under this setting serve a search over
    /// `searched` rows (of every index it searches).
    pub fn serves(self, searched: usize) -> bool {
        match self {
            Self::Auto => searched >= AUTO_SEARCH_MIN_ROWS,
            Self::Always => true,
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

/// Rows a search probes (in the cells nearest its query, [`cells`]) per
/// row it rescores, by default: the rows to rescore grow with the square
/// root of the index (see [`default_rescored`]), so the share probed
/// falls as the index grows, and a small index, whose window is a large
/// part of its rows, has every code scored.
pub const PROBE_PER_RESCORED: usize = 20;

/// The largest share of the allowed rows a search probes by default: a
/// probe of more saves little of the code scan and, under a filter, pays
/// for counting the allowed rows of the cells it walks.
pub const MAX_DEFAULT_PROBE: f64 = 0.5;

/// The share of the `allowed` rows with codes (those a search's filter
/// lets through) whose cells a search that rescores `depth` rows probes by
/// default ([`PROBE_PER_RESCORED`]); 1, every code scored, when that is
/// over [`MAX_DEFAULT_PROBE`].
pub fn default_probe(depth: usize, allowed: usize) -> f64 {
    let share = (PROBE_PER_RESCORED * depth) as f64 / allowed.max(1) as f64;
    if share > MAX_DEFAULT_PROBE {
        1.0
    } else {
        share
    }
}

/// Rows a search of `window` chunks over `rows` rows rescores by default.
pub fn default_rescored(window: usize, rows: usize) -> usize {
    (RESCORE_PER_WINDOW * window).max(RESCORE_PER_ROOT * rows.isqrt())
}

/// Bytes of one row's code (at least one, so blocks are never empty).
fn code_len(dim: usize) -> usize {
    dim.div_ceil(8).max(1)
}

/// Bytes of the codes of `rows` rows, whole blocks (the last one's rows
/// past the end are zeros).
fn file_len(rows: usize, len: usize) -> usize {
    rows.div_ceil(BLOCK_ROWS) * BLOCK_ROWS * len
}

/// The codes of up to [`BLOCK_ROWS`] rows of `dim` int8 `values` into
/// `block`, byte by byte: bit `b` of row `r`'s byte `j`, at
/// `j × BLOCK_ROWS + r`, is set when the row's value `8j + b` is positive.
fn encode_block(values: &[i8], dim: usize, block: &mut [u8]) {
    for (row, values) in values.chunks(dim.max(1)).enumerate() {
        for (byte, values) in values.chunks(8).enumerate() {
            block[byte * BLOCK_ROWS + row] = code_byte(values);
        }
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

/// Rows read at a time when writing the codes (whole blocks).
const WRITE_BLOCK: usize = 1 << 16;
const _: () = assert!(WRITE_BLOCK.is_multiple_of(BLOCK_ROWS));

/// Reads the `rows` int8 vectors of dimension `dim` in `path` in order, a
/// block of [`WRITE_BLOCK`] rows at a time rather than mapping them, so an
/// index run's memory does not grow by the vectors' size: `visit` gets each
/// block's first row and its values.
fn read_rows(
    path: &Path,
    rows: usize,
    dim: usize,
    visit: &mut dyn FnMut(usize, &[i8]),
) -> Result<()> {
    let mut file = File::open(path).with_context(|| damaged(path, "cannot be opened"))?;
    let mut values = vec![0u8; WRITE_BLOCK * dim];
    for first in (0..rows).step_by(WRITE_BLOCK) {
        let values = &mut values[..(rows - first).min(WRITE_BLOCK) * dim];
        file.read_exact(values)
            .with_context(|| damaged(path, "is shorter than its rows"))?;
        visit(first, bytemuck::cast_slice(values));
    }
    Ok(())
}

/// Writes the codes of the `rows` int8 vectors of dimension `dim` in `dir`
/// (durably), with their cells ([`cells`]): the codes in cell order.
pub fn write(dir: &Path, rows: usize, dim: usize) -> Result<()> {
    let path = dir.join(VECTORS_FILE);
    let len = code_len(dim);
    let mut codes = vec![0u8; file_len(rows, len)];
    let stride = cells::sample_stride(rows);
    let mut sample = Vec::new();
    let mut unit = vec![0f32; dim];
    read_rows(&path, rows, dim, &mut |first, values| {
        let count = values.len() / dim.max(1);
        codes[first * len..][..count.div_ceil(BLOCK_ROWS) * BLOCK_ROWS * len]
            .par_chunks_mut(BLOCK_ROWS * len)
            .zip(values.par_chunks(BLOCK_ROWS * dim.max(1)))
            .for_each(|(block, values)| encode_block(values, dim, block));
        for (row, values) in (first..).zip(values.chunks_exact(dim.max(1))) {
            if row % stride == 0 {
                cells::unit(values, &mut unit);
                sample.extend_from_slice(&unit);
            }
        }
    })?;
    let layout = cells::train(&codes, len, rows, dim, &sample, &mut |visit| {
        read_rows(&path, rows, dim, visit)
    })?;
    let ordered = cells::gather(&codes, len, layout.order());
    drop(codes);
    layout.write(dir)?;
    atomic::write_synced(&dir.join(CODES_FILE), &ordered)
}

/// A generation's codes, memory-mapped, with their cells when it has them.
pub struct SignCodes {
    path: PathBuf,
    map: Option<Mmap>,
    rows: usize,
    len: usize,
    /// The cells the codes are in the order of; `None`: in row order (a
    /// generation written before cells).
    cells: Option<Cells>,
}

/// One generation's codes as a search reads them: the rows it allows
/// and the blocks of codes it scores (all of them, or a probe's).
pub struct CodeSet<'a> {
    /// The codes.
    pub codes: &'a SignCodes,
    /// The rows allowed, by ordinal.
    pub allow: &'a AllowSet,
    /// The blocks scored, ascending and disjoint.
    pub blocks: Vec<Range<usize>>,
}

impl<'a> CodeSet<'a> {
    /// Every block of `codes`, the rows `allow` allows.
    pub fn whole(codes: &'a SignCodes, allow: &'a AllowSet) -> Self {
        Self {
            codes,
            allow,
            blocks: std::iter::once(0..codes.rows.div_ceil(BLOCK_ROWS)).collect(),
        }
    }
}

/// A row and its code's score, ordered best first (ties: lower row first).
#[derive(Clone, Copy)]
struct Scored(i32, ChunkOrd);

/// One block in this many is scored first to learn where the depth's
/// worst row scores (see [`best_across`]).
const SAMPLE_STRIDE: usize = 16;

/// The `depth` rows whose codes score best against `query` (a unit
/// vector's int8 values, as [`super::quantize`] gives them) over one or
/// several sets of codes searched as one, each with the rows its set allows
/// (`allowed` in all, as the caller has counted). Each row comes as its
/// code score, its set's position and its ordinal there, best first (ties:
/// the earlier set, then the lower row: the order of the sets' rows
/// numbered one after another).
///
/// Every [`SAMPLE_STRIDE`]-th block of every set is scored first, for one
/// floor that a quarter more than `depth` rows reach in expectation
/// ([`sampled_floor`]); then one pass over the codes, split over the
/// cores, keeps the allowed rows that reach it, and the best `depth` of
/// those are chosen. When fewer than `depth` rows reach the floor (the
/// margin makes it rare), the pass is repeated with every allowed row
/// competing, so the choice is always exact. (A first pass counting every
/// row's score in a histogram, then a second scoring again the blocks that
/// reach its floor, cost more: bench/README.md.)
pub fn best_across(
    sets: &[CodeSet<'_>],
    query: &[i8],
    depth: usize,
    allowed: usize,
) -> Vec<(i32, usize, ChunkOrd)> {
    let tables: Vec<QueryTables> = (sets.iter())
        .map(|set| QueryTables::new(query, set.codes.len))
        .collect();
    // A few tasks per thread: work for a thread whose core is free.
    let blocks: usize = sets
        .iter()
        .flat_map(|set| &set.blocks)
        .map(Range::len)
        .sum();
    let task = blocks
        .div_ceil(4 * rayon::current_num_threads())
        .max(TASK_BLOCKS);
    let mut tasks: Vec<(usize, Range<usize>)> = Vec::new();
    for (at, set) in sets.iter().enumerate() {
        for range in &set.blocks {
            tasks.extend(
                range
                    .clone()
                    .step_by(task)
                    .map(|first| (at, first..range.end.min(first + task))),
            );
        }
    }
    let sampled: Vec<(usize, usize)> = (sets.iter().enumerate())
        .flat_map(|(at, set)| {
            (set.blocks.iter().cloned().flatten())
                .step_by(SAMPLE_STRIDE)
                .map(move |block| (at, block))
        })
        .collect();
    let mut sample: Vec<i32> = sampled
        .into_par_iter()
        .flat_map_iter(|(at, block)| {
            let set = &sets[at];
            (set.codes).rows_reaching(&tables[at], block..block + 1, i32::MIN, set.allow)
        })
        .map(|Scored(score, _)| score)
        .collect();
    let floor = sampled_floor(&mut sample, depth, allowed);
    let reaching = |floor: i32| -> Vec<(i32, usize, ChunkOrd)> {
        tasks
            .par_iter()
            .flat_map_iter(|(at, blocks)| {
                let set = &sets[*at];
                (set.codes
                    .rows_reaching(&tables[*at], blocks.clone(), floor, set.allow))
                .into_iter()
                .map(move |Scored(score, ord)| (score, *at, ord))
            })
            .collect()
    };
    let mut kept = reaching(floor);
    if kept.len() < depth && floor > i32::MIN {
        kept = reaching(i32::MIN);
    }
    let best_first = |a: &(i32, usize, ChunkOrd), b: &(i32, usize, ChunkOrd)| {
        b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
    };
    let depth = depth.min(kept.len());
    if depth > 0 && depth < kept.len() {
        kept.select_nth_unstable_by(depth - 1, best_first);
    }
    kept.truncate(depth);
    kept.sort_unstable_by(best_first);
    kept
}

/// The score a pass keeps rows from, read off the sample `scores` (the
/// allowed rows of every [`SAMPLE_STRIDE`]-th block; `allowed` allowed rows
/// in all): the sample's score at the rank which, scaled up to every row,
/// a quarter more rows than `depth` reach, plus three standard deviations
/// of the sample's count. The lowest score when the sample has too few
/// rows for that rank.
fn sampled_floor(scores: &mut [i32], depth: usize, allowed: usize) -> i32 {
    let expected = (scores.len() * depth) as f64 / allowed.max(1) as f64;
    let rank = (1.25 * expected + 3.0 * expected.sqrt()).ceil() as usize + 1;
    if rank >= scores.len() {
        return i32::MIN;
    }
    let (_, floor, _) = scores.select_nth_unstable_by(rank - 1, |a, b| b.cmp(a));
    *floor
}

// A block's rows are the bits of a `u32`.
const _: () = assert!(BLOCK_ROWS == u32::BITS as usize);

/// The rows of a block whose scores are at least `floor`, one bit each.
#[inline]
fn at_or_above(scores: &[i32; BLOCK_ROWS], floor: i32) -> u32 {
    scores.iter().enumerate().fold(0, |rows, (row, &score)| {
        rows | u32::from(score >= floor) << row
    })
}

/// The first `rows` rows of a block, one bit each.
fn rows_below(rows: usize) -> u32 {
    match rows {
        0..BLOCK_ROWS => (1 << rows) - 1,
        _ => u32::MAX,
    }
}

/// Calls `visit` with each row of `rows` (a block's, one bit each, the
/// block's first at position `first`) that `allow` lets through, as its
/// ordinal (`row_at` a position's) and its place in the block.
#[inline]
fn for_each_allowed(
    mut rows: u32,
    first: usize,
    row_at: impl Fn(usize) -> ChunkOrd,
    allow: &AllowSet,
    mut visit: impl FnMut(ChunkOrd, usize),
) {
    while rows != 0 {
        let row = rows.trailing_zeros() as usize;
        rows &= rows - 1;
        let ord = row_at(first + row);
        if allow.allows(ord) {
            visit(ord, row);
        }
    }
}

impl SignCodes {
    /// Maps `dir`'s codes of `rows` rows of dimension `dim`, or `None` when
    /// the generation has none. A file of another length is damaged.
    pub fn open(dir: &Path, rows: usize, dim: usize) -> Result<Option<Self>> {
        let path = dir.join(CODES_FILE);
        if !present(&path)? {
            return Ok(None);
        }
        let len = code_len(dim);
        let map = map_exact(&path, file_len(rows, len) as u64, true)?;
        Ok(Some(Self {
            path,
            map,
            rows,
            len,
            cells: Cells::open(dir, rows, dim)?,
        }))
    }

    /// The blocks of the cells nearest `query` that hold `wanted` of the
    /// `allowed` rows `allow` lets through ([`Cells::probe`]); `None` for
    /// codes without cells.
    pub fn probe(
        &self,
        query: &[i8],
        wanted: usize,
        allow: &AllowSet,
        allowed: usize,
    ) -> Option<Probe> {
        Some(self.cells.as_ref()?.probe(query, wanted, allow, allowed))
    }

    /// The row whose code is at position `position`.
    #[inline]
    fn row_at(&self, position: usize) -> ChunkOrd {
        match &self.cells {
            Some(cells) => cells.row_at(position),
            None => position as ChunkOrd,
        }
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }

    /// Row `ord`'s code, gathered from its block.
    fn code(&self, ord: ChunkOrd) -> Result<Vec<u8>> {
        let position = match &self.cells {
            Some(cells) => cells.position(ord)? as ChunkOrd,
            None => ord,
        };
        Ok((0..self.len)
            .map(|byte| self.bytes()[byte_offset(position, byte, self.len)])
            .collect())
    }

    /// How many rows there are.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The allowed rows of the blocks `blocks` scoring at least `floor`.
    fn rows_reaching(
        &self,
        tables: &QueryTables,
        blocks: Range<usize>,
        floor: i32,
        allow: &AllowSet,
    ) -> Vec<Scored> {
        let mut kept = Vec::new();
        self.score_blocks(tables, blocks, floor, |first, rows, scores| {
            for_each_allowed(
                rows,
                first,
                |at| self.row_at(at),
                allow,
                |ord, row| {
                    kept.push(Scored(scores[row], ord));
                },
            );
        });
        kept
    }

    /// Scores the blocks `blocks` and calls `visit` with each block's first
    /// row, its rows scoring at least `floor` (one bit each; the padding
    /// past the last row never) and the block's scores.
    fn score_blocks(
        &self,
        tables: &QueryTables,
        blocks: Range<usize>,
        floor: i32,
        mut visit: impl FnMut(usize, u32, &[i32; BLOCK_ROWS]),
    ) {
        let block_bytes = BLOCK_ROWS * self.len;
        let codes = &self.bytes()[blocks.start * block_bytes..blocks.end * block_bytes];
        let mut scores = [0i32; BLOCK_ROWS];
        for (index, block) in (blocks.start..).zip(codes.chunks_exact(block_bytes)) {
            let ahead = (index - blocks.start + PREFETCH_BLOCKS) * block_bytes;
            if let Some(ahead) = codes.get(ahead..ahead + block_bytes) {
                prefetch(ahead);
            }
            tables.block_scores(block, &mut scores);
            let first = index * BLOCK_ROWS;
            let rows = at_or_above(&scores, floor) & rows_below(self.rows - first);
            visit(first, rows, &scores);
        }
    }

    /// Checks that row `ord`'s code is the signs of its int8 `values`.
    pub fn check(&self, ord: ChunkOrd, values: &[i8]) -> Result<()> {
        let code = self.code(ord)?;
        ensure!(
            values
                .chunks(8)
                .zip(&code)
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

    /// [`best_across`] of one set, in row order.
    impl SignCodes {
        fn candidates(
            &self,
            query: &[i8],
            depth: usize,
            allowed: usize,
            allow: &AllowSet,
        ) -> Vec<ChunkOrd> {
            let mut rows: Vec<ChunkOrd> =
                (best_across(&[CodeSet::whole(self, allow)], query, depth, allowed))
                    .into_iter()
                    .map(|(_, _, ord)| ord)
                    .collect();
            rows.sort_unstable();
            rows
        }
    }

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

    #[test]
    fn the_rows_rescored_follow_the_window_then_the_square_root_of_the_rows() {
        // A small index rescores 20 rows per window chunk…
        assert_eq!(default_rescored(50, 10_000), 1_000);
        // …a large one 9 × √rows, whatever the window below that.
        assert_eq!(default_rescored(50, 329_841), 9 * 574);
        assert_eq!(default_rescored(10, 329_841), 9 * 574);
        // A hundred times the rows rescores ten times as many.
        assert_eq!(default_rescored(0, 3_240_000), 9 * 1_800);
        assert_eq!(default_rescored(0, 324_000_000), 9 * 18_000);
    }

    #[test]
    fn the_share_probed_falls_as_the_index_grows_and_a_small_one_is_scanned_whole() {
        // A window of 50 over 2,090 rows rescores 1,000: every code.
        assert_eq!(default_probe(default_rescored(50, 2_090), 2_090), 1.0);
        // Corpus-big's 375,868 rows rescore 5,517: 29 % probed; ten times
        // the rows, 9 %.
        let share = |rows| default_probe(default_rescored(50, rows), rows);
        assert!((share(375_868) - 0.2936).abs() < 1e-4);
        assert!((share(3_634_583) - 0.0944).abs() < 1e-4);
    }

    #[test]
    fn auto_writes_codes_from_a_tenth_of_the_rows_its_searches_use_them_from() {
        use DenseIndexSetting::{Always, Auto, Never};
        assert!(!Auto.builds(AUTO_MIN_ROWS - 1) && Auto.builds(AUTO_MIN_ROWS));
        assert!(Always.builds(1) && !Always.builds(0) && !Never.builds(usize::MAX));
        // Written for a small index, auto's codes wait for a search of
        // several indexes that covers enough rows.
        assert!(!Auto.serves(AUTO_MIN_ROWS));
        assert!(!Auto.serves(AUTO_SEARCH_MIN_ROWS - 1) && Auto.serves(AUTO_SEARCH_MIN_ROWS));
        assert!(Always.serves(1) && !Never.serves(usize::MAX));
        assert_eq!(AUTO_SEARCH_MIN_ROWS, 10 * AUTO_MIN_ROWS);
    }

    fn written(dir: &Path, rows: usize) -> StoredVectors {
        written_with(dir, rows, vector)
    }

    /// The vectors `vector_of(row)` of `rows` rows, and their codes.
    fn written_with(
        dir: &Path,
        rows: usize,
        vector_of: impl Fn(usize) -> Vec<f32>,
    ) -> StoredVectors {
        let mut vectors = QuantizedVectors::zeros(rows, DIM);
        for row in 0..rows {
            vectors.set(row, &vector_of(row));
        }
        let mut writer = VectorWriter::create(dir).unwrap();
        writer.append(vectors.rows(), &vec![0; rows]).unwrap();
        writer.finish().unwrap();
        write(dir, rows, DIM).unwrap();
        StoredVectors::open(dir, rows, DIM).unwrap()
    }

    /// `Σ qᵢ · sᵢ` for a code, bit by bit.
    fn code_score(query: &[i8], code: &[u8]) -> i32 {
        query
            .iter()
            .enumerate()
            .map(|(i, q)| match code[i / 8] >> (i % 8) & 1 {
                1 => i32::from(*q),
                _ => -i32::from(*q),
            })
            .sum()
    }

    #[test]
    fn the_file_holds_every_row_s_signs_in_whole_blocks() {
        let dir = tempfile::tempdir().unwrap();
        // Three full blocks and four rows of a fourth.
        let rows = 3 * BLOCK_ROWS + 4;
        let vectors = written(dir.path(), rows);
        let len = std::fs::metadata(dir.path().join(CODES_FILE))
            .unwrap()
            .len();
        assert_eq!(len as usize, 4 * BLOCK_ROWS * code_len(DIM));
        let codes = SignCodes::open(dir.path(), rows, DIM).unwrap().unwrap();
        for ord in 0..rows as ChunkOrd {
            let (values, _) = vectors.quantized_row(ord).unwrap();
            let code = codes.code(ord).unwrap();
            let signs: Vec<bool> = (0..DIM).map(|i| code[i / 8] >> (i % 8) & 1 == 1).collect();
            assert_eq!(signs, values.iter().map(|v| *v > 0).collect::<Vec<_>>());
            codes.check(ord, values).unwrap();
        }
    }

    /// Every row of `codes` by its code's score against `query`, best first.
    fn ranked(codes: &SignCodes, query: &[i8]) -> Vec<Scored> {
        let mut all: Vec<Scored> = (0..codes.rows() as ChunkOrd)
            .map(|ord| Scored(code_score(query, &codes.code(ord).unwrap()), ord))
            .collect();
        all.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        all
    }

    /// The best `depth` rows of `all` that `keep` keeps, in row order.
    fn best_kept(all: &[Scored], depth: usize, keep: fn(&ChunkOrd) -> bool) -> Vec<ChunkOrd> {
        let mut best: Vec<ChunkOrd> = all.iter().map(|s| s.1).filter(keep).take(depth).collect();
        best.sort_unstable();
        best
    }

    #[test]
    fn candidates_are_the_best_codes_of_the_allowed_rows() {
        let dir = tempfile::tempdir().unwrap();
        let rows = 20_000;
        let vectors = written(dir.path(), rows);
        let codes = SignCodes::open(dir.path(), rows, DIM).unwrap().unwrap();
        let (query, _) = quantize(&vector(123));
        let all = ranked(&codes, &query);
        // The row itself, whose code matches the query's signs, comes first.
        assert_eq!(all[0].1, 123);
        let best = |keep| best_kept(&all, 300, keep);
        assert_eq!(
            codes.candidates(&query, 300, rows, &AllowSet::All),
            best(|_| true)
        );
        // A filter removes rows before they compete.
        let flags: Vec<bool> = (0..rows).map(|i| i % 2 == 1).collect();
        let odd = codes.candidates(&query, 300, rows / 2, &AllowSet::Only(flags.into()));
        assert_eq!(odd, best(|o| o % 2 == 1));
        for ord in [0, 5, 19_999] {
            codes
                .check(ord, vectors.quantized_row(ord).unwrap().0)
                .unwrap();
        }
    }

    #[test]
    fn two_sets_of_codes_choose_the_rows_one_set_of_all_their_rows_would() {
        let (whole, first, second) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        // 5,000 rows, then the same rows cut at 3,001 (not a block edge).
        let (rows, cut) = (5_000, 3_001);
        written(whole.path(), rows);
        written_with(first.path(), cut, vector);
        written_with(second.path(), rows - cut, |row| vector(cut + row));
        let open = |dir: &Path, rows| SignCodes::open(dir, rows, DIM).unwrap().unwrap();
        let (all, a, b) = (
            open(whole.path(), rows),
            open(first.path(), cut),
            open(second.path(), rows - cut),
        );
        let (query, _) = quantize(&vector(42));
        let flags: Vec<bool> = (0..rows).map(|i| i % 3 != 0).collect();
        let allow = AllowSet::Only(flags.into());
        let allowed = allow.count(rows);
        let one = best_across(&[CodeSet::whole(&all, &allow)], &query, 250, allowed);
        let (allow_a, allow_b) = (allow.part(0, cut), allow.part(cut as ChunkOrd, rows - cut));
        let two = best_across(
            &[CodeSet::whole(&a, &allow_a), CodeSet::whole(&b, &allow_b)],
            &query,
            250,
            allowed,
        );
        let numbered = |found: Vec<(i32, usize, ChunkOrd)>| -> Vec<(i32, ChunkOrd)> {
            let base = |set| if set == 0 { 0 } else { cut as ChunkOrd };
            found
                .into_iter()
                .map(|(score, set, ord)| (score, base(set) + ord))
                .collect()
        };
        assert_eq!(one.len(), 250);
        assert_eq!(numbered(one), numbered(two));
    }

    #[test]
    fn candidates_stay_exact_when_the_sample_misjudges_the_floor() {
        let dir = tempfile::tempdir().unwrap();
        // Every sampled block's rows are the query itself, so the sample's
        // floor is the best score, which fewer rows than the depth reach.
        let rows = 4 * SAMPLE_STRIDE * BLOCK_ROWS;
        let sampled = |row: usize| (row / BLOCK_ROWS).is_multiple_of(SAMPLE_STRIDE);
        written_with(dir.path(), rows, |row| match sampled(row) {
            true => vector(0),
            false => vector(row),
        });
        let codes = SignCodes::open(dir.path(), rows, DIM).unwrap().unwrap();
        let (query, _) = quantize(&vector(0));
        let all = ranked(&codes, &query);
        let depth = 300;
        assert!(all.iter().take_while(|s| s.0 == all[0].0).count() < depth);
        let candidates = codes.candidates(&query, depth, rows, &AllowSet::All);
        assert_eq!(candidates, best_kept(&all, depth, |_| true));
        assert!(!candidates.iter().all(|&ord| sampled(ord as usize)));
    }

    #[test]
    fn a_damaged_code_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let vectors = written(dir.path(), 100);
        let path = dir.path().join(CODES_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        // Row 3's code, wherever its cell put it.
        let position = SignCodes::open(dir.path(), 100, DIM)
            .unwrap()
            .unwrap()
            .cells
            .unwrap()
            .position(3)
            .unwrap();
        bytes[byte_offset(position as ChunkOrd, 1, code_len(DIM))] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let codes = SignCodes::open(dir.path(), 100, DIM).unwrap().unwrap();
        let err = codes
            .check(3, vectors.quantized_row(3).unwrap().0)
            .unwrap_err();
        assert!(format!("{err:#}").contains("codes.b32"), "{err:#}");
        std::fs::write(&path, &bytes[1..]).unwrap();
        assert!(SignCodes::open(dir.path(), 100, DIM).is_err());
        std::fs::remove_file(&path).unwrap();
        assert!(SignCodes::open(dir.path(), 100, DIM).unwrap().is_none());
    }
}
