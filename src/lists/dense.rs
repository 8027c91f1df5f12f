//! The dense list: cosine similarity between the query's embedding and every
//! chunk's, by an exact scan of a memory-mapped matrix of int8 vectors.
//!
//! Each chunk's unit vector is stored quantized: `vectors.i8` holds the
//! rows (one signed byte per dimension, `round(x / scale)`), `scales.f32`
//! each row's scale (`max |x| / 127`, little-endian). That is a quarter of
//! the f32 size, and on shared/eval/cranfield it ranks exactly as well (see
//! the README). A search quantizes the query the same way, takes integer
//! dot products (which the compiler vectorizes; `rayon` splits the rows
//! over the cores), rescales, and lets the filter's allowed rows compete
//! for the top window. `ndarray` provides the row views of the mapped file.
//! An exact scan has no recall loss and scans a few hundred thousand
//! 256-d rows in milliseconds.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, ensure};
use memmap2::Mmap;
use ndarray::ArrayView2;
use rayon::prelude::*;

use super::{Candidate, ListHit, RankedList, SearchIndex, TopWindow};
use crate::embed::Embedder;
use crate::filter::AllowSet;
use crate::store::generation::ChunkOrd;
use crate::store::{atomic, damaged};

/// File holding the quantized chunk vectors.
pub const VECTORS_FILE: &str = "vectors.i8";
/// File holding each vector's scale.
pub const SCALES_FILE: &str = "scales.f32";

/// Rows scored per parallel task.
const SCAN_BLOCK: usize = 8192;

/// A dequantized row's squared norm may differ from 1 by this much.
const NORM_TOLERANCE: f32 = 0.02;

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

/// Writes the row-major `vectors` (`dim` per row), quantized, fsynced.
pub fn write(gen_dir: &Path, vectors: &[f32], dim: usize) -> Result<()> {
    let mut values = Vec::with_capacity(vectors.len());
    let mut scales = Vec::with_capacity(vectors.len() / dim.max(1) * 4);
    for row in vectors.chunks_exact(dim.max(1)) {
        let (q, scale) = quantize(row);
        values.extend(q.iter().map(|v| *v as u8));
        scales.extend(scale.to_le_bytes());
    }
    atomic::write_synced(&gen_dir.join(VECTORS_FILE), &values)?;
    atomic::write_synced(&gen_dir.join(SCALES_FILE), &scales)
}

/// The dense list of one generation.
pub struct DenseIndex {
    path: PathBuf,
    values: Option<Mmap>,
    scales: Option<Mmap>,
    rows: usize,
    /// Per chunk: whether its vector is non-zero (from the chunk table).
    has_vector: Vec<bool>,
    embedder: &'static dyn Embedder,
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
        Some(unsafe { Mmap::map(&file) }?)
    })
}

impl DenseIndex {
    /// Opens the vectors in `gen_dir`: one per chunk, of the embedder's
    /// dimension; `has_vector` says which are non-zero.
    pub fn open(
        gen_dir: &Path,
        has_vector: Vec<bool>,
        embedder: &'static dyn Embedder,
    ) -> Result<Self> {
        ensure!(
            cfg!(target_endian = "little"),
            "memidx reads vectors on little-endian machines only"
        );
        let rows = has_vector.len();
        let path = gen_dir.join(VECTORS_FILE);
        let values = map_exact(&path, (rows * embedder.info().dim) as u64)?;
        let scales = map_exact(&gen_dir.join(SCALES_FILE), (rows * 4) as u64)?;
        Ok(Self {
            path,
            values,
            scales,
            rows,
            has_vector,
            embedder,
        })
    }

