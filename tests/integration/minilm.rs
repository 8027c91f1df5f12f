//! The optional transformer embedder (`--model DIR`) with all-MiniLM-L6-v2:
//! indexing and searching with it (its parity test is in embeddings.rs).
//! Without `MEMIDX_MINILM_DIR` these tests print why and check nothing else.

#![cfg(feature = "bert")]

use crate::common;

use common::{Corpus, FIXTURE_CHUNKS};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn an_index_built_with_a_model_folder_searches_with_it() {
    let Some(dir) = common::minilm_dir() else {
        return;
    };
    let corpus = Corpus::fixtures();
    // The summary says how many chunks the model read only in part: a few
    // code blocks and tables pass its 256 word pieces.
    corpus
        .memidx()
        .args(["index", ".", "--model"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "(embedding {FIXTURE_CHUNKS} chunks: "
        )))
        .stdout(predicate::str::contains(
            " s; 3 read only up to the model's 256 word pieces) -> ",
        ));
    let status = corpus.json(&["status", "--json"]);
    assert_eq!(status["embedder"]["dim"], 384);
    // status --verify counts them again, with the model's tokenizer.
    assert!(status.get("embedding").is_none());
    let verified = corpus.json(&["status", "--json", "--verify"]);
    assert_eq!(
        verified["embedding"],
        serde_json::json!({"window": 256, "chunks_cut": 3})
    );
    // A transformer's defaults: adaptive relative scores, its dense list
    // weighing 0.7 before the query moves the weights, the words' 0.3 a
    // quarter the file's.
    assert_eq!(status["fusion"]["method"], "adaptive");
    assert_eq!(
        (
            status["fusion"]["sparse_weight"].clone(),
            status["fusion"]["dense_weight"].clone(),
            status["fusion"]["file_weight"].clone()
        ),
        (
            serde_json::json!(0.225),
            serde_json::json!(0.7),
            serde_json::json!(0.075)
        )
    );
    // The noise floor was measured when the index was written, over its
    // rows, as a search would measure it (so no search embeds the probes).
    let index = memidx::index::Index::open(&corpus.path().join(".memidx")).unwrap();
    let manifest = index.manifest();
    let generation = index.parts().base();
    let options = memidx::lists::dense::DenseOptions {
        feedback: 0,
        exact: false,
        rescore: None,
        probe: None,
    };
    let measured = memidx::lists::dense::DenseList::open(
        generation.dir(),
        manifest.parts()[0].1,
        generation.vector_flags(),
        memidx::embed::load(Some(&dir)).unwrap(),
        manifest.dense_index.setting,
        options,
    )
    .unwrap();
    let measured = memidx::lists::List::noise_floor(&measured).unwrap();
    assert!(measured.is_some());
    assert_eq!(manifest.noise_floor, measured);
    // The paraphrase shares no word with its chunk; the transformer finds it.
    let response = corpus.search_json(
        "the writer node died, elect a follower",
        &["--mode", "dense", "-k", "3"],
    );
    let ids: Vec<&str> = response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["chunk_id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"runbooks/databases/postgres-replication.md#4"),
        "{ids:?}"
    );
    // An identifier query is where RRF is weakest: its chunk is first in
    // the sparse list but 19th in the dense one, and RRF at 1:1 fuses it to
    // 4th behind chunks both lists rank moderately. Relative scores at the
    // fixed 0.3 : 0.7 rank it 2nd; adaptive weights, which follow BM25's
    // best standing apart, rank it 1st, as does the dense query moved
    // toward the fused first pass's best (which ranks it 3rd).
    let incident = "incidents/2023/q4/billing-month-end-timeouts.md#1";
    let standing = |extra: &[&str]| {
        let args = [
            &["explain", "INC-2023-Q4-011", "--chunk", incident, "--json"][..],
            extra,
        ];
        let explained = corpus.json(&args.concat());
        let result = &explained["results"][0];
        (
            explained["fusion"].clone(),
            result["fused_rank"].clone(),
            result["lists"][0]["rank"].clone(),
            result["lists"][1]["rank"].clone(),
        )
    };
    assert_eq!(
        standing(&[]),
        ("adaptive".into(), 1.into(), 1.into(), 3.into())
    );
    assert_eq!(
        standing(&["--dense-feedback", "0"]),
        ("adaptive".into(), 1.into(), 1.into(), 19.into())
    );
    // Weights given keep the default from moving them: plain relative scores.
    assert_eq!(
        standing(&[
            "--dense-feedback",
            "0",
            "--sparse-weight",
            "0.3",
            "--dense-weight",
            "0.7"
        ]),
        ("relative".into(), 2.into(), 1.into(), 19.into())
    );
    assert_eq!(
        standing(&[
            "--fusion",
            "rrf",
            "--sparse-weight",
            "1",
            "--dense-weight",
            "1"
        ]),
        ("rrf".into(), 4.into(), 1.into(), 19.into())
    );
    // A chunk longer than the model's window: explain says what it read.
    let long = "services/billing-service.md#4";
    let explained = corpus.json(&["explain", "billing service", "--chunk", long, "--json"]);
    assert_eq!(
        explained["results"][0]["lists"][1]["reason"],
        "the model read only its first 256 word pieces"
    );
    let explained = corpus.json(&["explain", "INC-2023-Q4-011", "--chunk", incident, "--json"]);
    assert_eq!(explained["results"][0]["lists"][1]["reason"], Value::Null);
    let response = corpus.search_json("INC-2023-Q4-011", &["-k", "1", "--mode", "sparse"]);
    assert_eq!(response["results"][0]["chunk_id"], incident);
    nothing_matches_nonsense(&corpus);
    // Re-indexing with the bundled model re-embeds everything.
    let output = corpus
        .memidx()
        .args(["index", ".", "--bundled-model"])
        .env_remove("MEMIDX_MODEL")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains(&format!("(embedding {FIXTURE_CHUNKS} chunks: "))
    );
    // Back to the transformer: its vectors were kept, nothing is embedded.
    let output = corpus
        .memidx()
        .args(["index", ".", "--model"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("(embedding 0 chunks: "));
    // eval runs its queries in parallel while the transformer multiplies in
    // parallel; the two once deadlocked.
    let eval = common::fixtures_dir().join("eval");
    let report = corpus
        .memidx()
        .args(["eval", "--json", "--quiet", "--queries"])
        .arg(eval.join("queries.jsonl"))
        .arg("--qrels")
        .arg(eval.join("qrels.tsv"))
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{report:?}");
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["modes"][1]["mode"], "dense");
}

