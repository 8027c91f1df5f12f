//! The dense list's cells: a base generation's rows grouped by k-means
//! (an inverted file), so that a search can score the codes of the cells
//! nearest its query instead of every row's ([`super::codes`]).
//!
//! **Trained** when the codes are written (a full write or a compaction;
//! a delta's rows are few and have no codes), in two levels, so that the
//! training costs a few passes over the codes rather than a float product
//! per row and cell:
//! 1. `√(rows / CELL_ROWS)` coarse centroids, by spherical k-means over a
//!    sample of the rows' vectors;
//! 2. every row assigned to the coarse centroid its sign code scores best
//!    against (`Σ cᵢ · sign(xᵢ)`, the code scan's own kernel, 32 rows at a
//!    time);
//! 3. each coarse cell's rows split into cells of about [`CELL_ROWS`] rows
//!    by k-means whose assignments are by code again and whose centroids
//!    are the means of their rows' unit vectors (one sequential read of
//!    the vectors per round, never the whole file in memory); the last
//!    round looks for each row's cell under its three nearest coarse cells.
//!
//! Two levels cost `rows × √(rows / CELL_ROWS)` code scores, so the
//! training grows faster than the rows (2 s at 376,000 rows, 39 s at ten
//! times that; a third level costs recall: bench/README.md). Training the
//! rounds on a sample instead cost recall (0.990 → 0.986 at a third
//! probed).
//!
//! Assigning by codes rather than vectors costs little recall (0.002 to
//! 0.005 at a tenth of the rows probed: `bench/ivf_recall.py --by-codes`,
//! bench/README.md).
//!
//! **Stored** in `cells.bin` beside the codes, which hold the rows in cell
//! order (a cell's rows consecutive, in row order within it): each cell's
//! centroid (int8 values and a scale, as a row is stored), where each cell
//! starts, and the row at each position of the codes and the position of
//! each row. Only the codes move: the vectors, the chunk table and every
//! other list keep the rows in chunk order.
//!
//! **Probed** by [`Cells::probe`]: the query scores every centroid, and
//! the best cells are taken until they hold a share of the rows (by
//! default 20 times the rows the search rescores,
//! [`super::codes::default_probe`]). The code scan then reads only their
//! blocks of codes; its rescoring is unchanged, so a returned chunk's
//! score is still its exact cosine.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use memmap2::Mmap;
use rayon::prelude::*;

use super::code_scan::{BLOCK_ROWS, QueryTables, byte_offset};
use super::quantize;
use super::vectors::{Rows, map_exact, present, score_rows_split};
use crate::embed::normalize;
use crate::lists::AllowSet;
use crate::store::generation::ChunkOrd;
use crate::store::{atomic, damaged};

/// The cells' file in a generation folder.
pub const CELLS_FILE: &str = "cells.bin";

/// The file's first bytes, naming its layout.
const MAGIC: &[u8; 8] = b"MXCELLS1";

/// Bytes before the scales: the magic, the dimension and cell count
/// (u32), the rows (u64).
pub(super) const HEADER: usize = 24;

/// Rows per cell the training aims at: cells of a few hundred rows reach
/// an exact scan's window only when far more of the rows are probed
/// (bench/README.md).
pub const CELL_ROWS: usize = 64;

/// Rows of the sample per coarse centroid its k-means is trained on.
const SAMPLE_PER_CELL: usize = 64;

/// Rounds of k-means at each level.
const ROUNDS: usize = 4;

/// One read of every row's vector, in order: it calls its argument with
/// each block of rows' first ordinal and their int8 values, `dim` each
/// (see [`train`]).
pub(super) type RowPass<'a> = dyn FnMut(&mut dyn FnMut(usize, &[i8])) -> Result<()> + 'a;

/// The cells an index run found: the rows in cell order, where each cell
/// starts in it, and each cell's centroid (unit, `dim` values each).
pub(super) struct Layout {
    order: Vec<ChunkOrd>,
    starts: Vec<u32>,
    centroids: Vec<f32>,
    dim: usize,
}

