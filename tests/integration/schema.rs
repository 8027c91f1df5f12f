//! The JSON Schemas in `schemas/` against the real binary: both are valid
//! draft 2020-12 schemas, real `search` output validates against the
//! response schema, and the request schema and `memidx search --request`
//! accept and reject the same requests.
//!
//! Known gaps, where the parser (serde) is more lenient than the schema:
//! `null` for an optional field, a struct written as an array
//! (`"hybrid_params": [0.6, 0.4, 60]`); and where the schema is more lenient
//! than the parser: `"top_k": 5.0` and `"dense_feedback": 3.0` (JSON Schema
//! calls them integers).

use crate::common;

use common::{Corpus, error_paths, parse, validator};
use jsonschema::Validator;
use serde_json::{Value, json};

const REQUEST_SCHEMA: &str = include_str!("../../schemas/search-request.schema.json");
const RESPONSE_SCHEMA: &str = include_str!("../../schemas/search-response.schema.json");

/// The request of the design (§3) and the README.
const DESIGN_REQUEST: &str = r#"{"query_id": "mem_req_99214", "search_text": "HTTP 504 gateway timeout postgres connection pool",
 "top_k": 5, "hybrid_params": {"dense_weight": 0.6, "sparse_weight": 0.4, "rrf_k_constant": 60},
 "metadata_filter": {"environment": "production", "service": "billing-service"}}"#;

/// Asserts that `response` validates and that `total_retrieved` counts the results.
fn assert_valid_response(validator: &Validator, response: &Value, what: &str) {
    let errors = validator.iter_errors(response).into_errors();
    assert!(errors.is_empty(), "{what}: {errors}\n{response:#}");
    let results = response["results"].as_array().unwrap();
    assert_eq!(
        response["total_retrieved"].as_u64(),
        Some(results.len() as u64),
        "{what}"
    );
    // What a schema cannot say: the id names the source, lines are in order.
    for r in results {
        let id = r["chunk_id"].as_str().unwrap();
        let source = r["source"].as_str().unwrap();
        assert!(id.starts_with(&format!("{source}#")), "{what}: {id}");
        assert_eq!(r["metadata"]["path"], json!([source]), "{what}: {id}");
        assert!(
            r["lines"][0].as_u64() <= r["lines"][1].as_u64(),
            "{what}: {id}"
        );
    }
}

#[test]
fn both_schemas_are_valid_documented_draft_2020_12_schemas() {
    for (file, text, property_count) in [
        ("search-request.schema.json", REQUEST_SCHEMA, 18),
        ("search-response.schema.json", RESPONSE_SCHEMA, 27),
    ] {
        let schema = parse(text);
        common::check_schema_document(file, &schema, property_count);
    }
}

