//! `memidx status`: contents, staleness, `--verify`, and an index kept
//! outside the documents with `index --index PATH`.

use crate::common;

use std::fs;

use common::{Corpus, FIXTURE_CHUNKS, chunk_ids};
use predicates::prelude::*;
use serde_json::Value;

fn status_json(corpus: &Corpus, args: &[&str]) -> Value {
    corpus.json(&[&["status", "--json"][..], args].concat())
}

#[test]
fn status_reports_counts_model_settings_and_staleness() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let status = status_json(&corpus, &[]);
    assert_eq!(
        status["counts"],
        serde_json::json!({"files": 18, "chunks": FIXTURE_CHUNKS, "skipped": 1})
    );
    assert_eq!(status["generation"], 1);
    // The fixtures' hidden folder holds a note: named, with its count.
    assert_eq!(status["skipped"][0]["path"], ".obsidian");
    // The metadata keys a filter can name, each with its common values.
    let metadata = status["metadata"].as_array().unwrap();
    let key = |name: &str| metadata.iter().find(|k| k["key"] == name).unwrap().clone();
    assert_eq!(
        key("environment"),
        serde_json::json!({"key": "environment", "files": 15, "distinct": 2, "values": [
            {"value": "production", "files": 13}, {"value": "staging", "files": 9}]})
    );
    // Paths name one file each: counted, not listed.
    assert_eq!(
        key("path"),
        serde_json::json!({"key": "path", "files": 18, "distinct": 18, "values": []})
    );
    assert_eq!(key("service")["values"].as_array().unwrap().len(), 5);
    assert_eq!(
        key("service")["values"][0],
        serde_json::json!({"value": "billing-service", "files": 4})
    );
    let keys: Vec<&str> = metadata
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert!(
        keys.is_sorted() && keys.contains(&"dir") && keys.contains(&"title"),
        "{keys:?}"
    );
    assert_eq!(status["embedder"]["dim"], 256);
    assert_eq!(status["fusion"]["method"], "relative");
    assert_eq!(status["fusion"]["dense_weight"], 0.4);
    assert_eq!(status["fusion_source"], "builtin");
    assert_eq!(status["bm25"]["k1"], 1.5);
    assert_eq!(
        status["stale"],
        serde_json::json!({"changed": [], "added": [], "deleted": []})
    );
    assert!(status.get("damaged").is_none());

    fs::write(
        corpus.path().join("notes/oncall-handoff-2024-w06.md"),
        "# Changed\n\nnew text\n",
    )
    .unwrap();
    fs::write(corpus.path().join("zz-new.md"), "# New\n").unwrap();
    fs::remove_file(corpus.path().join("adr/0005-short-lived-access-tokens.md")).unwrap();
    let status = status_json(&corpus, &["--verify"]);
    assert_eq!(
        status["stale"]["changed"],
        serde_json::json!(["notes/oncall-handoff-2024-w06.md"])
    );
    assert_eq!(status["stale"]["added"], serde_json::json!(["zz-new.md"]));
    assert_eq!(
        status["stale"]["deleted"],
        serde_json::json!(["adr/0005-short-lived-access-tokens.md"])
    );
    assert_eq!(status["damaged"], serde_json::json!([]));

    let text = corpus.memidx().arg("status").output().unwrap().stdout;
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(&format!(
            "files      18 (1 skipped), {FIXTURE_CHUNKS} chunks"
        )),
        "{text}"
    );
    assert!(text.contains("\nmetadata   date "), "{text}");
    assert!(
        text.contains("\n           environment  production (13), staging (9)\n"),
        "{text}"
    );
    assert!(
        text.contains("\n           path         18 values, each in one file\n"),
        "{text}"
    );
    assert!(
        text.contains("stale      1 changed, 1 added, 1 deleted since indexing"),
        "{text}"
    );
    assert!(text.contains("  added    zz-new.md"), "{text}");
}

#[test]
fn verify_names_a_damaged_file() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let vectors = corpus.path().join(".memidx/gen-1/vectors.i8");
    let mut bytes = fs::read(&vectors).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    fs::write(&vectors, &bytes).unwrap();
    // A file written since indexing is re-read on every open, so even a plain search sees it.
    corpus
        .memidx()
        .args(["search", "pool"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("vectors.i8 checksum mismatch"));
    // Damage that keeps the sealed mtime (bit rot) is only found by --verify.
    memidx::store::checks::seal(&vectors).unwrap();
    corpus.memidx().arg("status").assert().code(0);
    corpus
        .memidx()
        .args(["status", "--verify"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("index is damaged: ")
                .and(predicate::str::contains("vectors.i8 checksum mismatch"))
                .and(predicate::str::contains("memidx index --full")),
        );
}

#[test]
fn an_index_kept_outside_the_documents_leaves_them_untouched() {
    let corpus = Corpus::fixtures();
    let elsewhere = Corpus::empty();
    let index_dir = elsewhere.path().join("memidx-index");
    corpus
        .memidx()
        .args(["index", ".", "-q", "--index"])
        .arg(&index_dir)
        .assert()
        .success();
    assert!(!corpus.path().join(".memidx").exists());
    assert!(index_dir.join("meta.json").is_file());
    let output = elsewhere
        .memidx()
        .args([
            "search",
            "getUserById",
            "--json",
            "--mode",
            "sparse",
            "-k",
            "1",
            "--index",
        ])
        .arg(&index_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let response: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(chunk_ids(&response), ["notes/auth-slow-login-query.md#2"]);
    let status = elsewhere
        .memidx()
        .args(["status", "--json", "--index"])
        .arg(&index_dir)
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        status["root"],
        fs::canonicalize(corpus.path())
            .unwrap()
            .display()
            .to_string()
    );
    assert_eq!(status["stale"]["added"], serde_json::json!([]));
}

#[test]
fn status_without_an_index_says_how_to_make_one() {
    let corpus = Corpus::empty();
    corpus.memidx().arg("status").assert().code(2).stderr(
        predicate::str::contains("no index found").and(predicate::str::contains("memidx index")),
    );
}

#[test]
fn an_empty_index_gives_no_size_ratio_and_a_single_file_is_one_file() {
    let corpus = Corpus::empty();
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let status = corpus.memidx().args(["status"]).output().unwrap();
    let text = String::from_utf8(status.stdout).unwrap();
    let size = text.lines().find(|l| l.starts_with("size ")).unwrap();
    assert!(size.ends_with(" index for 0 B of markdown"), "{size}");
    fs::write(corpus.path().join("one.md"), "# One\n\nText.\n").unwrap();
    corpus.index();
    let again = corpus.memidx().args(["index", "."]).output().unwrap();
    let summary = String::from_utf8(again.stdout).unwrap();
    assert!(
        summary.starts_with("index is up to date: 1 file, 1 chunk (checked in "),
        "{summary}"
    );
}
