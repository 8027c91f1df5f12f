//! End-to-end tests of the graph layer on `fixtures/graph` (runbooks of
//! several services describing the same event, a database going away, in
//! different words; see `fixtures/README.md`): the graph list lifts the
//! chunks that answer corpus-wide questions, takes part in fusion and
//! `explain`, `memidx graph` shows what it holds, and an index without a
//! graph still searches.

use crate::common;

use common::{Corpus, check_schema_document, chunk_ids, copy_fixture, fixtures_dir};
use predicates::prelude::*;
use serde_json::Value;

/// A copy of `fixtures/graph`, indexed with its graph.
fn graph_corpus() -> Corpus {
    let corpus = Corpus::empty();
    copy_fixture(&fixtures_dir().join("graph"), corpus.path());
    corpus.index_with(&["--graph"]);
    corpus
}

#[test]
fn a_cluster_question_ranks_that_clusters_runbooks_in_the_graph_list() {
    let corpus = graph_corpus();
    let query = "how do the services in cluster b handle a database shutdown";
    let graph = corpus.search_json(query, &["--mode", "graph", "-k", "5"]);
    // Cluster B is billing-api, checkout-web and ledger-worker; chunks of
    // one file tie under the file-level seed `cluster: b` (ordinal order).
    assert_eq!(
        chunk_ids(&graph),
        [
            "services/billing-api-runbook.md#1",
            "services/billing-api-runbook.md#2",
            "services/billing-api-runbook.md#3",
            "services/checkout-web-runbook.md#1",
            "services/checkout-web-runbook.md#2",
        ]
    );
    for result in graph["results"].as_array().unwrap() {
        assert!(result["ranks"].get("sparse").is_none(), "{result}");
        assert!(
            result["ranks"]["graph"]["rank"].as_u64().is_some(),
            "{result}"
        );
        assert!(result["ranks"].get("dense").is_none(), "{result}");
    }
}

#[test]
fn the_graph_list_lifts_the_right_chunks_into_the_fused_top() {
    let corpus = graph_corpus();
    let top5 = |query: &str, args: &[&str]| {
        chunk_ids(&corpus.search_json(query, &[&["-k", "5"][..], args].concat()))
    };
    // Without the graph (its default weight is 0), the failover
    // procedure's page leads and ledger-worker's runbook, which pauses its
    // writers during a failover, is not in the top 5; at graph weight 1 the
    // runbooks of the services that pause their writers lead,
    // ledger-worker's 5th.
    let query = "which services pause their writers during a postgres failover";
    let without = top5(query, &[]);
    let with = top5(query, &["--graph-weight", "1"]);
    assert_eq!(
        without,
        [
            "platform/postgres-failover.md#1",
            "platform/postgres-failover.md#2",
            "services/billing-api-runbook.md#1",
            "services/billing-api-runbook.md#2",
            "services/checkout-web-runbook.md#1",
        ]
    );
    assert_eq!(
        with,
        [
            "services/billing-api-runbook.md#1",
            "platform/postgres-failover.md#1",
            "services/checkout-web-runbook.md#1",
            "platform/postgres-failover.md#2",
            "services/ledger-worker-runbook.md#1",
        ]
    );
    // A misspelled question: no term matches in the sparse list, the dense
    // list alone ranks the failover procedure 5th (7th without its query
    // feedback), and the graph's fuzzy match lifts it to 3rd.
    let failover = "platform/postgres-failover.md#1".to_string();
    let without = top5("postgress failovr", &[]);
    let with = top5("postgress failovr", &["--mode", "hybrid,graph"]);
    assert_eq!(without[4], failover, "{without:?}");
    assert_eq!(with[2], failover, "{with:?}");
    let no_feedback = top5("postgress failovr", &["--dense-feedback", "0"]);
    assert!(!no_feedback.contains(&failover), "{no_feedback:?}");
    assert!(!with.contains(&"oncall/escalation-policy.md#1".to_string()));
}

