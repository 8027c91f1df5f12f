//! `memidx get`: a chunk by id, or lines of an indexed file.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::Status;
use crate::config::Indexes;
use memidx::index::Index;
use memidx::index::get::{self, NotFound, Target};
use memidx::index::set::IndexSet;
use memidx::output::get::GetResponse;
use memidx::output::here::Here;
use memidx::output::{human, json, one_line};

/// Everything `memidx get` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetRequest {
    /// The indexes to read.
    pub indexes: Indexes,
    /// What to fetch, as typed (`ID`, `PATH`, `PATH:FROM`, `PATH:FROM-`,
    /// `PATH:FROM-TO`).
    pub target: String,
    /// Cut the text to this many characters.
    pub max_chars: Option<usize>,
    /// Print JSON instead of text.
    pub json: bool,
}

/// `target` with its path read from `here` (`None` at the root, or when
/// the path leaves it).
fn from_here(target: &Target, here: &Here) -> Option<Target> {
    if here.is_root() {
        return None;
    }
    Some(match target {
        Target::Chunk(id) => {
            let (path, n) = id.rsplit_once('#')?;
            Target::Chunk(format!("{}#{n}", here.resolve(path)?))
        }
        Target::File { path, lines } => Target::File {
            path: here.resolve(path)?,
            lines: *lines,
        },
    })
}

/// Fetches and prints, paths read from `cwd`; an id or path the index does
/// not hold is reported on `err` and ends with [`Status::NoResults`] (exit 1).
pub fn run(
    request: &GetRequest,
    cwd: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Status> {
    super::print_notices(err, &request.indexes.skipped, &[])?;
    let opened = (request.indexes.named.iter())
        .map(|(name, dir)| Ok((name.clone(), Index::open(dir)?)))
        .collect::<Result<Vec<_>>>()?;
    let indexes = IndexSet::new(opened)?;
    let (found, here) = match indexes.shows_names() {
        true => (get::fetch_shown(&indexes, &request.target), Here::default()),
        false => {
            let index = indexes.first();
            let target = Target::parse(&request.target)?;
            let here = Here::new(index.root(), cwd);
            // A path typed in a subfolder names a file there; failing that,
            // it is read as the index names files (from the root), as search
            // --json and chunk ids give them.
            let typed_here = from_here(&target, &here);
            let found = match typed_here.map(|t| get::fetch(index, &t)) {
                Some(Err(e)) if e.downcast_ref::<NotFound>().is_some() => {
                    get::fetch(index, &target)
                }
                Some(found) => found,
                None => get::fetch(index, &target),
            };
            (found, here)
        }
    };
    let fetched = match found {
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
        human::print_get(out, &response, &here)?;
    }
    Ok(Status::Success)
}
