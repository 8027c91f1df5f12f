//! The dense list: cosine similarity between the query's embedding (moved
//! toward its best chunks, see *Query feedback* below) and every chunk's,
//! by an exact scan of a memory-mapped matrix of int8 vectors.
//!
//! Each chunk's unit vector is stored quantized: `vectors.i8` holds the
//! rows (one signed byte per dimension, `round(x / scale)`), `scales.f32`
//! each row's scale (`max |x| / 127`, little-endian). That is a quarter of
//! the f32 size, and ranks as well (measured: README, How it works). A search quantizes the query the same way, takes integer
//! dot products (which the compiler vectorizes; `rayon` splits the rows
//! over the cores), rescales, and lets the filter's allowed rows compete
//! for the top window. `ndarray` provides the row views of the mapped file.
//! An exact scan has no recall loss and scans a few hundred thousand
//! 256-d rows in milliseconds.
//!
//! **Query feedback.** A short query gives a noisy embedding: a few words,
//! each with every sense it has, and no context. So the list ranks in
//! two scans (pseudo-relevance feedback, Rocchio's method in vector form):
//! the first ranks by the query, the second by the query moved toward the
//! best few chunks of the first pass, `q' = q + mean(seeds)` at unit
//! length. The seeds share the query's topic and carry its context, so
//! `q'` finds paraphrases `q` misses. Which chunks seed it is the
//! retriever's choice ([`List::refine`]): in a hybrid search the best of the
//! fused first pass, alone the list's own best. The count is a setting
//! recorded with the fusion defaults ([`DEFAULT_FEEDBACK`]; 0 turns
//! feedback off), and `explain` names the chunks used. The query's
//! embedding is kept from the first scan for the second (a few recent
//! queries, for a transformer's forward pass costs more than a scan).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, ensure};
use memmap2::{Mmap, MmapOptions};
use ndarray::ArrayView2;
use rayon::prelude::*;

use super::AllowSet;
use super::{Candidate, List, ListHit, ListKind, RankedList, TopWindow};
use crate::embed::{Embedder, normalize};
use crate::store::damaged;
use crate::store::generation::{ChunkOrd, VectorFlags};

/// File holding the quantized chunk vectors.
pub const VECTORS_FILE: &str = "vectors.i8";
/// File holding each vector's scale.
pub const SCALES_FILE: &str = "scales.f32";
/// File holding each vector's key (see [`vector_key`]), little-endian u64.
pub const KEYS_FILE: &str = "keys.u64";

/// Rows scored per parallel task.
const SCAN_BLOCK: usize = 8192;

/// A dequantized row's squared norm may differ from 1 by this much.
const NORM_TOLERANCE: f32 = 0.02;

/// How many of the first scan's best chunks move the query by default (see
/// the module doc): three, with the query and their mean counting alike,
/// the textbook form of Rocchio's feedback rather than a tuned pair.
pub const DEFAULT_FEEDBACK: usize = 3;

/// Most chunks that may move the dense list's query (`--dense-feedback`):
/// feedback is about a query's few best chunks, and each is read in full.
pub const MAX_DENSE_FEEDBACK: usize = 100;

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
    let path = dir.join(KEYS_FILE);
    let bytes = std::fs::read(&path).with_context(|| damaged(&path, "cannot be read"))?;
    ensure!(bytes.len() % 8 == 0, damaged(&path, "has a bad length"));
    Ok(bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8-byte chunks")))
        .collect())
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
        self.set_quantized(row, &values, scale);
    }

    /// Copies an already quantized row into row `row`.
    pub fn set_quantized(&mut self, row: usize, values: &[i8], scale: f32) {
        self.values[row * self.dim..][..self.dim].copy_from_slice(values);
        self.scales[row] = scale;
    }

    /// True when row `row` is not the zero vector (a zero row has scale 0).
    pub fn has_vector(&self, row: usize) -> bool {
        self.scales[row] != 0.0
    }
}