#[test]
fn real_search_output_validates_against_the_response_schema() {
    let response_schema = validator(RESPONSE_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index();

    for (query, args, count) in [
        ("INC-2023-Q4-011", &[][..], None),
        ("connection pool", &[][..], Some(10)),
        (
            "connection pool",
            &["--filter", "environment=production"][..],
            None,
        ),
        ("billing connection pool", &["-k", "50"][..], None),
        ("pool", &["-k", "1"][..], Some(1)),
    ] {
        let what = format!("search {query:?} {args:?}");
        let response = corpus.search_json(query, args);
        assert_valid_response(&response_schema, &response, &what);
        assert_eq!(response["query_id"], Value::Null, "{what}");
        let results = response["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{what}");
        if let Some(count) = count {
            assert_eq!(results.len(), count, "{what}");
        }
        if args.contains(&"--filter") {
            for r in results {
                let environment = r["metadata"]["environment"].as_array().unwrap();
                assert!(environment.contains(&json!("production")), "{what}");
            }
        }
    }

    let output = corpus
        .memidx()
        .args(["search", "--request", "-"])
        .write_stdin(DESIGN_REQUEST)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let response: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_valid_response(&response_schema, &response, "design request");
    assert_eq!(response["query_id"], "mem_req_99214");
    let results = response["results"].as_array().unwrap();
    assert!((1..=5).contains(&results.len()), "{}", results.len());
}

/// The first result of a response, to edit.
fn result(response: &mut Value) -> &mut serde_json::Map<String, Value> {
    response["results"][0].as_object_mut().unwrap()
}

#[test]
fn the_response_schema_rejects_malformed_responses_and_allows_new_lists() {
    let response_schema = validator(RESPONSE_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index();
    let real = corpus.search_json("INC-2023-Q4-011", &["-k", "1"]);
    assert!(response_schema.is_valid(&real));

    // Applies `edit` to a copy of the real response (its only result is at /results/0).
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut response = real.clone();
        edit(&mut response);
        response
    };

    // Lists are open (a `dense` list is coming), and a list may miss the chunk.
    for (what, response) in [
        (
            "dense list",
            edited(&|r| {
                result(r).insert("ranks".into(), json!({"sparse": {"rank": 1, "score": 14.2}, "dense": {"rank": 3, "score": 0.85}}));
            }),
        ),
        (
            "list without the chunk",
            edited(&|r| {
                result(r).insert(
                    "ranks".into(),
                    json!({"sparse": null, "dense": {"rank": 1, "score": -0.25}}),
                );
            }),
        ),
        (
            "query id",
            edited(&|r| r["query_id"] = json!("mem_req_99214")),
        ),
        (
            "no results",
            edited(&|r| {
                r["results"] = json!([]);
                r["total_retrieved"] = json!(0);
            }),
        ),
    ] {
        let errors = response_schema.iter_errors(&response).into_errors();
        assert!(errors.is_empty(), "{what}: {errors}");
    }

    for (what, response, path) in [
        (
            "missing total_retrieved",
            edited(&|r| {
                r.as_object_mut().unwrap().remove("total_retrieved");
            }),
            "",
        ),
        (
            "extra top-level field",
            edited(&|r| r["took_ms"] = json!(3)),
            "",
        ),
        (
            "query id a number",
            edited(&|r| r["query_id"] = json!(7)),
            "/query_id",
        ),
        (
            "negative total",
            edited(&|r| r["total_retrieved"] = json!(-1)),
            "/total_retrieved",
        ),
        (
            "text as a number",
            edited(&|r| {
                result(r).insert("text".into(), json!(5));
            }),
            "/results/0/text",
        ),
        (
            "missing truncated",
            edited(&|r| {
                r.as_object_mut().unwrap().remove("truncated");
            }),
            "",
        ),
        (
            "negative omitted",
            edited(&|r| r["omitted"] = json!(-1)),
            "/omitted",
        ),
        (
            "extra result field",
            edited(&|r| {
                result(r).insert("score".into(), json!(1.0));
            }),
            "/results/0",
        ),
        (
            "chunk id without position",
            edited(&|r| {
                result(r).insert("chunk_id".into(), json!("notes/a.md"));
            }),
            "/results/0/chunk_id",
        ),
        (
            "chunk id position 0",
            edited(&|r| {
                result(r).insert("chunk_id".into(), json!("notes/a.md#0"));
            }),
            "/results/0/chunk_id",
        ),
        (
            "negative rrf score",
            edited(&|r| {
                result(r).insert("rrf_score".into(), json!(-0.5));
            }),
            "/results/0/rrf_score",
        ),
        (
            "three lines",
            edited(&|r| {
                result(r).insert("lines".into(), json!([1, 2, 3]));
            }),
            "/results/0/lines",
        ),
        (
            "one line",
            edited(&|r| {
                result(r).insert("lines".into(), json!([4]));
            }),
            "/results/0/lines",
        ),
        (
            "line 0",
            edited(&|r| {
                result(r).insert("lines".into(), json!([0, 2]));
            }),
            "/results/0/lines/0",
        ),
        (
            "scalar metadata value",
            edited(&|r| {
                result(r)["metadata"]["environment"] = json!("production");
            }),
            "/results/0/metadata/environment",
        ),
        (
            "metadata without path",
            edited(&|r| {
                result(r)["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("path");
            }),
            "/results/0/metadata",
        ),
        (
            "no lists",
            edited(&|r| {
                result(r).insert("ranks".into(), json!({}));
            }),
            "/results/0/ranks",
        ),
        (
            "rank 0",
            edited(&|r| {
                result(r).insert("ranks".into(), json!({"sparse": {"rank": 0, "score": 1.0}}));
            }),
            "/results/0/ranks/sparse",
        ),
        (
            "rank without score",
            edited(&|r| {
                result(r).insert("ranks".into(), json!({"dense": {"rank": 2}}));
            }),
            "/results/0/ranks/dense",
        ),
        (
            "extra rank field",
            edited(&|r| {
                result(r).insert(
                    "ranks".into(),
                    json!({"bm25": {"rank": 2, "score": 1.0, "weight": 1}}),
                );
            }),
            "/results/0/ranks/bm25",
        ),
        (
            "non-finite score (serialized as null)",
            edited(&|r| {
                result(r).insert(
                    "ranks".into(),
                    json!({"sparse": {"rank": 1, "score": null}}),
                );
            }),
            "/results/0/ranks/sparse",
        ),
    ] {
        assert!(!response_schema.is_valid(&response), "{what} accepted");
        let paths = error_paths(&response_schema, &response);
        assert!(
            paths.iter().all(|p| p.starts_with(path)) && !paths.is_empty(),
            "{what}: errors at {paths:?}, expected under {path:?}"
        );
    }
}

#[test]
fn the_request_schema_and_the_binary_accept_and_reject_the_same_requests() {
    let request_schema = validator(REQUEST_SCHEMA);
    let response_schema = validator(RESPONSE_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index();
    let run = |request: &str, args: &[&str]| {
        corpus
            .memidx()
            .args(["search", "--request", "-"])
            .args(args)
            .write_stdin(request.to_string())
            .output()
            .unwrap()
    };

    // (request, further flags, exit code: 0 results, 1 none). Only the sparse
    // list can come back empty for a query, hence `--mode sparse` for "x".
    let valid = [
        (DESIGN_REQUEST, &[][..], 0),
        (r#"{"search_text": "x"}"#, &["--mode", "sparse"][..], 1),
        // Known values that no file has together: an empty result.
        (
            r#"{"search_text": "pool", "metadata_filter": {"severity": "sev1", "service": "auth-service"}}"#,
            &[][..],
            1,
        ),
        (
            r#"{"search_text": "connection pool", "query_id": "", "top_k": 10000,
                "hybrid_params": {"sparse_weight": 0, "rrf_k_constant": 0},
                "metadata_filter": {"environment": ["production", "staging"]}}"#,
            &[][..],
            0,
        ),
        (
            r#"{"search_text": "pool", "hybrid_params": {}, "metadata_filter": {}}"#,
            &[][..],
            0,
        ),
        (r#"{"search_text": "pool", "top_k": 1}"#, &[][..], 0),
        (r#"{"search_text": "pool", "max_chars": 1}"#, &[][..], 0),
        (r#"{"search_text": "pool", "max_chars": 20000}"#, &[][..], 0),
        (
            r#"{"search_text": "pool", "hybrid_params": {"dense_feedback": 0}}"#,
            &[][..],
            0,
        ),
        (
            r#"{"search_text": "pool", "hybrid_params": {"dense_feedback": 100}}"#,
            &[][..],
            0,
        ),
    ];
    for (request, args, code) in valid {
        let instance = parse(request);
        let errors = request_schema.iter_errors(&instance).into_errors();
        assert!(errors.is_empty(), "{request}: {errors}");
        let output = run(request, args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{request}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let response: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_valid_response(&response_schema, &response, request);
        assert_eq!(response["query_id"], instance["query_id"], "{request}");
    }

    // (request, the instance locations of the schema's errors)
    let invalid = [
        (r#"{"search_text": "x", "colour": 1}"#, vec![""]),
        (r#"{"top_k": 3}"#, vec![""]),
        (r#"{}"#, vec![""]),
        (r#"["x"]"#, vec![""]),
        (r#"{"search_text": 5}"#, vec!["/search_text"]),
        (r#"{"search_text": ""}"#, vec!["/search_text"]),
        (r#"{"search_text": " \t\n"}"#, vec!["/search_text"]),
        (r#"{"search_text": "x", "query_id": 7}"#, vec!["/query_id"]),
        (r#"{"search_text": "x", "top_k": "5"}"#, vec!["/top_k"]),
        (r#"{"search_text": "x", "top_k": 2.5}"#, vec!["/top_k"]),
        (r#"{"search_text": "x", "top_k": 0}"#, vec!["/top_k"]),
        (r#"{"search_text": "x", "top_k": -1}"#, vec!["/top_k"]),
        (r#"{"search_text": "x", "top_k": 10001}"#, vec!["/top_k"]),
        (
            r#"{"search_text": "x", "max_chars": 0}"#,
            vec!["/max_chars"],
        ),
        (
            r#"{"search_text": "x", "max_chars": -5}"#,
            vec!["/max_chars"],
        ),
        (
            r#"{"search_text": "x", "max_chars": 2.5}"#,
            vec!["/max_chars"],
        ),
        (
            r#"{"search_text": "x", "max_chars": "100"}"#,
            vec!["/max_chars"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"sparse_weight": -0.4}}"#,
            vec!["/hybrid_params/sparse_weight"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"dense_weight": -1}}"#,
            vec!["/hybrid_params/dense_weight"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"rrf_k_constant": -5}}"#,
            vec!["/hybrid_params/rrf_k_constant"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"rrf_k_constant": "60"}}"#,
            vec!["/hybrid_params/rrf_k_constant"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"rrf_k": 60}}"#,
            vec!["/hybrid_params"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"dense_feedback": -1}}"#,
            vec!["/hybrid_params/dense_feedback"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"dense_feedback": 2.5}}"#,
            vec!["/hybrid_params/dense_feedback"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"dense_feedback": "3"}}"#,
            vec!["/hybrid_params/dense_feedback"],
        ),
        (
            r#"{"search_text": "x", "hybrid_params": {"dense_feedback": 101}}"#,
            vec!["/hybrid_params/dense_feedback"],
        ),
        (
            r#"{"search_text": "x", "metadata_filter": {"environment": 1}}"#,
            vec!["/metadata_filter/environment"],
        ),
        (
            r#"{"search_text": "x", "metadata_filter": {"environment": ["production", 1]}}"#,
            vec!["/metadata_filter/environment"],
        ),
        (
            r#"{"search_text": "x", "metadata_filter": ["environment=production"]}"#,
            vec!["/metadata_filter"],
        ),
        // An empty list would widen the search to every file.
        (
            r#"{"search_text": "x", "metadata_filter": {"environment": []}}"#,
            vec!["/metadata_filter/environment"],
        ),
        (
            r#"{"search_text": "x", "metadata_filter": {"no-such-key": []}}"#,
            vec!["/metadata_filter/no-such-key"],
        ),
    ];
    for (request, paths) in invalid {
        let instance = parse(request);
        assert!(
            !request_schema.is_valid(&instance),
            "schema accepts {request}"
        );
        assert_eq!(
            error_paths(&request_schema, &instance),
            paths.into_iter().map(String::from).collect(),
            "{request}"
        );
        let output = run(request, &[]);
        assert_eq!(output.status.code(), Some(2), "binary accepts {request}");
        assert!(output.stdout.is_empty(), "{request}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("memidx: "), "{request}: {stderr}");
        if request.contains("[]") {
            assert!(
                stderr.contains("an empty list of values; give at least one value"),
                "{request}: {stderr}"
            );
        }
    }
}
