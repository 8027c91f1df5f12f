//! End-to-end tests of hybrid retrieval on the fixtures: the dense list finds
//! paraphrases, fusion rewards agreement between lists, filters hold in
//! both lists, and `explain` accounts for every score exactly.

use crate::common;

use common::{Corpus, FIXTURE_CHUNKS, chunk_ids};
use predicates::prelude::*;
use serde_json::Value;

const PROMOTION_CHUNK: &str = "runbooks/databases/postgres-replication.md#4";

#[test]
fn a_paraphrase_with_no_shared_words_is_found_by_the_dense_list() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let query = "the writer node died, elect a follower";
    let dense = corpus.search_json(query, &["--mode", "dense", "-k", "3"]);
    assert!(
        chunk_ids(&dense).contains(&PROMOTION_CHUNK.to_string()),
        "{dense}"
    );
    // No query term occurs in it, so only the dense list brings it in.
    corpus
        .memidx()
        .args(["search", query, "--mode", "sparse", "-k", "100", "--json"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(PROMOTION_CHUNK).not());
    let hybrid = corpus.search_json(query, &["-k", "20"]);
    let hit = hybrid["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["chunk_id"] == PROMOTION_CHUNK)
        .unwrap();
    assert_eq!(hit["ranks"]["sparse"], Value::Null);
    // In a hybrid search the dense query is moved toward the fused first
    // pass's best chunks, here node-drain chunks that the sparse list finds
    // by "node": the chunk drops from 1st to 6th in the dense list, and
    // stays in the fused top 20 only by it.
    assert_eq!(hit["ranks"]["dense"]["rank"], 7);
}

#[test]
fn a_chunk_ranked_well_in_both_lists_beats_one_that_tops_only_one() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let response = corpus.search_json(
        "connection pool exhausted",
        &[
            "-k",
            "3",
            "--sparse-weight",
            "1",
            "--dense-weight",
            "1",
            "--rrf-k",
            "60",
        ],
    );
    let ranks: Vec<(u64, u64)> = response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ranks"]["sparse"]["rank"].as_u64().unwrap(),
                r["ranks"]["dense"]["rank"].as_u64().unwrap(),
            )
        })
        .collect();
    // The sparse list's first chunk (13th in the dense list) is not among
    // them: chunks ranked well in both lists beat it.
    assert_eq!(ranks, [(2, 3), (4, 2), (3, 6)]);
    assert_eq!(
        response["results"][0]["rrf_score"].as_f64().unwrap(),
        1.0 / 62.0 + 1.0 / 63.0
    );
}

#[test]
fn the_design_request_never_returns_staging_notes() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let request = r#"{"query_id": "mem_req_99214", "search_text": "HTTP 504 gateway timeout postgres connection pool",
        "top_k": 5, "hybrid_params": {"dense_weight": 0.6, "sparse_weight": 0.4, "rrf_k_constant": 60},
        "metadata_filter": {"environment": "production", "service": "billing-service"}}"#;
    let output = corpus.request(request);
    assert_eq!(output.status.code(), Some(0));
    let response: Value = serde_json::from_slice(&output.stdout).unwrap();
    let results = response["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(response["total_retrieved"], 5);
    assert!(
        results
            .iter()
            .any(|r| r["chunk_id"] == "incidents/2023/q4/billing-month-end-timeouts.md#1")
    );
    for r in results {
        let envs = r["metadata"]["environment"].as_array().unwrap();
        // Files listing both environments are production files too; staging-only ones never appear.
        assert!(envs.contains(&Value::from("production")), "{r}");
        let ranks = r["ranks"].as_object().unwrap();
        let expected: f64 = [("sparse", 0.4), ("dense", 0.6)]
            .iter()
            .filter_map(|(list, w)| {
                ranks[*list]["rank"]
                    .as_u64()
                    .map(|rank| w / (60.0 + rank as f64))
            })
            .sum();
        assert!((r["rrf_score"].as_f64().unwrap() - expected).abs() < 1e-15);
    }
}

