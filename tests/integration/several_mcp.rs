//! `memidx mcp` serving two indexes (`--index notes=… --index work=…`),
//! driven by the official SDKs: Python (`tests/mcp_several.py`, over stdio
//! and Streamable HTTP) and TypeScript, both generations
//! (`tests/mcp_ts/several.mjs`, over stdio). Each searches both and one,
//! gets a result by its named id and a file's lines by its named source,
//! explains, reads each index's status, remembers into the second and
//! finds the note, and re-indexes the first; the SDKs validate every
//! structured result against its tool's output schema.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::mcp::{HttpServer, client_report};
use crate::common::{self, Corpus};

/// What every session must have seen, whichever the SDK and transport.
fn assert_session(report: &Value) {
    assert_eq!(
        report["search_index_names"],
        serde_json::json!(["notes", "work"])
    );
    let ids = |key: &str| -> Vec<String> {
        let list = report[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {report}"));
        list.iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect()
    };
    let both = ids("both_ids");
    assert!(
        both.iter().any(|id| id.starts_with("notes:runbooks/")),
        "{both:?}"
    );
    assert!(both.iter().any(|id| id.starts_with("work:")), "{both:?}");
    let work = ids("work_ids");
    assert!(
        !work.is_empty() && work.iter().all(|id| id.starts_with("work:")),
        "{work:?}"
    );
    let unknown = report["unknown_index"].as_str().unwrap_or_default();
    assert!(
        unknown.contains("notes") && unknown.contains("work"),
        "{unknown}"
    );
    assert_eq!(report["get_same_text"], true);
    assert_eq!(report["get_id"].as_str(), both.first().map(String::as_str));
    assert_eq!(report["get_lines"], serde_json::json!([1, 2]));
    assert!(ids("explain_ids").iter().all(|id| id.contains(':')));
    assert_eq!(report["status_names"], serde_json::json!(["notes", "work"]));
    let files: Vec<u64> = (report["status_files"].as_array().unwrap().iter())
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|&n| n > 0), "{files:?}");
    let remembered = ids("remembered_ids");
    assert!(!remembered.is_empty() && remembered.iter().all(|id| id.starts_with("work:memories/")));
    assert_eq!(ids("found_after_remember").first(), remembered.first());
    assert_eq!(report["reindex_up_to_date"], true);
}

fn python_report(corpus: &Corpus, url: Option<&str>) -> Option<Value> {
    let python = crate::mcp::mcp_python()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_several.py");
    let mut command = Command::new(python);
    command
        .arg(script)
        .arg(assert_cmd::cargo::cargo_bin("memidx"))
        .arg(corpus.path())
        .args(url)
        .env_remove("MEMIDX_INDEX");
    Some(client_report(&mut command))
}

#[test]
fn the_python_sdk_searches_two_indexes_as_one_over_stdio() {
    let corpus = common::two_indexes();
    if let Some(report) = python_report(&corpus, None) {
        assert_session(&report);
    }
}

#[test]
fn the_python_sdk_searches_two_indexes_as_one_over_http() {
    let corpus = common::two_indexes();
    let notes = format!("notes={}", corpus.path().join("notes").display());
    let work = format!("work={}", corpus.path().join("work").display());
    let mut server = HttpServer::serve(
        "127.0.0.1:0",
        corpus.path(),
        &["--index", &notes, "--index", &work],
    );
    if let Some(report) = python_report(&corpus, Some(&server.url())) {
        assert_session(&report);
    }
    assert_eq!(server.signal("TERM"), Some(0), "the server stops cleanly");
}

fn typescript_report(generation: &str) -> Option<Value> {
    let Some(modules) = std::env::var_os("MEMIDX_MCP_NODE_MODULES") else {
        common::skip_unless_ci(
            "no TypeScript MCP SDKs; set MEMIDX_MCP_NODE_MODULES as .ci/run does",
        );
        return None;
    };
    let corpus = common::two_indexes();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ts/several.mjs");
    let mut node = Command::new("node");
    node.arg(script)
        .arg(generation)
        .arg(assert_cmd::cargo::cargo_bin("memidx"))
        .arg(corpus.path())
        .env("MEMIDX_MCP_NODE_MODULES", modules)
        .env_remove("MEMIDX_INDEX");
    Some(client_report(&mut node))
}

#[test]
fn the_typescript_sdk_1_searches_two_indexes_as_one() {
    if let Some(report) = typescript_report("v1") {
        assert_session(&report);
    }
}

#[test]
fn the_typescript_sdk_2_searches_two_indexes_as_one() {
    if let Some(report) = typescript_report("v2") {
        assert_session(&report);
    }
}
