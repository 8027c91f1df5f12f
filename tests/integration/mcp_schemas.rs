//! Every schema memidx publishes reads the same to a draft-07 and a 2020-12
//! validator (clients validate with either: the TypeScript SDK 1.x with a
//! draft-07 Ajv, the Python SDK with 2020-12), and every tool's real
//! structured output is valid under both drafts of its `outputSchema`, with
//! results that exercise every optional field.

use crate::common::mcp::{RawSession, assert_valid_in_both, both_drafts, not_portable};
use crate::common::{Corpus, parse};

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{Value, json};

const INCIDENT: &str = "incidents/2023/q4/billing-month-end-timeouts.md";

#[test]
fn every_schema_file_reads_the_same_in_draft_07_and_2020_12() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let mut checked = 0;
    for entry in fs::read_dir(&dir).expect("schemas/") {
        let path = entry.expect("entry").path();
        let schema = parse(&fs::read_to_string(&path).expect("read"));
        both_drafts(&schema, &path.display().to_string());
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn the_portability_check_names_what_the_drafts_read_differently() {
    let schema = json!({
        "type": "object",
        "properties": {
            "lines": {"type": "array", "prefixItems": [{"type": "integer"}], "items": false},
            "date": {"$ref": "#/$defs/date", "type": "string", "description": "fine"}
        },
        "$defs": {"date": {"type": "string"}}
    });
    assert_eq!(
        not_portable(&schema),
        [
            "/properties/date: type beside $ref",
            "/properties/lines: prefixItems",
            "/properties/lines: items is false, not a schema",
        ]
    );
}

/// The output schema of each tool, by name; the input schemas checked too.
fn schemas(session: &mut RawSession) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for tool in session.tools() {
        let name = tool["name"].as_str().expect("name").to_string();
        both_drafts(&tool["inputSchema"], &format!("{name}'s inputSchema"));
        out.insert(name, tool["outputSchema"].clone());
    }
    out
}

#[test]
fn every_tools_output_is_valid_under_both_drafts_of_its_output_schema() {
    let corpus = Corpus::fixtures();
    // With the graph, so that every list can rank.
    corpus.index_with(&["--graph"]);
    let mut session = RawSession::start(corpus.path(), &[]);
    let schemas = schemas(&mut session);
    assert_eq!(
        schemas.keys().collect::<Vec<_>>(),
        ["explain", "get", "reindex", "remember", "search", "status"]
    );
    let mut checked: BTreeMap<&str, usize> = BTreeMap::new();
    let mut check = |session: &mut RawSession, tool: &'static str, arguments: Value| -> Value {
        let result = session.call(tool, arguments.clone());
        assert_ne!(result["isError"], true, "{tool} {arguments}: {result}");
        let structured = result["structuredContent"].clone();
        assert_valid_in_both(&schemas[tool], &structured, &format!("{tool} {arguments}"));
        *checked.entry(tool).or_default() += 1;
        structured
    };

    // Every list ranked, dates and metadata on each result.
    let all = check(
        &mut session,
        "search",
        json!({"query": "INC-2023-Q4-011 rollback", "top_k": 5,
               "mode": "sparse,dense,graph,recency"}),
    );
    let ranks: Vec<&str> = all["results"][0]["ranks"]
        .as_object()
        .expect("ranks")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        ranks,
        ["dense", "file", "graph", "recency", "sparse"],
        "{all:#}"
    );
    assert!(all["results"][0]["date"].is_object(), "{all:#}");
    assert!(
        all["results"][0]["metadata"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
    );
    // A truncated budget, results without text, a filter and time bounds,
    // RRF, and bounds nothing passes.
    let cut = check(
        &mut session,
        "search",
        json!({"query": "INC-2023-Q4-011", "top_k": 5, "max_chars": 1000}),
    );
    assert_eq!(cut["truncated"], true);
    check(
        &mut session,
        "search",
        json!({"query": "gateway", "include_text": false, "fusion": "rrf", "rrf_k": 10}),
    );
    check(
        &mut session,
        "search",
        json!({"query": "rollback", "filter": {"environment": ["production", "staging"]},
               "since": "2024-01-01", "until": "2024-12-31", "recency_weight": 0.1}),
    );
    let none = check(
        &mut session,
        "search",
        json!({"query": "gateway", "filter": {"environment": "staging"}, "until": "1990-01-01"}),
    );
    assert_eq!(none["results"], json!([]));

    // A chunk, a line range, a whole file cut by max_chars.
    let id = format!("{INCIDENT}#1");
    check(&mut session, "get", json!({"chunk_id": id}));
    let range = check(
        &mut session,
        "get",
        json!({"path": INCIDENT, "from": 13, "to": 15}),
    );
    assert_eq!(range["lines"], json!([13, 15]));
    let short = check(
        &mut session,
        "get",
        json!({"path": INCIDENT, "max_chars": 50}),
    );
    assert_eq!(short["truncated"], true);

    // Results; one chunk that is a result; one the filter keeps out; one
    // outside the window.
    check(
        &mut session,
        "explain",
        json!({"query": "INC-2023-Q4-011", "top_k": 2}),
    );
    check(
        &mut session,
        "explain",
        json!({"query": "HTTP 504", "chunk_id": id, "mode": "sparse,dense,graph,recency"}),
    );
    let filtered = check(
        &mut session,
        "explain",
        json!({"query": "HTTP 504", "chunk_id": id, "filter": {"environment": "staging"}}),
    );
    assert_eq!(
        filtered["results"][0]["fused_rank"],
        Value::Null,
        "{filtered:#}"
    );
    check(
        &mut session,
        "explain",
        json!({"query": "wombat", "chunk_id": id, "window": 1}),
    );

    check(&mut session, "status", json!({}));
    fs::write(
        corpus.path().join("notes/added.md"),
        "# Added\n\nA new note.\n",
    )
    .expect("write");
    check(&mut session, "reindex", json!({}));
    check(&mut session, "reindex", json!({"full": true}));
    check(
        &mut session,
        "remember",
        json!({"text": "The numbat ledger rotated.", "title": "Numbat", "meta": {"service": "billing"}}),
    );
    check(&mut session, "status", json!({}));
    assert_eq!(
        checked,
        BTreeMap::from([
            ("explain", 4),
            ("get", 3),
            ("reindex", 2),
            ("remember", 1),
            ("search", 5),
            ("status", 2)
        ])
    );
    assert_eq!(session.finish(), Some(0));
}
