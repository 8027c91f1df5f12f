//! `memidx search`: fused results for one query.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::Status;
use crate::config::{OutputFormat, SearchConfig};
use memidx::output::here::Here;
use memidx::output::{SearchResponse, human, json, nothing_matched_note};

/// Searches per `config` from `cwd`, prints the response to `out` and
/// notices (files changed since indexing) to `err`.
pub fn run(
    config: &SearchConfig,
    cwd: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
    width: Option<usize>,
) -> Result<Status> {
    let retriever = super::backend::open(config)?;
    let params = &config.params;
    let outcome = retriever.search(&config.query, params)?;
    let decoded = retriever.decode_outcome(&config.query, &outcome)?;
    let response =
        SearchResponse::build(config.query_id.clone(), &outcome, &decoded)?.within(config.budget);
    match config.format {
        OutputFormat::Human => {
            let dates_decide = !params.filter.time().is_empty() || config.lists.recency;
            let here = retriever
                .single_root()
                .map_or_else(Here::default, |root| Here::new(root, cwd));
            human::print_search(out, &response, &config.query, width, dates_decide, &here)?
        }
        OutputFormat::Json => json::print(out, &response)?,
        OutputFormat::JsonLines => json::print_lines(out, &response.results)?,
    }
    human::print_stale_notice(err, &decoded.stale_files(outcome.shown_chunks()))?;
    super::print_notices(err, &config.indexes.skipped, &outcome.notices)?;
    if let Some(note) = nothing_matched_note(&outcome, "--keep-all") {
        writeln!(err, "memidx: {note}")?;
    }
    // No results from an index of nothing is not an answer about the query.
    for member in retriever.indexes().members() {
        if member.is_empty() {
            writeln!(
                err,
                "memidx: the index holds no chunks ({} had no markdown when indexed)",
                member.index().root().display()
            )?;
        }
    }
    Ok(if response.results.is_empty() {
        Status::NoResults
    } else {
        Status::Success
    })
}