/// With a transformer, a query no list matches with confidence (no chunk
/// holds its words; its best cosine stays below what random strings reach
/// in the index) has no results and exits 1, saying why; `--keep-all` and
/// the request's `keep_all` keep them; `explain` shows the judgement; a
/// query BM25 matches or nearly matches (a typing slip), or whose meaning
/// is near a note, keeps its results.
fn nothing_matches_nonsense(corpus: &Corpus) {
    for query in ["xyzzyplugh", "qwxkjv blorptz", "最近的火车站在哪里"] {
        let output = corpus.memidx().args(["search", query]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{query}: {stderr}");
        assert!(output.stdout.is_empty(), "{query}");
        assert!(
            stderr.contains(
                "memidx: nothing matches the query with confidence (the sparse list matched \
                 no chunk; no chunk is nearer the query in meaning than random letters come \
                 (the dense list's best cosine 0."
            ) && stderr.contains("--keep-all shows the closest chunks anyway"),
            "{query}: {stderr}"
        );
    }
    let kept = corpus.search_json("xyzzyplugh", &["--keep-all", "-k", "2"]);
    assert_eq!(kept["results"].as_array().unwrap().len(), 2);
    let request = r#"{"search_text": "xyzzyplugh", "top_k": 2, "keep_all": true}"#;
    let output = corpus.request(request);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let explained = corpus.json(&["explain", "xyzzyplugh", "-k", "1", "--json"]);
    assert_eq!(explained["nothing_matched"], true);
    let dense = &explained["lists"][1];
    assert_eq!(
        (
            explained["lists"][0]["confident"].clone(),
            dense["confident"].clone()
        ),
        (false.into(), false.into())
    );
    let floor = dense["noise_floor"].as_f64().unwrap();
    assert!(dense["query_best"].as_f64().unwrap() < floor, "{dense}");
    // The floor is the one the index recorded.
    let meta = std::fs::read(corpus.path().join(".memidx/meta.json")).unwrap();
    let meta: Value = serde_json::from_slice(&meta).unwrap();
    assert_eq!(
        f64::from(meta["noise_floor"].as_f64().unwrap() as f32),
        floor
    );
    // Explains a query whose results a search keeps, and checks it does.
    let kept = |query: &str| {
        let explained = corpus.json(&["explain", query, "-k", "1", "--json"]);
        assert_eq!(explained["nothing_matched"], false, "{query}");
        corpus.memidx().args(["search", query]).assert().success();
        explained
    };
    // "outage" is in no note, but incidents are about outages.
    let explained = kept("outage");
    assert_eq!(explained["lists"][1]["confident"], true);
    assert_eq!(explained["lists"][1]["noise_floor"].as_f64(), Some(floor));
    // A misspelt word is no noise: its best cosine is below the floor, but
    // BM25 holds a word one slip from it, so the dense list's answer stays.
    let explained = kept("rollbakc");
    assert_eq!(
        explained["lists"][0]["near_miss"],
        serde_json::json!(["rollbakc", "rollback"])
    );
    assert!(explained["lists"][1]["query_best"].as_f64().unwrap() < floor);
    // BM25 matched: the dense list is not judged, no floor is measured.
    let explained = corpus.json(&["explain", "replication", "-k", "1", "--json"]);
    assert_eq!(explained["lists"][0]["confident"], true);
    assert_eq!(explained["lists"][1]["confident"], Value::Null);
    assert_eq!(explained["lists"][1]["noise_floor"], Value::Null);
}

#[test]
fn a_folder_that_is_not_a_model_is_refused_with_the_files_expected() {
    let corpus = Corpus::fixtures();
    let empty = Corpus::empty();
    corpus
        .memidx()
        .args(["index", ".", "--model"])
        .arg(empty.path())
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("config.json")
                .and(predicate::str::contains("model.safetensors")),
        );
}
