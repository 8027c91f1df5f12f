//! `memidx index`: build or update a folder's index.

use std::io::Write;

use anyhow::Result;

use super::Status;
use memidx::indexer::{self, IndexOptions, IndexReport};
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
    let embedder = indexer::load_model(options)?;
    let report = indexer::run(options, embedder, &Bars::new(!quiet))?;
    print_report(&report, quiet, out, err)?;
    Ok(Status::Success)
}

/// Prints a run's warnings to `err` and, unless `quiet`, its summary line
/// to `out`, then flushes `out` (a watcher's lines must show as each run
/// ends).
pub fn print_report(
    report: &IndexReport,
    quiet: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<()> {
    human::print_index_warnings(err, &report.new_skips, &report.warnings)?;
    if !quiet {
        human::print_index_summary(out, report)?;
    }
    out.flush()?;
    Ok(())
}
