//! `memidx graph entities|communities|neighbors`: what the entity graph
//! holds, for people checking what the graph list works with.

use std::io::Write;

use anyhow::{Result, bail};

use super::Status;
use crate::cli::{EntityKindArg, GraphView as View};
use memidx::index::Index;
use memidx::lists::graph::query::QueryOptions;
use memidx::lists::graph::summary::{ExtractiveSummary, SUMMARY_LABEL};
use memidx::lists::graph::tables::EntityId;
use memidx::lists::graph::{EntityKind, GraphView, entity::normalize_name};
use memidx::lists::graph::{GraphList, no_graph};
use memidx::output::graph::{
    CentralEntity, CommunitiesReport, CommunityRow, EntitiesReport, EntityNeighbors, EntityRow,
    Neighbor, NeighborsReport, SummaryChunk, print_communities, print_entities, print_neighbors,
};
use memidx::output::json;
use memidx::store::generation::Generation;

/// What `memidx graph` was asked.
#[derive(Debug, Clone)]
pub struct GraphRequest {
    /// The `.memidx` folder.
    pub index_dir: std::path::PathBuf,
    /// What to show.
    pub view: View,
    /// Rows shown at most.
    pub limit: usize,
    /// JSON instead of text.
    pub json: bool,
}

/// Opens the index's graph and prints the view asked for.
pub fn run(request: &GraphRequest, out: &mut dyn Write) -> Result<Status> {
    let index = Index::open(&request.index_dir)?;
    if index.manifest().graph.is_none() {
        return Err(no_graph(&index.manifest().root));
    }
    let generation = index.generation();
    let graph = GraphList::open(generation.dir(), generation.len(), QueryOptions::default())?;
    let view = graph.view()?;
    let limit = request.limit;
    match &request.view {
        View::Entities { kind } => {
            let report = entities(&view, kind.map(entity_kind), limit);
            match request.json {
                true => json::print(out, &report)?,
                false => print_entities(out, &report)?,
            }
        }
        View::Communities { level } => {
            let report = communities(&view, generation, *level, limit)?;
            match request.json {
                true => json::print(out, &report)?,
                false => print_communities(out, &report)?,
            }
        }
        View::Neighbors { entity, kind } => {
            let report = neighbors(&view, entity, kind.map(entity_kind), limit)?;
            match request.json {
                true => json::print(out, &report)?,
                false => print_neighbors(out, &report)?,
            }
        }
    }
    Ok(Status::Success)
}

fn entity_kind(kind: EntityKindArg) -> EntityKind {
    match kind {
        EntityKindArg::Identifier => EntityKind::Identifier,
        EntityKindArg::Code => EntityKind::Code,
        EntityKindArg::ErrorCode => EntityKind::ErrorCode,
        EntityKindArg::Heading => EntityKind::Heading,
        EntityKindArg::Metadata => EntityKind::Metadata,
        EntityKindArg::Document => EntityKind::Document,
        EntityKindArg::Name => EntityKind::Name,
    }
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
fn entities(view: &GraphView<'_>, kind: Option<EntityKind>, limit: usize) -> EntitiesReport {
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
fn communities(
    view: &GraphView<'_>,
    generation: &Generation,
    level: usize,
    limit: usize,
) -> Result<CommunitiesReport> {
    let levels = view.level_count();
    if level >= levels.max(1) {
        bail!(
            "the graph has {levels} community level(s); choose --level 0 to {}",
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
fn neighbors(
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