impl Layout {
    /// The rows in cell order.
    pub(super) fn order(&self) -> &[ChunkOrd] {
        &self.order
    }

    /// Writes the cells into `dir` (durably).
    pub(super) fn write(&self, dir: &Path) -> Result<()> {
        let cells = self.starts.len() - 1;
        let rows = self.order.len();
        let (values, scales): (Vec<Vec<i8>>, Vec<f32>) = self
            .centroids
            .chunks_exact(self.dim.max(1))
            .map(quantize)
            .unzip();
        let mut positions = vec![0u32; rows];
        for (position, &row) in self.order.iter().enumerate() {
            positions[row as usize] = position as u32;
        }
        let mut bytes = Vec::with_capacity(file_len(cells, rows, self.dim));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.dim as u32).to_le_bytes());
        bytes.extend_from_slice(&(cells as u32).to_le_bytes());
        bytes.extend_from_slice(&(rows as u64).to_le_bytes());
        bytes.extend_from_slice(bytemuck::cast_slice(&scales));
        bytes.extend_from_slice(bytemuck::cast_slice(&self.starts));
        bytes.extend_from_slice(bytemuck::cast_slice(&self.order));
        bytes.extend_from_slice(bytemuck::cast_slice(&positions));
        for values in &values {
            bytes.extend_from_slice(bytemuck::cast_slice(values));
        }
        atomic::write_synced(&dir.join(CELLS_FILE), &bytes)
    }
}

/// Bytes of a cells file of `cells` cells over `rows` rows of `dim`
/// dimensions.
fn file_len(cells: usize, rows: usize, dim: usize) -> usize {
    HEADER + 4 * cells + 4 * (cells + 1) + 8 * rows + cells * dim
}

/// The cells of `rows` rows of dimension `dim` whose codes (`len` bytes
/// each) `codes` holds in row order, in blocks: `sample` is a spread of the
/// rows' unit vectors (`dim` values each) for the coarse centroids, and
/// `pass` reads every row's values in order, once per round.
pub(super) fn train(
    codes: &[u8],
    len: usize,
    rows: usize,
    dim: usize,
    sample: &[f32],
    pass: &mut RowPass<'_>,
) -> Result<Layout> {
    let coarse = spherical_kmeans(sample, dim, coarse_cells(rows));
    let nearest = nearest_centroids(&scorers(&coarse, dim, len), codes, len, rows);
    let fine = Fine::split(&nearest, coarse.len() / dim.max(1), codes, len);
    let mut centroids = fine.seed_vectors(codes, len, dim, pass)?;
    let mut cell_of = Vec::new();
    for round in 0..=ROUNDS {
        // The last round looks under each row's few nearest coarse cells.
        let width = if round == ROUNDS { ASSIGN_WIDTH } else { 1 };
        cell_of = fine.assign(&nearest, width, &centroids, codes, len, dim);
        means(&cell_of, dim, pass, &mut centroids)?;
    }
    // The rows in cell order, by a counting sort of their cells.
    let cells = fine.cells;
    let mut starts = vec![0u32; cells + 1];
    for &cell in &cell_of {
        starts[cell as usize + 1] += 1;
    }
    for cell in 0..cells {
        starts[cell + 1] += starts[cell];
    }
    let mut next = starts.clone();
    let mut order = vec![0; rows];
    for (row, &cell) in (0..).zip(&cell_of) {
        order[next[cell as usize] as usize] = row;
        next[cell as usize] += 1;
    }
    Ok(Layout {
        order,
        starts,
        centroids,
        dim,
    })
}

/// Coarse cells under which the last round of the training looks for a
/// row's cell: a row near the edge of its coarse cell may be nearer a
/// neighbour's fine cell.
const ASSIGN_WIDTH: usize = 3;

/// The fine cells of the coarse ones: each coarse cell's rows (those it is
/// nearest to), and its fine cells, numbered from `firsts[coarse]`.
struct Fine {
    members: Vec<Vec<ChunkOrd>>,
    /// Each coarse cell's members' codes, in blocks.
    gathered: Vec<Vec<u8>>,
    splits: Vec<usize>,
    firsts: Vec<usize>,
    cells: usize,
}

