//! `memidx eval` end to end: its table matches `shared/eval/score.py` run on
//! the TREC files it writes, and `--sweep --save` changes later searches.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use common::{Corpus, fixtures_dir};
use serde_json::Value;

/// The scorer shipped beside the project (`MEMIDX_SCORE_PY` overrides).
fn score_py() -> PathBuf {
    std::env::var_os("MEMIDX_SCORE_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/score.py")
        })
}

/// Runs `memidx eval --json` on the fixtures' labelled queries with `extra` flags.
fn eval_json(corpus: &Corpus, extra: &[&str]) -> Value {
    let eval = fixtures_dir().join("eval");
    eval_on(
        corpus,
        &eval.join("queries.jsonl"),
        &eval.join("qrels.tsv"),
        extra,
    )
}

/// Runs `memidx eval --json` on `queries` judged by `qrels` with `extra` flags.
fn eval_on(corpus: &Corpus, queries: &Path, qrels: &Path, extra: &[&str]) -> Value {
    let base = [
        "eval",
        "--json",
        "--quiet",
        "--queries",
        queries.to_str().unwrap(),
        "--qrels",
        qrels.to_str().unwrap(),
    ];
    corpus.json(&[&base[..], extra].concat())
}

#[test]
fn eval_measures_match_score_py_on_its_own_runs() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--graph"]);
    let eval = fixtures_dir().join("eval");
    let runs = corpus.path().join("runs");
    let report = eval_json(&corpus, &["--run-out", runs.to_str().unwrap()]);
    assert_eq!(report["queries"], 6);
    assert_eq!(report["judged_queries"], 6);
    assert_eq!(report["dense_feedback"], 3);
    let modes = report["modes"].as_array().unwrap();
    assert_eq!(
        modes
            .iter()
            .map(|m| m["mode"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["sparse", "dense", "hybrid", "graph", "hybrid+graph"]
    );
    let script = score_py();
    if !script.is_file() {
        return crate::common::skip_unless_ci(&format!(
            "the scorer {} is missing (set MEMIDX_SCORE_PY)",
            script.display()
        ));
    }
    for mode in modes {
        let name = mode["mode"].as_str().unwrap();
        let scored = Process::new("python3")
            .arg(&script)
            .arg(eval.join("qrels.tsv"))
            .arg(runs.join(format!("{name}.trec")))
            .arg("--json")
            .output()
            .expect("python3 runs");
        assert!(
            scored.status.success(),
            "{}",
            String::from_utf8_lossy(&scored.stderr)
        );
        let theirs: Value = serde_json::from_slice(&scored.stdout).unwrap();
        for measure in ["nDCG@10", "Recall@10", "Recall@100", "MRR@10"] {
            let ours = mode["metrics"][measure].as_f64().unwrap();
            let reference = theirs[measure].as_f64().unwrap();
            assert!(
                (ours - reference).abs() < 5e-5,
                "{name} {measure}: ours {ours}, score.py {reference}"
            );
        }
    }
    // The identifier-rich queries are answered: hybrid finds a relevant doc first for most.
    let hybrid = &modes[2]["metrics"];
    assert!(hybrid["MRR@10"].as_f64().unwrap() >= 0.8, "{hybrid}");
}

#[test]
fn sweep_reports_a_held_out_check_and_save_changes_the_defaults() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--graph"]);
    // From a setting the sweep beats (the defaults tie its best on the
    // fixtures).
    let report = eval_json(&corpus, &["--sweep", "--save", "--fusion", "rrf"]);
    let sweep = &report["sweep"];
    // 150 RRF and 30 relative sparse + dense settings, then 6 graph weights
    // at the best of them.
    assert_eq!(sweep["settings_tried"], 216);
    assert_eq!(sweep["top"].as_array().unwrap().len(), 5);
    assert_eq!(sweep["top"][0], sweep["best"]);
    let best = &sweep["best"]["setting"];
    let meta: Value =
        serde_json::from_slice(&std::fs::read(corpus.path().join(".memidx/meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["fusion"]["rrf_k"], best["rrf_k"]);
    assert_eq!(meta["fusion"]["dense_weight"], best["dense_weight"]);
    assert_eq!(meta["fusion"]["window"], best["window"]);
    assert_eq!(meta["fusion"]["dense_feedback"], 3);
    // Later searches use the saved settings.
    let output = corpus
        .memidx()
        .args(["explain", "pool", "-k", "1", "--json"])
        .output()
        .unwrap();
    let explain: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(explain["rrf_k"], best["rrf_k"]);
    assert_eq!(explain["window"], best["window"]);
    assert_eq!(explain["lists"][1]["weight"], best["dense_weight"]);
    // --save stores the feedback the sweep ran with, next to its weights.
    let one = eval_json(&corpus, &["--sweep", "--save", "--dense-feedback", "1"]);
    assert_eq!(one["dense_feedback"], 1);
    let meta: Value =
        serde_json::from_slice(&std::fs::read(corpus.path().join(".memidx/meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["fusion"]["dense_feedback"], 1);
    let explain: Value = corpus.json(&["explain", "pool", "-k", "1", "--json"]);
    assert_eq!(explain["lists"][1]["feedback"].as_array().unwrap().len(), 1);
}

#[test]
fn save_keeps_the_defaults_when_nothing_beats_them() {
    let corpus = Corpus::fixtures();
    corpus.index();
    // A method spelled out, as the second run spells out every setting:
    // both sweep the sparse and dense lists alone.
    let first = eval_json(&corpus, &["--sweep", "--fusion", "rrf"]);
    let top = first["sweep"]["top"].as_array().unwrap();
    // A setting that ties the best on the tuning half but is not the first
    // of the equals.
    let tied = top[1..]
        .iter()
        .find(|s| s["tune_ndcg_10"] == top[0]["tune_ndcg_10"])
        .expect("the fixtures' sweep has ties (else this test checks nothing)");
    let setting = &tied["setting"];
    let arg = |key: &str| setting[key].to_string();
    let (k, dense, window) = (arg("rrf_k"), arg("dense_weight"), arg("window"));
    let method = setting["method"].as_str().unwrap();
    let second = eval_json(
        &corpus,
        &[
            "--sweep",
            "--save",
            "--fusion",
            method,
            "--sparse-weight",
            "1",
            "--rrf-k",
            &k,
            "--dense-weight",
            &dense,
            "--window",
            &window,
        ],
    );
    assert_eq!(second["sweep"]["default"]["setting"], *setting);
    assert_ne!(second["sweep"]["best"]["setting"], *setting);
    let meta: Value =
        serde_json::from_slice(&std::fs::read(corpus.path().join(".memidx/meta.json")).unwrap())
            .unwrap();
    assert_eq!(
        meta["fusion"]["rrf_k"], setting["rrf_k"],
        "a tie keeps the defaults"
    );
    assert_eq!(meta["fusion"]["dense_weight"], setting["dense_weight"]);
    assert_eq!(meta["fusion"]["window"], setting["window"]);
}

#[test]
fn ignore_identical_drops_the_query_s_own_document() {
    let corpus = Corpus::fixtures();
    corpus.index();
    // The query's id is the id of the document it was written from, and
    // the qrels judge only that document relevant.
    let labels = tempfile::tempdir().unwrap();
    let (queries, qrels) = (labels.path().join("q.jsonl"), labels.path().join("r.tsv"));
    std::fs::write(
        &queries,
        "{\"id\": \"postgres-replication\", \"text\": \"how do I promote a standby when the primary database is lost\"}\n",
    )
    .unwrap();
    std::fs::write(&qrels, "postgres-replication\tpostgres-replication\t1\n").unwrap();
    let run = |extra: &[&str]| {
        let report = eval_on(&corpus, &queries, &qrels, extra);
        let ndcg: Vec<f64> = report["modes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["metrics"]["nDCG@10"].as_f64().unwrap())
            .collect();
        (report["ignore_identical"].clone(), ndcg)
    };
    assert_eq!(run(&[]), (Value::Bool(false), vec![1.0, 1.0, 1.0]));
    assert_eq!(
        run(&["--ignore-identical"]),
        (Value::Bool(true), vec![0.0, 0.0, 0.0])
    );
}

/// The fusion defaults recorded in the fixtures' index, and their source.
fn recorded_fusion(corpus: &Corpus) -> (Value, Value) {
    let status = corpus.json(&["status", "--json"]);
    (status["fusion"].clone(), status["fusion_source"].clone())
}

#[test]
fn saved_settings_survive_reindexing_until_the_model_changes() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let (builtin, source) = recorded_fusion(&corpus);
    assert_eq!(source, "builtin");
    eval_json(
        &corpus,
        &[
            "--sweep",
            "--save",
            "--rrf-k",
            "10",
            "--dense-weight",
            "0.7",
        ],
    );
    let (saved, source) = recorded_fusion(&corpus);
    assert_eq!(source, "saved");
    assert_ne!(
        saved, builtin,
        "the save changed nothing: this test checks nothing"
    );

    // An incremental run with a change, then a full one: the saved settings stay.
    let note = corpus.path().join("notes/auth-slow-login-query.md");
    let text = std::fs::read_to_string(&note).unwrap();
    std::fs::write(&note, text + "\nOne more line.\n").unwrap();
    assert!(corpus.index().status.success());
    assert_eq!(recorded_fusion(&corpus), (saved.clone(), "saved".into()));
    assert!(corpus.index_with(&["--full"]).status.success());
    assert_eq!(recorded_fusion(&corpus), (saved, "saved".into()));

    // Another model: this build's defaults for it.
    let models = tempfile::tempdir().unwrap();
    let other = models.path().join("other-static");
    common::other_static_model(&other);
    assert!(
        corpus
            .index_with(&["--model", other.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(recorded_fusion(&corpus), (builtin, "builtin".into()));
}

#[test]
fn a_re_index_brings_builtin_defaults_up_to_this_build_and_keeps_saved_ones() {
    use memidx::fusion::{FusionMethod, FusionSource};
    use memidx::index::manifest::Manifest;
    let corpus = Corpus::fixtures();
    corpus.index();
    let (current, _) = recorded_fusion(&corpus);
    let index_dir = corpus.path().join(".memidx");
    // An index written by a build whose defaults were RRF with dense 0.3,
    // as this build's own writer records it (a hand edit fails the seal).
    let older = |source| {
        let mut meta = Manifest::read(&index_dir).unwrap().unwrap();
        meta.fusion.method = FusionMethod::Rrf;
        meta.fusion.sparse_weight = 1.0;
        meta.fusion.dense_weight = 0.3;
        meta.fusion_source = source;
        meta.write(&index_dir).unwrap();
        meta.latest_generation()
    };
    let generation = |corpus: &Corpus| corpus.json(&["status", "--json"])["generation"].clone();

    // Nothing changed on disk, yet the run records this build's defaults.
    let before = older(FusionSource::Builtin);
    assert!(corpus.index().status.success());
    assert_eq!(recorded_fusion(&corpus), (current, "builtin".into()));
    assert_eq!(generation(&corpus), before + 1);

    // Saved ones stay, and an unchanged corpus writes nothing.
    let before = older(FusionSource::Saved);
    assert!(corpus.index().status.success());
    let (kept, source) = recorded_fusion(&corpus);
    assert_eq!(
        (kept["method"].clone(), kept["dense_weight"].clone()),
        ("rrf".into(), 0.3.into())
    );
    assert_eq!(source, "saved");
    assert_eq!(generation(&corpus), before);
}

#[test]
fn judgments_eval_cannot_use_are_named_and_refused_under_strict() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let eval = fixtures_dir().join("eval");
    let qrels = corpus.path().join("bad-qrels.tsv");
    let mut text = std::fs::read_to_string(eval.join("qrels.tsv")).unwrap();
    // A path-style doc id, and a query the queries file does not have.
    text.push_str("1\trunbooks/kubernetes/node-drain\t1\nno-such-query\tnode-drain\t1\n");
    std::fs::write(&qrels, text).unwrap();
    let queries = eval.join("queries.jsonl");
    let args = [
        "eval",
        "--quiet",
        "--queries",
        queries.to_str().unwrap(),
        "--qrels",
        qrels.to_str().unwrap(),
    ];
    let output = corpus.memidx().args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "1 judged query is not in the queries file, e.g. \"no-such-query\"; it is not scored"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 relevant document is not in the index, e.g. \"runbooks/kubernetes/node-drain\" (a doc id is a file name without .md"),
        "{stderr}"
    );
    let report = corpus.json(&[&args[..], &["--json"]].concat());
    assert_eq!(report["warnings"].as_array().unwrap().len(), 2, "{report}");
    // The fixtures' own judgments raise nothing.
    assert_eq!(eval_json(&corpus, &[])["warnings"], serde_json::json!([]));
    corpus
        .memidx()
        .args([&args[..], &["--strict"]].concat())
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "judgments eval cannot use (--strict)",
        ));
}