/// Writes a generation's vector files as rows arrive (an index run streams
/// its chunks through in batches).
pub struct VectorWriter {
    dir: PathBuf,
    values: BufWriter<File>,
    scales: BufWriter<File>,
    keys: BufWriter<File>,
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
            dir: dir.to_path_buf(),
        })
    }

    /// Appends `rows` and their `keys` (one per row).
    pub fn append(&mut self, rows: &QuantizedVectors, keys: &[u64]) -> Result<()> {
        ensure!(
            keys.len() == rows.scales.len(),
            "one key per vector is needed"
        );
        let scales: Vec<u8> = rows.scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        let keys: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        self.values
            .write_all(bytemuck::cast_slice(&rows.values))
            .and_then(|()| self.scales.write_all(&scales))
            .and_then(|()| self.keys.write_all(&keys))
            .with_context(|| format!("cannot write the vectors in {}", self.dir.display()))
    }

    /// Flushes and fsyncs the files.
    pub fn finish(self) -> Result<()> {
        for writer in [self.values, self.scales, self.keys] {
            writer
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|file| file.sync_all())
                .with_context(|| format!("cannot write the vectors in {}", self.dir.display()))?;
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
    rows: usize,
    dim: usize,
}

/// Maps `path` after checking its length (`None` when empty).
fn map_exact(path: &Path, len: u64) -> Result<Option<Mmap>> {
    let file = File::open(path).with_context(|| damaged(path, "cannot be opened"))?;
    ensure!(
        file.metadata()?.len() == len,
        damaged(path, "has the wrong length")
    );
    // SAFETY: generation files are never modified once the manifest names them.
    Ok(if len == 0 {
        None
    } else {
        Some(unsafe { MmapOptions::new().populate().map(&file) }?)
    })
}

impl StoredVectors {
    /// Maps the `rows` vectors of dimension `dim` in `dir`.
    pub fn open(dir: &Path, rows: usize, dim: usize) -> Result<Self> {
        ensure!(
            cfg!(target_endian = "little"),
            "memidx reads vectors on little-endian machines only"
        );
        let path = dir.join(VECTORS_FILE);
        let values = map_exact(&path, (rows * dim) as u64)?;
        let scales = map_exact(&dir.join(SCALES_FILE), (rows * 4) as u64)?;
        Ok(Self {
            path,
            values,
            scales,
            rows,
            dim,
        })
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
        let row = values
            .get(ord as usize * self.dim..(ord as usize + 1) * self.dim)
            .context("chunk ordinal beyond the vector file")?;
        Ok((row, scale))
    }

    /// The vector of row `ord`, dequantized.
    pub fn row(&self, ord: ChunkOrd) -> Result<Vec<f32>> {
        let (values, scale) = self.quantized_row(ord)?;
        Ok(values.iter().map(|v| f32::from(*v) * scale).collect())
    }

    /// Similarity of the query vector to every row, by ordinal.
    fn similarities(&self, query: &[f32]) -> Result<Vec<f32>> {
        let (query, query_scale) = quantize(query);
        let matrix = self.matrix()?;
        let values = matrix
            .as_slice()
            .context("the vector matrix is not contiguous")?;
        let scales = self.scales()?;
        let dim = self.dim.max(1);
        let mut out = vec![0.0f32; self.rows];
        out.par_chunks_mut(SCAN_BLOCK)
            .enumerate()
            .for_each(|(block, scores)| {
                let first = block * SCAN_BLOCK;
                let rows = Rows {
                    values: &values[first * dim..(first + scores.len()) * dim],
                    scales: &scales[first..first + scores.len()],
                    dim,
                };
                score_rows(&query, query_scale, rows, scores);
            });
        Ok(out)
    }
}

/// Query embeddings kept between a search's two scans.
const RECENT_QUERIES: usize = 16;

/// The dense list of one generation.
pub struct DenseList {
    vectors: StoredVectors,
    /// Which chunks have a non-zero vector (from the chunk table).
    has_vector: VectorFlags,
    embedder: &'static dyn Embedder,
    /// How many seeds move the query; 0: one scan.
    feedback: usize,
    /// The last few queries embedded, with their vectors (newest last).
    recent: Mutex<VecDeque<(String, Arc<[f32]>)>>,
}

/// One scan's outcome: the best chunks and the counts of scored chunks.
struct Scan {
    hits: Vec<ListHit>,
    matched: usize,
    filtered_out: usize,
}

impl DenseList {
    /// Opens the vectors in `gen_dir`: one per chunk (`has_vector` says
    /// which are non-zero), of the embedder's dimension. Searches move the
    /// query toward its best `feedback` chunks first (0: they do not).
    pub fn open(
        gen_dir: &Path,
        has_vector: VectorFlags,
        embedder: &'static dyn Embedder,
        feedback: usize,
    ) -> Result<Self> {
        let vectors = StoredVectors::open(gen_dir, has_vector.len(), embedder.info().dim)?;
        Ok(Self {
            vectors,
            has_vector,
            embedder,
            feedback,
            recent: Mutex::new(VecDeque::with_capacity(RECENT_QUERIES)),
        })
    }