impl Fine {
    /// Splits each of the `coarse` cells into cells of about [`CELL_ROWS`]
    /// of the rows it is nearest to (`nearest`, from [`nearest_centroids`]).
    fn split(
        nearest: &[[(f32, u32); ASSIGN_WIDTH]],
        coarse: usize,
        codes: &[u8],
        len: usize,
    ) -> Self {
        let mut members: Vec<Vec<ChunkOrd>> = vec![Vec::new(); coarse];
        for (row, nearest) in (0..).zip(nearest) {
            members[nearest[0].1 as usize].push(row);
        }
        let gathered = (members.par_iter())
            .map(|rows| gather(codes, len, rows))
            .collect();
        let splits: Vec<usize> = (members.iter())
            .map(|rows| match rows.len() {
                0 => 0,
                n => ((n + CELL_ROWS / 2) / CELL_ROWS).max(1),
            })
            .collect();
        let firsts = (splits.iter())
            .scan(0, |first, &cells| {
                *first += cells;
                Some(*first - cells)
            })
            .collect();
        Self {
            cells: splits.iter().sum(),
            members,
            gathered,
            splits,
            firsts,
        }
    }

    /// Each fine cell's first centroid: the unit vector of one of its
    /// coarse cell's rows, spread over them, no two with the same code
    /// where the rows allow (copies of a row would leave cells empty).
    fn seed_vectors(
        &self,
        codes: &[u8],
        len: usize,
        dim: usize,
        pass: &mut RowPass<'_>,
    ) -> Result<Vec<f32>> {
        let mut seeds: Vec<(ChunkOrd, usize)> = Vec::with_capacity(self.cells);
        for ((rows, &split), &first) in self.members.iter().zip(&self.splits).zip(&self.firsts) {
            let mut seen = std::collections::HashSet::new();
            let mut next = 0;
            for cell in 0..split {
                let mut at = (cell * rows.len() / split).max(next);
                while at + 1 < rows.len() && !seen.insert(code_of(codes, len, rows[at])) {
                    at += 1;
                }
                let at = at.min(rows.len() - 1);
                seeds.push((rows[at], first + cell));
                next = at + 1;
            }
        }
        seeds.sort_unstable();
        let mut centroids = vec![0f32; self.cells * dim];
        let mut seeds = seeds.into_iter().peekable();
        pass(&mut |first, values| {
            for (row, values) in (first as ChunkOrd..).zip(values.chunks_exact(dim.max(1))) {
                while let Some((_, cell)) = seeds.next_if(|(seed, _)| *seed == row) {
                    unit(values, &mut centroids[cell * dim..][..dim]);
                }
            }
        })?;
        Ok(centroids)
    }

    /// Each row's fine cell: the one whose centroid its code scores best
    /// among those of its `width` nearest coarse cells.
    fn assign(
        &self,
        nearest: &[[(f32, u32); ASSIGN_WIDTH]],
        width: usize,
        centroids: &[f32],
        codes: &[u8],
        len: usize,
        dim: usize,
    ) -> Vec<u32> {
        let mut best = vec![(f32::NEG_INFINITY, 0u32); nearest.len()];
        for rank in 0..width {
            let groups: Vec<Vec<ChunkOrd>> = match rank {
                0 => Vec::new(),
                _ => {
                    let mut groups = vec![Vec::new(); self.members.len()];
                    for (row, nearest) in (0..).zip(nearest) {
                        groups[nearest[rank].1 as usize].push(row);
                    }
                    groups
                }
            };
            let scored: Vec<Vec<(f32, u32)>> = (0..self.members.len())
                .into_par_iter()
                .map(|coarse| {
                    let (split, first) = (self.splits[coarse], self.firsts[coarse]);
                    let rows = groups.get(coarse).unwrap_or(&self.members[coarse]);
                    if split == 0 || rows.is_empty() {
                        return Vec::new();
                    }
                    let own = scorers(&centroids[first * dim..(first + split) * dim], dim, len);
                    let gathered;
                    let codes = match rank {
                        0 => &self.gathered[coarse],
                        _ => {
                            gathered = gather(codes, len, rows);
                            &gathered
                        }
                    };
                    (nearest_centroids(&own, codes, len, rows.len()).into_iter())
                        .map(|best| (best[0].0, first as u32 + best[0].1))
                        .collect()
                })
                .collect();
            for (coarse, scored) in scored.into_iter().enumerate() {
                let rows = groups.get(coarse).unwrap_or(&self.members[coarse]);
                for (&row, found) in rows.iter().zip(scored) {
                    let best = &mut best[row as usize];
                    if found.0 > best.0 {
                        *best = found;
                    }
                }
            }
        }
        best.into_iter().map(|(_, cell)| cell).collect()
    }
}

