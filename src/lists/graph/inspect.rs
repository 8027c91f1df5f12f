//! What the entity graph holds, for people checking what the graph list
//! works with (`memidx graph`): the most mentioned entities, the largest
//! communities with their extractive summaries, an entity's neighbours.
//!
//! Community summaries are **extractive** (central entities and the chunks
//! that best cover them, nothing paraphrased) and say so in both forms.

use anyhow::{Result, bail};
use serde::Serialize;

use super::entity::normalize_name;
use super::summary::{ExtractiveSummary, SUMMARY_LABEL};
use super::tables::EntityId;
use super::{EntityKind, GraphView};
use crate::store::generation::Generation;

/// `memidx graph entities`.
#[derive(Debug, Clone, Serialize)]
pub struct EntitiesReport {
    /// Entities in the graph, all kinds.
    pub total: usize,
    /// The shown entities, most mentioned first.
    pub entities: Vec<EntityRow>,
}

/// One entity.
#[derive(Debug, Clone, Serialize)]
pub struct EntityRow {
    /// Its kind (`identifier`, `metadata`, …).
    pub kind: &'static str,
    /// Its normalized name.
    pub name: String,
    /// Chunks that mention it.
    pub chunks: u32,
    /// Its level-0 community, if any.
    pub community: Option<u32>,
}

/// `memidx graph communities`.
#[derive(Debug, Clone, Serialize)]
pub struct CommunitiesReport {
    /// The level shown (0 = finest).
    pub level: usize,
    /// How many levels there are.
    pub levels: usize,
    /// Communities at this level.
    pub total: usize,
    /// How the summaries were made: always `extractive`.
    pub summary: &'static str,
    /// The shown communities, largest first.
    pub communities: Vec<CommunityRow>,
}

/// One community and its extractive summary.
#[derive(Debug, Clone, Serialize)]
pub struct CommunityRow {
    /// Its id (position among all levels' communities).
    pub id: u32,
    /// Its member count.
    pub size: u32,
    /// Its parent at the next level, if any.
    pub parent: Option<u32>,
    /// Most central members, most central first.
    pub central: Vec<CentralEntity>,
    /// Chunks that best cover them, best first.
    pub chunks: Vec<SummaryChunk>,
}

/// A central member of a community.
#[derive(Debug, Clone, Serialize)]
pub struct CentralEntity {
    /// Its kind.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// Its centrality, 0–1 (the most central has 1).
    pub centrality: f32,
}

/// A chunk of a community's extractive summary.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryChunk {
    /// Chunk id, `path#n`.
    pub chunk_id: String,
    /// Its heading path.
    pub heading: String,
    /// Summed centrality of the central entities it mentions.
    pub coverage: f32,
}

/// `memidx graph neighbors ENTITY`: one block per entity with that name.
#[derive(Debug, Clone, Serialize)]
pub struct NeighborsReport {
    /// The name asked for.
    pub entity: String,
    /// Each entity with that name and its strongest relations.
    pub matches: Vec<EntityNeighbors>,
}

/// One entity and its strongest relations.
#[derive(Debug, Clone, Serialize)]
pub struct EntityNeighbors {
    /// The entity.
    pub entity: EntityRow,
    /// Its related entities, strongest relation first.
    pub neighbors: Vec<Neighbor>,
}

/// A related entity.
#[derive(Debug, Clone, Serialize)]
pub struct Neighbor {
    /// Its kind.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The relation's weight (co-occurrence, same file, same front-matter
    /// value, links; summed).
    pub weight: f32,
}

fn entity_row(view: &GraphView<'_>, entity: EntityId) -> EntityRow {
    EntityRow {
        kind: view.entity_kind(entity).as_str(),
        name: view.entity_name(entity).to_string(),
        chunks: view.entity_chunk_count(entity),
        community: view.entity_community(entity, 0),
    }
}

/// The `limit` entities (of `kind`) mentioned by the most chunks; ties by id.
pub fn entities(view: &GraphView<'_>, kind: Option<EntityKind>, limit: usize) -> EntitiesReport {
    let mut ids: Vec<EntityId> = (0..view.entity_count() as EntityId)
        .filter(|&e| kind.is_none_or(|k| view.entity_kind(e) == k))
        .collect();
    ids.sort_by_key(|&e| (std::cmp::Reverse(view.entity_chunk_count(e)), e));
    EntitiesReport {
        total: view.entity_count(),
        entities: ids
            .into_iter()
            .take(limit)
            .map(|e| entity_row(view, e))
            .collect(),
    }
}

/// The `limit` largest communities of `level` with their extractive summaries.
pub fn communities(
    view: &GraphView<'_>,
    generation: &Generation,
    level: usize,
    limit: usize,
) -> Result<CommunitiesReport> {
    let levels = view.level_count();
    if level >= levels.max(1) {
        bail!(
            "the graph has {levels} community level(s); choose a level from 0 to {}",
            levels.saturating_sub(1)
        );
    }
    let range = view.level_communities(level);
    let total = range.len();
    let mut rows = Vec::new();
    // Communities are numbered within a level by size, largest first.
    for community in range.take(limit) {
        let summary = ExtractiveSummary::of(view, community);
        let chunks = summary
            .chunks
            .iter()
            .map(|&(ord, coverage)| {
                let chunk = generation.chunk(ord)?;
                Ok(SummaryChunk {
                    chunk_id: chunk.id(),
                    heading: chunk.heading(),
                    coverage,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        rows.push(CommunityRow {
            id: community,
            size: summary.size,
            parent: view.community_parent(community),
            central: summary
                .central_entities
                .iter()
                .map(|&(entity, centrality)| CentralEntity {
                    kind: view.entity_kind(entity).as_str(),
                    name: view.entity_name(entity).to_string(),
                    centrality,
                })
                .collect(),
            chunks,
        });
    }
    Ok(CommunitiesReport {
        level,
        levels,
        total,
        summary: SUMMARY_LABEL,
        communities: rows,
    })
}

/// Each entity named `name` (of `kind`) with its `limit` strongest relations.
pub fn neighbors(
    view: &GraphView<'_>,
    name: &str,
    kind: Option<EntityKind>,
    limit: usize,
) -> Result<NeighborsReport> {
    let normalized = normalize_name(name);
    let matches: Vec<EntityNeighbors> = EntityKind::ALL
        .into_iter()
        .filter(|k| kind.is_none_or(|wanted| wanted == *k))
        .filter_map(|k| view.find_entity(k, &normalized))
        .map(|entity| EntityNeighbors {
            entity: entity_row(view, entity),
            neighbors: view
                .neighbors(entity)
                .take(limit)
                .map(|(other, weight)| Neighbor {
                    kind: view.entity_kind(other).as_str(),
                    name: view.entity_name(other).to_string(),
                    weight,
                })
                .collect(),
        })
        .collect();
    if matches.is_empty() {
        bail!(
            "no entity named '{normalized}' in the graph; list them with 'memidx graph entities'"
        );
    }
    Ok(NeighborsReport {
        entity: normalized,
        matches,
    })
}