    /// The unit embedding of `query` (all zeros when the model knows none
    /// of it), from the recent ones when it was embedded lately.
    fn embed_query(&self, query: &str) -> Result<Arc<[f32]>> {
        let recent = |queries: &VecDeque<(String, Arc<[f32]>)>| {
            queries
                .iter()
                .find(|(text, _)| text == query)
                .map(|(_, vector)| Arc::clone(vector))
        };
        if let Some(vector) = recent(&self.recent.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(vector);
        }
        let vector: Arc<[f32]> = self.embedder.embed(&[query.to_string()])?.into();
        let mut queries = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if queries.len() == RECENT_QUERIES {
            queries.pop_front();
        }
        queries.push_back((query.to_string(), Arc::clone(&vector)));
        Ok(vector)
    }

    /// Ranks `allow`'s chunks by `vector` into a list (empty for a zero
    /// vector or window), timed from `started`.
    fn rank(
        &self,
        vector: &[f32],
        window: usize,
        allow: &AllowSet,
        started: Instant,
    ) -> Result<RankedList> {
        let mut list = RankedList::empty(self.kind());
        list.prepare_time = started.elapsed();
        // A query the model knows nothing of has a zero vector: no ranking.
        if vector.iter().all(|v| *v == 0.0) || window == 0 {
            list.elapsed = list.prepare_time;
            return Ok(list);
        }
        let scan = self.scan(vector, window, allow)?;
        list.hits = scan.hits;
        list.matched = scan.matched;
        list.filtered_out = scan.filtered_out;
        list.elapsed = started.elapsed();
        Ok(list)
    }

    /// The best `window` chunks of `allow` for the unit vector `query`.
    fn scan(&self, query: &[f32], window: usize, allow: &AllowSet) -> Result<Scan> {
        let mut best = TopWindow::new(window);
        let (mut matched, mut filtered_out) = (0, 0);
        for (chunk, score) in self.vectors.similarities(query)?.into_iter().enumerate() {
            let chunk = chunk as ChunkOrd;
            // Unit vectors give cosines in [-1, 1]; anything else is a damaged file.
            ensure!(
                score.is_finite() && score.abs() <= 1.0 + NORM_TOLERANCE,
                damaged(&self.vectors.path, "holds a vector that is not unit length")
            );
            if allow.allows(chunk) {
                matched += 1;
                best.push(Candidate { score, chunk });
            } else {
                filtered_out += 1;
            }
        }
        let hits: Vec<ListHit> = best.into_sorted().into_iter().map(ListHit::from).collect();
        self.check_hits(&hits)?;
        Ok(Scan {
            hits,
            matched,
            filtered_out,
        })
    }

    /// Checks that every returned chunk's vector is what the chunk table
    /// says: unit length, or zero for a chunk the model knew nothing of.
    /// Catches a zeroed or overwritten vector file at the cost of
    /// `window × dim` multiplications.
    fn check_hits(&self, hits: &[ListHit]) -> Result<()> {
        for hit in hits {
            let norm: f32 = self.vectors.row(hit.chunk)?.iter().map(|x| x * x).sum();
            let expected = if self.has_vector.get(hit.chunk) == Some(true) {
                1.0
            } else {
                0.0
            };
            ensure!(
                (norm - expected).abs() < NORM_TOLERANCE,
                damaged(
                    &self.vectors.path,
                    "holds a vector that does not match its chunk"
                )
            );
        }
        Ok(())
    }
}

/// A block of quantized rows and their scales.
#[derive(Clone, Copy)]
struct Rows<'a> {
    values: &'a [i8],
    scales: &'a [f32],
    dim: usize,
}

