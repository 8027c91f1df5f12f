//! `memidx mcp`: a Model Context Protocol server on the official Rust SDK
//! (`rmcp`), over stdio (one client, the default) or Streamable HTTP
//! (`--http ADDR`, many clients sharing one open index).
//!
//! Tools: `search`, `get`, `explain`, `status` and (unless `--read-only`)
//! `reindex` and `remember` (`tools.rs`). Each declares an input schema, an
//! output schema (the JSON Schemas in `schemas/` for the shapes the command
//! line prints too) and honest annotations, and answers with
//! `structuredContent` in that shape plus a compact text rendering.
//!
//! The index is fixed at start. One thread owns what is open and runs the
//! calls in order (`server.rs`, `calls.rs`); before every call it checks
//! that the generation it opened is still the live one and reopens when
//! not, so it never answers from a generation a `memidx index` run
//! replaced. Notices go to stderr.
//!
//! With `--watch` the server also keeps the index fresh: it takes the
//! writer lock at start and runs the watch loop of `watch.rs` on a thread
//! beside it (its lines on stderr), stopped when the server ends; the
//! `reindex` tool then runs under that same lock.

mod calls;
mod framing;
mod http;
mod note;
mod server;
mod stdio;
mod tools;

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::Status;
use super::watch::Background;
pub use http::HttpOptions;
use memidx::index::Index;
use memidx::indexer::{IndexOptions, Writer};
use note::note;
use server::Server;

/// Serves the index in `index_dir` over stdin/stdout until end of input,
/// or over HTTP until stopped; with `watch`, re-indexing it whenever its
/// files change meanwhile.
pub fn run(
    index_dir: &Path,
    read_only: bool,
    watch: bool,
    http: Option<&HttpOptions>,
) -> Result<Status> {
    // Bad HTTP options fail before anything is opened or locked; the token
    // is read once, here.
    let token = http.map(HttpOptions::token).transpose()?.flatten();
    // The lock is taken before serving, so a held one fails the start.
    let watching = if watch {
        let options = IndexOptions::updating(&Index::open(index_dir)?);
        let writer = Arc::new(Mutex::new(Writer::take(&options)?));
        Some((options, writer))
    } else {
        None
    };
    let server = Server::open(
        index_dir,
        read_only,
        watching.as_ref().map(|(_, w)| w.clone()),
    )?;
    let what = format!(
        "{}{}",
        index_dir.display(),
        match (read_only, watch) {
            (true, _) => " (read-only)",
            (false, true) => ", re-indexing when its files change,",
            (false, false) => "",
        }
    );
    if http.is_none() {
        note(&format!("serving {what} over stdio"));
    }
    let background = watching
        .map(|(options, writer)| Background::start(options, writer))
        .transpose()?;
    let served = match http {
        Some(http) => http::serve(server, http, token, &what),
        None => stdio::serve(server),
    };
    if let Some(background) = background {
        background.stop();
    }
    served?;
    Ok(Status::Success)
}