#[test]
fn explain_gives_the_graph_lists_reasons_and_absences() {
    let corpus = graph_corpus();
    let report = corpus.json(&[
        "explain",
        "patroni leader switchover",
        "--mode",
        "sparse,graph",
        "--json",
        "-k",
        "8",
    ]);
    let lists: Vec<&str> = report["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(lists, ["sparse", "graph"]);
    let results = report["results"].as_array().unwrap();
    let ledger = results
        .iter()
        .find(|r| r["chunk_id"] == "services/ledger-worker-runbook.md#1")
        .expect("ledger-worker's runbook is a result");
    let graph = &ledger["lists"][1];
    assert_eq!(graph["rank"], 1);
    assert!(
        graph["reason"].as_str().unwrap().contains("name 'patroni'"),
        "{graph}"
    );
    let contributions: f64 = ledger["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["contribution"].as_f64().unwrap())
        .sum();
    assert_eq!(contributions, ledger["rrf_score"].as_f64().unwrap());
    // `pg_ctl` seeds the graph list; the notifications runbook only shares
    // the word "primary", which the sparse list matches.
    let report = corpus.json(&[
        "explain",
        "pg_ctl stop on the primary",
        "--mode",
        "sparse,graph",
        "--json",
        "--chunk",
        "services/notifications-runbook.md#1",
    ]);
    let parts = &report["results"][0]["lists"];
    assert_eq!(parts[0]["rank"], 6);
    assert_eq!(parts[1]["rank"], Value::Null);
    assert_eq!(
        parts[1]["absent"],
        "no query entity, nor a central entity of their communities, is in it"
    );
    corpus
        .memidx()
        .args(["explain", "patroni leader switchover", "--mode", "graph"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("[name 'patroni' (terms 1.00"));
}

const GRAPH_SCHEMA: &str = include_str!("../../schemas/graph-report.schema.json");

#[test]
fn the_graph_command_shows_entities_communities_and_neighbors() {
    let schema: Value = serde_json::from_str(GRAPH_SCHEMA).unwrap();
    check_schema_document("graph-report.schema.json", &schema, 29);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let corpus = graph_corpus();
    let entities = corpus.json(&["graph", "entities", "--kind", "metadata", "--json"]);
    let names: Vec<&str> = entities["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"cluster: b"), "{names:?}");
    let communities = corpus.json(&["graph", "communities", "--json", "-n", "3"]);
    assert_eq!(communities["summary"], "extractive");
    assert_eq!(communities["level"], 0);
    let first = &communities["communities"][0];
    assert!(!first["central"].as_array().unwrap().is_empty(), "{first}");
    assert!(!first["chunks"].as_array().unwrap().is_empty(), "{first}");
    corpus
        .memidx()
        .args(["graph", "communities", "-n", "1"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("extractive summary:"));
    let neighbors = corpus.json(&["graph", "neighbors", "pg_ctl", "--json"]);
    for report in [&entities, &communities, &neighbors] {
        let errors = validator.iter_errors(report).into_errors();
        assert!(errors.is_empty(), "{errors}\n{report:#}");
    }
    let block = &neighbors["matches"][0];
    assert_eq!(block["entity"]["kind"], "identifier");
    assert!(
        !block["neighbors"].as_array().unwrap().is_empty(),
        "{block}"
    );
    corpus
        .memidx()
        .args(["graph", "neighbors", "no-such-entity"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no entity named 'no-such-entity'"));
}

#[test]
fn an_index_without_a_graph_searches_without_it_and_says_how_to_add_one() {
    let corpus = Corpus::empty();
    copy_fixture(&fixtures_dir().join("graph"), corpus.path());
    corpus.index();
    assert!(!graph_file_exists(&corpus));
    let hybrid = corpus.search_json("patroni leader switchover", &["-k", "3"]);
    let ranks = hybrid["results"][0]["ranks"].as_object().unwrap();
    assert_eq!(
        ranks.keys().collect::<Vec<_>>(),
        ["dense", "file", "sparse"]
    );
    for args in [
        &["search", "patroni", "--mode", "graph"][..],
        &["graph", "entities"],
    ] {
        corpus
            .memidx()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "this index has no graph; build one with 'memidx index --graph",
            ));
    }
    // --graph adds it; later runs keep it; --no-graph drops it.
    corpus.index_with(&["--graph"]);
    let graph = corpus.search_json("patroni leader switchover", &["--mode", "graph", "-k", "1"]);
    assert_eq!(chunk_ids(&graph), ["services/ledger-worker-runbook.md#1"]);
    std::fs::write(corpus.path().join("new.md"), "# New\n\nA new note.\n").unwrap();
    corpus.index();
    assert!(graph_file_exists(&corpus));
    corpus.index_with(&["--no-graph"]);
    assert!(!graph_file_exists(&corpus));
}

/// True when the live generation holds a graph.
fn graph_file_exists(corpus: &Corpus) -> bool {
    let index = corpus.path().join(".memidx");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(index.join("meta.json")).unwrap()).unwrap();
    let generation = manifest["generation"].as_u64().unwrap();
    let exists = index.join(format!("gen-{generation}/graph.bin")).exists();
    assert_eq!(exists, !manifest["graph"].is_null());
    exists
}