/// Scores each row of `rows` against the quantized query into `scores`.
///
/// The portable build targets the x86-64 baseline (SSE2); where the CPU has
/// AVX2 the same loop runs compiled for it (detected once by the standard
/// library), which about halves the scan.
fn score_rows(query: &[i8], query_scale: f32, rows: Rows<'_>, scores: &mut [f32]) {
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

/// Integer dot product of two int8 vectors (exact; vectorizes well).
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

impl List for DenseList {
    fn kind(&self) -> ListKind {
        ListKind::Dense
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let vector = self.embed_query(query)?;
        self.rank(&vector, window, allow, started)
    }

    fn feedback_seeds(&self) -> usize {
        self.feedback
    }

    /// Moves the query toward the seeds that resemble it at all (a vector,
    /// and a positive cosine), then ranks by it; with no such seed the
    /// query stays as it is.
    fn refine(
        &self,
        query: &str,
        window: usize,
        allow: &AllowSet,
        seeds: &[ChunkOrd],
    ) -> Result<RankedList> {
        let started = Instant::now();
        let query = self.embed_query(query)?;
        let seeds = &seeds[..seeds.len().min(self.feedback)];
        let (vector, used) = moved_query(&query, seeds, &self.vectors, &self.has_vector)?;
        let mut list = self.rank(&vector, window, allow, started)?;
        list.feedback_chunks = used;
        Ok(list)
    }
}

/// The unit vector `query` moved toward those of `seeds` that resemble it
/// at all (a vector, and a positive cosine; their rows in `vectors`), with
/// the seeds used; with no such seed the query stays as it is. The dense
/// list's feedback step, shared with any list that ranks the same vectors
/// elsewhere (the Milvus backend).
pub fn moved_query(
    query: &[f32],
    seeds: &[ChunkOrd],
    vectors: &StoredVectors,
    has_vector: &VectorFlags,
) -> Result<(Vec<f32>, Vec<ChunkOrd>)> {
    let mut vector = query.to_vec();
    let mut used = Vec::new();
    let mut rows = Vec::new();
    for &chunk in seeds {
        if has_vector.get(chunk) != Some(true) {
            continue;
        }
        let similarity: f32 = vectors
            .row(chunk)?
            .iter()
            .zip(&vector)
            .map(|(a, b)| a * b)
            .sum();
        if similarity > 0.0 {
            used.push(chunk);
            rows.push(vectors.quantized_row(chunk)?);
        }
    }
    if !rows.is_empty() {
        move_toward(&mut vector, &rows);
    }
    Ok((vector, used))
}

/// Moves the unit vector `query` to `query + mean(rows)`, at unit length:
/// toward the rows' centroid, the two weighing alike. Each row is stored
/// int8 values and their scale; at least one row, each with a positive
/// cosine to the query, so the sum cannot vanish.
fn move_toward(query: &mut [f32], rows: &[(&[i8], f32)]) {
    let share = 1.0 / rows.len().max(1) as f32;
    for (values, scale) in rows {
        for (q, v) in query.iter_mut().zip(*values) {
            *q += share * scale * f32::from(*v);
        }
    }
    normalize(query);
}

/// A dense feedback count within 0…[`MAX_DENSE_FEEDBACK`].
pub fn check_dense_feedback(chunks: usize) -> Result<usize> {
    ensure!(
        chunks <= MAX_DENSE_FEEDBACK,
        "dense feedback must be between 0 and {MAX_DENSE_FEEDBACK} chunks, got {chunks}"
    );
    Ok(chunks)
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
        assert!(!rows.has_vector(0) && rows.has_vector(1));
        assert_eq!(rows.values[256..], q[..]);
        assert_eq!(quantize(&[0.0, 0.0]), (vec![0, 0], 0.0));
    }

    #[test]
    fn the_moved_query_is_the_query_plus_the_rows_mean_at_unit_length() {
        let mut query = [1.0, 0.0, 0.0];
        // (0, 1, 0) and (0, 0.6, 0.8), stored as int8 values and a scale.
        let rows: [(&[i8], f32); 2] = [(&[0, 127, 0], 1.0 / 127.0), (&[0, 6, 8], 0.1)];
        // q + mean = (1, 0.8, 0.4), of length √1.8.
        move_toward(&mut query, &rows);
        let length = 1.8f32.sqrt();
        let expected = [1.0 / length, 0.8 / length, 0.4 / length];
        for (m, e) in query.iter().zip(expected) {
            assert!((m - e).abs() < 1e-6, "{query:?}");
        }
        // One row weighs as much as the query: the result lies halfway.
        let mut query = [1.0, 0.0];
        move_toward(&mut query, &[(&[0, 127], 1.0 / 127.0)]);
        let half = 0.5f32.sqrt();
        assert!((query[0] - half).abs() < 1e-6 && (query[1] - half).abs() < 1e-6);
    }

    #[test]
    fn integer_dot_is_exact() {
        assert_eq!(
            dot_i8(&[127, -127, 3], &[127, 127, -2]),
            127 * 127 - 127 * 127 - 6
        );
    }
}
