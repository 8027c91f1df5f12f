//! `memidx index`: build or update a folder's index.

use std::io::Write;

use anyhow::Result;

use super::Status;
use crate::embed;
use crate::indexer::{self, IndexOptions};
use crate::output::human;
use crate::output::progress::Bars;

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
