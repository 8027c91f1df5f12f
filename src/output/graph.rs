//! The human printers of `memidx graph`: what the entity graph holds, as
//! tables (the JSON printer prints the same reports).

use std::io::Write;

use anyhow::Result;

use super::escape_controls;
use crate::lists::graph::inspect::{CommunitiesReport, EntitiesReport, EntityRow, NeighborsReport};
use crate::lists::graph::summary::SUMMARY_LABEL;

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
