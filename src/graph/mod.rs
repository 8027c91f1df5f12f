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
//!   entities, the chunks best covering them) and the hook for a generated one;
//! - [`query`] turns a query into ranked chunks: its entities, their
//!   communities, the chunks covering both;
//! - [`tables`] is the on-disk format, `graph.bin`, memory-mapped.
//!
//! Build: [`build_generation`] extracts each file ([`EntityExtractor::file`],
//! pure, in parallel), feeds them in file order to a [`GraphBuilder`] and
//! builds; the indexer validates, [`tables::encode`]s and writes the result.
//! Search: [`GraphFile::open`], then [`query::rank`] on its view.

pub mod build;
pub mod community;
pub mod entity;
pub mod query;
pub mod summary;
pub mod tables;
#[cfg(test)]
mod tests;

pub use build::{BuiltGraph, GraphBuilder, GraphOptions};
pub use entity::{ChunkSource, EntityExtractor, EntityKey, EntityKind, FileEntities};
pub use query::{GraphHit, GraphRanking, QueryOptions};
pub use tables::{GraphFile, GraphView};

use anyhow::Result;
use rayon::prelude::*;

use crate::store::generation::ChunkTable;

/// Name of the graph file inside a generation folder.
pub const GRAPH_FILE: &str = "graph.bin";

/// The graph list's weight in the default lists (`--mode hybrid`) unless
/// the index (`eval --sweep --save`) or a search sets another. It is 0, so
/// the graph is off by default: measured with `memidx eval`, any positive
/// weight lowers hybrid nDCG@10 on Cranfield (0.3798 → 0.3784 at 0.02),
/// whose questions name no entities, while it lifts the graph fixture's
/// corpus-wide questions (0.8315 → 0.8490 at 0.2). See the README.
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

/// Builds the graph of a generation: `table`'s files with their chunks,
/// whose texts are in `texts`. Files are extracted in parallel and added in
/// file order, so the result does not depend on the thread count.
pub fn build_generation(
    table: &ChunkTable,
    texts: &[u8],
    options: GraphOptions,
) -> Result<BuiltGraph> {
    let mut file_chunks = vec![0..0; table.files.len()];
    for (ord, chunk) in table.chunks.iter().enumerate() {
        let range = &mut file_chunks[chunk.file as usize];
        if range.start == range.end {
            *range = ord..ord;
        }
        range.end = ord + 1;
    }
    let extractor = EntityExtractor::new();
    let files: Vec<FileEntities> = table
        .files
        .par_iter()
        .zip(&file_chunks)
        .map(|(file, range)| {
            let records = &table.chunks[range.clone()];
            let bodies: Vec<std::borrow::Cow<'_, str>> = records
                .iter()
                .map(|c| {
                    String::from_utf8_lossy(&texts[c.text_start as usize..][..c.text_len as usize])
                })
                .collect();
            let chunks: Vec<ChunkSource<'_>> = records
                .iter()
                .zip(&bodies)
                .map(|(c, text)| ChunkSource {
                    heading_path: &c.heading_path,
                    text,
                })
                .collect();
            let title = file.metadata.get("title").and_then(|t| t.first());
            extractor.file(
                &file.path,
                &file.metadata,
                title.map(String::as_str),
                &chunks,
            )
        })
        .collect();
    let mut builder = GraphBuilder::new(options);
    for file in files {
        builder.add_file(file);
    }
    builder.build()
}