/// Row `row`'s code (of `codes`, in row order, in blocks), as a hash.
fn code_of(codes: &[u8], len: usize, row: ChunkOrd) -> u64 {
    let code: Vec<u8> = (0..len)
        .map(|byte| codes[byte_offset(row, byte, len)])
        .collect();
    xxhash_rust::xxh3::xxh3_64(&code)
}

/// Coarse cells for `rows` rows: `√(rows / CELL_ROWS)`, so that each is
/// split into about as many cells as there are coarse ones.
fn coarse_cells(rows: usize) -> usize {
    (rows / CELL_ROWS).isqrt().max(1)
}

/// How many rows apart the coarse training's sample of `rows` rows is
/// taken (one row in this many).
pub(super) fn sample_stride(rows: usize) -> usize {
    (rows / (SAMPLE_PER_CELL * coarse_cells(rows))).max(1)
}

/// The unit vector of int8 `values` (zeros for a zero row) into `out`.
pub(super) fn unit(values: &[i8], out: &mut [f32]) {
    for (o, v) in out.iter_mut().zip(values) {
        *o = f32::from(*v);
    }
    normalize(out);
}

/// The codes of `rows` (of `codes`, in row order) in blocks, in the order
/// given: the layout the code scan reads.
pub(super) fn gather(codes: &[u8], len: usize, rows: &[ChunkOrd]) -> Vec<u8> {
    let mut gathered = vec![0u8; rows.len().div_ceil(BLOCK_ROWS) * BLOCK_ROWS * len];
    for (position, &row) in rows.iter().enumerate() {
        for byte in 0..len {
            let to = byte_offset(position as ChunkOrd, byte, len);
            gathered[to] = codes[byte_offset(row, byte, len)];
        }
    }
    gathered
}

/// A centroid prepared for scoring codes: its scan tables, and the scale
/// of its int8 values, which makes its integer scores comparable with
/// another centroid's.
struct Scorer {
    tables: QueryTables,
    scale: f32,
}

/// Scorers of each of `centroids` (`dim` values each) for codes of `len`
/// bytes.
fn scorers(centroids: &[f32], dim: usize, len: usize) -> Vec<Scorer> {
    centroids
        .chunks_exact(dim.max(1))
        .map(|centroid| {
            let (values, scale) = quantize(centroid);
            Scorer {
                tables: QueryTables::new(&values, len),
                scale,
            }
        })
        .collect()
}

