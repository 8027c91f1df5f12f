//! The Milvus backend against a real Milvus server (`milvus-lite server`,
//! which `.ci/milvus` starts): `memidx push`, then `search|explain
//! --backend`, compared with the same binary's local answers on the same
//! index. No mock: every answer comes from the server.
//!
//! Needs `MEMIDX_MILVUS_URI` (`milvus://127.0.0.1:PORT`, the server) and a
//! binary built with the `milvus` feature: this test build's own when it has
//! the feature, else `MEMIDX_MILVUS_BIN`. Without them each test says
//! `SKIPPED` (a failure under CI=true).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;
use serde_json::Value;

use crate::common::{Corpus, chunk_ids, other_static_model, skip_unless_ci};

/// The server and the binary, or `None` (the skip said).
struct Milvus {
    server: String,
    binary: PathBuf,
}

fn milvus() -> Option<Milvus> {
    let server = std::env::var("MEMIDX_MILVUS_URI").ok();
    let binary = if cfg!(feature = "milvus") {
        Some(assert_cmd::cargo::cargo_bin("memidx"))
    } else {
        std::env::var_os("MEMIDX_MILVUS_BIN").map(PathBuf::from)
    };
    match (server, binary) {
        (Some(server), Some(binary)) => Some(Milvus { server, binary }),
        _ => {
            skip_unless_ci(
                "set MEMIDX_MILVUS_URI to a running Milvus (milvus-lite server) and build with \
                 --features milvus or set MEMIDX_MILVUS_BIN (see .ci/milvus)",
            );
            None
        }
    }
}

