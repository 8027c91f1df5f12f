//! `memidx index`: build or update a folder's index.

use std::io::Write;

use anyhow::{Context, Result};

use super::Status;
use memidx::embed;
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
    let embedder = embed::load(options.model_dir.as_deref()).with_context(|| match &options.model_dir {
        Some(dir) => format!(
            "cannot load the model {} (given with --model or kept from the index's last run); \
             give its folder with --model DIR, or go back to the bundled model with --bundled-model",
            dir.display()
        ),
        None => "cannot load the bundled model".to_string(),
    })?;
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
