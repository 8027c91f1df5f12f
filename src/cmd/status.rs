//! `memidx status`: what an index holds and whether it is current and intact.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Status;
use crate::index::manifest::Manifest;
use crate::output::status::StatusReport;
use crate::output::{escape_controls, human, json};
use crate::store::generation::Generation;
use crate::store::{checks, generation_dir};

/// Reports on the index in `index_dir`; with `verify`, re-reads every file
/// and fails (exit 2) when any is damaged, after printing the report.
pub fn run(
    index_dir: &Path,
    verify: bool,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status> {
    let manifest = Manifest::read(index_dir)?.with_context(|| {
        format!(
            "{} holds no complete index (no meta.json); run 'memidx index DIR' first",
            index_dir.display()
        )
    })?;
    let damaged = verify.then(|| {
        checks::verify(
            &generation_dir(index_dir, manifest.generation),
            &manifest.checksums,
        )
    });
    if let Some(problems) = damaged.as_ref().filter(|p| !p.is_empty()) {
        for problem in problems {
            writeln!(err, "memidx: {}", escape_controls(problem))?;
        }
        bail!(
            "{} index file(s) damaged; run 'memidx index --full' to rebuild the index",
            problems.len()
        );
    }
    let generation = Generation::open(index_dir, manifest.generation, &manifest.checksums)?;
    let report = StatusReport::build(index_dir, &manifest, &generation, damaged)?;
    if as_json {
        json::print(out, &report)?;
    } else {
        human::print_status(out, &report)?;
    }
    Ok(Status::Success)
}