/// A collection name no other test (or run of this one) uses.
fn fresh_collection(test: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{test}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl Milvus {
    fn uri(&self, collection: &str) -> String {
        format!("{}/{collection}", self.server)
    }

    fn run(&self, corpus: &Corpus, args: &[&str]) -> Output {
        Command::new(&self.binary)
            .current_dir(corpus.path())
            .env_remove("MEMIDX_INDEX")
            .env_remove("MILVUS_TOKEN")
            .args(args)
            .output()
            .expect("run memidx")
    }

    fn ok(&self, corpus: &Corpus, args: &[&str]) -> String {
        let out = self.run(corpus, args);
        assert!(
            out.status.success(),
            "memidx {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn index(&self, corpus: &Corpus, extra: &[&str]) {
        self.ok(corpus, &[&["index", ".", "--quiet"][..], extra].concat());
    }

    fn push(&self, corpus: &Corpus, collection: &str) -> String {
        self.ok(corpus, &["push", &self.uri(collection), "--quiet"])
    }

    /// The fixtures, indexed and pushed to a fresh collection named after
    /// `test`; also what the push printed.
    fn pushed_fixtures(&self, test: &str) -> (Corpus, String, String) {
        let corpus = Corpus::fixtures();
        self.index(&corpus, &[]);
        let collection = fresh_collection(test);
        let pushed = self.push(&corpus, &collection);
        (corpus, collection, pushed)
    }

    /// `search QUERY --json ARGS`, locally and on `collection`.
    fn both(
        &self,
        corpus: &Corpus,
        collection: &str,
        query: &str,
        args: &[&str],
    ) -> (Value, Value) {
        let uri = self.uri(collection);
        let local = [&["search", query, "--json"][..], args].concat();
        let remote = [&local[..], &["--backend", &uri]].concat();
        let parse = |args: &[&str]| -> Value {
            let out = self.run(corpus, args);
            assert!(
                out.status.code() == Some(0) || out.status.code() == Some(1),
                "memidx {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        };
        (parse(&local), parse(&remote))
    }

    /// Exit code and stderr of a failing command.
    fn fails(&self, corpus: &Corpus, args: &[&str]) -> String {
        let out = self.run(corpus, args);
        assert_eq!(out.status.code(), Some(2), "memidx {args:?} should fail");
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    }
}

/// Queries of every kind: identifiers, plain questions, a CJK-free rare term.
const QUERIES: &[&str] = &[
    "INC-2023-Q4-011 gateway timeout",
    "what to do when the main database server dies",
    "max_connections pool exhausted",
    "HTTP 504",
    "certificate rotation webhooks",
    "getUserById",
    "rollback payments-gateway",
    "on-call escalation policy",
];

/// A result's (chunk id, score) pairs, in rank order.
fn ranked(response: &Value, score: impl Fn(&Value) -> Option<f64>) -> Vec<(String, f64)> {
    response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["chunk_id"].as_str().unwrap().to_string(),
                score(r).unwrap(),
            )
        })
        .collect()
}

/// Asserts two rankings are equal: the same ids at every rank, or, where
/// they differ, chunks whose scores are equal (a tie), and scores within
/// `tolerance` (relative) at every rank. Returns how many ranks were ties.
fn assert_same_ranking(
    what: &str,
    local: &[(String, f64)],
    remote: &[(String, f64)],
    tolerance: f64,
) -> usize {
    assert_eq!(
        local.len(),
        remote.len(),
        "{what}: lengths {local:?} vs {remote:?}"
    );
    let mut ties = 0;
    for (rank, ((lid, ls), (rid, rs))) in local.iter().zip(remote).enumerate() {
        let close = (ls - rs).abs() <= tolerance * ls.abs().max(1e-9);
        assert!(close, "{what}: rank {} score {ls} vs {rs}", rank + 1);
        if lid != rid {
            let tied = local
                .iter()
                .any(|(id, s)| id == rid && (s - ls).abs() <= tolerance * ls.abs());
            assert!(
                tied,
                "{what}: rank {} is {lid} locally, {rid} on Milvus, and they are not tied",
                rank + 1
            );
            ties += 1;
        }
    }
    ties
}

/// A result's score as one list or the fusion gave it.
type Score = Box<dyn Fn(&Value) -> Option<f64>>;

fn list_score(list: &'static str) -> Score {
    Box::new(move |r| r["ranks"][list]["score"].as_f64())
}

fn fused_score(r: &Value) -> Option<f64> {
    r["rrf_score"].as_f64()
}

#[test]
fn dense_sparse_and_fused_rankings_equal_the_local_ones() {
    let Some(milvus) = milvus() else { return };
    let (corpus, collection, pushed) = milvus.pushed_fixtures("parity");
    assert!(pushed.contains(" deleted"), "{pushed}");
    for query in QUERIES {
        // Dense: Milvus's inner products; sparse: scored again from the
        // rows' terms with the index's statistics, so exactly.
        for (mode, tolerance) in [("dense", 1e-5), ("sparse", 0.0)] {
            let (l, r) = milvus.both(&corpus, &collection, query, &["--mode", mode, "-k", "30"]);
            assert_same_ranking(
                &format!("{mode} {query}"),
                &ranked(&l, list_score(mode)),
                &ranked(&r, list_score(mode)),
                tolerance,
            );
        }
        for fusion in ["relative", "rrf"] {
            let (l, r) = milvus.both(
                &corpus,
                &collection,
                query,
                &["--fusion", fusion, "-k", "10"],
            );
            assert_same_ranking(
                &format!("{fusion} {query}"),
                &ranked(&l, fused_score),
                &ranked(&r, fused_score),
                1e-5,
            );
            // Each result's per-list ranks are the local ones too.
            for (lr, rr) in l["results"]
                .as_array()
                .unwrap()
                .iter()
                .zip(r["results"].as_array().unwrap())
            {
                if lr["chunk_id"] == rr["chunk_id"] {
                    for list in ["sparse", "dense"] {
                        assert_eq!(
                            lr["ranks"][list]["rank"], rr["ranks"][list]["rank"],
                            "{fusion} {query} {list}"
                        );
                    }
                    // How much of the query a result holds is the same.
                    assert!(lr["coverage"].is_number(), "{lr}");
                    assert_eq!(lr["coverage"], rr["coverage"], "{fusion} {query}");
                }
            }
            assert_eq!(l["strong_match"], r["strong_match"], "{fusion} {query}");
            assert_eq!(
                l["strong_coverage"], r["strong_coverage"],
                "{fusion} {query}"
            );
        }
    }
}

#[test]
fn explain_says_where_the_lists_ran_and_adds_up_as_locally() {
    let Some(milvus) = milvus() else { return };
    let (corpus, collection, _) = milvus.pushed_fixtures("explain");
    let uri = milvus.uri(&collection);
    let query = "INC-2023-Q4-011 gateway timeout";
    let local: Value =
        serde_json::from_str(&milvus.ok(&corpus, &["explain", query, "--json", "-k", "5"]))
            .unwrap();
    let remote: Value = serde_json::from_str(&milvus.ok(
        &corpus,
        &["explain", query, "--json", "-k", "5", "--backend", &uri],
    ))
    .unwrap();
    // The chunks' lists run on the collection; the file list on the
    // index's own files.
    for list in remote["lists"].as_array().unwrap() {
        let ran_on = match list["name"].as_str().unwrap() {
            "sparse" | "dense" => uri.as_str(),
            _ => "local",
        };
        assert_eq!(list["ran_on"], ran_on, "{list}");
    }
    let names: Vec<&str> = (remote["lists"].as_array().unwrap().iter())
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sparse", "dense", "file"]);
    for list in local["lists"].as_array().unwrap() {
        assert_eq!(list["ran_on"], "local");
    }
    assert_eq!(chunk_ids(&local), chunk_ids(&remote));
    for result in remote["results"].as_array().unwrap() {
        let sum: f64 = result["lists"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["contribution"].as_f64().unwrap())
            .sum();
        assert_eq!(sum, result["rrf_score"].as_f64().unwrap());
    }
    let human = milvus.ok(&corpus, &["explain", query, "-k", "2", "--backend", &uri]);
    assert!(human.contains(&format!("sparse on {uri} ")), "{human}");
}

#[test]
fn filtered_searches_return_only_what_the_local_filter_allows() {
    let Some(milvus) = milvus() else { return };
    let (corpus, collection, _) = milvus.pushed_fixtures("filtered");
    for filter in [
        vec!["--filter", "environment=production"],
        vec![
            "--filter",
            "environment=staging",
            "--filter",
            "service=auth-service",
        ],
        vec![
            "--filter",
            "environment=production",
            "--filter",
            "environment=staging",
        ],
        // Document dates: both bounds inclusive, an --until date its whole day.
        vec!["--since", "2023-10-01", "--until", "2023-11-30"],
        vec![
            "--since",
            "2024-01-01",
            "--filter",
            "environment=production",
        ],
    ] {
        let mut returned = 0;
        for query in QUERIES {
            for mode in ["sparse", "dense", "hybrid"] {
                let args = [&filter[..], &["--mode", mode, "-k", "20"]].concat();
                let (l, r) = milvus.both(&corpus, &collection, query, &args);
                let score = if mode == "hybrid" {
                    fused_score as fn(&Value) -> Option<f64>
                } else if mode == "sparse" {
                    |r: &Value| r["ranks"]["sparse"]["score"].as_f64()
                } else {
                    |r: &Value| r["ranks"]["dense"]["score"].as_f64()
                };
                assert_same_ranking(
                    &format!("{filter:?} {mode} {query}"),
                    &ranked(&l, score),
                    &ranked(&r, score),
                    1e-5,
                );
                returned += l["results"].as_array().unwrap().len();
            }
        }
        assert!(returned > 0, "{filter:?} let nothing through");
    }
    // --here: only files under the current folder.
    let here = corpus.path().join("runbooks");
    let uri = milvus.uri(&collection);
    let out = Command::new(&milvus.binary)
        .current_dir(&here)
        .env_remove("MEMIDX_INDEX")
        .args([
            "search",
            "database",
            "--json",
            "--here",
            "-k",
            "50",
            "--backend",
            &uri,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = response["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(
        results
            .iter()
            .all(|r| r["source"].as_str().unwrap().starts_with("runbooks/"))
    );
}

#[test]
fn an_incremental_push_answers_as_a_fresh_push_and_sends_only_changes() {
    let Some(milvus) = milvus() else { return };
    let (corpus, collection, _) = milvus.pushed_fixtures("incremental");
    let again = milvus.push(&corpus, &collection);
    assert!(again.contains("is up to date"), "{again}");
    let notes = corpus.path().join("notes");
    let first = std::fs::read_dir(&notes)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .min()
        .unwrap();
    let text = std::fs::read_to_string(&first).unwrap();
    std::fs::write(
        &first,
        format!(
            "{text}\n\n## Added later\n\nThe quorum lease of the zookeeper ensemble expired.\n"
        ),
    )
    .unwrap();
    std::fs::write(
        notes.join("fresh-note.md"),
        "# Fresh note\n\nA brand new note about zookeeper quorum leases and max_connections.\n",
    )
    .unwrap();
    std::fs::remove_file(
        corpus
            .path()
            .join("runbooks/databases/postgres-replication.md"),
    )
    .unwrap();
    milvus.index(&corpus, &[]);
    let stale = milvus.fails(
        &corpus,
        &["search", "zookeeper", "--backend", &milvus.uri(&collection)],
    );
    assert!(stale.contains("run 'memidx push"), "{stale}");
    let incremental = milvus.push(&corpus, &collection);
    let sent: usize = incremental
        .split(", ")
        .find_map(|p| p.strip_suffix(" sent")?.parse().ok())
        .unwrap();
    let deleted: usize = incremental
        .split(", ")
        .find_map(|p| p.split(" deleted").next()?.parse().ok())
        .unwrap();
    assert!((2..10).contains(&sent), "{incremental}");
    assert!(deleted >= 1, "{incremental}");
    let fresh = fresh_collection("fresh");
    milvus.push(&corpus, &fresh);
    assert_answers_as_fresh(
        &milvus,
        &corpus,
        &collection,
        &fresh,
        &["zookeeper quorum lease"],
    );
}

/// Asserts that `collection` and `fresh` (a fresh push of the same index)
/// both answer [`QUERIES`] and `extra` as the local index does, in every
/// mode.
fn assert_answers_as_fresh(
    milvus: &Milvus,
    corpus: &Corpus,
    collection: &str,
    fresh: &str,
    extra: &[&str],
) {
    for query in QUERIES.iter().chain(extra) {
        for (mode, score, tolerance) in [
            // Rescored with the index's statistics: exact, whatever Milvus
            // counts of the replaced and deleted rows.
            ("sparse", list_score("sparse"), 0.0),
            // Milvus's inner products, summed its own way per segment.
            ("dense", list_score("dense"), 1e-5),
            ("hybrid", Box::new(fused_score) as Score, 1e-5),
        ] {
            let args = ["--mode", mode, "-k", "20"];
            let (_, pushed) = milvus.both(corpus, collection, query, &args);
            let (local, new) = milvus.both(corpus, fresh, query, &args);
            let local = ranked(&local, &score);
            assert_same_ranking(
                &format!("{mode} {query}: {collection}"),
                &local,
                &ranked(&pushed, &score),
                tolerance,
            );
            assert_same_ranking(
                &format!("{mode} {query}: {fresh}"),
                &local,
                &ranked(&new, &score),
                tolerance,
            );
        }
    }
}

/// A TCP relay to the Milvus server that counts the bytes sent through it
/// and, once they pass `budget`, cuts its connections and accepts no more:
/// a network failure at a chosen point of a push.
struct Relay {
    port: u16,
    sent: Arc<AtomicUsize>,
}

impl Relay {
    fn start(server: &str, budget: usize) -> Self {
        let upstream = server
            .strip_prefix("milvus://")
            .expect("a milvus:// address")
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&sent);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if counted.load(Ordering::SeqCst) > budget {
                    continue; // dropped: closed at once
                }
                let server = TcpStream::connect(&upstream).unwrap();
                let (back_from, back_to) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut &back_from, &mut &back_to);
                    let _ = back_to.shutdown(Shutdown::Both);
                });
                let counted = Arc::clone(&counted);
                std::thread::spawn(move || {
                    let (mut client, mut server) = (client, server);
                    let mut buffer = vec![0u8; 16 * 1024];
                    while let Ok(n @ 1..) = client.read(&mut buffer) {
                        if counted.fetch_add(n, Ordering::SeqCst) + n > budget
                            || server.write_all(&buffer[..n]).is_err()
                        {
                            break;
                        }
                    }
                    let _ = client.shutdown(Shutdown::Both);
                    let _ = server.shutdown(Shutdown::Both);
                });
            }
        });
        Self { port, sent }
    }

    fn uri(&self, collection: &str) -> String {
        format!("milvus://127.0.0.1:{}/{collection}", self.port)
    }
}

