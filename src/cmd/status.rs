//! `memidx status`: what an index holds and whether it is current and intact.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};

use super::Status;
use memidx::index::status::{EmbeddingStatus, StatusReport};
use memidx::index::{self, Index};
use memidx::output::{escape_controls, human, json};

/// Reports on the index in `index_dir`; with `verify`, re-reads every file
/// and fails (exit 2) when any is damaged, after printing the report, and
/// counts the chunks its model read only in part.
pub fn run(
    index_dir: &Path,
    verify: bool,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status> {
    let damaged = verify.then(|| index::verify(index_dir)).transpose()?;
    if let Some(problems) = damaged.as_ref().filter(|p| !p.is_empty()) {
        for problem in problems {
            writeln!(err, "memidx: {}", escape_controls(&problem.to_string()))?;
        }
        bail!(
            "{} index file(s) damaged; run 'memidx index --full' to rebuild the index",
            problems.len()
        );
    }
    let damaged = damaged.map(|problems| problems.iter().map(ToString::to_string).collect());
    let index = Index::open(index_dir)?;
    // The files are intact; a model that cannot be read is said, not fatal.
    let embedding = match verify.then(|| EmbeddingStatus::of(&index)) {
        Some(Err(problem)) => {
            writeln!(
                err,
                "memidx: warning: cannot count the chunks the model read in part: {problem:#}"
            )?;
            None
        }
        counted => counted.transpose()?.flatten(),
    };
    let report = StatusReport::of(&index, damaged, embedding)?;
    if as_json {
        json::print(out, &report)?;
    } else {
        human::print_status(out, &report)?;
    }
    Ok(Status::Success)
}
