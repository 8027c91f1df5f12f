//! `memidx index`: build or update a folder's index.

use std::io::Write;

use anyhow::Result;

use super::Status;
use memidx::embed;
use memidx::indexer::{self, IndexOptions};
use memidx::output::human;
use memidx::output::progress::Bars;

/// Indexes per `options`; warnings go to `err`, the summary to `out`
/// unless `quiet`.
pub fn run(
    options: &IndexOptions,
    quiet: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status> {
    let embedder = embed::load(options.model_dir.as_deref())?;
    let report = indexer::run(options, embedder, &Bars::new(!quiet))?;
    human::print_index_warnings(err, &report.skipped, &report.warnings)?;
    if !quiet {
        human::print_index_summary(out, &report)?;
    }
    Ok(Status::Success)
}
