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
//! The indexes are fixed at start (`--index NAME=PATH`, repeated: one
//! server of several indexes, which `search`, `explain` and `get` take by
//! name in `indexes`, all by default, ranked as one index; `reindex` and
//! `remember` take one, the first by default). Calls share what is open
//! and run at once, reads two per core and writes one at a time beside
//! them (`server.rs`, `calls.rs`); before every call the server checks that
//! each generation it opened is still the live one and reopens what is
//! not, index by index, so no call starts on a generation a `memidx index`
//! run replaced, and one running keeps the generation it started on.
//! Notices go to stderr.
//!
//! With `--watch` the server also keeps the index fresh: it takes the
//! writer lock at start and runs the watch loop of `watch.rs` on a thread
//! beside it (its lines on stderr), stopped when the server ends; the
//! `reindex` tool then runs under that same lock.

mod calls;
mod framing;
mod http;
mod limits;
mod note;
mod server;
mod stdio;
mod tools;

use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::watch::Background;
use super::{Status, heap};
use crate::config::Indexes;
use calls::Served;
pub use http::HttpOptions;
use memidx::index::Index;
use memidx::index::set::IndexSet;
use memidx::indexer::{IndexOptions, Writer};
use note::note;
use server::Server;

/// Waits (at most `limit`, looking every 10 ms) until `done` holds; whether
/// it did: how a stop waits for the calls in flight, on either transport.
async fn wait_until(limit: std::time::Duration, done: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    true
}

/// Serves the indexes `indexes` over stdin/stdout until end of input, or
/// over HTTP until stopped; with `watch`, re-indexing each whenever its
/// files change meanwhile.
pub fn run(
    indexes: &Indexes,
    read_only: bool,
    watch: bool,
    http: Option<&HttpOptions>,
) -> Result<Status> {
    // Bad HTTP options fail before anything is opened or locked; the token
    // is read once, here.
    let token = http.map(HttpOptions::token).transpose()?.flatten();
    heap::keep_small();
    for skipped in &indexes.skipped {
        note(skipped);
    }
    // Each index's name: given, or its folder's, made unique (one open).
    let opened = (indexes.named.iter())
        .map(|(name, dir)| Ok((name.clone(), Index::open(dir)?)))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = IndexSet::new(opened)?
        .names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    // The locks are taken before serving, so a held one fails the start.
    let mut served = Vec::with_capacity(names.len());
    let mut watching = Vec::new();
    for (name, (_, dir)) in names.into_iter().zip(&indexes.named) {
        let writer = match watch {
            true => {
                let options = IndexOptions::updating(&Index::open(dir)?);
                let writer = Arc::new(Mutex::new(Writer::take(&options)?));
                watching.push((options, writer.clone()));
                Some(writer)
            }
            false => None,
        };
        served.push(Served {
            name,
            dir: dir.clone(),
            writer,
        });
    }
    let shown = match &served[..] {
        [only] => only.dir.display().to_string(),
        served => {
            let each: Vec<String> = (served.iter())
                .map(|s| format!("{}={}", s.name, s.dir.display()))
                .collect();
            format!("{} indexes ({})", served.len(), each.join(", "))
        }
    };
    #[cfg(unix)]
    let dirs: Vec<std::path::PathBuf> = served.iter().map(|s| s.dir.clone()).collect();
    let server = Server::open(served, read_only)?;
    // The CLI's searches in these indexes are answered here too
    // (cmd/resident.rs), until the server ends.
    #[cfg(unix)]
    let _listening: Vec<_> = (dirs.iter())
        .filter_map(|dir| match super::resident::server::listen(dir) {
            Ok(listening) => listening,
            Err(err) => {
                note(&format!(
                    "{err:#}; `memidx search` answers in its own process"
                ));
                None
            }
        })
        .collect();
    let what = format!(
        "{shown}{}",
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
        .into_iter()
        .map(|(options, writer)| Background::start(options, writer))
        .collect::<Result<Vec<_>>>()?;
    let served = match http {
        Some(http) => http::serve(server, http, token, &what),
        None => stdio::serve(server),
    };
    for background in background {
        background.stop();
    }
    served?;
    Ok(Status::Success)
}
