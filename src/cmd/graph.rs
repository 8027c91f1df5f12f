//! `memidx graph entities|communities|neighbors`: what the entity graph
//! holds, for people checking what the graph list works with.

use std::io::Write;

use anyhow::{Context, Result};

use super::Status;
use crate::cli::{EntityKindArg, GraphTable};
use memidx::index::Index;
use memidx::lists::graph::EntityKind;
use memidx::lists::graph::inspect::{communities, entities, neighbors};
use memidx::lists::graph::query::QueryOptions;
use memidx::output::graph::{print_communities, print_entities, print_neighbors};
use memidx::output::json;

/// What `memidx graph` was asked.
#[derive(Debug, Clone)]
pub struct GraphRequest {
    /// The `.memidx` folder.
    pub index_dir: std::path::PathBuf,
    /// What to show.
    pub view: GraphTable,
    /// Rows shown at most.
    pub limit: usize,
    /// JSON instead of text.
    pub json: bool,
}

/// Opens the index's graph and prints the view asked for.
pub fn run(request: &GraphRequest, out: &mut dyn Write) -> Result<Status> {
    let index = Index::open(&request.index_dir)?;
    let graph = index.open_graph(QueryOptions::default())?;
    let view = graph.view()?;
    let limit = request.limit;
    match &request.view {
        GraphTable::Entities { kind } => {
            let report = entities(&view, kind.map(entity_kind), limit);
            match request.json {
                true => json::print(out, &report)?,
                false => print_entities(out, &report)?,
            }
        }
        GraphTable::Communities { level } => {
            let report =
                communities(&view, index.parts().base(), *level, limit).context("--level")?;
            match request.json {
                true => json::print(out, &report)?,
                false => print_communities(out, &report)?,
            }
        }
        GraphTable::Neighbors { entity, kind } => {
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
