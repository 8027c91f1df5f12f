//! The stored vectors: each chunk's unit vector quantized to int8 with its
//! scale (`vectors.i8`, `scales.f32`), its key (`keys.u64`), the writer an
//! index run streams them through, the memory-mapped reader, and the
//! integer dot products every scan is made of.
//!
//! Each chunk's unit vector is stored quantized: `vectors.i8` holds the
//! rows (one signed byte per dimension, `round(x / scale)`), `scales.f32`
//! each row's scale (`max |x| / 127`, little-endian). That is a quarter of
//! the f32 size, and ranks as well (measured: docs/how-it-works.md). A
//! search quantizes the query the same way, takes integer dot products
//! (which the compiler vectorizes; `rayon` splits the rows over the cores)
//! and rescales. `ndarray` provides the row views of the mapped file.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, ensure};
use memmap2::{Mmap, MmapOptions};
use ndarray::ArrayView2;
use rayon::prelude::*;

use super::prefetch::prefetch;
use crate::store::checked::{BlockChecks, BlockHasher, sidecar_path};
use crate::store::checks::{self, Checksums};
use crate::store::generation::ChunkOrd;
use crate::store::{atomic, damaged};

/// File holding the quantized chunk vectors.
pub const VECTORS_FILE: &str = "vectors.i8";
/// File holding each vector's scale.
pub const SCALES_FILE: &str = "scales.f32";
/// File holding each vector's key (see [`vector_key`]), little-endian u64.
pub const KEYS_FILE: &str = "keys.u64";

/// Rows scored per parallel task.
const SCAN_BLOCK: usize = 8192;

/// Fewest rows one parallel task rescores.
const RESCORE_TASK: usize = 1024;

/// Quantizes one vector: its int8 values and its scale.
pub fn quantize(vector: &[f32]) -> (Vec<i8>, f32) {
    let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (vec![0; vector.len()], 0.0);
    }
    let scale = max / 127.0;
    (
        vector
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect(),
        scale,
    )
}

/// The key a vector is kept under between runs: xxh3-64 of exactly the
/// text that was embedded. Chunks with the same text (a moved or copied
/// file) share a key, so their vectors are reused instead of recomputed.
pub fn vector_key(embedded_text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(embedded_text.as_bytes())
}

/// Reads the keys of the vectors in `dir`, one per row.
pub fn read_keys(dir: &Path) -> Result<Vec<u64>> {
    read_keys_checked(dir, None)
}

/// [`read_keys`], checked against `checks` (a generation's) as they are
/// read when given: the keys are read whole, so this costs no second read.
pub fn read_keys_checked(dir: &Path, checks: Option<&Checksums>) -> Result<Vec<u64>> {
    ensure!(
        cfg!(target_endian = "little"),
        "memidx reads vectors on little-endian machines only"
    );
    let path = dir.join(KEYS_FILE);
    let cannot = || damaged(&path, "cannot be read");
    let mut file = File::open(&path).with_context(cannot)?;
    let len = file.metadata().with_context(cannot)?.len();
    ensure!(len % 8 == 0, damaged(&path, "has a bad length"));
    // Read straight into the keys: they are little-endian, as is the machine.
    let mut keys = vec![0u64; usize::try_from(len / 8)?];
    file.read_exact(bytemuck::cast_slice_mut(&mut keys))
        .with_context(cannot)?;
    if let Some(checks) = checks {
        let check =
            (checks.get(KEYS_FILE)).with_context(|| damaged(&path, "is not in the manifest"))?;
        checks::verify_bytes(&path, bytemuck::cast_slice(&keys), check)?;
    }
    Ok(keys)
}

/// Vectors quantized as they are produced, so an index run holds a quarter
/// of their f32 size (330k chunks: 84 MB instead of 338 MB).
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedVectors {
    dim: usize,
    values: Vec<i8>,
    scales: Vec<f32>,
}

impl QuantizedVectors {
    /// `rows` zero vectors of dimension `dim`.
    pub fn zeros(rows: usize, dim: usize) -> Self {
        Self {
            dim,
            values: vec![0; rows * dim],
            scales: vec![0.0; rows],
        }
    }

