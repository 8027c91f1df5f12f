//! The settings of a graph build, recorded in the index.

use serde::{Deserialize, Serialize};

use crate::text::tokenize::Analyzer;

/// Settings of a graph build; recorded in the index.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphOptions {
    /// The tokenizer settings of the index (entity name terms must be
    /// analyzed like queries).
    pub analyzer: Analyzer,
    /// Seed of the community detection.
    pub seed: u64,
    /// Modularity resolution γ: above 1, smaller communities.
    pub resolution: f64,
    /// Entities in more than this share of the chunks are dropped…
    pub max_chunk_share: f64,
    /// …unless they are in at most this many chunks.
    pub max_chunks_floor: u32,
    /// Entities per chunk that take part in co-occurrence.
    pub cooccurrence_limit: usize,
    /// Entities per file related to the file itself.
    pub document_entity_limit: usize,
    /// Central entities kept per community.
    pub central_limit: usize,
    /// Summary chunks kept per community.
    pub summary_chunk_limit: usize,
    /// Strongest relations kept per entity (for `memidx graph neighbors`).
    pub neighbor_limit: usize,
}

impl Default for GraphOptions {
    fn default() -> Self {
        Self {
            analyzer: Analyzer::default(),
            seed: 42,
            resolution: 1.0,
            max_chunk_share: 0.005,
            max_chunks_floor: 1000,
            cooccurrence_limit: 12,
            document_entity_limit: 32,
            central_limit: 12,
            summary_chunk_limit: 5,
            neighbor_limit: 16,
        }
    }
}
