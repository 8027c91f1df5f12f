//! Community summaries: extractive.
//!
//! Every community gets an **extractive** summary at build time, made of
//! what the corpus already says: its most central entities, and the chunks
//! that best cover them (a chunk's coverage is the summed centrality of the
//! central entities it mentions). Nothing is paraphrased, so it is labelled
//! [`SUMMARY_LABEL`] wherever it is shown.

use std::collections::HashMap;

use super::tables::{CommunityId, EntityId, GraphView};
use crate::store::generation::ChunkOrd;

/// How extractive summaries are labelled in output.
pub const SUMMARY_LABEL: &str = "extractive";

/// How much a file-level central entity (a file, a front-matter value)
/// counts toward a chunk's coverage: it is mentioned by every chunk of its
/// files alike, so it mostly breaks ties.
const FILE_LEVEL_COVERAGE: f32 = 0.25;

/// The chunks that best cover `central` (entity, centrality), best first:
/// each chunk scores the summed centrality of the central entities it
/// mentions (file-level ones at [`FILE_LEVEL_COVERAGE`]); ties go to the
/// lower ordinal; at most `limit`.
pub fn covering_chunks(
    view: &GraphView<'_>,
    central: &[(EntityId, f32)],
    limit: usize,
) -> Vec<(ChunkOrd, f32)> {
    let mut coverage: HashMap<ChunkOrd, f32> = HashMap::new();
    for &(entity, centrality) in central {
        let share = if view.entity_kind(entity).is_file_level() {
            FILE_LEVEL_COVERAGE
        } else {
            1.0
        };
        for chunk in view.mentioning_chunks(entity) {
            *coverage.entry(chunk).or_default() += centrality * share;
        }
    }
    let mut ranked: Vec<(ChunkOrd, f32)> = coverage.into_iter().collect();
    ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(limit);
    ranked
}

/// A community's extractive summary, read from the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractiveSummary {
    /// The community.
    pub community: CommunityId,
    /// Its level (0 = finest).
    pub level: usize,
    /// Its member count.
    pub size: u32,
    /// Most central members: (entity, centrality 0–1), most central first.
    pub central_entities: Vec<(EntityId, f32)>,
    /// Chunks that best cover them: (chunk, coverage), best first.
    pub chunks: Vec<(ChunkOrd, f32)>,
}

impl ExtractiveSummary {
    /// The stored summary of `community`.
    pub fn of(view: &GraphView<'_>, community: CommunityId) -> Self {
        Self {
            community,
            level: view.community_level(community),
            size: view.community_size(community),
            central_entities: view.central_entities(community).collect(),
            chunks: view.summary_chunks(community).collect(),
        }
    }

    /// A short label: the names of the `count` most central entities, joined by ", ".
    pub fn label(&self, view: &GraphView<'_>, count: usize) -> String {
        self.central_entities
            .iter()
            .take(count)
            .map(|&(entity, _)| view.entity_name(entity))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