#[test]
fn explain_contributions_add_up_to_the_search_scores_exactly() {
    let corpus = Corpus::fixtures();
    corpus.index();
    for query in [
        "connection pool exhausted",
        "INC-2023-Q4-011",
        "the writer node died, elect a follower",
    ] {
        // The index's own fusion (relative scores, the file list joining
        // them), then each method spelled out (the sparse and dense lists).
        for given in [None, Some("relative"), Some("adaptive"), Some("rrf")] {
            let fusion = given.unwrap_or("relative");
            // Unfolded, so the fused ranks are the positions.
            let mut unfolded = vec!["-k", "10", "--per-file", "0"];
            unfolded.extend(given.iter().flat_map(|method| ["--fusion", method]));
            let search = corpus.search_json(query, &unfolded);
            let output = corpus
                .memidx()
                .args([&["explain", query, "--json"][..], &unfolded].concat())
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(0));
            let explain: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(explain["fusion"], fusion);
            let lists = explain["lists"].as_array().unwrap();
            let results = explain["results"].as_array().unwrap();
            assert_eq!(results.len(), 10);
            for (i, (e, s)) in results
                .iter()
                .zip(search["results"].as_array().unwrap())
                .enumerate()
            {
                assert_eq!(e["chunk_id"], s["chunk_id"]);
                assert_eq!(e["fused_rank"], i + 1);
                let sum = e["lists"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .fold(0.0, |acc, l| acc + l["contribution"].as_f64().unwrap());
                assert_eq!(sum, e["rrf_score"].as_f64().unwrap(), "{query} #{}", i + 1);
                assert_eq!(e["rrf_score"], s["rrf_score"]);
                // A chunk holding no exact term of an identifier query
                // gets 0 from every list (the fusion's exact gate).
                let gated = e["gated"].as_bool().unwrap();
                assert_eq!(gated, e["rrf_score"] == 0.0, "{query} #{}", i + 1);
                for (part, list) in e["lists"].as_array().unwrap().iter().zip(lists) {
                    if part["absent"].is_null() {
                        let weight = part["weight"].as_f64().unwrap();
                        // The JSON carries the raw score as an f32.
                        let score = f64::from(part["score"].as_f64().unwrap() as f32);
                        let expected = match fusion {
                            _ if gated => 0.0,
                            "rrf" => weight / (60.0 + part["rank"].as_f64().unwrap()),
                            _ => weight * score.max(0.0) / list["best_score"].as_f64().unwrap(),
                        };
                        assert_eq!(part["contribution"].as_f64().unwrap(), expected);
                    }
                }
            }
            assert_eq!(
                lists
                    .iter()
                    .map(|l| l["name"].as_str().unwrap())
                    .collect::<Vec<_>>(),
                match given {
                    None => &["sparse", "dense", "file"][..],
                    Some(_) => &["sparse", "dense"],
                }
            );
            // The weights a query was fused with: the given ones, or under
            // adaptive fusion each times √spread, rescaled to the same sum.
            let (weights, query_weights): (Vec<f64>, Vec<f64>) = lists
                .iter()
                .map(|l| {
                    (
                        l["weight"].as_f64().unwrap(),
                        l["query_weight"].as_f64().unwrap(),
                    )
                })
                .unzip();
            if fusion == "adaptive" {
                let scaled: Vec<f64> = lists
                    .iter()
                    .map(|l| l["weight"].as_f64().unwrap() * l["spread"].as_f64().unwrap().sqrt())
                    .collect();
                let total: f64 = scaled.iter().sum();
                for (got, want) in query_weights.iter().zip(&scaled) {
                    assert!(
                        (got - want / total).abs() < 1e-12,
                        "{query}: {query_weights:?}"
                    );
                }
            } else {
                assert_eq!(query_weights, weights);
                assert!(lists.iter().all(|l| l["spread"].is_null()));
            }
        }
    }
}