    /// Quantizes `vector` into row `row`.
    pub fn set(&mut self, row: usize, vector: &[f32]) {
        let (values, scale) = quantize(vector);
        self.values[row * self.dim..][..self.dim].copy_from_slice(&values);
        self.scales[row] = scale;
    }

    /// Each row in order: its int8 values and its scale.
    pub fn rows(&self) -> impl Iterator<Item = (&[i8], f32)> {
        self.values
            .chunks_exact(self.dim.max(1))
            .zip(self.scales.iter().copied())
    }
}

/// Writes a generation's vector files as rows arrive (an index run streams
/// its chunks through in batches).
pub struct VectorWriter {
    dir: PathBuf,
    values: BufWriter<File>,
    scales: BufWriter<File>,
    keys: BufWriter<File>,
    /// The block checksums of the values and of the scales, as written.
    sums: [BlockHasher; 2],
}

/// Buffer of each vector file's writer. Large writes matter: the kernel
/// caches a file written in large pieces in large folios, and mapping the
/// 84 MB vector file of corpus-big (`MAP_POPULATE`) took 3.4 ms per search
/// after 8 KiB writes against 0.9 ms after one large write.
const VECTOR_WRITE_BUFFER: usize = 8 << 20;

impl VectorWriter {
    /// Creates the vector files in `dir`.
    pub fn create(dir: &Path) -> Result<Self> {
        let create = |name: &str| {
            let path = dir.join(name);
            File::create(&path)
                .map(|file| BufWriter::with_capacity(VECTOR_WRITE_BUFFER, file))
                .with_context(|| format!("cannot create {}", path.display()))
        };
        Ok(Self {
            values: create(VECTORS_FILE)?,
            scales: create(SCALES_FILE)?,
            keys: create(KEYS_FILE)?,
            sums: Default::default(),
            dir: dir.to_path_buf(),
        })
    }

    /// Appends `rows` (each its int8 values and scale) and their `keys`,
    /// one per row. A row may be borrowed from a mapped vector file: a
    /// re-index writes its carried rows straight from the previous
    /// generation's, with no copy in between.
    pub fn append<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r [i8], f32)>,
        keys: &[u64],
    ) -> Result<()> {
        let rows = self
            .write_rows(rows, keys)
            .with_context(|| format!("cannot write the vectors in {}", self.dir.display()))?;
        ensure!(rows == keys.len(), "one key per vector is needed");
        Ok(())
    }

    /// Writes `rows` and `keys`; returns how many rows there were.
    fn write_rows<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r [i8], f32)>,
        keys: &[u64],
    ) -> std::io::Result<usize> {
        let mut count = 0;
        for (values, scale) in rows {
            let (values, scale) = (bytemuck::cast_slice(values), scale.to_le_bytes());
            self.values.write_all(values)?;
            self.scales.write_all(&scale)?;
            self.sums[0].push(values);
            self.sums[1].push(&scale);
            count += 1;
        }
        let keys: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        self.keys.write_all(&keys)?;
        Ok(count)
    }

    /// Flushes and fsyncs the files, and writes the values' and scales'
    /// block checksums beside them (see [`crate::store::checked`]).
    pub fn finish(self) -> Result<()> {
        for writer in [self.values, self.scales, self.keys] {
            writer
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|file| file.sync_all())
                .with_context(|| format!("cannot write the vectors in {}", self.dir.display()))?;
        }
        let [values, scales] = self.sums;
        for (name, sums) in [(VECTORS_FILE, values), (SCALES_FILE, scales)] {
            atomic::write_synced(&sidecar_path(&self.dir.join(name)), &sums.finish())?;
        }
        Ok(())
    }
}

/// The quantized rows of one folder (a generation's, or a model's cached
/// vectors), memory-mapped.
pub struct StoredVectors {
    path: PathBuf,
    values: Option<Mmap>,
    scales: Option<Mmap>,
    /// The block checks of the values and of the scales, for the rows a
    /// search returns (see [`StoredVectors::checked`]).
    checks: [Option<BlockChecks>; 2],
    rows: usize,
    dim: usize,
}

