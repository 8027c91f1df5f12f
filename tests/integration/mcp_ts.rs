//! `memidx mcp` driven by the official TypeScript MCP SDK, both generations
//! on npm: 1.x (`@modelcontextprotocol/sdk`, whose client validates every
//! structured result against the tool's outputSchema with ajv) and 2.x
//! (`@modelcontextprotocol/client`, which probes for the newest protocol).
//! `tests/mcp_ts/client.mjs` calls every tool through the SDK, edits the
//! corpus and indexes it beside the server, and reports what it saw; this
//! test asserts on the exact values, the same ones `mcp.rs` asserts for the
//! Python SDK where the two overlap. `tests/mcp_ts/many.mjs` drives a
//! hundred clients of both generations at once beside a re-indexing one.
//!
//! The packages, pinned in `tests/mcp_ts/package.json`, come from
//! `MEMIDX_MCP_NODE_MODULES` (a folder whose `node_modules` holds them;
//! `.ci/run` installs them and sets it). Without it the test is skipped
//! with the reason printed (a failure under `CI=true`).

use crate::common::Corpus;
use crate::common::mcp::{HttpServer, assert_shared_answers, client_report};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// Which SDK drives the server.
#[derive(Clone, Copy)]
enum Generation {
    /// `@modelcontextprotocol/sdk` 1.x.
    V1,
    /// `@modelcontextprotocol/client` 2.x.
    V2,
}

/// How the client reaches the server: over stdio it spawns `memidx mcp`
/// itself; over HTTP [`run_client`] starts `memidx mcp --http` on the
/// corpus (with a bearer token when given one) and passes its URL.
enum Transport {
    Stdio,
    Http { token: Option<&'static str> },
}

/// The folder `MEMIDX_MCP_NODE_MODULES` names, whose `node_modules` holds
/// the SDKs, or `None` with the skip said: a test run installs nothing
/// itself (`.ci/run` does, and sets the variable).
fn node_modules() -> Option<PathBuf> {
    let dir = std::env::var_os("MEMIDX_MCP_NODE_MODULES").map(PathBuf::from);
    if dir.is_none() {
        crate::common::skip_unless_ci(
            "no TypeScript MCP SDKs; set MEMIDX_MCP_NODE_MODULES to a folder where \
             `npm install` installed tests/mcp_ts/package.json, as .ci/run does",
        );
    }
    dir
}

/// Runs client.mjs with `generation` over `transport` against a fresh
/// indexed copy of the fixtures; its report, or `None` (the skip said).
fn run_client(generation: Generation, transport: Transport) -> Option<Value> {
    let modules = node_modules()?;
    let corpus = Corpus::fixtures();
    corpus.index();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ts/client.mjs");
    let mut node = Command::new("node");
    node.arg(script)
        .arg(match generation {
            Generation::V1 => "v1",
            Generation::V2 => "v2",
        })
        .env("MEMIDX_MCP_NODE_MODULES", modules);
    let mut server = None;
    match transport {
        Transport::Stdio => {
            node.arg("stdio");
        }
        Transport::Http { token } => {
            let mut extra = vec![];
            let token_file = corpus.path().join(".token");
            if let Some(token) = token {
                std::fs::write(&token_file, token).expect("write the token");
                extra = vec!["--token-file", token_file.to_str().expect("UTF-8")];
                node.env("MEMIDX_MCP_TOKEN", token);
            }
            let started = HttpServer::start(corpus.path(), &extra);
            node.args(["http", &started.url()]);
            server = Some(started);
        }
    };
    let report = client_report(
        node.arg(assert_cmd::cargo::cargo_bin("memidx"))
            .arg(corpus.path()),
    );
    if let Some(mut server) = server {
        assert_eq!(server.signal("TERM"), Some(0), "the server stops cleanly");
    }
    Some(report)
}

#[test]
fn the_typescript_sdk_1_client_accepts_every_tool_over_stdio() {
    if let Some(report) = run_client(Generation::V1, Transport::Stdio) {
        assert_session(&report, Generation::V1);
    }
}

#[test]
fn the_typescript_sdk_2_client_accepts_every_tool_over_stdio() {
    if let Some(report) = run_client(Generation::V2, Transport::Stdio) {
        assert_session(&report, Generation::V2);
    }
}

#[test]
fn the_typescript_sdk_1_client_accepts_every_tool_over_http_with_a_token() {
    let token = Some("ts-sdk-1-bearer-token-0123456789");
    if let Some(report) = run_client(Generation::V1, Transport::Http { token }) {
        assert_session(&report, Generation::V1);
    }
}

#[test]
fn the_typescript_sdk_2_client_accepts_every_tool_over_http() {
    if let Some(report) = run_client(Generation::V2, Transport::Http { token: None }) {
        assert_session(&report, Generation::V2);
    }
}

#[test]
fn a_hundred_typescript_sdk_clients_beside_reindexes_are_all_answered() {
    let Some(modules) = node_modules() else {
        return;
    };
    let corpus = Corpus::fixtures();
    corpus.index();
    let server = HttpServer::start(corpus.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ts/many.mjs");
    let report = client_report(
        Command::new("node")
            .arg(script)
            .arg(server.url())
            .args(["100", "9"])
            .env("MEMIDX_MCP_NODE_MODULES", modules),
    );
    // Both generations keep a connection a session: 100 of them beside a
    // client re-indexing all along, and none starves, none fails.
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["answered"], 900, "{report}");
    assert!(report["reindexes"].as_u64() >= Some(1), "{report}");
}

/// What every session must have seen, whichever the transport: the
/// answers every SDK's report shares, then this script's own.
fn assert_session(report: &Value, generation: Generation) {
    assert_shared_answers(report);
    let incident = "incidents/2023/q4/billing-month-end-timeouts.md";
    match generation {
        // 1.x speaks the last protocol with `initialize`.
        Generation::V1 => {
            assert_eq!(report["protocol_version"], "2025-11-25");
            assert_eq!(report["ping"], "ok");
        }
        // 2.x finds 2026-07-28 through `server/discover`; that revision
        // has no `ping`, and the client refuses to send one.
        Generation::V2 => {
            assert_eq!(report["protocol_version"], "2026-07-28");
            assert_eq!(report["era"], "modern");
            assert_eq!(
                report["ping"]["error"]["code"],
                "METHOD_NOT_SUPPORTED_BY_PROTOCOL_VERSION"
            );
        }
    }

    // The client validated every structured result against its tool's
    // outputSchema, and refused none.
    assert_eq!(report["rejected"], json!({}));
    assert_eq!(
        report["accepted"],
        json!(["explain", "get", "reindex", "remember", "search", "status"])
    );
    assert_eq!(
        report["validation"],
        json!({"results": 17, "validated": 17})
    );
    assert_eq!(
        report["filtered_environments"],
        json!([["production"], ["production", "staging"]])
    );
    // An unknown tool is invalid params, and the session goes on.
    assert_eq!(report["unknown_tool"]["code"], -32602);
    let unknown_tool = report["unknown_tool"]["message"].as_str().unwrap();
    assert!(
        unknown_tool.contains("unknown tool 'nope'"),
        "{unknown_tool}"
    );
    assert_eq!(report["after_errors"], json!([format!("{incident}#1")]));

    // memidx offers neither resources nor prompts: a client that asks
    // anyway gets empty lists, never an error.
    for list in ["resources", "prompts"] {
        assert_eq!(report[list]["listed"], 0, "{list}: {}", report[list]);
    }
}
