//! The JSON Schemas of the other JSON outputs against the real binary:
//! `explain --json` (`schemas/explain-response.schema.json`), `eval --json`
//! (`schemas/eval-report.schema.json`) and `status --json`
//! (`schemas/status-report.schema.json`) and `get --json`
//! (`schemas/get-response.schema.json`). Each is a valid, documented draft
//! 2020-12 schema; real output validates, with and without the options that
//! change its shape; and edited output is refused at the exact instance
//! location of the edit.

use crate::common;

use std::collections::BTreeSet;
use std::fs;

use common::{Corpus, error_paths, fixtures_dir, parse, validator};
use jsonschema::Validator;
use serde_json::{Value, json};

const EXPLAIN_SCHEMA: &str = include_str!("../../schemas/explain-response.schema.json");
const EVAL_SCHEMA: &str = include_str!("../../schemas/eval-report.schema.json");
const STATUS_SCHEMA: &str = include_str!("../../schemas/status-report.schema.json");
const GET_SCHEMA: &str = include_str!("../../schemas/get-response.schema.json");

fn assert_valid(validator: &Validator, instance: &Value, what: &str) {
    let errors = validator.iter_errors(instance).into_errors();
    assert!(errors.is_empty(), "{what}: {errors}\n{instance:#}");
}

/// A copy of `instance` changed by `edit`.
fn edited(instance: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut copy = instance.clone();
    edit(&mut copy);
    copy
}

/// Removes `key` from the object at `value`, asserting it was there.
fn remove(value: &mut Value, key: &str) {
    let object = value.as_object_mut().expect("an object");
    assert!(object.remove(key).is_some(), "no {key} to remove");
}

/// Asserts that each edited instance is refused with errors at exactly one
/// instance location, the one given.
fn assert_refused(validator: &Validator, cases: Vec<(&str, Value, &str)>) {
    for (what, instance, path) in cases {
        assert!(!validator.is_valid(&instance), "{what} accepted");
        assert_eq!(
            error_paths(validator, &instance),
            BTreeSet::from([path.to_string()]),
            "{what}"
        );
    }
}