/// Whether the optional generation file `path` exists (an error naming it
/// when that cannot be told).
pub(super) fn present(path: &Path) -> Result<bool> {
    path.try_exists()
        .with_context(|| damaged(path, "cannot be opened"))
}

/// Maps `path` after checking its length (`None` when empty); `populate`
/// reads every page in at once (for a reader of every row).
pub(super) fn map_exact(path: &Path, len: u64, populate: bool) -> Result<Option<Mmap>> {
    let file = File::open(path).with_context(|| damaged(path, "cannot be opened"))?;
    ensure!(
        file.metadata()?.len() == len,
        damaged(path, "has the wrong length")
    );
    // SAFETY: generation files are never modified once the manifest names them.
    Ok(if len == 0 {
        None
    } else {
        let mut options = MmapOptions::new();
        if populate {
            options.populate();
        }
        Some(unsafe { options.map(&file) }?)
    })
}

impl StoredVectors {
    /// Maps the `rows` vectors of dimension `dim` in `dir`, every page read
    /// in at once (for a reader of every row: one call instead of a fault
    /// per page).
    pub fn open(dir: &Path, rows: usize, dim: usize) -> Result<Self> {
        Self::map(dir, rows, dim, true)
    }

    /// Maps them as [`StoredVectors::open`] does, leaving each page to be
    /// read when a row on it is (for a reader of a few rows, such as the
    /// rescoring after the sign codes: populating the 821 MB of 3.2 million
    /// rows would cost more than the search).
    pub fn open_lazily(dir: &Path, rows: usize, dim: usize) -> Result<Self> {
        Self::map(dir, rows, dim, false)
    }

    fn map(dir: &Path, rows: usize, dim: usize, populate: bool) -> Result<Self> {
        ensure!(
            cfg!(target_endian = "little"),
            "memidx reads vectors on little-endian machines only"
        );
        let path = dir.join(VECTORS_FILE);
        let values = map_exact(&path, (rows * dim) as u64, populate)?;
        let scales = map_exact(&dir.join(SCALES_FILE), (rows * 4) as u64, populate)?;
        Ok(Self {
            path,
            values,
            scales,
            checks: [None, None],
            rows,
            dim,
        })
    }

