//! End-to-end tests of `memidx search` on the fixture corpus: exact ranks,
//! ids and scores, filters, the JSON shapes, determinism and exit codes.

use crate::common;

use common::{Corpus, chunk_ids};
use predicates::prelude::*;
use serde_json::Value;

/// The chunk holding each unique identifier of the fixtures (see fixtures/README.md).
const IDENTIFIER_CHUNKS: [(&str, &str, &str); 7] = [
    (
        "INC-2023-Q4-011",
        "incidents/2023/q4/billing-month-end-timeouts.md#",
        "Billing API gateway timeouts during month-end invoicing > Summary",
    ),
    (
        "max_connections",
        "runbooks/billing/connection-pool-production.md#",
        "Billing connection pool runbook > Postgres limits > Server-side connection ceiling",
    ),
    (
        "getUserById",
        "notes/auth-slow-login-query.md#",
        "Slow logins after the users table moved to UUID keys > The query behind it",
    ),
    (
        "ERR_TOKEN_EXPIRED",
        "services/auth-service.md#",
        "auth-service > Error codes",
    ),
    (
        "pool_timeout_ms",
        "services/billing-service.md#",
        "billing-service > Configuration",
    ),
    (
        "v2.14.3",
        "notes/payments-gateway-rollback-2024-02.md#",
        "payments-gateway rollback, February 2024 > What shipped",
    ),
    (
        "src/billing/retry.rs",
        "incidents/2023/q4/billing-month-end-timeouts.md#",
        "Billing API gateway timeouts during month-end invoicing > Root cause",
    ),
];

#[test]
fn each_identifier_query_ranks_its_chunk_first() {
    let corpus = Corpus::fixtures();
    corpus.index();
    for (query, id_prefix, heading) in IDENTIFIER_CHUNKS {
        let response = corpus.search_json(query, &[]);
        let top = &response["results"][0];
        assert!(
            top["chunk_id"].as_str().unwrap().starts_with(id_prefix),
            "{query}: top is {}",
            top["chunk_id"]
        );
        assert_eq!(top["heading"], heading, "{query}");
        assert!(top["text"].as_str().unwrap().contains(query), "{query}");
        assert_eq!(top["ranks"]["sparse"]["rank"], 1, "{query}");
    }
}

#[test]
fn sparse_scores_are_relative_to_the_best_or_rrf_of_the_rank() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let query = "connection pool exhausted";
    // The JSON carries a list's raw score as an f32.
    let raw = |r: &Value| f64::from(r["ranks"]["sparse"]["score"].as_f64().unwrap() as f32);
    let relative = corpus.search_json(query, &["-k", "5", "--mode", "sparse"]);
    let results = relative["results"].as_array().unwrap();
    let best = raw(&results[0]);
    for r in results {
        // The bundled model's defaults weigh the sparse list 0.6.
        assert_eq!(r["rrf_score"].as_f64().unwrap(), 0.6 * raw(r) / best);
    }
    assert_eq!(results[0]["rrf_score"].as_f64().unwrap(), 0.6);
    let response = corpus.search_json(query, &["-k", "5", "--mode", "sparse", "--fusion", "rrf"]);
    let results = response["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(
            r["rrf_score"].as_f64().unwrap(),
            0.6 / (60.0 + (i + 1) as f64)
        );
        assert_eq!(r["ranks"]["sparse"]["rank"], i + 1);
    }
    let bm25: Vec<f64> = results
        .iter()
        .map(|r| r["ranks"]["sparse"]["score"].as_f64().unwrap())
        .collect();
    assert!(bm25.windows(2).all(|w| w[0] >= w[1]), "{bm25:?}");
    let weighted = corpus.search_json(
        "connection pool exhausted",
        &[
            "--mode",
            "sparse",
            "-k",
            "1",
            "--sparse-weight",
            "2",
            "--rrf-k",
            "1",
        ],
    );
    assert_eq!(weighted["results"][0]["rrf_score"].as_f64().unwrap(), 1.0);
}

