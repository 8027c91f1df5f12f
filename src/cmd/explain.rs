//! `memidx explain`: how every fused score was made.

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};

use super::Status;
use crate::config::{ExplainConfig, OutputFormat};
use memidx::output::explain::ExplainReport;
use memidx::output::{human, json};
use memidx::retriever::Retriever;

/// Explains the search in `config` and prints the breakdown.
pub fn run(config: &ExplainConfig, out: &mut dyn Write) -> Result<Status> {
    let search = &config.search;
    let started = Instant::now();
    let retriever = Retriever::open(&search.index_dir, &search.lists)?;
    let open_time = started.elapsed();
    let focus = match &config.chunk {
        Some(id) => Some(retriever.generation().find(id).with_context(|| {
            format!("no chunk '{id}' in the index; chunk ids look like 'notes/db.md#3' (see search --json)")
        })?),
        None => None,
    };
    let explanation = retriever.explain(&search.query, &search.params, focus)?;
    let started = Instant::now();
    let decoded = retriever.decode(explanation.shown_chunks())?;
    let report = ExplainReport::build(
        &search.query,
        &search.params.filter,
        &explanation,
        &decoded,
        open_time,
        started.elapsed(),
    )?;
    match search.format {
        OutputFormat::Human => human::print_explain(out, &report)?,
        OutputFormat::Json | OutputFormat::JsonLines => json::print(out, &report)?,
    }
    Ok(if report.results.is_empty() {
        Status::NoResults
    } else {
        Status::Success
    })
}