/// For each of the first `rows` rows of `codes` (blocks), the
/// [`ASSIGN_WIDTH`] centroids whose scorers score its code best, best first
/// (ties: the first centroid), with their scores; past the last centroid,
/// the last repeats.
fn nearest_centroids(
    scorers: &[Scorer],
    codes: &[u8],
    len: usize,
    rows: usize,
) -> Vec<[(f32, u32); ASSIGN_WIDTH]> {
    let block_bytes = BLOCK_ROWS * len;
    let mut nearest: Vec<[(f32, u32); ASSIGN_WIDTH]> = codes
        .par_chunks(block_bytes)
        .flat_map_iter(|block| {
            let mut best = [[(f32::NEG_INFINITY, 0u32); ASSIGN_WIDTH]; BLOCK_ROWS];
            let mut scores = [0i32; BLOCK_ROWS];
            for (cell, scorer) in (0..).zip(scorers) {
                scorer.tables.block_scores(block, &mut scores);
                for (best, &score) in best.iter_mut().zip(&scores) {
                    let score = score as f32 * scorer.scale;
                    if score > best[ASSIGN_WIDTH - 1].0 {
                        let at = best.partition_point(|b| b.0 >= score);
                        best.copy_within(at..ASSIGN_WIDTH - 1, at + 1);
                        best[at] = (score, cell);
                    }
                }
            }
            best.map(|mut best| {
                for rank in 1..ASSIGN_WIDTH {
                    if best[rank].0 == f32::NEG_INFINITY {
                        best[rank] = best[rank - 1];
                    }
                }
                best
            })
        })
        .collect();
    nearest.truncate(rows);
    nearest
}

/// Spherical k-means of `samples` (unit vectors of `dim` values) into
/// `cells` centroids (fewer when there are fewer samples), started from
/// samples spread over them; a centroid no sample joins stays.
fn spherical_kmeans(samples: &[f32], dim: usize, cells: usize) -> Vec<f32> {
    let count = samples.len() / dim.max(1);
    if count == 0 {
        return vec![0.0; dim];
    }
    let cells = cells.min(count);
    let mut centroids: Vec<f32> = (0..cells)
        .flat_map(|cell| {
            let at = cell * count / cells;
            samples[at * dim..(at + 1) * dim].iter().copied()
        })
        .collect();
    for _ in 0..ROUNDS {
        let nearest: Vec<usize> = samples
            .par_chunks_exact(dim)
            .map(|sample| nearest(&centroids, dim, sample))
            .collect();
        let mut sums = vec![0f32; centroids.len()];
        for (sample, &cell) in samples.chunks_exact(dim).zip(&nearest) {
            for (sum, value) in sums[cell * dim..][..dim].iter_mut().zip(sample) {
                *sum += value;
            }
        }
        move_to(&sums, dim, &mut centroids);
    }
    centroids
}

/// The centroid whose dot product with `vector` is largest (ties: the first).
fn nearest(centroids: &[f32], dim: usize, vector: &[f32]) -> usize {
    let mut best = (f32::NEG_INFINITY, 0);
    for (cell, centroid) in centroids.chunks_exact(dim).enumerate() {
        let score: f32 = centroid.iter().zip(vector).map(|(c, v)| c * v).sum();
        if score > best.0 {
            best = (score, cell);
        }
    }
    best.1
}

/// Each centroid moved to its rows' `sums` at unit length; one whose sum
/// is zero (no rows) stays where it is.
fn move_to(sums: &[f32], dim: usize, centroids: &mut [f32]) {
    for (sum, centroid) in sums.chunks_exact(dim).zip(centroids.chunks_exact_mut(dim)) {
        if sum.iter().any(|s| *s != 0.0) {
            centroid.copy_from_slice(sum);
            normalize(centroid);
        }
    }
}

/// Moves each cell's centroid to the mean of its rows' unit vectors
/// (`cell_of` each row's cell), read by one `pass` over the rows. The
/// cells are split over the cores, each summing the rows of its own.
fn means(cell_of: &[u32], dim: usize, pass: &mut RowPass<'_>, centroids: &mut [f32]) -> Result<()> {
    let dim = dim.max(1);
    let mut sums = vec![0f32; centroids.len()];
    let share = (centroids.len() / dim)
        .div_ceil(rayon::current_num_threads())
        .max(1);
    pass(&mut |first, values| {
        (sums.par_chunks_mut(share * dim).enumerate()).for_each(|(task, sums)| {
            let own = task * share..(task + 1) * share;
            for (row, values) in (first..).zip(values.chunks_exact(dim)) {
                let cell = cell_of[row] as usize;
                if !own.contains(&cell) {
                    continue;
                }
                let squares: i32 = values.iter().map(|&v| i32::from(v) * i32::from(v)).sum();
                if squares == 0 {
                    continue;
                }
                let scale = (squares as f32).sqrt().recip();
                let sum = &mut sums[(cell - own.start) * dim..][..dim];
                for (sum, &value) in sum.iter_mut().zip(values) {
                    *sum += f32::from(value) * scale;
                }
            }
        });
    })?;
    move_to(&sums, dim, centroids);
    Ok(())
}

