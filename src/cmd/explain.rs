//! `memidx explain`: how every fused score was made.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::Status;
use crate::config::{ExplainConfig, OutputFormat};
use memidx::index::get;
use memidx::output::explain::ExplainReport;
use memidx::output::here::Here;
use memidx::output::{human, json};
use memidx::retriever::{Retriever, SearchParams};

/// Explains the search in `config` from `cwd` and prints the breakdown.
pub fn run(
    config: &ExplainConfig,
    cwd: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status> {
    let search = &config.search;
    let started = Instant::now();
    let retriever = super::backend::open(search)?;
    let open_time = started.elapsed();
    let report = report(
        &retriever,
        &search.query,
        &search.params,
        config.chunk.as_deref(),
        open_time,
        "chunk ids look like 'notes/db.md#3' (see search --json)",
    )?;
    super::print_notices(err, &search.indexes.skipped, &report.notices)?;
    match search.format {
        OutputFormat::Human => {
            let here = retriever
                .single_root()
                .map_or_else(Here::default, |root| Here::new(root, cwd));
            human::print_explain(out, &report, &here)?
        }
        OutputFormat::Json | OutputFormat::JsonLines => json::print(out, &report)?,
    }
    Ok(if report.results.is_empty() {
        Status::NoResults
    } else {
        Status::Success
    })
}

/// The explain report of `query` over `retriever` (for the chunk `focus`
/// alone, by id, when given); `open_time` is how long opening the index
/// took. An unknown id is [`get::NotFound`] (exit 1, as from `get`), ending
/// with `hint`, where ids come from, when its file is not indexed either.
pub(super) fn report(
    retriever: &Retriever,
    query: &str,
    params: &SearchParams,
    focus: Option<&str>,
    open_time: Duration,
    hint: &str,
) -> Result<ExplainReport> {
    let focus = match focus {
        Some(id) => {
            let indexes = retriever.indexes();
            let (member, local_id) = indexes.split_shown(id)?;
            let parts = indexes.members()[member].index().parts();
            let ord = indexes.find(id);
            Some(ord.ok_or_else(|| get::chunk_not_found(parts, local_id, hint))?)
        }
        None => None,
    };
    let explanation = retriever.explain(query, params, focus)?;
    let started = Instant::now();
    let decoded = retriever.decode(explanation.shown_chunks())?;
    ExplainReport::build(
        query,
        &params.filter,
        &explanation,
        &decoded,
        open_time,
        started.elapsed(),
    )
}