/// Writes `files` notes of eight sections each under `dir`, every section's
/// text distinct and `version` in all of them.
fn write_notes(dir: &Path, files: usize, version: &str) {
    const WORDS: &[&str] = &[
        "replica",
        "lease",
        "quorum",
        "backoff",
        "shard",
        "ingress",
        "cursor",
        "vacuum",
        "webhook",
        "rollout",
        "latency",
        "pool",
        "snapshot",
        "tombstone",
        "checkpoint",
        "throttle",
        "failover",
        "schema",
        "migration",
        "index",
    ];
    std::fs::create_dir_all(dir).unwrap();
    for file in 0..files {
        let mut text = format!("# Note {file}\n\n");
        for section in 0..8 {
            let n = file * 8 + section;
            text.push_str(&format!("## Part {section}\n\n"));
            for sentence in 0..4 {
                let word = |i: usize| WORDS[(n * 7 + sentence * 3 + i * 11) % WORDS.len()];
                text.push_str(&format!(
                    "The {} of the {} moved the {} after {version} step {n}-{sentence}. ",
                    word(0),
                    word(1),
                    word(2)
                ));
            }
            text.push_str("\n\n");
        }
        std::fs::write(dir.join(format!("note-{file:03}.md")), text).unwrap();
    }
}

#[test]
fn an_interrupted_push_is_refused_by_searches_and_the_next_push_converges() {
    let Some(milvus) = milvus() else { return };
    let corpus = Corpus::empty();
    let notes = corpus.path().join("notes");
    // 640 chunks: an incremental push of them all takes three upserts.
    write_notes(&notes, 80, "draft");
    milvus.index(&corpus, &[]);
    let collection = fresh_collection("interrupted");
    let measure = Relay::start(&milvus.server, usize::MAX);
    milvus.ok(&corpus, &["push", &measure.uri(&collection), "--quiet"]);
    let whole = measure.sent.load(Ordering::SeqCst);
    // Every chunk changes, five files go, two come.
    write_notes(&notes, 82, "final");
    for gone in 10..15 {
        std::fs::remove_file(notes.join(format!("note-{gone:03}.md"))).unwrap();
    }
    milvus.index(&corpus, &[]);
    // The connection breaks halfway through the rows.
    let cut = Relay::start(&milvus.server, whole / 2);
    let failed = milvus.fails(&corpus, &["push", &cut.uri(&collection), "--quiet"]);
    assert_eq!(failed.trim_end().lines().count(), 1, "{failed}");
    assert!(failed.contains("Milvus at 127.0.0.1:"), "{failed}");
    // Readers are told, not answered from the mix.
    let refused = milvus.fails(
        &corpus,
        &[
            "search",
            "quorum lease",
            "--backend",
            &milvus.uri(&collection),
        ],
    );
    assert!(refused.contains("a push was interrupted"), "{refused}");
    // The next push sends what the cut one did not, and converges.
    let again = milvus.push(&corpus, &collection);
    let sent: usize = again
        .split(", ")
        .find_map(|p| p.strip_suffix(" sent")?.parse().ok())
        .unwrap();
    assert!((1..616).contains(&sent), "{again}");
    assert!(again.contains(" 40 deleted"), "{again}");
    let after = milvus.push(&corpus, &collection);
    assert!(after.contains("is up to date"), "{after}");
    let fresh = fresh_collection("uncut");
    milvus.push(&corpus, &fresh);
    assert_answers_as_fresh(
        &milvus,
        &corpus,
        &collection,
        &fresh,
        &["quorum lease backoff", "final step 300-2", "tombstone"],
    );
}