    /// These vectors, a generation's, with the block checks its manifest's
    /// `checksums` list: every row read one at a time
    /// ([`StoredVectors::quantized_row`], the rows of the chunks a search
    /// returns and of its feedback) is then checked, and a damaged one is
    /// an error naming the file. The scans and the rescoring read rows
    /// unchecked: checking every row they touch would cost a tenth of a
    /// search, and a damaged row they rank high is returned, so checked.
    pub fn checked(mut self, checksums: &Checksums) -> Result<Self> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let values_len = self.values.as_deref().map_or(0, <[u8]>::len);
        let scales_len = self.scales.as_deref().map_or(0, <[u8]>::len);
        self.checks = [
            BlockChecks::load(dir, VECTORS_FILE, checksums, values_len)?,
            BlockChecks::load(dir, SCALES_FILE, checksums, scales_len)?,
        ];
        Ok(self)
    }

    /// The vector file, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many rows there are.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Values per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The rows as an `rows × dim` matrix view of the mapped file.
    fn matrix(&self) -> Result<ArrayView2<'_, i8>> {
        let bytes = self.values.as_deref().unwrap_or_default();
        let values: &[i8] = bytemuck::cast_slice(bytes);
        Ok(ArrayView2::from_shape((self.rows, self.dim), values)?)
    }

    /// The row scales.
    fn scales(&self) -> Result<&[f32]> {
        match self.scales.as_deref() {
            None => Ok(&[]),
            Some(bytes) => bytemuck::try_cast_slice(bytes)
                .map_err(|e| anyhow!("cannot view the scales as floats: {e}")),
        }
    }

    /// Row `ord` as stored: its int8 values and its scale.
    pub fn quantized_row(&self, ord: ChunkOrd) -> Result<(&[i8], f32)> {
        let scale = *self
            .scales()?
            .get(ord as usize)
            .context("chunk ordinal beyond the vector file")?;
        let values: &[i8] = bytemuck::cast_slice(self.values.as_deref().unwrap_or_default());
        let range = ord as usize * self.dim..(ord as usize + 1) * self.dim;
        let row = values
            .get(range.clone())
            .context("chunk ordinal beyond the vector file")?;
        if let [Some(values), Some(scales)] = &self.checks {
            values.check(row_bytes(&self.values), range)?;
            let at = ord as usize * 4;
            scales.check(row_bytes(&self.scales), at..at + 4)?;
        }
        Ok((row, scale))
    }

    /// The vector of row `ord`, dequantized.
    pub fn row(&self, ord: ChunkOrd) -> Result<Vec<f32>> {
        let (values, scale) = self.quantized_row(ord)?;
        Ok(values.iter().map(|v| f32::from(*v) * scale).collect())
    }

    /// Similarity of the quantized query (values and scale) to each row of
    /// `ords`, into `scores`: the scan's own arithmetic, so a row scores
    /// the same whichever way it is reached.
    pub(super) fn score_ords(
        &self,
        query: &[i8],
        query_scale: f32,
        ords: &[ChunkOrd],
        scores: &mut Vec<f32>,
    ) -> Result<()> {
        ensure!(
            ords.iter().all(|o| (*o as usize) < self.rows),
            damaged(&self.path, "is shorter than the dense index says")
        );
        let rows = Rows {
            values: bytemuck::cast_slice(self.values.as_deref().unwrap_or_default()),
            scales: self.scales()?,
            dim: self.dim.max(1),
        };
        scores.clear();
        scores.resize(ords.len(), 0.0);
        // Split over the cores: the rows are scattered reads of the map.
        scores
            .par_chunks_mut(RESCORE_TASK)
            .zip(ords.par_chunks(RESCORE_TASK))
            .for_each(|(scores, ords)| score_ords(query, query_scale, rows, ords, scores));
        Ok(())
    }

    /// The best similarity of the query vector to any row (`None` without
    /// rows): a noise floor's measure ([`super::floor`]) where no sign codes
    /// serve it.
    pub fn best_similarity(&self, query: &[f32]) -> Result<Option<f32>> {
        Ok(self.similarities(query)?.into_iter().reduce(f32::max))
    }

    /// Similarity of the query vector to every row, by ordinal.
    pub(super) fn similarities(&self, query: &[f32]) -> Result<Vec<f32>> {
        let (query, query_scale) = quantize(query);
        let matrix = self.matrix()?;
        let values = matrix
            .as_slice()
            .context("the vector matrix is not contiguous")?;
        let rows = Rows {
            values,
            scales: self.scales()?,
            dim: self.dim.max(1),
        };
        let mut out = vec![0.0f32; self.rows];
        score_rows_split(&query, query_scale, rows, &mut out);
        Ok(out)
    }
}

/// [`score_rows`] split over the cores, [`SCAN_BLOCK`] rows a task.
pub(super) fn score_rows_split(query: &[i8], query_scale: f32, rows: Rows<'_>, scores: &mut [f32]) {
    let dim = rows.dim;
    scores
        .par_chunks_mut(SCAN_BLOCK)
        .enumerate()
        .for_each(|(block, scores)| {
            let first = block * SCAN_BLOCK;
            let block = Rows {
                values: &rows.values[first * dim..(first + scores.len()) * dim],
                scales: &rows.scales[first..first + scores.len()],
                dim,
            };
            score_rows(query, query_scale, block, scores);
        });
}

/// The bytes of a mapped vector file (none when it is empty).
fn row_bytes(map: &Option<Mmap>) -> &[u8] {
    map.as_deref().unwrap_or_default()
}

/// A block of quantized rows and their scales.
#[derive(Clone, Copy)]
pub(super) struct Rows<'a> {
    /// The rows' values, `dim` per row.
    pub(super) values: &'a [i8],
    /// One scale per row.
    pub(super) scales: &'a [f32],
    /// Values per row.
    pub(super) dim: usize,
}

/// Scores each row of `rows` against the quantized query into `scores`.
///
/// The portable build targets the x86-64 baseline (SSE2); where the CPU has
/// AVX2 the same loop runs compiled for it (detected once by the standard
/// library), which about halves the scan.
pub(super) fn score_rows(query: &[i8], query_scale: f32, rows: Rows<'_>, scores: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { score_rows_avx2(query, query_scale, rows, scores) };
        return;
    }
    score_rows_portable(query, query_scale, rows, scores);
}

