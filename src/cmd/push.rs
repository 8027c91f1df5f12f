//! `memidx push URI`: send the index to a Milvus collection.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::Status;

/// Pushes the index in `index_dir` to `uri` and prints what was sent.
#[cfg(feature = "milvus")]
pub fn run(index_dir: &Path, uri: &str, quiet: bool, out: &mut dyn Write) -> Result<Status> {
    let target = super::backend::target(uri)?;
    let index = memidx::index::Index::open(index_dir)?;
    let bars = memidx::output::progress::Bars::new(!quiet);
    let report = memidx::remote::push(&index, &target, &bars)?;
    memidx::output::push::print_push(out, &report)?;
    Ok(Status::Success)
}

/// Refuses: this build has no Milvus backend.
#[cfg(not(feature = "milvus"))]
pub fn run(_: &Path, _: &str, _: bool, _: &mut dyn Write) -> Result<Status> {
    Err(super::backend::not_built())
}