/// A generation's cells, memory-mapped.
pub struct Cells {
    path: PathBuf,
    map: Mmap,
    cells: usize,
    rows: usize,
    dim: usize,
}

/// How many times the rows a filtered probe would take if the allowed rows
/// were spread evenly over the cells it may walk before it stops
/// ([`Cells::probe`]). Unbounded, the walk counts every allowed row of
/// every cell it takes: at corpus-big's ten times, a filter allowing 13 %
/// of the rows, probed for 74 % of them, walked 61 % of the cells and took
/// 1.56× the time of scoring every code (bench/README.md).
pub const WALK_PER_EXPECTED: usize = 2;

/// The code blocks a search reads of a set of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Ranges of blocks of codes, ascending, disjoint.
    pub blocks: Vec<Range<usize>>,
    /// Cells probed.
    pub cells: usize,
    /// Cells there are.
    pub of: usize,
    /// Rows in those blocks.
    pub rows: usize,
    /// Rows of the probed cells the search allows: under the rows wanted
    /// when the probe stopped early.
    pub allowed: usize,
}

impl Cells {
    /// Maps `dir`'s cells of `rows` rows of dimension `dim`, or `None`
    /// when the generation has none (one written before cells, whose codes
    /// are in row order). A file whose header or length does not match is
    /// damaged.
    pub fn open(dir: &Path, rows: usize, dim: usize) -> Result<Option<Self>> {
        let path = dir.join(CELLS_FILE);
        if !present(&path)? {
            return Ok(None);
        }
        let len = std::fs::metadata(&path)
            .with_context(|| damaged(&path, "cannot be opened"))?
            .len();
        let Some(map) = map_exact(&path, len, false)? else {
            bail!(damaged(&path, "is empty"));
        };
        let header = |at: usize, len: usize| map.get(at..at + len).unwrap_or_default();
        let word = |at: usize| u32::from_le_bytes(header(at, 4).try_into().unwrap_or_default());
        ensure!(
            header(0, 8) == MAGIC
                && word(8) as usize == dim
                && header(16, 8) == (rows as u64).to_le_bytes(),
            damaged(&path, "does not describe these rows")
        );
        let cells = word(12) as usize;
        ensure!(
            map.len() == file_len(cells, rows, dim),
            damaged(&path, "has the wrong length")
        );
        let cells = Self {
            path: path.clone(),
            map,
            cells,
            rows,
            dim,
        };
        let starts = cells.starts();
        ensure!(
            starts[0] == 0
                && starts[cells.cells] as usize == rows
                && starts.windows(2).all(|pair| pair[0] <= pair[1]),
            damaged(&path, "holds cells that do not cover its rows")
        );
        Ok(Some(cells))
    }

    /// The `u32`s (or `f32`s) of `count` words from byte `at`.
    fn words<T: bytemuck::Pod>(&self, at: usize, count: usize) -> &[T] {
        bytemuck::cast_slice(&self.map[at..at + 4 * count])
    }

    fn scales(&self) -> &[f32] {
        self.words(HEADER, self.cells)
    }

    fn starts(&self) -> &[u32] {
        self.words(HEADER + 4 * self.cells, self.cells + 1)
    }

    fn order(&self) -> &[u32] {
        self.words(HEADER + 4 * (2 * self.cells + 1), self.rows)
    }

    fn positions(&self) -> &[u32] {
        self.words(HEADER + 4 * (2 * self.cells + 1 + self.rows), self.rows)
    }

    fn centroids(&self) -> &[i8] {
        bytemuck::cast_slice(&self.map[file_len(self.cells, self.rows, 0)..])
    }

    /// How many cells there are.
    pub fn len(&self) -> usize {
        self.cells
    }