/// Runs `memidx ARGS…` in the corpus, asserts exit 0, parses stdout as JSON.
fn memidx_json(corpus: &Corpus, args: &[&str]) -> Value {
    let output = corpus.memidx().args(args).output().expect("run");
    assert_eq!(
        output.status.code(),
        Some(0),
        "memidx {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("valid JSON")
}

/// `memidx eval --json --quiet` on the fixture collection, with `extra` flags.
fn eval_json(corpus: &Corpus, extra: &[&str]) -> Value {
    let eval = fixtures_dir().join("eval");
    let queries = eval.join("queries.jsonl");
    let qrels = eval.join("qrels.tsv");
    let mut args = vec!["eval", "--json", "--quiet", "--queries"];
    args.push(queries.to_str().unwrap());
    args.push("--qrels");
    args.push(qrels.to_str().unwrap());
    args.extend(extra);
    memidx_json(corpus, &args)
}

#[test]
fn the_output_schemas_are_valid_documented_closed_draft_2020_12_schemas() {
    // (file, text, properties, objects with properties)
    for (file, text, property_count, object_count) in [
        ("explain-response.schema.json", EXPLAIN_SCHEMA, 63, 8),
        ("eval-report.schema.json", EVAL_SCHEMA, 30, 6),
        ("status-report.schema.json", STATUS_SCHEMA, 80, 12),
        ("get-response.schema.json", GET_SCHEMA, 11, 1),
    ] {
        let schema = parse(text);
        let documented = common::check_schema_document(file, &schema, property_count);
        // Every output is a tree of serde structs: each object is closed.
        let objects: Vec<&String> = documented
            .iter()
            .filter(|(_, sub)| sub.get("properties").is_some())
            .map(|(path, _)| path)
            .collect();
        assert_eq!(objects.len(), object_count, "{file}: {objects:?}");
        for (path, sub) in &documented {
            if sub.get("properties").is_some() {
                assert_eq!(
                    sub["additionalProperties"],
                    json!(false),
                    "{file}: #{path} is open"
                );
            }
        }
    }
}

#[test]
fn explain_output_validates_and_edits_are_refused_where_they_are() {
    let schema = validator(EXPLAIN_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index();

    let plain = memidx_json(
        &corpus,
        &[
            "explain",
            "what to do when the main database server dies",
            "-k",
            "3",
            "--json",
        ],
    );
    assert_valid(&schema, &plain, "plain");
    assert_eq!(plain["filter"], json!([]));
    assert_eq!(plain["results"].as_array().unwrap().len(), 3);

    let filtered = memidx_json(
        &corpus,
        &[
            "explain",
            "HTTP 504 gateway timeout",
            "-k",
            "2",
            "--filter",
            "environment=production",
            "--json",
        ],
    );
    assert_valid(&schema, &filtered, "filtered");
    assert_eq!(filtered["filter"], json!(["environment=production"]));
    assert_eq!(
        filtered["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["fused_rank"].clone())
            .collect::<Vec<_>>(),
        [json!(1), json!(2)]
    );

    // A chunk the filter removes: no fused rank, every list says why.
    let staging = "runbooks/billing/connection-pool-staging.md#2";
    let removed = memidx_json(
        &corpus,
        &[
            "explain",
            "HTTP 504",
            "--chunk",
            staging,
            "--filter",
            "environment=production",
            "--json",
        ],
    );
    assert_valid(&schema, &removed, "chunk removed by the filter");
    let result = &removed["results"][0];
    assert_eq!(result["chunk_id"], staging);
    assert_eq!(result["fused_rank"], Value::Null);
    assert_eq!(result["rrf_score"], 0.0);
    for list in ["sparse", "dense"] {
        let part = result["lists"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["list"] == list)
            .unwrap();
        assert_eq!(
            part,
            &json!({"list": list, "rank": null, "score": null, "weight": part["weight"],
                    "contribution": 0.0, "absent": "removed by filter environment=production",
                    "reason": null})
        );
    }

    // The other two reasons a list contributes nothing.
    let incident = "incidents/2023/q4/billing-month-end-timeouts.md#1";
    let outside = memidx_json(
        &corpus,
        &[
            "explain", "HTTP 504", "--chunk", incident, "--window", "1", "--mode", "sparse",
            "--json",
        ],
    );
    assert_valid(&schema, &outside, "chunk outside the window");
    let part = &outside["results"][0]["lists"][0];
    assert_eq!(part["absent"], "outside the window of 1 at rank 2");
    assert_eq!(part["rank"], 2);
    let unmatched = memidx_json(
        &corpus,
        &[
            "explain",
            "INC-2023-Q4-011",
            "--chunk",
            "runbooks/kubernetes/node-drain.md#1",
            "--mode",
            "sparse",
            "--json",
        ],
    );
    assert_valid(&schema, &unmatched, "chunk no query term matched");
    assert_eq!(
        unmatched["results"][0]["lists"][0]["absent"],
        "no query term matched"
    );

    assert_refused(
        &schema,
        vec![
            (
                "missing window",
                edited(&filtered, |r| remove(r, "window")),
                "",
            ),
            (
                "extra top-level field",
                edited(&filtered, |r| r["total_ms"] = json!(1.5)),
                "",
            ),
            (
                "window as a string",
                edited(&filtered, |r| r["window"] = json!("50")),
                "/window",
            ),
            (
                "condition without a key",
                edited(&filtered, |r| r["filter"][0] = json!("production")),
                "/filter/0",
            ),
            (
                "missing list summary field",
                edited(&filtered, |r| remove(&mut r["lists"][1], "filtered_out")),
                "/lists/1",
            ),
            (
                "extra list summary field",
                edited(&filtered, |r| r["lists"][0]["cpu_ms"] = json!(0.1)),
                "/lists/0",
            ),
            (
                "negative candidates",
                edited(&filtered, |r| r["lists"][0]["candidates"] = json!(-1)),
                "/lists/0/candidates",
            ),
            (
                "fused rank as a string",
                edited(&filtered, |r| r["results"][1]["fused_rank"] = json!("2")),
                "/results/1/fused_rank",
            ),
            (
                "one line",
                edited(&filtered, |r| r["results"][0]["lines"] = json!([13])),
                "/results/0/lines",
            ),
            (
                "missing contribution",
                edited(&filtered, |r| {
                    remove(&mut r["results"][0]["lists"][1], "contribution")
                }),
                "/results/0/lists/1",
            ),
            (
                "rank 0",
                edited(&filtered, |r| {
                    r["results"][0]["lists"][0]["rank"] = json!(0)
                }),
                "/results/0/lists/0/rank",
            ),
            (
                "unknown absence reason",
                edited(&removed, |r| {
                    r["results"][0]["lists"][1]["absent"] = json!("filtered")
                }),
                "/results/0/lists/1/absent",
            ),
            (
                "absent as a boolean",
                edited(&removed, |r| {
                    r["results"][0]["lists"][0]["absent"] = json!(true)
                }),
                "/results/0/lists/0/absent",
            ),
        ],
    );
}

#[test]
fn eval_output_validates_and_edits_are_refused_where_they_are() {
    let schema = validator(EVAL_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--graph"]);

    let plain = eval_json(&corpus, &[]);
    assert_valid(&schema, &plain, "eval");
    assert_eq!(plain["sweep"], Value::Null);
    assert_eq!(
        plain["setting"],
        json!({"method": "relative", "rrf_k": 60.0, "sparse_weight": 0.3, "dense_weight": 0.4,
               "file_weight": 0.3, "graph_weight": 0.2, "recency_weight": 0.0, "window": 200})
    );

    let swept = eval_json(&corpus, &["--sweep"]);
    assert_valid(&schema, &swept, "eval --sweep");
    assert_eq!(swept["sweep"]["settings_tried"], 216);
    assert_eq!(swept["sweep"]["top"].as_array().unwrap().len(), 5);
    assert_eq!(swept["sweep"]["top"][0], swept["sweep"]["best"]);
    assert_eq!(swept["sweep"]["default"]["setting"], swept["setting"]);

    assert_refused(
        &schema,
        vec![
            (
                "missing judged_queries",
                edited(&plain, |r| remove(r, "judged_queries")),
                "",
            ),
            (
                "missing sweep (it is null, not absent)",
                edited(&plain, |r| remove(r, "sweep")),
                "",
            ),
            (
                "extra top-level field",
                edited(&plain, |r| r["per_query"] = json!({})),
                "",
            ),
            (
                "elapsed as a serde Duration",
                edited(&plain, |r| {
                    r["elapsed"] = json!({"secs": 0, "nanos": 296771913})
                }),
                "/elapsed",
            ),
            (
                "window 0",
                edited(&plain, |r| r["setting"]["window"] = json!(0)),
                "/setting/window",
            ),
            (
                "two modes",
                edited(&plain, |r| {
                    r["modes"].as_array_mut().unwrap().truncate(2);
                }),
                "/modes",
            ),
            (
                "unknown mode",
                edited(&plain, |r| r["modes"][1]["mode"] = json!("bm25")),
                "/modes/1/mode",
            ),
            (
                "measure as a string",
                edited(&plain, |r| {
                    r["modes"][2]["metrics"]["nDCG@10"] = json!("1.0")
                }),
                "/modes/2/metrics/nDCG@10",
            ),
            (
                "measure under its Rust name",
                edited(&plain, |r| {
                    let metrics = &mut r["modes"][0]["metrics"];
                    let value = metrics["MRR@10"].clone();
                    remove(metrics, "MRR@10");
                    metrics["mrr_10"] = value;
                }),
                "/modes/0/metrics",
            ),
            (
                "recall above 1",
                edited(&plain, |r| {
                    r["modes"][0]["metrics"]["Recall@100"] = json!(1.5)
                }),
                "/modes/0/metrics/Recall@100",
            ),
            (
                "sweep as a boolean",
                edited(&plain, |r| r["sweep"] = json!(false)),
                "/sweep",
            ),
            (
                "extra sweep field",
                edited(&swept, |r| r["sweep"]["grid"] = json!([])),
                "/sweep",
            ),
            (
                "missing best",
                edited(&swept, |r| remove(&mut r["sweep"], "best")),
                "/sweep",
            ),
            (
                "six top settings",
                edited(&swept, |r| {
                    let best = r["sweep"]["best"].clone();
                    r["sweep"]["top"].as_array_mut().unwrap().push(best);
                }),
                "/sweep/top",
            ),
            (
                "held-out score missing",
                edited(&swept, |r| {
                    remove(&mut r["sweep"]["top"][3], "held_out_ndcg_10")
                }),
                "/sweep/top/3",
            ),
            (
                "best window as a float",
                edited(&swept, |r| {
                    r["sweep"]["best"]["setting"]["window"] = json!(50.5)
                }),
                "/sweep/best/setting/window",
            ),
        ],
    );
}

#[test]
fn status_output_validates_and_edits_are_refused_where_they_are() {
    let schema = validator(STATUS_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index();

    let plain = memidx_json(&corpus, &["status", "--json"]);
    assert_valid(&schema, &plain, "status");
    assert_eq!(plain.get("damaged"), None);
    assert_eq!(
        plain["stale"],
        json!({"changed": [], "added": [], "deleted": []})
    );
    assert_eq!(plain["fusion"]["window"], Value::Null);

    let verified = memidx_json(&corpus, &["status", "--json", "--verify"]);
    assert_valid(&schema, &verified, "status --verify");
    assert_eq!(verified["damaged"], json!([]));

    // Every stale list non-empty, and a saved fusion window.
    fs::write(
        corpus.path().join("notes/oncall-handoff-2024-w06.md"),
        "# Changed\n\nnew text\n",
    )
    .unwrap();
    fs::write(corpus.path().join("zz-new.md"), "# New\n").unwrap();
    fs::remove_file(corpus.path().join("adr/0005-short-lived-access-tokens.md")).unwrap();
    let swept = eval_json(&corpus, &["--sweep", "--save"]);
    for args in [&["status", "--json"][..], &["status", "--json", "--verify"]] {
        let stale = memidx_json(&corpus, args);
        assert_valid(&schema, &stale, &format!("{args:?} on stale files"));
        assert_eq!(
            stale["stale"],
            json!({"changed": ["notes/oncall-handoff-2024-w06.md"], "added": ["zz-new.md"],
                   "deleted": ["adr/0005-short-lived-access-tokens.md"]}),
            "{args:?}"
        );
        // The best setting is saved when it beats the defaults, else they are.
        let sweep = &swept["sweep"];
        let wins =
            sweep["best"]["tune_ndcg_10"].as_f64() > sweep["default"]["tune_ndcg_10"].as_f64();
        let saved = &sweep[if wins { "best" } else { "default" }]["setting"];
        assert_eq!(stale["fusion"]["window"], saved["window"], "{args:?}");
        assert_eq!(stale.get("damaged").is_some(), args.len() == 3, "{args:?}");
    }
    // After a re-index of those changes, the index has a delta part.
    corpus.index();
    let appended = memidx_json(&corpus, &["status", "--json", "--verify"]);
    assert_valid(&schema, &appended, "status with a delta");
    assert_eq!(appended["delta"]["files"], json!(2), "{appended:#}");
    assert_eq!(appended["delta"]["buried_files"], json!(2), "{appended:#}");
    assert_eq!(appended["damaged"], json!([]));
    assert_refused(
        &schema,
        vec![(
            "a delta without its chunks",
            edited(&appended, |r| remove(&mut r["delta"], "chunks")),
            "/delta",
        )],
    );

    assert_refused(
        &schema,
        vec![
            (
                "missing stale",
                edited(&verified, |r| remove(r, "stale")),
                "",
            ),
            (
                "extra top-level field",
                edited(&verified, |r| r["verified"] = json!(true)),
                "",
            ),
            (
                "generation as a string",
                edited(&verified, |r| r["generation"] = json!("1")),
                "/generation",
            ),
            (
                "generation 0",
                edited(&verified, |r| r["generation"] = json!(0)),
                "/generation",
            ),
            (
                "built without the T and Z",
                edited(&verified, |r| r["built"] = json!("2026-11-30 11:20:21")),
                "/built",
            ),
            (
                "missing chunk count",
                edited(&verified, |r| remove(&mut r["counts"], "chunks")),
                "/counts",
            ),
            (
                "extra embedder field",
                edited(&verified, |r| r["embedder"]["path"] = json!("model.bin")),
                "/embedder",
            ),
            (
                "fusion window 0",
                edited(&verified, |r| r["fusion"]["window"] = json!(0)),
                "/fusion/window",
            ),
            (
                "b above 1",
                edited(&verified, |r| r["bm25"]["b"] = json!(1.25)),
                "/bm25/b",
            ),
            (
                "changed as one path",
                edited(&verified, |r| r["stale"]["changed"] = json!("a.md")),
                "/stale/changed",
            ),
            (
                "damaged as a number",
                edited(&verified, |r| r["damaged"] = json!([1])),
                "/damaged/0",
            ),
        ],
    );
}

#[test]
fn get_output_validates_and_edits_are_refused_where_they_are() {
    let schema = validator(GET_SCHEMA);
    let corpus = Corpus::fixtures();
    corpus.index();
    let file = "incidents/2023/q4/billing-month-end-timeouts.md";

    let chunk = memidx_json(&corpus, &["get", &format!("{file}#1"), "--json"]);
    assert_valid(&schema, &chunk, "chunk");
    let cut = memidx_json(
        &corpus,
        &["get", &format!("{file}#1"), "--json", "--max-chars", "40"],
    );
    assert_valid(&schema, &cut, "chunk cut");
    assert_eq!(cut["truncated"], true);
    let lines = memidx_json(&corpus, &["get", &format!("{file}:13-20"), "--json"]);
    assert_valid(&schema, &lines, "lines");
    let whole = memidx_json(&corpus, &["get", file, "--json"]);
    assert_valid(&schema, &whole, "whole file");

    assert_refused(
        &schema,
        vec![
            ("missing text", edited(&chunk, |r| remove(r, "text")), ""),
            ("extra field", edited(&chunk, |r| r["score"] = json!(1)), ""),
            (
                "unknown kind",
                edited(&chunk, |r| r["kind"] = json!("file")),
                "/kind",
            ),
            (
                "chunk id without #n",
                edited(&chunk, |r| r["chunk_id"] = json!(file)),
                "/chunk_id",
            ),
            (
                "line 0",
                edited(&lines, |r| r["lines"] = json!([0, 20])),
                "/lines/0",
            ),
            (
                "truncated as a string",
                edited(&lines, |r| r["truncated"] = json!("no")),
                "/truncated",
            ),
            (
                "metadata without path",
                edited(&lines, |r| remove(&mut r["metadata"], "path")),
                "/metadata",
            ),
        ],
    );
}
