//! The message types of `memidx graph`, shared by the human and JSON
//! printers: what the entity graph holds, so a person can see it.
//!
//! Community summaries are **extractive** (central entities and the chunks
//! that best cover them, nothing paraphrased) and say so in both forms.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use super::escape_controls;
use crate::lists::graph::summary::SUMMARY_LABEL;

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

/// Prints the entities as a table (names with their control characters
/// escaped, as in every printer here).
pub fn print_entities(out: &mut dyn Write, report: &EntitiesReport) -> Result<()> {
    writeln!(
        out,
        "{:<11} {:>7} {:>9}  name",
        "kind", "chunks", "community"
    )?;
    for row in &report.entities {
        print_entity(out, row)?;
    }
    writeln!(
        out,
        "{} of {} entities",
        report.entities.len(),
        report.total
    )?;
    Ok(())
}

fn print_entity(out: &mut dyn Write, row: &EntityRow) -> Result<()> {
    let community = row.community.map_or("-".to_string(), |c| c.to_string());
    writeln!(
        out,
        "{:<11} {:>7} {community:>9}  {}",
        row.kind,
        row.chunks,
        escape_controls(&row.name)
    )?;
    Ok(())
}

/// Prints each community with its extractive summary.
pub fn print_communities(out: &mut dyn Write, report: &CommunitiesReport) -> Result<()> {
    writeln!(
        out,
        "level {} of {}: {} communities (summaries: {})",
        report.level, report.levels, report.total, report.summary
    )?;
    for row in &report.communities {
        let parent = row
            .parent
            .map_or(String::new(), |p| format!(", parent {p}"));
        writeln!(
            out,
            "\ncommunity {} ({} entities{parent})",
            row.id, row.size
        )?;
        let central: Vec<String> = row
            .central
            .iter()
            .map(|c| {
                format!(
                    "{} ({}, {:.2})",
                    escape_controls(&c.name),
                    c.kind,
                    c.centrality
                )
            })
            .collect();
        writeln!(out, "  central: {}", central.join(", "))?;
        writeln!(out, "  {SUMMARY_LABEL} summary:")?;
        for chunk in &row.chunks {
            writeln!(
                out,
                "    {:.2}  {}  {}",
                chunk.coverage,
                escape_controls(&chunk.chunk_id),
                escape_controls(&chunk.heading)
            )?;
        }
    }
    Ok(())
}

/// Prints each matching entity and its neighbors.
pub fn print_neighbors(out: &mut dyn Write, report: &NeighborsReport) -> Result<()> {
    for (i, block) in report.matches.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let e = &block.entity;
        writeln!(
            out,
            "{} '{}' ({} chunks)",
            e.kind,
            escape_controls(&e.name),
            e.chunks
        )?;
        for n in &block.neighbors {
            writeln!(
                out,
                "  {:>8.3}  {:<11} {}",
                n.weight,
                n.kind,
                escape_controls(&n.name)
            )?;
        }
    }
    Ok(())
}
