//! End-to-end tests of the incremental index (issue 5): a re-index after a
//! file is changed, added or deleted carries the unchanged chunks over —
//! their texts, sparse documents and vectors — instead of rebuilding, and
//! every answer, in every mode, equals a fresh full index's byte for byte.
//! A run that would leave more garbage than live data rewrites everything.

use crate::common;

use std::fs;

use common::Corpus;
use memidx::index::manifest::Manifest;

/// Queries compared between indexes: identifiers, paraphrases, and words
/// of the changed files.
const QUERIES: [&str; 6] = [
    "postgres connection pool exhausted",
    "INC-2023-Q4-011",
    "how do we rotate the signing keys",
    "max_connections",
    "ledger snapshot reconciliation",
    "invoice retry backoff",
];

/// Every list alone and fused: each must match a fresh index.
const MODES: [&str; 3] = ["hybrid", "sparse", "dense"];

/// (uids the sparse list has given out, chunks in the index): equal after
/// a full rewrite, more uids than chunks once chunks were carried over
/// past removed ones.
fn uids_and_chunks(corpus: &Corpus) -> (u64, usize) {
    let manifest = Manifest::read(&corpus.path().join(".memidx"))
        .unwrap()
        .unwrap();
    (manifest.sparse.uids, manifest.counts.chunks)
}

fn assert_matches_a_fresh_index(corpus: &Corpus, after: &str) {
    common::assert_answers_as_a_fresh_index(corpus, &QUERIES, &MODES, after);
}

fn reindex(corpus: &Corpus) {
    let output = corpus.index();
    assert!(output.status.success(), "{output:?}");
}

/// A re-index that writes the index whole (`--compact`), carrying the
/// unchanged chunks, rather than appending a delta.
fn compact(corpus: &Corpus) {
    let output = corpus.index_with(&["--compact"]);
    assert!(output.status.success(), "{output:?}");
    let manifest = Manifest::read(&corpus.path().join(".memidx"))
        .unwrap()
        .unwrap();
    assert!(manifest.delta.is_none(), "compacted");
}

/// Whether the index has a delta part.
fn has_delta(corpus: &Corpus) -> bool {
    let manifest = Manifest::read(&corpus.path().join(".memidx"))
        .unwrap()
        .unwrap();
    manifest.delta.is_some()
}

#[test]
fn changed_added_and_deleted_files_are_carried_over_and_match_a_fresh_index() {
    let corpus = Corpus::fixtures();
    reindex(&corpus);
    let (uids, chunks) = uids_and_chunks(&corpus);
    assert_eq!(uids, chunks as u64, "a first index gives uids 0..chunks");
    edit_add_and_delete(&corpus, compact);
    let (uids, chunks) = uids_and_chunks(&corpus);
    assert!(uids > chunks as u64);
}

#[test]
fn changed_added_and_deleted_files_go_to_a_delta_that_matches_a_fresh_index() {
    let corpus = Corpus::fixtures();
    reindex(&corpus);
    edit_add_and_delete(&corpus, |corpus| {
        reindex(corpus);
        assert!(has_delta(corpus), "a small change appends a delta");
    });
    // Folding the delta in changes no answer.
    compact(&corpus);
    assert_matches_a_fresh_index(&corpus, "compacting");
}

/// Changes a file, adds one and deletes one, re-indexing with `reindex`
/// after each and comparing every answer with a fresh index's.
fn edit_add_and_delete(corpus: &Corpus, reindex: impl Fn(&Corpus)) {
    // Changed: one section reworded, one added.
    let billing = corpus.path().join("services/billing-service.md");
    let text = fs::read_to_string(&billing).unwrap();
    let text = text.replacen("retry", "retry with exponential backoff", 1)
        + "\n## Ledger snapshots\n\nNightly ledger snapshot reconciliation compares invoices.\n";
    fs::write(&billing, text).unwrap();
    reindex(corpus);
    assert_matches_a_fresh_index(corpus, "a change");

    // Added.
    fs::write(
        corpus.path().join("notes/ledger-audit.md"),
        "---\nservice: billing-service\n---\n# Ledger audit\n\nQuarterly audit of the ledger \
         snapshot and of invoice retry backoff settings.\n",
    )
    .unwrap();
    reindex(corpus);
    assert_matches_a_fresh_index(corpus, "an addition");

    // Deleted: its chunks vanish from every list.
    fs::remove_file(corpus.path().join("services/auth-service.md")).unwrap();
    reindex(corpus);
    assert_matches_a_fresh_index(corpus, "a deletion");
    for answer in common::answers(corpus, &QUERIES, &MODES) {
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            !answer.contains("\"chunk_id\": \"services/auth-service.md#"),
            "{answer}"
        );
    }
}

#[test]
fn a_run_that_would_leave_more_garbage_than_data_rewrites_everything() {
    let corpus = Corpus::fixtures();
    reindex(&corpus);
    // Most chunks go: carrying the rest over would keep mostly dead data.
    for dir in ["incidents", "runbooks", "services", "adr"] {
        fs::remove_dir_all(corpus.path().join(dir)).unwrap();
    }
    reindex(&corpus);
    let (uids, chunks) = uids_and_chunks(&corpus);
    assert_eq!(uids, chunks as u64, "compacted: uids renumbered 0..chunks");
    assert_matches_a_fresh_index(&corpus, "removing most files");
}

#[test]
fn a_touched_file_is_restamped_once_and_then_neither_stale_nor_re_read() {
    let corpus = Corpus::fixtures();
    reindex(&corpus);
    let file = corpus.path().join("notes/auth-slow-login-query.md");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let stale = |corpus: &Corpus| corpus.json(&["status", "--json"])["stale"]["changed"].clone();
    assert_eq!(
        stale(&corpus),
        serde_json::json!(["notes/auth-slow-login-query.md"])
    );
    let summary = |corpus: &Corpus| {
        String::from_utf8(
            corpus
                .memidx()
                .args(["index", "."])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
    };
    // The content is the same: nothing is embedded, but the new stamp is recorded ...
    let first = summary(&corpus);
    assert!(first.contains("(embedding 0 chunks"), "{first}");
    assert_eq!(stale(&corpus), serde_json::json!([]));
    // ... so the next run is up to date, and the answers are a fresh index's.
    assert!(summary(&corpus).contains("up to date"));
    assert_matches_a_fresh_index(&corpus, "touching a file");
}
