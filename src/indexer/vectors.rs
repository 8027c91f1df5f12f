//! A batch's vectors: reused by key when this model embedded the same text
//! before, embedded otherwise.

use anyhow::{Context, Result, bail};
use rayon::prelude::*;

use super::previous::Previous;
use super::table::ChunkOrigin;
use crate::embed::Embedder;
use crate::lists::dense;
use crate::store::generation::{ChunkRecord, searchable_text};

/// Texts embedded per call of the embedder.
const EMBED_BATCH: usize = 256;

/// One batch's vectors and keys, in ordinal order.
pub(super) struct BatchVectors {
    /// One row per chunk.
    pub(super) vectors: dense::QuantizedVectors,
    /// Per chunk, the key of its vector ([`dense::vector_key`]).
    pub(super) keys: Vec<u64>,
    /// How many were embedded (the rest were reused).
    pub(super) embedded: usize,
}

/// Vectors for one batch of `chunks` (with their `sources`): reused when
/// this model embedded the same text before (see [`crate::lists::vector_cache`]),
/// embedded otherwise.
pub(super) fn embed_batch(
    chunks: &[ChunkRecord],
    sources: &[ChunkOrigin],
    previous: &Previous,
    embedder: &dyn Embedder,
) -> Result<BatchVectors> {
    let dim = embedder.info().dim;
    let old_keys = previous.carried.as_ref().map(|c| &c.keys);
    let keys: Vec<u64> = sources
        .par_iter()
        .map(
            |source| match (source.previous, old_keys, &source.searchable) {
                (Some(old), Some(keys), _) if (old as usize) < keys.len() => Ok(keys[old as usize]),
                (_, _, Some(text)) => Ok(dense::vector_key(text)),
                _ => bail!("a carried chunk has neither a vector key nor a text"),
            },
        )
        .collect::<Result<_>>()?;
    let mut vectors = dense::QuantizedVectors::zeros(keys.len(), dim);
    let mut todo = Vec::new();
    for (row, key) in keys.iter().enumerate() {
        let known = match &previous.vectors {
            Some(reusable) => reusable.get(*key)?,
            None => None,
        };
        match known {
            Some((values, scale)) => vectors.set_quantized(row, values, scale),
            None => todo.push(row),
        }
    }
    for batch in todo.chunks(EMBED_BATCH) {
        let texts: Vec<String> = batch
            .iter()
            .map(|&row| searchable(&chunks[row], &sources[row], previous))
            .collect::<Result<_>>()?;
        let flat = embedder.embed(&texts)?;
        for (&row, values) in batch.iter().zip(flat.chunks_exact(dim)) {
            vectors.set(row, values);
        }
    }
    Ok(BatchVectors {
        vectors,
        keys,
        embedded: todo.len(),
    })
}

/// The searchable text of `chunk`: kept when it was written anew, else
/// read back from the previous generation.
fn searchable(chunk: &ChunkRecord, source: &ChunkOrigin, previous: &Previous) -> Result<String> {
    if let Some(text) = &source.searchable {
        return Ok(text.clone());
    }
    let (old, ord) = previous
        .generation
        .as_ref()
        .zip(source.previous)
        .context("a carried chunk without its previous generation")?;
    Ok(searchable_text(&chunk.heading_path, &old.text(ord)?))
}