#[test]
fn filter_removes_the_other_environment_before_top_k() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let staging = "runbooks/billing/connection-pool-staging.md#";
    let production = "incidents/2023/q4/billing-month-end-timeouts.md#";
    let all = chunk_ids(&corpus.search_json("HTTP 504", &["-k", "4"]));
    assert!(all.iter().any(|id| id.starts_with(staging)), "{all:?}");
    assert!(all.iter().any(|id| id.starts_with(production)), "{all:?}");

    let filtered = corpus.search_json(
        "HTTP 504",
        &["--filter", "environment=production", "-k", "50"],
    );
    // The staging runbook led the sparse list; filtered out before ranking,
    // it leaves the production incident first there.
    let incident = filtered["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["chunk_id"].as_str().unwrap().starts_with(production))
        .expect("the production incident is found");
    assert_eq!(incident["ranks"]["sparse"]["rank"], 1, "{incident}");
    for result in filtered["results"].as_array().unwrap() {
        let envs = result["metadata"]["environment"].as_array().unwrap();
        assert!(envs.contains(&Value::from("production")), "{result}");
    }
    // With a window of one, the filter must apply before the window is cut.
    let staging_only = corpus.search_json(
        "HTTP 504",
        &[
            "--filter",
            "environment=staging",
            "--window",
            "1",
            "--mode",
            "sparse",
        ],
    );
    assert_eq!(chunk_ids(&staging_only).len(), 1);
    assert!(chunk_ids(&staging_only)[0].starts_with(staging));
}

#[test]
fn json_response_has_the_design_shape() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let response = corpus.search_json("INC-2023-Q4-011", &["-k", "3"]);
    let object = response.as_object().unwrap();
    let keys: Vec<_> = object.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "omitted",
            "query_id",
            "results",
            "strong_coverage",
            "strong_match",
            "total_retrieved",
            "truncated"
        ]
    ); // serde_json sorts keys
    assert_eq!(response["query_id"], Value::Null);
    let results = response["results"].as_array().unwrap();
    assert_eq!(response["total_retrieved"], results.len());
    let first = results[0].as_object().unwrap();
    let keys: Vec<_> = first.keys().map(String::as_str).collect();
    let expected = [
        "chunk_id",
        "coverage",
        "date",
        "heading",
        "lines",
        "metadata",
        "more_in_file",
        "ranks",
        "rrf_score",
        "source",
        "text",
    ];
    assert_eq!(keys, expected);
    let lines = first["lines"].as_array().unwrap();
    assert!(lines[0].as_u64().unwrap() <= lines[1].as_u64().unwrap());
    assert_eq!(first["metadata"]["service"][0], "billing-service");
    assert_eq!(first["metadata"]["path"][0], first["source"]);
    assert!(
        first["chunk_id"]
            .as_str()
            .unwrap()
            .starts_with(first["source"].as_str().unwrap())
    );
}

#[test]
fn request_file_and_stdin_answer_in_the_response_shape() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let request = r#"{"query_id": "mem_req_99214", "search_text": "HTTP 504 gateway timeout postgres connection pool",
        "top_k": 5, "hybrid_params": {"sparse_weight": 1.0, "rrf_k_constant": 60},
        "metadata_filter": {"environment": "production", "service": "billing-service"}}"#;
    std::fs::write(corpus.path().join("req.json"), request).unwrap();
    let from_file = corpus
        .memidx()
        .args(["search", "--request", "req.json"])
        .output()
        .unwrap();
    assert_eq!(from_file.status.code(), Some(0));
    let from_stdin = corpus
        .memidx()
        .args(["search", "--request", "-"])
        .write_stdin(request)
        .output()
        .unwrap();
    assert_eq!(from_file.stdout, from_stdin.stdout);
    let response: Value = serde_json::from_slice(&from_file.stdout).unwrap();
    assert_eq!(response["query_id"], "mem_req_99214");
    let results = response["results"].as_array().unwrap();
    assert!(!results.is_empty() && results.len() <= 5);
    for r in results {
        assert!(
            r["metadata"]["environment"]
                .as_array()
                .unwrap()
                .contains(&Value::from("production"))
        );
        assert!(
            r["metadata"]["service"]
                .as_array()
                .unwrap()
                .contains(&Value::from("billing-service"))
        );
    }
}

