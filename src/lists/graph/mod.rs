//! The graph layer: an entity graph with communities, for corpus-wide questions.
//!
//! Chunk retrieval answers local questions; "how do the services of cluster
//! B handle a database shutdown?" needs the structure of the whole corpus.
//! This layer, built at index time with no model call, provides it:
//!
//! - [`entity`] finds the named things of each chunk and file: identifiers
//!   the tokenizer keeps whole, code words, error codes, headings,
//!   front-matter values, files, and the links between files;
//! - [`build`] prunes them, relates them in a `petgraph` graph
//!   (co-occurrence in a chunk, file membership, shared front-matter
//!   values, links), and writes everything a query needs as flat tables;
//! - [`community`] finds hierarchical communities (Leiden, seeded) and each
//!   member's centrality;
//! - [`summary`] gives each community an extractive summary (central
//!   entities, the chunks best covering them);
//! - [`query`] turns a query into ranked chunks: its entities, their
//!   communities, the chunks covering both;
//! - [`tables`] is the on-disk format, `graph.bin`, memory-mapped.
//!
//! - [`cache`] keeps every file's extracted entities in the generation
//!   (`graph-files.bin`), so the next build extracts only changed files.
//!
//! Build: [`build_generation`] extracts each file ([`EntityExtractor::file`],
//! pure, in parallel) or decodes it from the previous generation's
//! [`EntityCache`], feeds them in file order to a [`GraphBuilder`] and
//! builds; the indexer validates, [`tables::encode`]s and writes the graph,
//! and writes the new [`NewEntityCache`].
//! Search: [`GraphFile::open`], then [`query::rank`] on its view.

pub mod build;
pub mod cache;
pub mod community;
pub mod entity;
pub mod inspect;
mod list;
pub mod options;
pub mod query;
pub mod relation;
pub mod sections;
pub mod summary;
pub mod tables;
#[cfg(test)]
mod tests;

pub use build::{BuiltGraph, GraphBuilder};
pub use cache::{EntityCache, NewEntityCache};
pub use entity::{ChunkText, EntityExtractor, EntityKey, EntityKind, FileEntities};
pub use list::{GraphList, no_graph};
pub use options::GraphOptions;
pub use query::{GraphHit, GraphRanking, QueryOptions};
pub use tables::{GraphFile, GraphView};

use anyhow::{Context, Result, ensure};
use rayon::prelude::*;

use crate::store::generation::{ChunkOrd, ChunkTable};

/// Name of the graph file inside a generation folder.
pub const GRAPH_FILE: &str = "graph.bin";

/// The graph list's weight in the default lists (`--mode hybrid`) unless
/// the index (`eval --sweep --save`) or a search sets another. It is 0, so
/// the graph is off by default: on questions that name no entities any
/// positive weight lowers hybrid quality, while corpus-wide questions gain
/// (measured: docs/graph.md).
pub const DEFAULT_WEIGHT: f64 = 0.0;

/// The graph list's weight when it is asked for by name (`--mode
/// sparse,graph`, `eval`'s graph modes) without `--graph-weight`, and the
/// index records no positive weight: the best weight on the graph fixture.
pub const NAMED_WEIGHT: f64 = 0.2;

/// The weight of a graph list asked for by name, given the index's
/// recorded weight: that weight if positive, else [`NAMED_WEIGHT`].
pub fn named_weight(recorded: f64) -> f64 {
    if recorded > 0.0 {
        recorded
    } else {
        NAMED_WEIGHT
    }
}

/// Files extracted (or decoded) together before they are handed to the
/// builder in order: few enough that the extracted entities of the whole
/// corpus are never held at once (a batch holds a few MB), many enough
/// that a build waits for rayon's pool rarely (the embedder shares it).
const BATCH_FILES: usize = 2048;

/// Builds the graph of a generation: `table`'s files with their chunks,
/// `chunk_text` giving a chunk's text by ordinal. A file whose `reuse`
/// entry names a file of `previous` with the same fingerprint
/// ([`cache::fingerprint`]) is decoded from it instead of extracted (its
/// texts are not read); any other is extracted. Returns the graph and the
/// new generation's cache, to [`NewEntityCache::write`] into it.
///
/// Files are extracted in parallel, a batch at a time, and added in file
/// order, so the result depends neither on the thread count nor on what
/// was reused.
pub fn build_generation(
    table: &ChunkTable,
    chunk_text: &(dyn Fn(ChunkOrd) -> Result<String> + Sync),
    reuse: &[Option<u32>],
    previous: Option<&EntityCache>,
    options: GraphOptions,
) -> Result<(BuiltGraph, NewEntityCache)> {
    ensure!(
        reuse.len() == table.files.len(),
        "{} reuse entries for {} files",
        reuse.len(),
        table.files.len()
    );
    let mut file_chunks = vec![0..0; table.files.len()];
    for (ord, chunk) in table.chunks.iter().enumerate() {
        let range = &mut file_chunks[chunk.file as usize];
        if range.start == range.end {
            *range = ord..ord;
        }
        range.end = ord + 1;
    }
    let extractor = EntityExtractor::new();
    let mut builder = GraphBuilder::new(options);
    let mut cache = NewEntityCache::new();
    for start in (0..table.files.len()).step_by(BATCH_FILES) {
        let batch = start..(start + BATCH_FILES).min(table.files.len());
        // Decoded from the previous cache where it holds the file as it is.
        let decoded: Vec<(u64, Option<FileEntities>)> = batch
            .clone()
            .into_par_iter()
            .map(|index| {
                let records = &table.chunks[file_chunks[index].clone()];
                let fingerprint = cache::fingerprint(&table.files[index], records);
                let entities = previous
                    .zip(reuse[index])
                    .and_then(|(previous, old)| previous.get(old, fingerprint));
                (fingerprint, entities)
            })
            .collect();
        // The others' texts, read in order (a text store decompresses each
        // block once that way).
        let texts: Vec<Option<Vec<String>>> = batch
            .clone()
            .zip(&decoded)
            .map(|(index, (_, entities))| match entities {
                Some(_) => Ok(None),
                None => file_chunks[index]
                    .clone()
                    .map(|ord| chunk_text(ord as ChunkOrd))
                    .collect::<Result<_>>()
                    .map(Some),
            })
            .collect::<Result<_>>()?;
        let extracted: Vec<Option<FileEntities>> = batch
            .clone()
            .into_par_iter()
            .zip(texts)
            .map(|(index, texts)| {
                let texts = texts?;
                let file = &table.files[index];
                let chunks: Vec<ChunkText<'_>> = table.chunks[file_chunks[index].clone()]
                    .iter()
                    .zip(&texts)
                    .map(|(c, text)| ChunkText {
                        heading_path: &c.heading_path,
                        text,
                    })
                    .collect();
                let title = file.metadata.get("title").and_then(|t| t.first());
                Some(extractor.file(
                    &file.path,
                    &file.metadata,
                    title.map(String::as_str),
                    &chunks,
                ))
            })
            .collect();
        for ((fingerprint, decoded), extracted) in decoded.into_iter().zip(extracted) {
            let reused = decoded.is_some();
            let entities = decoded
                .or(extracted)
                .context("a file was neither decoded nor extracted")?;
            cache.push(&entities, fingerprint, reused)?;
            builder.add_file(entities);
        }
    }
    Ok((builder.build()?, cache))
}
