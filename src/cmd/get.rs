//! `memidx get`: a chunk by id, or lines of an indexed file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use super::Status;
use memidx::index::Index;
use memidx::index::get::{self, NotFound, Target};
use memidx::output::get::GetResponse;
use memidx::output::{human, json, one_line};

/// Everything `memidx get` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetRequest {
    /// The `.memidx` folder.
    pub index_dir: PathBuf,
    /// What to fetch, as typed (`ID`, `PATH`, `PATH:FROM`, `PATH:FROM-`,
    /// `PATH:FROM-TO`).
    pub target: String,
    /// Cut the text to this many characters.
    pub max_chars: Option<usize>,
    /// Print JSON instead of text.
    pub json: bool,
}

/// Fetches and prints; an id or path the index does not hold is reported
/// on `err` and ends with [`Status::NoResults`] (exit 1).
pub fn run(request: &GetRequest, out: &mut dyn Write, err: &mut dyn Write) -> Result<Status> {
    let target = Target::parse(&request.target)?;
    let index = Index::open(&request.index_dir)?;
    let fetched = match get::fetch(&index, &target) {
        Ok(fetched) => fetched,
        Err(e) if e.downcast_ref::<NotFound>().is_some() => {
            writeln!(err, "memidx: {}", one_line(&e.to_string()))?;
            return Ok(Status::NoResults);
        }
        Err(e) => return Err(e),
    };
    let response = GetResponse::build(fetched, request.max_chars);
    if request.json {
        json::print(out, &response)?;
    } else {
        human::print_get(out, &response)?;
    }
    Ok(Status::Success)
}
