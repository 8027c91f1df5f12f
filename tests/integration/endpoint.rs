//! An OpenAI-compatible embedding server as the dense list's model
//! (`memidx index --embed-url`), against the real server `.ci/run` starts
//! (infinity serving all-MiniLM-L6-v2, `MEMIDX_TEST_EMBED_URL`): an index
//! through it ranks as the same model loaded with `--model`, and each
//! fault — unreachable, 401, 429, 5xx, 413, a stall, a malformed body, a
//! wrong dimension, a model swapped mid-run — gets its retry or its clear
//! error, with the previous index still served. Faults come from
//! [`FaultProxy`] in front of the real server.

use std::time::{Duration, Instant};

use crate::common::fault_proxy::{FaultKind, FaultProxy};
use crate::common::{self, Corpus};
use serde_json::Value;

/// The real server's URL and served model name, or `None` (the skip
/// said) without them.
fn server() -> Option<(String, String)> {
    let url = std::env::var("MEMIDX_TEST_EMBED_URL").ok();
    let model = std::env::var("MEMIDX_TEST_EMBED_MODEL").ok();
    match url.zip(model) {
        Some(server) => Some(server),
        None => {
            common::skip_unless_ci(
                "set MEMIDX_TEST_EMBED_URL and MEMIDX_TEST_EMBED_MODEL to an OpenAI-compatible \
                 embedding server serving all-MiniLM-L6-v2 (.ci/run starts infinity)",
            );
            None
        }
    }
}

/// A small folder of notes: few chunks, so that each run is quick.
fn small_corpus() -> Corpus {
    let corpus = Corpus::empty();
    let notes = [
        (
            "payments.md",
            "# Payments\n\nRestart the payments service with `systemctl restart payments` after an outage.\n\n## Rollback\n\nRoll back with argo rollouts undo.\n",
        ),
        (
            "tokens.md",
            "# Access tokens\n\nShort-lived access tokens expire after fifteen minutes; rotate the signing keys monthly.\n",
        ),
        (
            "incident.md",
            "# INC-2023-Q4-011\n\nThe webhook backlog grew when the queue consumer stalled.\n",
        ),
    ];
    for (name, text) in notes {
        std::fs::write(corpus.path().join(name), text).unwrap();
    }
    corpus
}

/// [`small_corpus`] indexed through a [`FaultProxy`] in front of the real
/// server, with the server's URL; `None` without a server.
fn indexed_through_a_proxy() -> Option<(FaultProxy, Corpus, String)> {
    let (url, model) = server()?;
    let proxy = FaultProxy::start(&url);
    let corpus = small_corpus();
    assert_succeeded(&index_through(&corpus, &proxy.url(), &model));
    Some((proxy, corpus, url))
}