#[test]
fn adaptive_fusion_moves_the_weights_toward_the_list_whose_best_stand_apart() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let weights = |query: &str| {
        let explained = corpus.json(&["explain", query, "--json", "--fusion", "adaptive"]);
        assert_eq!(explained["fusion"], "adaptive");
        let lists = explained["lists"].as_array().unwrap().clone();
        lists
            .iter()
            .map(|l| l["query_weight"].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    // An incident id only a few chunks hold: BM25's best stand far apart.
    let identifier = weights("INC-2023-Q4-011");
    assert!(identifier[0] > 0.6, "{identifier:?}");
    // A paraphrase sharing few words: the weights swing the other way.
    let paraphrase = weights("the writer node died, elect a follower");
    assert!(
        paraphrase[0] < identifier[0],
        "{paraphrase:?} vs {identifier:?}"
    );
    // The human explain says what moved them.
    corpus
        .memidx()
        .args(["explain", "INC-2023-Q4-011", "--fusion", "adaptive", "-k", "2"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(relative scores, weights moved by each list's spread, window 200)"))
        .stdout(predicate::str::is_match(r"weights for this query: sparse 0\.60 → 0\.[6-9]\d \(spread 0\.\d\d\), dense 0\.40 → 0\.[0-3]\d \(spread 0\.\d\d\)").unwrap());
}

#[test]
fn explain_says_why_a_list_did_not_contribute() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let explain = |args: &[&str]| corpus.json(&[&["explain"][..], args, &["--json"]].concat());
    let staging = "runbooks/billing/connection-pool-staging.md#2";
    let filtered = explain(&[
        "HTTP 504",
        "--chunk",
        staging,
        "--filter",
        "environment=production",
    ]);
    let result = &filtered["results"][0];
    assert_eq!(result["chunk_id"], staging);
    assert_eq!(result["fused_rank"], Value::Null);
    assert_eq!(result["rrf_score"], 0.0);
    for part in result["lists"].as_array().unwrap() {
        assert_eq!(part["absent"], "removed by filter environment=production");
    }
    let incident = "incidents/2023/q4/billing-month-end-timeouts.md#1";
    let windowed = explain(&[
        "HTTP 504", "--chunk", incident, "--window", "1", "--mode", "sparse",
    ]);
    let part = &windowed["results"][0]["lists"][0];
    assert_eq!(part["absent"], "outside the window of 1 at rank 2");
    assert_eq!(part["rank"], 2);
    let unmatched = explain(&[
        "INC-2023-Q4-011",
        "--chunk",
        "runbooks/kubernetes/node-drain.md#1",
        "--mode",
        "sparse",
    ]);
    assert_eq!(
        unmatched["results"][0]["lists"][0]["absent"],
        "no query term matched"
    );
    // An id the index does not hold is "nothing found" (exit 1), as from
    // `get`; when its file is indexed, the message names the file's ids.
    corpus
        .memidx()
        .args(["explain", "x", "--chunk", "nope.md#1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "no chunk 'nope.md#1' in the index; chunk ids look like",
        ));
    let file = "incidents/2023/q4/billing-month-end-timeouts.md";
    for command in ["explain", "get"] {
        let id = format!("{file}#0");
        let args = match command {
            "explain" => vec!["explain", "x", "--chunk", id.as_str()],
            _ => vec!["get", id.as_str()],
        };
        corpus.memidx().args(&args).assert().code(1).stderr(format!(
            "memidx: no chunk '{file}#0' in the index; {file} holds chunks #1 to #6\n"
        ));
    }
}

#[test]
fn explain_prints_a_compact_table() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let output = corpus
        .memidx()
        .args(["explain", "ERR_TOKEN_EXPIRED", "-k", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "query \"ERR_TOKEN_EXPIRED\" (relative scores, window 200)"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["#", "list", "rank", "raw", "score", "weight", "w×raw/best"]
    );
    assert!(
        lines[2].starts_with("   1  services/auth-service.md:"),
        "{text}"
    );
    assert_eq!(lines[3].trim(), "auth-service > Error codes");
    assert_eq!(
        lines[4].split_whitespace().collect::<Vec<_>>(),
        [
            "sparse",
            "1",
            "19.6761",
            "0.30",
            "0.300000",
            "[matched",
            "err_token_expired,",
            "err,",
            "token,",
            "expired",
            "(as",
            "expir)]"
        ]
    );
    assert_eq!(
        lines[5].split_whitespace().collect::<Vec<_>>(),
        ["dense", "1", "0.8783", "0.40", "0.400000"]
    );
    assert_eq!(
        lines[6].split_whitespace().collect::<Vec<_>>(),
        ["file", "1", "11.8576", "0.30", "0.300000"]
    );
    assert_eq!(
        lines[7].split_whitespace().collect::<Vec<_>>(),
        ["sum", "1.000000"]
    );
    assert!(
        lines[8].starts_with(
            "lists: sparse 17 of 17 matched (0 filtered out, best 19.6761, 21 of 21 postings scored) in "
        ),
        "{text}"
    );
    assert!(
        lines[8].contains("; file 6 of 6 files matched (0 filtered out, best 11.8576"),
        "{text}"
    );
    // RRF, asked for, prints its own arithmetic.
    let output = corpus
        .memidx()
        .args(["explain", "ERR_TOKEN_EXPIRED", "-k", "1", "--fusion", "rrf"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "query \"ERR_TOKEN_EXPIRED\" (rrf, k 60, window 200)"
    );
    assert_eq!(
        lines[4].split_whitespace().collect::<Vec<_>>(),
        [
            "sparse",
            "1",
            "19.6761",
            "0.60",
            "0.009836",
            "[matched",
            "err_token_expired,",
            "err,",
            "token,",
            "expired",
            "(as",
            "expir)]"
        ]
    );
    assert!(
        lines[7].starts_with(
            "lists: sparse 17 of 17 matched (0 filtered out, 21 of 21 postings scored) in "
        ),
        "{text}"
    );
}

#[test]
fn an_index_embedded_by_another_model_is_refused_for_dense_search() {
    let corpus = Corpus::fixtures();
    corpus.index();
    // Written through the manifest's own writer: a hand edit would fail
    // meta.json's checksum and be reported as damage.
    let index_dir = corpus.path().join(".memidx");
    let mut meta = memidx::index::manifest::Manifest::read(&index_dir)
        .unwrap()
        .unwrap();
    meta.embedder.id = "some-other-model".into();
    meta.embedder.fingerprint = "xxh3:0000000000000000".into();
    meta.write(&index_dir).unwrap();
    corpus
        .memidx()
        .args(["search", "connection pool"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("embedded with 'some-other-model'")
                .and(predicate::str::contains("memidx index --full")),
        );
    // The sparse list needs no embedder, so it still answers.
    corpus.search_json("connection pool", &["--mode", "sparse"]);
    // Re-indexing re-embeds every chunk with the bundled model.
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(
        summary.contains(&format!("(embedding {FIXTURE_CHUNKS} chunks:")),
        "{summary}"
    );
    corpus.search_json("connection pool", &[]);
}

#[test]
fn the_dense_query_moves_toward_its_best_chunks_which_explain_names() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let query = "the writer node died, elect a follower";
    let feedback_of = |args: &[&str]| -> Vec<String> {
        let args = [
            &["explain", query, "--mode", "dense", "-k", "3", "--json"][..],
            args,
        ]
        .concat();
        corpus.json(&args)["lists"][0]["feedback"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect()
    };
    let dense_top3 = |args: &[&str]| {
        let args = [&["--mode", "dense", "-k", "3"][..], args].concat();
        chunk_ids(&corpus.search_json(query, &args))
    };
    // The feedback chunks are the best three of the plain query ...
    let plain = dense_top3(&["--dense-feedback", "0"]);
    assert_eq!(
        plain,
        [
            "runbooks/kubernetes/node-drain.md#1",
            "runbooks/databases/postgres-replication.md#6",
            PROMOTION_CHUNK,
        ]
    );
    assert_eq!(feedback_of(&[]), plain);
    // ... and the moved query ranks them anew: two of the three are the
    // replication runbook's, so the promotion chunk, nearest their
    // centroid, rises from third to first.
    assert_eq!(
        dense_top3(&[]),
        [
            PROMOTION_CHUNK,
            "runbooks/databases/postgres-replication.md#6",
            "runbooks/kubernetes/node-drain.md#1",
        ]
    );
    assert_eq!(feedback_of(&["--dense-feedback", "1"]), plain[..1]);
    assert!(feedback_of(&["--dense-feedback", "0"]).is_empty());
    // Filters apply before feedback: only allowed chunks move the query.
    let filtered = feedback_of(&["--filter", "dir=runbooks/databases"]);
    assert_eq!(
        filtered,
        [
            "runbooks/databases/postgres-replication.md#6",
            PROMOTION_CHUNK,
            "runbooks/databases/postgres-replication.md#5",
        ]
    );
    // A request's hybrid_params set it too, and the human explain names them:
    // in a hybrid search, the fused first pass's best (here led by the
    // sparse list's "node" matches), not the dense list's own.
    let request =
        format!(r#"{{"search_text": "{query}", "hybrid_params": {{"dense_feedback": 0}}}}"#);
    let output = corpus
        .memidx()
        .args(["search", "--request", "-", "--mode", "dense", "-k", "3"])
        .write_stdin(request)
        .output()
        .unwrap();
    let answered: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(chunk_ids(&answered), plain);
    corpus
        .memidx()
        .args(["explain", query, "-k", "1"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "dense query moved toward the first pass's top 3: runbooks/kubernetes/node-drain.md#1, runbooks/kubernetes/node-drain.md#4, runbooks/kubernetes/node-drain.md#3\n",
        ));
    corpus
        .memidx()
        .args(["explain", query, "-k", "1", "--mode", "dense"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(format!(
            "dense query moved toward the first pass's top 3: runbooks/kubernetes/node-drain.md#1, runbooks/databases/postgres-replication.md#6, {PROMOTION_CHUNK}\n"
        )));
}