#[test]
fn milvus_own_hybrid_search_with_rrf_ranker_fuses_as_memidx_does() {
    let Some(milvus) = milvus() else { return };
    let Some(python) = std::env::var_os("MEMIDX_MILVUS_PYTHON") else {
        skip_unless_ci("set MEMIDX_MILVUS_PYTHON to a Python with pymilvus (see .ci/milvus)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/milvus_hybrid.py");
    let (corpus, collection, _) = milvus.pushed_fixtures("hybrid");
    // Equal weights and no feedback: what Milvus's RRFRanker can express;
    // unfolded, as Milvus does not fold a file's chunks.
    let fusion = [
        "--per-file",
        "0",
        "--fusion",
        "rrf",
        "--sparse-weight",
        "1",
        "--dense-weight",
        "1",
        "--dense-feedback",
        "0",
        "--window",
        "30",
        "-k",
        "10",
    ];
    let uri = milvus.uri(&collection);
    for filter in [&[][..], &["--filter", "environment=production"][..]] {
        for query in QUERIES {
            let args = [&["--backend", uri.as_str()][..], &fusion, filter].concat();
            let ours = milvus.ok(&corpus, &[&["search", query, "--json"][..], &args].concat());
            let explained = milvus.ok(
                &corpus,
                &[&["explain", query, "--json"][..], &args].concat(),
            );
            let explained: Value = serde_json::from_str(&explained).unwrap();
            let requests: Vec<&Value> = explained["lists"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| &l["request"])
                .collect();
            assert_eq!(requests.len(), 2, "{explained}");
            let job = serde_json::json!({
                "server": milvus.server,
                "collection": collection,
                "requests": requests,
                "window": 30,
                "limit": 10,
                "rrf_k": 60,
            });
            let mut child = std::process::Command::new(&python)
                .arg(&script)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(job.to_string().as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let theirs: Vec<(String, f64)> = serde_json::from_slice(&out.stdout).unwrap();
            let ours: Value = serde_json::from_str(&ours).unwrap();
            assert!(!theirs.is_empty(), "{filter:?} {query}");
            // Milvus sums in f32: equal to memidx's f64 sums to 1e-6.
            assert_same_ranking(
                &format!("hybrid_search {filter:?} {query}"),
                &ranked(&ours, fused_score),
                &theirs,
                1e-6,
            );
        }
    }
}

#[test]
fn a_wrong_model_a_missing_collection_and_no_server_are_one_line_errors() {
    let Some(milvus) = milvus() else { return };
    let (corpus, collection, _) = milvus.pushed_fixtures("errors");
    let one_line = |err: &str| {
        assert!(
            err.starts_with("memidx: ") && err.trim_end().lines().count() == 1,
            "{err}"
        );
    };
    // Another model's index.
    let other = Corpus::fixtures();
    let model = other.path().join("model");
    other_static_model(&model);
    milvus.index(&other, &["--model", model.to_str().unwrap()]);
    let err = milvus.fails(&other, &["push", &milvus.uri(&collection)]);
    one_line(&err);
    assert!(err.contains("embedded with"), "{err}");
    let err = milvus.fails(
        &other,
        &["search", "pool", "--backend", &milvus.uri(&collection)],
    );
    one_line(&err);
    assert!(err.contains("embedded with"), "{err}");
    // A collection nobody pushed.
    milvus.index(&corpus, &[]);
    let err = milvus.fails(
        &corpus,
        &[
            "search",
            "pool",
            "--backend",
            &milvus.uri("never_pushed_here"),
        ],
    );
    one_line(&err);
    assert!(
        err.contains("there is no collection 'never_pushed_here'"),
        "{err}"
    );
    // No server on that port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = milvus.fails(
        &corpus,
        &[
            "search",
            "pool",
            "--backend",
            &format!("milvus://127.0.0.1:{closed}/c"),
        ],
    );
    one_line(&err);
    assert!(err.contains("cannot reach Milvus at 127.0.0.1:"), "{err}");
    // Not an address.
    let err = milvus.fails(&corpus, &["push", "http://127.0.0.1:1/c"]);
    one_line(&err);
    // The graph list is not pushed.
    let err = milvus.fails(
        &corpus,
        &[
            "search",
            "pool",
            "--mode",
            "graph",
            "--backend",
            &milvus.uri(&collection),
        ],
    );
    one_line(&err);
}
