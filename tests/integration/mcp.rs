//! `memidx mcp` driven by a real MCP client: the official Python SDK (the
//! `mcp` package from PyPI) runs `tests/mcp_client.py`, which spawns the
//! server on a temp copy of the fixtures and goes initialize → tools/list
//! → search → get → explain → status → an index run beside the server →
//! reindex, then raw malformed JSON-RPC lines; this test asserts on the
//! exact values it reports.
//!
//! The client's Python comes from `MEMIDX_MCP_PYTHON` (`.ci/run` installs
//! the package into a throwaway venv and sets it). Without it the test is
//! skipped with the reason printed (a failure under `CI=true`).

use crate::common::Corpus;
use crate::common::mcp::{HttpServer, assert_shared_answers, client_report};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The Python with the `mcp` package that `MEMIDX_MCP_PYTHON` names, or
/// `None` with the skip said: a test run installs nothing itself (`.ci/run`
/// does, and sets the variable).
pub(crate) fn mcp_python() -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("MEMIDX_MCP_PYTHON") {
        return Some(PathBuf::from(python));
    }
    crate::common::skip_unless_ci(
        "no Python with the `mcp` package; set MEMIDX_MCP_PYTHON \
         (python3 -m venv V && V/bin/pip install mcp), as .ci/run does",
    );
    None
}

#[test]
fn a_real_mcp_client_searches_gets_explains_and_sees_new_generations() {
    let Some(python) = mcp_python() else {
        return;
    };
    let corpus = Corpus::fixtures();
    corpus.index();
    let report = run_client(&python, &corpus, None);
    assert_session(&report);

    let incident = "incidents/2023/q4/billing-month-end-timeouts.md";
    let raw = &report["raw"];
    assert_eq!(raw["initialize_version"], report["protocol_version"]);
    assert_eq!(raw["parse_error"], json!([null, -32700]));
    assert_eq!(raw["invalid_request"], -32600);
    assert_eq!(raw["unknown_method"], -32601);
    assert_eq!(raw["read_only_reindex"], -32602);
    assert_eq!(
        raw["read_only_tools"],
        json!(["search", "get", "explain", "status"])
    );
    assert_eq!(raw["search_after_errors"], format!("{incident}#1"));
    assert_eq!(raw["leftover_stdout"], "");
    assert_eq!(raw["exit_code"], 0);
}

#[test]
fn a_real_mcp_client_does_the_same_over_streamable_http() {
    let Some(python) = mcp_python() else {
        return;
    };
    let corpus = Corpus::fixtures();
    corpus.index();
    let mut server = HttpServer::start(corpus.path(), &[]);
    let report = run_client(&python, &corpus, Some(&server.url()));
    assert_session(&report);
    assert!(report.get("raw").is_none());
    assert_eq!(server.signal("TERM"), Some(0));
}

/// Runs `tests/mcp_client.py` on the indexed `corpus` (over stdio, or to
/// the server at `url`) and returns its report.
fn run_client(python: &Path, corpus: &Corpus, url: Option<&str>) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    client_report(
        Command::new(python)
            .arg(script)
            .arg(assert_cmd::cargo::cargo_bin("memidx"))
            .arg(corpus.path())
            .args(url),
    )
}

/// The assertions on a client session, whatever its transport: the ones
/// every SDK's report shares, then the Python script's own.
fn assert_session(report: &Value) {
    assert_shared_answers(report);
    let incident = "incidents/2023/q4/billing-month-end-timeouts.md";
    assert_eq!(
        report["validated"],
        json!(["explain", "get", "reindex", "remember", "search", "status"])
    );
    assert_eq!(
        report["filtered_environments"],
        json!({"production": [["production"], ["production", "staging"]],
               "staging": [["production", "staging"], ["staging"]]})
    );
    assert_eq!(
        report["get_dotdot"],
        format!(
            "refused: the path '../{incident}' contains '..'; give a path inside the indexed folder"
        )
    );
    assert_eq!(
        report["get_unknown"],
        format!("no chunk '{incident}#99' in the index; {incident} holds chunks #1 to #6")
    );
    let unknown_tool = report["unknown_tool"].as_str().unwrap();
    assert!(
        unknown_tool.contains("unknown tool 'nope'"),
        "{unknown_tool}"
    );
    assert!(
        report["bad_since"]
            .as_str()
            .unwrap()
            .starts_with("since 'soon' is not a time; give an ISO date"),
        "{}",
        report["bad_since"]
    );
    assert!(
        report["remember_outside"]
            .as_str()
            .unwrap()
            .contains("is outside the indexed folder"),
        "{}",
        report["remember_outside"]
    );
}