/// [`score_rows_portable`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn score_rows_avx2(query: &[i8], query_scale: f32, rows: Rows<'_>, scores: &mut [f32]) {
    score_rows_portable(query, query_scale, rows, scores);
}

#[inline(always)]
fn score_rows_portable(query: &[i8], query_scale: f32, rows: Rows<'_>, scores: &mut [f32]) {
    let row_values = rows.values.chunks_exact(rows.dim.max(1));
    for ((score, values), scale) in scores.iter_mut().zip(row_values).zip(rows.scales) {
        *score = dot_i8(query, values) as f32 * query_scale * scale;
    }
}

/// Scores rows `ords` of `rows` against the quantized query into `scores`
/// (the AVX2 build where the CPU has it, as [`score_rows`]).
fn score_ords(
    query: &[i8],
    query_scale: f32,
    rows: Rows<'_>,
    ords: &[ChunkOrd],
    scores: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { score_ords_avx2(query, query_scale, rows, ords, scores) };
        return;
    }
    score_ords_portable(query, query_scale, rows, ords, scores);
}

/// [`score_ords_portable`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn score_ords_avx2(
    query: &[i8],
    query_scale: f32,
    rows: Rows<'_>,
    ords: &[ChunkOrd],
    scores: &mut [f32],
) {
    score_ords_portable(query, query_scale, rows, ords, scores);
}

#[inline(always)]
fn score_ords_portable(
    query: &[i8],
    query_scale: f32,
    rows: Rows<'_>,
    ords: &[ChunkOrd],
    scores: &mut [f32],
) {
    for (at, (score, &ord)) in scores.iter_mut().zip(ords).enumerate() {
        if let Some(&ahead) = ords.get(at + PREFETCH_AHEAD) {
            prefetch_row(rows, ahead);
        }
        let values = &rows.values[ord as usize * rows.dim..][..rows.dim];
        *score = dot_i8(query, values) as f32 * query_scale * rows.scales[ord as usize];
    }
}

/// How many rows ahead [`score_ords_portable`] asks for the row it will
/// score: scattered rows of a large map miss every cache, and a dot
/// product of one row is far shorter than a read from memory, so without
/// the hint the loop waits on each row in turn.
const PREFETCH_AHEAD: usize = 8;

/// Asks for row `ord`'s values and scale ahead of its dot product.
#[inline(always)]
fn prefetch_row(rows: Rows<'_>, ord: ChunkOrd) {
    prefetch(&rows.values[ord as usize * rows.dim..][..rows.dim]);
    prefetch(&rows.scales[ord as usize..][..1]);
}

/// Integer dot product of two int8 vectors (exact; vectorizes well).
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantization_keeps_unit_vectors_close() {
        let v: Vec<f32> = (0..256).map(|i| (i * 37 % 101) as f32 - 50.0).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let unit: Vec<f32> = v.iter().map(|x| x / norm).collect();
        let (q, scale) = quantize(&unit);
        assert_eq!(q.iter().map(|x| x.unsigned_abs()).max(), Some(127));
        let back: Vec<f32> = q.iter().map(|x| f32::from(*x) * scale).collect();
        let cos: f32 = unit.iter().zip(&back).map(|(a, b)| a * b).sum::<f32>()
            / back.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(cos > 0.9999, "{cos}");
        // Quantizing a dequantized row gives the same row (reuse is lossless).
        assert_eq!(quantize(&back).0, q);
        let mut rows = QuantizedVectors::zeros(2, 256);
        rows.set(1, &unit);
        let scales: Vec<f32> = rows.rows().map(|(_, scale)| scale).collect();
        assert!(scales[0] == 0.0 && scales[1] != 0.0);
        assert_eq!(rows.values[256..], q[..]);
        assert_eq!(quantize(&[0.0, 0.0]), (vec![0, 0], 0.0));
    }

    #[test]
    fn integer_dot_is_exact() {
        assert_eq!(
            dot_i8(&[127, -127, 3], &[127, 127, -2]),
            127 * 127 - 127 * 127 - 6
        );
    }
}
