//! `memidx search`: fused results for one query.

use std::io::Write;

use anyhow::Result;

use super::Status;
use crate::config::{OutputFormat, SearchConfig};
use crate::output::{SearchResponse, human, json};
use crate::retriever::Retriever;

/// Searches per `config` and prints the response.
pub fn run(config: &SearchConfig, out: &mut dyn Write) -> Result<Status> {
    let retriever = Retriever::open(&config.index_dir, &config.lists)?;
    let outcome = retriever.search(&config.query, &config.params)?;
    let response =
        SearchResponse::build(config.query_id.clone(), &outcome, retriever.generation())?;
    match config.format {
        OutputFormat::Human => human::print_search(out, &response)?,
        OutputFormat::Json => json::print(out, &response)?,
    }
    Ok(if response.results.is_empty() {
        Status::NoResults
    } else {
        Status::Success
    })
}