    /// Whether there are none (never, for a file that opened).
    pub fn is_empty(&self) -> bool {
        self.cells == 0
    }

    /// The row at position `position` of the codes.
    #[inline]
    pub fn row_at(&self, position: usize) -> ChunkOrd {
        self.order()[position]
    }

    /// Where row `row`'s code stands in the codes.
    pub fn position(&self, row: ChunkOrd) -> Result<usize> {
        let position = self.positions().get(row as usize).copied();
        match position.filter(|&p| (p as usize) < self.rows) {
            Some(position) => Ok(position as usize),
            None => Err(damaged(&self.path, "has no position for a row").into()),
        }
    }

    /// The cells whose centroids score best against `query` (int8 values,
    /// as [`quantize`] gives them), taken best first until they hold
    /// `wanted` of the rows `allow` lets through (`allowed` of them in all;
    /// at least one cell), as blocks of codes. Rows a filter removes do not
    /// count: a filtered search probes as many cells again as it needs to
    /// find as many allowed rows. It stops, short of `wanted`
    /// ([`Probe::allowed`] says so), once the cells it took hold
    /// [`WALK_PER_EXPECTED`] times the rows they would if the allowed rows
    /// were spread evenly: the filter then keeps away from the query, and
    /// scoring every code costs less than walking on.
    pub fn probe(&self, query: &[i8], wanted: usize, allow: &AllowSet, allowed: usize) -> Probe {
        let rows = Rows {
            values: self.centroids(),
            scales: self.scales(),
            dim: self.dim,
        };
        let mut scores = vec![0f32; self.cells];
        score_rows_split(query, 1.0, rows, &mut scores);
        let starts = self.starts();
        let span = |cell: usize| starts[cell] as usize..starts[cell + 1] as usize;
        let held = |cell: usize| match allow {
            AllowSet::All => span(cell).len(),
            AllowSet::Only(_) => (self.order()[span(cell)].iter())
                .filter(|&&row| allow.allows(row))
                .count(),
        };
        let allowed = allowed.max(1);
        let wanted = wanted.clamp(1, allowed);
        let best_first = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b));
        let mut cells: Vec<usize> = (0..self.cells).collect();
        // The cells that hold `wanted` when the allowed rows are spread
        // evenly, and half as many again, are sorted first; the rest only
        // if those are short.
        let mut sorted = ((wanted * self.cells).div_ceil(allowed) * 3 / 2 + 1).min(self.cells);
        if sorted < self.cells {
            cells.select_nth_unstable_by(sorted, best_first);
        }
        cells[..sorted].sort_unstable_by(best_first);
        let limit =
            (WALK_PER_EXPECTED as u128 * wanted as u128 * self.rows as u128) / allowed as u128;
        let (mut taken, mut covered, mut walked) = (0, 0, 0);
        while covered < wanted && taken < self.cells && walked <= limit {
            if taken == sorted {
                cells[sorted..].sort_unstable_by(best_first);
                sorted = self.cells;
            }
            covered += held(cells[taken]);
            walked += span(cells[taken]).len() as u128;
            taken += 1;
        }
        let mut spans: Vec<Range<usize>> = cells[..taken]
            .iter()
            .map(|&cell| span(cell))
            .filter(|span| !span.is_empty())
            .map(|span| span.start / BLOCK_ROWS..span.end.div_ceil(BLOCK_ROWS))
            .collect();
        spans.sort_unstable_by_key(|span| span.start);
        let mut blocks: Vec<Range<usize>> = Vec::with_capacity(spans.len());
        for span in spans {
            match blocks.last_mut() {
                Some(last) if last.end >= span.start => last.end = last.end.max(span.end),
                _ => blocks.push(span),
            }
        }
        let rows = (blocks.iter())
            .map(|b| (b.end * BLOCK_ROWS).min(self.rows) - b.start * BLOCK_ROWS)
            .sum();
        Probe {
            blocks,
            cells: taken,
            of: self.cells,
            rows,
            allowed: covered,
        }
    }
}