#[test]
fn bad_requests_name_the_field() {
    let corpus = Corpus::fixtures();
    corpus.index();
    for (request, field) in [
        (r#"{"search_text": "x", "top_k": "five"}"#, "top_k"),
        (r#"{"search_text": "x", "colour": 1}"#, "colour"),
        (r#"{"top_k": 3}"#, "search_text"),
        (
            r#"{"search_text": "x", "hybrid_params": {"rrf_k_constant": -5}}"#,
            "k must be",
        ),
    ] {
        corpus
            .memidx()
            .args(["search", "--request", "-"])
            .write_stdin(request)
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("memidx: ").and(predicate::str::contains(field)));
    }
}

#[test]
fn output_is_deterministic() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let run = || {
        corpus
            .memidx()
            .args(["search", "billing connection pool", "--json", "-k", "20"])
            .output()
            .unwrap()
            .stdout
    };
    let first = run();
    assert_eq!(first, run());
    // A rebuilt index answers byte for byte the same.
    corpus
        .memidx()
        .args(["index", ".", "--full", "--quiet"])
        .assert()
        .success();
    assert_eq!(first, run());
}

#[test]
fn human_output_shows_rank_score_location_and_heading() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let output = corpus
        .memidx()
        .args(["search", "ERR_TOKEN_EXPIRED", "-k", "1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let first_line = text.lines().next().unwrap();
    assert!(
        first_line.starts_with("1. 1.00000  services/auth-service.md:"),
        "{text}"
    );
    // First in every list: 0.3 × best / best + 0.4 × best / best + 0.3 ×
    // best / best (bundled weights).
    assert!(
        first_line.ends_with("[dense #1, file #1, sparse #1]"),
        "{text}"
    );
    assert_eq!(
        text.lines().nth(1).unwrap().trim(),
        "auth-service > Error codes"
    );
}

#[test]
fn hidden_folders_and_non_markdown_are_not_indexed() {
    let corpus = Corpus::fixtures();
    corpus.index();
    for word in ["hiddenzebra", "txtonlyword"] {
        corpus
            .memidx()
            .args(["search", word, "--mode", "sparse"])
            .assert()
            .code(1)
            .stdout("");
    }
}

#[test]
fn exit_codes_follow_grep() {
    let corpus = Corpus::fixtures();
    corpus.index();
    corpus
        .memidx()
        .args(["search", "max_connections"])
        .assert()
        .code(0);
    corpus
        .memidx()
        .args(["search", "zzqqxxnotaword", "--mode", "sparse"])
        .assert()
        .code(1)
        .stdout("");
    corpus
        .memidx()
        .args(["search", ""])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the query is empty"));
    corpus
        .memidx()
        .args(["search", "?! ..."])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no letters or digits"));
    corpus
        .memidx()
        .args(["search", "x", "--filter", "environment"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("KEY=VALUE"));
    corpus
        .memidx()
        .args(["search", "x", "--filter", "enviroment=production"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'enviroment'"));
    corpus
        .memidx()
        .args(["search", "x", "-k", "0"])
        .assert()
        .code(2);
    corpus
        .memidx()
        .args(["search", "x", "--dense-feedback", "101"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "dense feedback must be between 0 and 100 chunks, got 101",
        ));
    corpus
        .memidx()
        .args(["search", "x", "--bogus"])
        .assert()
        .code(2);
}

#[test]
fn index_is_found_from_subfolders_or_named() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let mut cmd = corpus.memidx();
    cmd.current_dir(corpus.path().join("runbooks/billing"))
        .args(["search", "getUserById"])
        .assert()
        .code(0);
    let elsewhere = Corpus::empty();
    elsewhere
        .memidx()
        .args(["search", "getUserById"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("no index found")
                .and(predicate::str::contains("memidx index")),
        );
    elsewhere
        .memidx()
        .args(["search", "getUserById", "--index"])
        .arg(corpus.path())
        .assert()
        .code(0);
    elsewhere
        .memidx()
        .env("MEMIDX_INDEX", corpus.path().join(".memidx"))
        .args(["search", "getUserById"])
        .assert()
        .code(0);
}

/// Runs `memidx ARGS` with `stdin`, asserts exit 2, returns stderr.
fn refused(corpus: &Corpus, args: &[&str], stdin: &str) -> String {
    let output = corpus
        .memidx()
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{args:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn a_filter_no_file_can_pass_names_the_key_s_values_or_the_nearest_key() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let refused = |filter: &str| refused(&corpus, &["search", "pool", "--filter", filter], "");
    assert_eq!(
        refused("environment=Production"),
        "memidx: no indexed file has environment=Production; its values: production (13 files), staging (9 files); values are compared exactly, case included\n"
    );
    assert_eq!(
        refused("enviroment=production"),
        "memidx: no indexed file has the metadata key 'enviroment'; did you mean 'environment'?\n"
    );
    assert!(refused("zzzz=1").starts_with(
        "memidx: no indexed file has the metadata key 'zzzz'; the keys are date, dir, environment,"
    ));
    // One known value among the asked ones is enough; no match of two
    // known conditions together is a plain empty result.
    corpus
        .memidx()
        .args([
            "search",
            "pool",
            "--filter",
            "environment=prod",
            "--filter",
            "environment=production",
            "-k",
            "1",
        ])
        .assert()
        .code(0);
    corpus
        .memidx()
        .args([
            "search",
            "pool",
            "--filter",
            "severity=sev1",
            "--filter",
            "service=auth-service",
        ])
        .assert()
        .code(1);
}

#[test]
fn errors_name_the_flag_or_field_the_user_wrote() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let refused = |args: &[&str], stdin: &str| refused(&corpus, args, stdin);
    assert_eq!(
        refused(&["search", "pool", "-k", "0"], ""),
        "memidx: -k/--top-k must be between 1 and 10000, got 0\n"
    );
    assert_eq!(
        refused(
            &["search", "--request", "-"],
            r#"{"search_text": "pool", "top_k": 0}"#
        ),
        "memidx: the request's top_k must be between 1 and 10000, got 0\n"
    );
    assert_eq!(
        refused(&["search", "--request", "-"], "search_text: pool"),
        "memidx: the request is not valid JSON: expected value at line 1 column 1\n"
    );
    let file = corpus.path().join("index.md");
    assert_eq!(
        refused(&["index", file.to_str().unwrap()], ""),
        format!(
            "memidx: '{}' is a file, not a folder; give the folder of markdown to index\n",
            file.display()
        )
    );
}

#[test]
fn a_search_of_an_empty_index_says_so() {
    let corpus = Corpus::empty();
    corpus.index();
    let output = corpus
        .memidx()
        .args(["search", "anything"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("memidx: the index holds no chunks (")
            && stderr.ends_with(" had no markdown when indexed)\n"),
        "{stderr}"
    );
}

/// A one-line log of about 1.5 MB that mentions `ERR-4471` all through it,
/// beside a note about the error: the log is cut into many chunks that all
/// match.
fn corpus_with_a_huge_log_line() -> Corpus {
    let corpus = Corpus::fixtures();
    let entry = "2024-03-02T01:12:09Z worker-7 retry queue=payments code=ERR-4471 \
                 upstream closed the connection before the response; ";
    std::fs::write(
        corpus.path().join("huge-line.md"),
        format!("# Worker log\n\n{}\n", entry.repeat(12_000)),
    )
    .unwrap();
    std::fs::create_dir(corpus.path().join("errors")).unwrap();
    std::fs::write(
        corpus.path().join("errors/ERR-4471.md"),
        "# ERR-4471\n\nERR-4471 means the payments upstream closed the connection \
         before answering. Retry with backoff; page payments on-call after three.\n",
    )
    .unwrap();
    // Indexing names the line, once.
    let stderr = String::from_utf8(corpus.index().stderr).unwrap();
    assert!(
        stderr.contains("memidx: warning: huge-line.md: line 3 alone is cut into ")
            && stderr.contains(
                " chunks (a log or data pasted as one line?); a search shows at most a few of them"
            ),
        "{stderr}"
    );
    corpus
}

#[test]
fn a_file_fills_at_most_three_places_and_says_how_many_more_matched() {
    let corpus = corpus_with_a_huge_log_line();
    let from_log = |response: &Value| -> Vec<u64> {
        response["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["source"] == "huge-line.md")
            .map(|r| r["more_in_file"].as_u64().unwrap())
            .collect()
    };
    let folded = corpus.search_json("ERR-4471", &["-k", "10"]);
    let sources: Vec<&str> = folded["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["source"].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"errors/ERR-4471.md"), "{sources:?}");
    // Three pieces of the log, the last counting the pieces passed over.
    let log = from_log(&folded);
    assert_eq!(log.len(), 3, "{sources:?}");
    assert_eq!(log[..2], [0, 0]);
    assert!(log[2] >= 7, "{log:?}");
    // Every other result counts nothing: no other file had more than three.
    let counted: u64 = folded["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["more_in_file"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, log[2]);
    // --per-file 0 shows the fused order as it is: the log fills the page.
    let unfolded = corpus.search_json("ERR-4471", &["-k", "10", "--per-file", "0"]);
    assert_eq!(from_log(&unfolded), [0; 10]);
    // --per-file 1 and the request's per_file set other limits.
    let one = corpus.search_json("ERR-4471", &["-k", "10", "--per-file", "1"]);
    assert_eq!(from_log(&one).len(), 1);
    let output = corpus
        .memidx()
        .args(["search", "--request", "-"])
        .write_stdin(r#"{"search_text": "ERR-4471", "top_k": 10, "per_file": 2}"#)
        .output()
        .unwrap();
    let requested: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(from_log(&requested).len(), 2);
    // A person reads the count under the log's last result.
    corpus
        .memidx()
        .args(["search", "ERR-4471", "--color", "never"])
        .assert()
        .code(0)
        .stdout(predicate::function(|out: &str| {
            out.matches("huge-line.md:3-3").count() == 3
                && out.contains(&format!(
                    "[{} more matches in this file; --per-file 0 shows them]",
                    log[2]
                ))
        }));
    // explain shows the same results, with their fused ranks and the count.
    let explained = corpus.json(&["explain", "ERR-4471", "--json"]);
    let explained_ids: Vec<&str> = explained["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["chunk_id"].as_str().unwrap())
        .collect();
    assert_eq!(explained_ids, chunk_ids(&folded));
    let last_log = explained["results"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|r| r["source"] == "huge-line.md")
        .unwrap();
    assert_eq!(last_log["more_in_file"], log[2]);
}

#[test]
fn a_missing_index_given_by_memidx_index_names_the_variable() {
    let corpus = Corpus::fixtures();
    let missing = corpus.path().join("nowhere");
    let mut search = corpus.memidx();
    search
        .args(["search", "pool"])
        .env("MEMIDX_INDEX", &missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "no index at {} (from MEMIDX_INDEX; unset it to search the nearest .memidx)",
            missing.display()
        )));
    corpus
        .memidx()
        .args(["search", "pool", "--index"])
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("MEMIDX_INDEX").not());
}

#[test]
fn results_no_word_of_the_query_matched_are_said_to_be_ranked_by_meaning_alone() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let note = "[no result holds a word of the query: these are ranked by meaning alone]";
    let human = |args: &[&str]| {
        let output = corpus.memidx().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    // "outage" is in no note, but the model knows the word.
    let by_meaning = human(&["search", "outage", "-k", "2", "--color", "never"]);
    assert!(
        by_meaning.starts_with(&format!("{note}\n\n1. ")),
        "{by_meaning}"
    );
    // A filter that leaves no match counts too: the results hold no query word.
    let filtered = human(&[
        "search",
        "ERR_TOKEN_EXPIRED",
        "-k",
        "1",
        "--filter",
        "dir=runbooks/kubernetes",
    ]);
    assert!(filtered.starts_with(note), "{filtered}");
    // A query a chunk holds gets no note, and JSON keeps its shape.
    assert!(!human(&["search", "replication lag", "-k", "1"]).contains(note));
    let json = corpus.search_json("outage", &["-k", "1"]);
    assert!(!json.to_string().contains("meaning alone"), "{json}");
    // The bundled static model has no cosine floor (a random string can
    // hold a word piece that lands nearer than real words the model
    // splits); it has a word floor: how much of a word's weight its first
    // piece carries, which one made-up word in a hundred rises above. A
    // query none of whose words it knows better is noise: no results, exit
    // 1, saying why. Random letters and pronounceable nonsense alike.
    for nonsense in ["xyzzyplugh", "clipum"] {
        let output = corpus.memidx().args(["search", nonsense]).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        assert!(output.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("the dense list's model knows none of the query's words: it reads them in fragments, as it reads made-up words (a word's first piece carries 0."),
            "{stderr}"
        );
    }
    // `explain` says how much of the best-known word its first piece carries.
    let output = corpus
        .memidx()
        .args(["explain", "clipum", "-k", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("dense's model: a query word's first piece carries 0.64 of it, no more than made-up words' 0.65"),
        "{stdout}"
    );
    let explained = corpus.json(&["explain", "xyzzyplugh", "-k", "1", "--json"]);
    assert_eq!(explained["nothing_matched"], true);
    let dense = &explained["lists"][1];
    assert_eq!(
        (dense["confident"].clone(), dense["noise_floor"].clone()),
        (false.into(), Value::Null)
    );
    // A static model has no cosine floor, and the index records none.
    let meta = std::fs::read(corpus.path().join(".memidx/meta.json")).unwrap();
    let meta: Value = serde_json::from_slice(&meta).unwrap();
    assert_eq!(meta["noise_floor"], Value::Null);
    assert!(dense["word_share"].as_f64() <= dense["word_floor"].as_f64());
    // The word floor is the one the index recorded when it was written.
    let recorded = meta["word_floor"].as_f64().expect("a recorded word floor");
    assert_eq!(
        f64::from(recorded as f32),
        dense["word_floor"].as_f64().unwrap()
    );
    // A word the model holds whole, and one it knows as a word and an
    // ending, though no chunk holds either.
    for (known, share) in [("halibut", 1.0), ("halibuts", 0.8)] {
        let explained = corpus.json(&["explain", known, "-k", "1", "--json"]);
        let dense = &explained["lists"][1];
        assert_eq!(explained["lists"][0]["matched"], 0, "{known}");
        assert_eq!(dense["confident"], true, "{known}");
        assert!(
            dense["word_share"].as_f64().unwrap() >= share,
            "{known}: {dense}"
        );
        assert!(dense["word_share"].as_f64() > dense["word_floor"].as_f64());
    }
    // A misspelt word: the sparse list matches nothing but holds a word one
    // typing slip from it, and says so.
    let near_miss = || {
        let explained = corpus.json(&["explain", "rollbakc", "-k", "1", "--json"]);
        explained["lists"][0]["near_miss"].clone()
    };
    assert_eq!(near_miss(), serde_json::json!(["rollbakc", "rollback"]));
    // A word the index holds outside what the search allows vouches too.
    let filtered = corpus.json(&["explain", "replication", "--filter", "dir=notes", "--json"]);
    assert_eq!(
        filtered["lists"][0]["near_miss"],
        serde_json::json!(["replic", "replic"])
    );
    // Once no live chunk holds it, the word counts no more, though its
    // postings stay in the kept segment (dead chunks').
    for file in [
        "services/payments-gateway.md",
        "notes/payments-gateway-rollback-2024-02.md",
        "adr/0008-canary-deploys-with-argo-rollouts.md",
        "index.md",
    ] {
        std::fs::remove_file(corpus.path().join(file)).unwrap();
    }
    corpus.index();
    assert_eq!(near_miss(), Value::Null);
}

#[test]
fn results_that_hold_little_of_the_query_say_they_are_the_best_available() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let coverage = |response: &Value| -> Vec<f64> {
        (response["results"].as_array().unwrap().iter())
            .map(|r| r["coverage"].as_f64().unwrap())
            .collect()
    };
    // Every result holding every query term covers it whole, whatever its
    // fused score.
    let strong = corpus.search_json("replication lag", &["-k", "3"]);
    assert_eq!(strong["strong_match"], true, "{strong}");
    assert_eq!(coverage(&strong)[0], 1.0, "{strong}");
    assert!(
        strong["results"][0]["rrf_score"].as_f64() > strong["results"][1]["rrf_score"].as_f64()
    );
    // Three words no note holds and one it does: the best result holds the
    // one, under 40 % of the query's weight (rare terms weigh most), and the
    // response says the results are the best available, not strong matches,
    // while its fused score stays near the top of the scale.
    let query = "replication giraffe spaceship marmalade";
    let weak = corpus.search_json(query, &["-k", "3"]);
    assert_eq!(weak["strong_match"], false, "{weak}");
    assert!(
        weak["results"][0]["rrf_score"].as_f64() > Some(0.9),
        "{weak}"
    );
    let best = coverage(&weak)[0];
    assert!(0.0 < best && best < 0.4, "{weak}");
    assert_eq!(weak["strong_coverage"], 0.4, "{weak}");
    let output = corpus
        .memidx()
        .args(["search", query, "-k", "1", "--color", "never"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let human = String::from_utf8(output.stdout).unwrap();
    let note = format!(
        "[no result holds 40% of the query's term weight (the best holds {:.0}%): these are the closest chunks, not strong matches]\n\n1. ",
        best * 100.0
    );
    assert!(human.starts_with(&note), "{human}");
    // Results that hold no query word at all say that instead, once.
    let by_meaning = corpus.search_json("outage", &["-k", "2"]);
    assert_eq!(by_meaning["strong_match"], false, "{by_meaning}");
    assert_eq!(coverage(&by_meaning), [0.0, 0.0]);
    let output = corpus
        .memidx()
        .args(["search", "outage", "-k", "1"])
        .output()
        .unwrap();
    let human = String::from_utf8(output.stdout).unwrap();
    assert!(!human.contains("not strong matches"), "{human}");
    // Without a sparse list nothing measures coverage: the fields are absent.
    let dense = corpus.search_json("replication lag", &["-k", "1", "--mode", "dense"]);
    assert!(dense.get("strong_match").is_none(), "{dense}");
    assert!(dense["results"][0].get("coverage").is_none(), "{dense}");
}

#[test]
fn explain_names_the_query_words_a_chunk_holds_as_written_with_their_stems() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let explained = corpus.json(&["explain", "Databases failing over", "-k", "1", "--json"]);
    let reason = explained["results"][0]["lists"][0]["reason"]
        .as_str()
        .unwrap();
    assert_eq!(
        reason, "matched databases (as databas), over",
        "{explained}"
    );
}