/// Fails unless `output` is a success's.
fn assert_succeeded(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `memidx index .` through `url`, as given; its summary on stdout.
fn index_through(corpus: &Corpus, url: &str, model: &str) -> std::process::Output {
    corpus
        .memidx()
        .args(["index", ".", "--embed-url", url, "--embed-model", model])
        .env("MEMIDX_EMBED_TIMEOUT", "60")
        .output()
        .unwrap()
}

/// Fails unless `output` failed with exit code 2 and a message holding
/// every one of `said`.
fn assert_failed_saying(output: &std::process::Output, said: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for part in said {
        assert!(stderr.contains(part), "{part:?} not in: {stderr}");
    }
}

/// The chunk ids of a dense search's answer.
fn dense_ids(corpus: &Corpus, query: &str) -> Vec<String> {
    common::chunk_ids(
        &corpus.search_json(query, &["--mode", "dense", "--keep-all", "--top-k", "10"]),
    )
}

/// The generation `corpus`'s index serves.
fn generation(corpus: &Corpus) -> u64 {
    corpus.json(&["status", "--json"])["generation"]
        .as_u64()
        .unwrap()
}

#[test]
fn an_index_through_the_server_ranks_as_the_model_loaded_locally() {
    let (Some((url, model)), Some(minilm)) = (server(), common::minilm_dir()) else {
        return;
    };
    let remote = Corpus::fixtures();
    let output = index_through(&remote, &url, &model);
    assert_succeeded(&output);
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(
        summary.contains(&format!("(embedding {} chunks: ", common::FIXTURE_CHUNKS)),
        "{summary}"
    );
    let local = Corpus::fixtures();
    local.index_with(&["--model", minilm.to_str().unwrap()]);

    let status = remote.json(&["status", "--json"]);
    assert_eq!(status["embedder"]["dim"], 384);
    assert_eq!(status["embedder"]["id"], model.as_str());
    assert_eq!(status["embedder_url"], url.as_str());
    let status_schema = common::validator(include_str!("../../schemas/status-report.schema.json"));
    assert!(status_schema.is_valid(&status), "{status}");
    assert!(
        local
            .json(&["status", "--json"])
            .get("embedder_url")
            .is_none()
    );
    let human = remote.memidx().arg("status").output().unwrap();
    let model_line = format!(" at {url}\n");
    assert!(String::from_utf8_lossy(&human.stdout).contains(&model_line));
    assert!(
        status["embedder"]["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("endpoint:")
    );
    // A transformer's defaults, as for the folder.
    assert_eq!(
        status["fusion"],
        local.json(&["status", "--json"])["fusion"]
    );

    let queries: Vec<String> =
        std::fs::read_to_string(common::fixtures_dir().join("eval/queries.jsonl"))
            .unwrap()
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .chain(
                [
                    "restart the payments service",
                    "INC-2023-Q4-011",
                    "rotate the signing keys",
                ]
                .map(String::from),
            )
            .collect();
    for query in &queries {
        assert_eq!(
            dense_ids(&remote, query),
            dense_ids(&local, query),
            "{query}"
        );
        let hybrid =
            |corpus: &Corpus| common::chunk_ids(&corpus.search_json(query, &["--top-k", "10"]));
        assert_eq!(hybrid(&remote), hybrid(&local), "{query}");
    }

    // explain shows the query's time at the endpoint, within its embedding,
    // in a report its schema accepts.
    let explained = remote.json(&["explain", "restart the payments service", "--json"]);
    let dense = explained["lists"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "dense")
        .unwrap();
    let (embed, network) = (
        dense["embed_ms"].as_f64().unwrap(),
        dense["network_ms"].as_f64().unwrap(),
    );
    assert!(
        network > 0.0 && network <= embed && embed <= dense["prepare_ms"].as_f64().unwrap(),
        "{dense}"
    );
    let schema = common::validator(include_str!("../../schemas/explain-response.schema.json"));
    assert!(schema.is_valid(&explained), "{explained}");
    let local_explained = local.json(&["explain", "restart the payments service", "--json"]);
    let local_dense = &local_explained["lists"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "dense")
        .unwrap();
    assert!(local_dense["embed_ms"].is_number() && local_dense.get("network_ms").is_none());
}

#[test]
fn a_one_file_change_embeds_only_its_chunks_and_the_key_is_never_recorded() {
    let Some((url, model)) = server() else {
        return;
    };
    let corpus = small_corpus();
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("key");
    std::fs::write(&key_file, "sk-never-recorded\n").unwrap();
    let output = corpus
        .memidx()
        .args([
            "index",
            ".",
            "--embed-url",
            &url,
            "--embed-model",
            &model,
            "--embed-key-file",
        ])
        .arg(&key_file)
        .output()
        .unwrap();
    assert_succeeded(&output);
    let manifest = std::fs::read_to_string(corpus.path().join(".memidx/meta.json")).unwrap();
    assert!(manifest.contains("\"key_file\""));
    for file in walkdir::WalkDir::new(corpus.path().join(".memidx")) {
        let file = file.unwrap();
        if file.file_type().is_file() {
            let bytes = std::fs::read(file.path()).unwrap();
            let key = b"sk-never-recorded";
            assert!(
                !bytes.windows(key.len()).any(|w| w == key),
                "{}",
                file.path().display()
            );
        }
    }

    std::fs::write(
        corpus.path().join("tokens.md"),
        "# Access tokens\n\nTokens now expire after ten minutes.\n",
    )
    .unwrap();
    // A plain run keeps the endpoint (and its key file).
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    let summary = String::from_utf8_lossy(&output.stdout);
    assert_succeeded(&output);
    assert!(summary.contains("(embedding 1 chunk: "), "{summary}");
    let ids = dense_ids(&corpus, "when do tokens expire");
    assert_eq!(
        ids.first().map(String::as_str),
        Some("tokens.md#1"),
        "{ids:?}"
    );

    // A search reads the key file the index recorded.
    std::fs::remove_file(&key_file).unwrap();
    let search = corpus
        .memidx()
        .args(["search", "tokens", "--mode", "dense"])
        .output()
        .unwrap();
    assert_failed_saying(&search, &["cannot read the embedding key file"]);

    // The same model at another URL: recorded (without the key file, which
    // the other URL was not given), and nothing embedded again.
    let moved = url.replace("127.0.0.1", "localhost");
    let output = index_through(&corpus, &moved, &model);
    assert_succeeded(&output);
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(summary.contains("(embedding 0 chunks: "), "{summary}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(corpus.path().join(".memidx/meta.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["model_endpoint"]["url"], moved.as_str());
    assert!(manifest["model_endpoint"].get("key_file").is_none());
}

#[test]
fn faults_get_a_bounded_retry_or_a_clear_error_and_the_previous_index_stays() {
    let Some((proxy, corpus, _)) = indexed_through_a_proxy() else {
        return;
    };
    let served = generation(&corpus);
    let answer = dense_ids(&corpus, "restart the payments service");
    assert_eq!(answer.first().map(String::as_str), Some("payments.md#1"));
    let target = format!("{}/embeddings", proxy.url());
    // A timeout a loaded machine never meets but for the stall below (a
    // probe that timed out and was sent again would shift the requests a
    // fault counts).
    let timeout = std::cell::Cell::new("60");
    let full = |corpus: &Corpus| {
        corpus
            .memidx()
            .args(["index", ".", "--quiet", "--full"])
            .env("MEMIDX_EMBED_TIMEOUT", timeout.get())
            .env("MEMIDX_EMBED_KEY", "sk-test-secret")
            .output()
            .unwrap()
    };
    let unchanged = |corpus: &Corpus| {
        proxy.heal();
        assert_eq!(generation(corpus), served);
        assert_eq!(dense_ids(corpus, "restart the payments service"), answer);
    };

    // A rejected key: one request, no retry, the key never said.
    proxy.inject(FaultKind::Status(401, None), 0, usize::MAX);
    let output = full(&corpus);
    assert_failed_saying(
        &output,
        &[&target, "refused the key (HTTP 401", "MEMIDX_EMBED_KEY"],
    );
    assert!(!String::from_utf8_lossy(&output.stderr).contains("sk-test-secret"));
    assert_eq!(proxy.requests(), 1);
    unchanged(&corpus);

    // Rate-limited twice, told to wait a second: the run waits and succeeds.
    proxy.inject(FaultKind::Status(429, Some("1")), 0, 2);
    let started = Instant::now();
    let output = full(&corpus);
    assert_succeeded(&output);
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert!(proxy.requests() >= 3);
    let served = generation(&corpus);
    let unchanged = |corpus: &Corpus| {
        proxy.heal();
        assert_eq!(generation(corpus), served);
        assert_eq!(dense_ids(corpus, "restart the payments service"), answer);
    };

    // Asked to wait longer than memidx waits: an error at once.
    proxy.inject(FaultKind::Status(429, Some("3600")), 0, usize::MAX);
    assert_failed_saying(
        &full(&corpus),
        &[&target, "HTTP 429", "asked to wait 3600 s"],
    );
    unchanged(&corpus);

    // A server error that does not pass: a bounded number of tries.
    proxy.inject(FaultKind::Status(503, Some("0")), 0, usize::MAX);
    assert_failed_saying(
        &full(&corpus),
        &[&target, "HTTP 503", "gave up after 6 attempts"],
    );
    assert_eq!(proxy.requests(), 6);
    unchanged(&corpus);

    // A stall past the timeout, every time.
    timeout.set("3");
    proxy.inject(FaultKind::Stall(Duration::from_secs(5)), 0, usize::MAX);
    assert_failed_saying(&full(&corpus), &[&target, "did not answer in time"]);
    timeout.set("60");
    unchanged(&corpus);

    // A body that is not an embeddings answer.
    proxy.inject(FaultKind::Garbage, 0, usize::MAX);
    assert_failed_saying(&full(&corpus), &[&target, "not an embeddings answer"]);
    unchanged(&corpus);

    // The probe answers with 384 dimensions, the chunks with 100.
    proxy.inject(FaultKind::Truncate(100), 1, usize::MAX);
    assert_failed_saying(
        &full(&corpus),
        &[&target, "vectors of 100 dimensions", "gave 384"],
    );
    unchanged(&corpus);

    // Another model from the second request on: the probes at the end of
    // the run tell, and nothing is written.
    proxy.inject(FaultKind::Negate, 1, usize::MAX);
    assert_failed_saying(
        &full(&corpus),
        &["changed during the run", "nothing was written"],
    );
    unchanged(&corpus);

    // Too large for the endpoint: halved until it takes them.
    proxy.inject(FaultKind::LargerThan(1), 0, usize::MAX);
    let output = full(&corpus);
    assert_succeeded(&output);
    assert_eq!(dense_ids(&corpus, "restart the payments service"), answer);
}

#[test]
fn a_search_refuses_another_model_and_fails_fast_when_the_server_is_down() {
    let Some((proxy, corpus, url)) = indexed_through_a_proxy() else {
        return;
    };

    let search = || {
        corpus
            .memidx()
            .args(["search", "payments"])
            .output()
            .unwrap()
    };
    // The endpoint now serves another model: its first query's probes tell.
    proxy.inject(FaultKind::Negate, 0, usize::MAX);
    let answer = search();
    assert_failed_saying(
        &answer,
        &[
            "as a model other than",
            "memidx index --full --embed-url",
            &proxy.url(),
        ],
    );
    proxy.heal();
    assert_eq!(
        corpus.search_json("payments", &[])["results"][0]["chunk_id"],
        "payments.md#1"
    );

    // A stalled endpoint: a search gives up after its timeout, once.
    proxy.inject(FaultKind::Stall(Duration::from_secs(5)), 0, usize::MAX);
    let stalled = corpus
        .memidx()
        .args(["search", "payments"])
        .env("MEMIDX_EMBED_TIMEOUT", "1")
        .output()
        .unwrap();
    assert_failed_saying(
        &stalled,
        &["did not answer in time", "MEMIDX_EMBED_TIMEOUT"],
    );
    assert_eq!(proxy.requests(), 1);
    proxy.heal();

    // The server down: a search says so at once; sparse alone still works.
    let port = proxy.port();
    drop(proxy);
    let started = Instant::now();
    let answer = search();
    assert_failed_saying(
        &answer,
        &[
            &format!("127.0.0.1:{port}/v1/embeddings"),
            "is its server running?",
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let sparse = corpus.search_json("payments", &["--mode", "sparse"]);
    assert_eq!(sparse["results"][0]["chunk_id"], "payments.md#1");

    // An index run waits out a restart.
    let restarted = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        FaultProxy::start_on(&url, port)
    });
    let output = corpus
        .memidx()
        .args(["index", ".", "--quiet", "--full"])
        .output()
        .unwrap();
    let proxy = restarted.join().unwrap();
    assert_succeeded(&output);
    assert!(proxy.requests() >= 2);
    assert_eq!(
        corpus.search_json("payments", &[])["results"][0]["chunk_id"],
        "payments.md#1"
    );
}
