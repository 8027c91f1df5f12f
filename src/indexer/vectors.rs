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

/// One batch's vectors and keys, in ordinal order. A reused vector stays
/// borrowed from where it is stored (`'p`, the previous index), so it is
/// copied once, into the new vector file.
pub(super) struct BatchVectors<'p> {
    /// Per chunk, its vector as stored when it is reused, `None` when it
    /// was embedded (its row is then the next row of `embedded_rows`).
    reused: Vec<Option<(&'p [i8], f32)>>,
    /// The embedded vectors, in order.
    embedded_rows: dense::QuantizedVectors,
    /// Per chunk, the key of its vector ([`dense::vector_key`]).
    pub(super) keys: Vec<u64>,
    /// How many were embedded (the rest were reused).
    pub(super) embedded: usize,
    /// How many of those the model read only up to its window (`None`
    /// when it cannot tell).
    pub(super) cut: Option<usize>,
}

impl BatchVectors<'_> {
    /// Each chunk's vector in order: its int8 values and scale (a zero
    /// vector, whose text the model did not know, has scale 0).
    pub(super) fn rows(&self) -> impl Iterator<Item = (&[i8], f32)> {
        let mut embedded = self.embedded_rows.rows();
        self.reused
            .iter()
            .filter_map(move |reused| reused.or_else(|| embedded.next()))
    }
}

/// Vectors for one batch of `chunks` (with their `sources`): reused when
/// this model embedded the same text before (see [`crate::lists::vector_cache`]),
/// embedded otherwise; `embedded` hears how many so far after each call of
/// the model (a remote one takes minutes over a batch).
pub(super) fn embed_batch<'p>(
    chunks: &[ChunkRecord],
    sources: &[ChunkOrigin],
    previous: &'p Previous,
    embedder: &dyn Embedder,
    embedded: &dyn Fn(usize),
) -> Result<BatchVectors<'p>> {
    let dim = embedder.info().dim;
    let old_keys = previous.carried.as_ref().zip(previous.parts.as_ref());
    let keys: Vec<u64> = sources
        .par_iter()
        .map(
            |source| match (source.previous, old_keys, &source.searchable) {
                (Some(old), Some((carried, parts)), _) => carried.key(parts, old),
                (_, _, Some(text)) => Ok(dense::vector_key(text)),
                _ => bail!("a carried chunk has neither a vector key nor a text"),
            },
        )
        .collect::<Result<_>>()?;
    let reused: Vec<Option<(&[i8], f32)>> = match &previous.vectors {
        Some(reusable) => reusable.find(&keys)?,
        None => vec![None; keys.len()],
    };
    let todo: Vec<usize> = (0..keys.len())
        .filter(|&row| reused[row].is_none())
        .collect();
    let mut embedded_rows = dense::QuantizedVectors::zeros(todo.len(), dim);
    let mut cut = Some(0);
    for (first, batch) in (0..todo.len())
        .step_by(EMBED_BATCH)
        .zip(todo.chunks(EMBED_BATCH))
    {
        let texts: Vec<String> = batch
            .iter()
            .map(|&row| searchable(&chunks[row], &sources[row], previous))
            .collect::<Result<_>>()?;
        let (flat, batch_cut) = embedder.embed_counting_cuts(&texts)?;
        cut = cut.zip(batch_cut).map(|(a, b)| a + b);
        for (offset, values) in flat.chunks_exact(dim).enumerate() {
            embedded_rows.set(first + offset, values);
        }
        embedded(first + batch.len());
    }
    Ok(BatchVectors {
        reused,
        embedded_rows,
        keys,
        embedded: todo.len(),
        cut,
    })
}

/// The searchable text of `chunk`: kept when it was written anew, else
/// read back from the previous generation.
fn searchable(chunk: &ChunkRecord, source: &ChunkOrigin, previous: &Previous) -> Result<String> {
    if let Some(text) = &source.searchable {
        return Ok(text.clone());
    }
    let (old, ord) = previous
        .parts
        .as_ref()
        .zip(source.previous)
        .context("a carried chunk without its previous generation")?;
    Ok(searchable_text(&chunk.heading_path, &old.text(ord)?))
}