    /// The rows as an `rows × dim` matrix view of the mapped file.
    fn matrix(&self) -> Result<ArrayView2<'_, i8>> {
        let bytes = self.values.as_deref().unwrap_or_default();
        let values: &[i8] = bytemuck::cast_slice(bytes);
        Ok(ArrayView2::from_shape(
            (self.rows, self.embedder.info().dim),
            values,
        )?)
    }

    /// The row scales.
    fn scales(&self) -> Result<&[f32]> {
        match self.scales.as_deref() {
            None => Ok(&[]),
            Some(bytes) => bytemuck::try_cast_slice(bytes)
                .map_err(|e| anyhow!("cannot view the scales as floats: {e}")),
        }
    }

    /// The vector of chunk `ord`, dequantized.
    pub fn row(&self, ord: ChunkOrd) -> Result<Vec<f32>> {
        let matrix = self.matrix()?;
        let scale = *self
            .scales()?
            .get(ord as usize)
            .context("chunk ordinal beyond the vector file")?;
        ensure!(
            (ord as usize) < self.rows,
            "chunk ordinal beyond the vector file"
        );
        Ok(matrix
            .row(ord as usize)
            .iter()
            .map(|v| f32::from(*v) * scale)
            .collect())
    }

    /// Checks that every returned chunk's vector is what the chunk table
    /// says: unit length, or zero for a chunk the model knew nothing of.
    /// Catches a zeroed or overwritten vector file at the cost of
    /// `window × dim` multiplications.
    fn check_hits(&self, hits: &[ListHit]) -> Result<()> {
        for hit in hits {
            let norm: f32 = self.row(hit.chunk)?.iter().map(|x| x * x).sum();
            let expected = if self.has_vector.get(hit.chunk as usize) == Some(&true) {
                1.0
            } else {
                0.0
            };
            ensure!(
                (norm - expected).abs() < NORM_TOLERANCE,
                damaged(&self.path, "holds a vector that does not match its chunk")
            );
        }
        Ok(())
    }

    /// Similarity of the query vector to every chunk, by ordinal.
    fn similarities(&self, query: &[f32]) -> Result<Vec<f32>> {
        let (query, query_scale) = quantize(query);
        let matrix = self.matrix()?;
        let values = matrix
            .as_slice()
            .context("the vector matrix is not contiguous")?;
        let scales = self.scales()?;
        let dim = self.embedder.info().dim.max(1);
        let mut out = vec![0.0f32; self.rows];
        out.par_chunks_mut(SCAN_BLOCK)
            .enumerate()
            .for_each(|(block, scores)| {
                let first = block * SCAN_BLOCK;
                for (offset, score) in scores.iter_mut().enumerate() {
                    let row = first + offset;
                    let dot = dot_i8(&query, &values[row * dim..(row + 1) * dim]);
                    *score = dot as f32 * query_scale * scales[row];
                }
            });
        Ok(out)
    }
}

/// Integer dot product of two int8 vectors (exact; vectorizes well).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

impl SearchIndex for DenseIndex {
    fn name(&self) -> &'static str {
        "dense"
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let vector = self.embedder.embed(&[query.to_string()])?;
        let mut list = RankedList::empty(self.name());
        list.prepare_time = started.elapsed();
        // A query the model knows nothing of has a zero vector: no ranking.
        if vector.iter().any(|v| *v != 0.0) && window > 0 {
            let mut best = TopWindow::new(window);
            for (chunk, score) in self.similarities(&vector)?.into_iter().enumerate() {
                let chunk = chunk as ChunkOrd;
                // Unit vectors give cosines in [-1, 1]; anything else is a damaged file.
                ensure!(
                    score.is_finite() && score.abs() <= 1.0 + NORM_TOLERANCE,
                    damaged(&self.path, "holds a vector that is not unit length")
                );
                if allow.allows(chunk) {
                    list.matched += 1;
                    best.push(Candidate { score, chunk });
                } else {
                    list.filtered_out += 1;
                }
            }
            list.hits = best.into_sorted().into_iter().map(ListHit::from).collect();
            self.check_hits(&list.hits)?;
        }
        list.elapsed = started.elapsed();
        Ok(list)
    }
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
