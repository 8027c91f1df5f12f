//! Retrieval measures of a run against qrels: nDCG@10, Recall@10, Recall@100
//! and MRR@10, per query and averaged.
//!
//! `memidx eval` must print the numbers the collections' `score.py` prints, so
//! the definitions here are score.py's, which are trec_eval 9's:
//! - hits are ranked by [`trec_order`] (score descending, ties by doc id in
//!   reverse string order, first occurrence of a duplicate kept);
//! - nDCG@10 is `ndcg_cut.10`: gain = the judged relevance (linear; unjudged
//!   and non-positive = 0), discount `log2(rank + 1)`, normalised by the DCG@10
//!   of the query's positively judged documents sorted best first;
//! - Recall@k is `recall.k`: relevant (relevance > 0) documents in the top k
//!   over all relevant documents of the query;
//! - MRR@10 is 1/rank of the first relevant document in the top 10, else 0;
//! - means are over every query in the qrels with a relevant document; such a
//!   query missing from the run scores 0 (`trec_eval -c`); others are ignored.

use std::collections::BTreeMap;

use super::collection::{Qrels, Run, trec_order};

/// The cut-off of nDCG, MRR and the shallow recall.
const TOP: usize = 10;
/// The cut-off of the deep recall.
const DEEP: usize = 100;

/// The four measures of one query or of a mean.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Metrics {
    /// nDCG@10 (trec_eval `ndcg_cut.10`).
    #[serde(rename = "nDCG@10")]
    pub ndcg_10: f64,
    /// Recall@10 (trec_eval `recall.10`).
    #[serde(rename = "Recall@10")]
    pub recall_10: f64,
    /// Recall@100 (trec_eval `recall.100`).
    #[serde(rename = "Recall@100")]
    pub recall_100: f64,
    /// MRR@10: reciprocal rank of the first relevant hit within the top 10.
    #[serde(rename = "MRR@10")]
    pub mrr_10: f64,
}

/// Per-query values and their means over the qrels' queries that have a
/// relevant document.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Evaluation {
    /// The measures of each evaluated query, by query id.
    pub per_query: BTreeMap<String, Metrics>,
    /// The mean of each measure over `per_query` (all 0 when it is empty).
    pub mean: Metrics,
    /// How many queries were evaluated (`per_query.len()`).
    pub queries: usize,
    /// How many of them had no hit in the run (and so scored 0).
    pub queries_without_results: usize,
}

/// Evaluates `run` on every query of `qrels` that has a relevant document.
pub fn evaluate(qrels: &Qrels, run: &Run) -> Evaluation {
    evaluate_subset(qrels, run, |_| true)
}

/// Evaluates `run` on the queries of `qrels` that have a relevant document and
/// whose id passes `keep` (e.g. [`is_held_out`](super::collection::is_held_out)
/// for the held-out half).
pub fn evaluate_subset(qrels: &Qrels, run: &Run, keep: impl Fn(&str) -> bool) -> Evaluation {
    let mut per_query = BTreeMap::new();
    let mut queries_without_results = 0;
    for (qid, judged) in qrels {
        if !keep(qid) || !judged.values().any(|&rel| rel > 0.0) {
            continue;
        }
        let hits = run.get(qid).map_or(&[][..], Vec::as_slice);
        if hits.is_empty() {
            queries_without_results += 1;
        }
        let ranked: Vec<&str> = trec_order(hits).into_iter().map(|(doc, _)| doc).collect();
        per_query.insert(qid.clone(), score_query(&ranked, judged));
    }
    Evaluation {
        mean: mean(per_query.values()),
        queries: per_query.len(),
        queries_without_results,
        per_query,
    }
}

/// The measures of one query's ranking (best first, no duplicates).
fn score_query(ranked: &[&str], judged: &BTreeMap<String, f64>) -> Metrics {
    Metrics {
        ndcg_10: ndcg_at(ranked, judged, TOP),
        recall_10: recall_at(ranked, judged, TOP),
        recall_100: recall_at(ranked, judged, DEEP),
        mrr_10: mrr_at(ranked, judged, TOP),
    }
}

/// The gain of a document: its judged relevance if positive, else 0.
fn gain(judged: &BTreeMap<String, f64>, doc: &str) -> f64 {
    judged
        .get(doc)
        .copied()
        .filter(|&rel| rel > 0.0)
        .unwrap_or(0.0)
}

/// DCG of gains in rank order, cut at `k`: `Σ gain_i / log2(i + 1)`, i from 1.
fn dcg(gains: impl IntoIterator<Item = f64>, k: usize) -> f64 {
    (2..)
        .zip(gains.into_iter().take(k))
        .map(|(i, g)| g / f64::from(i).log2())
        .fold(0.0, |sum, term| sum + term)
}

/// nDCG@k with linear gains; the ideal ranking is every positively judged
/// document of the query, best first.
fn ndcg_at(ranked: &[&str], judged: &BTreeMap<String, f64>, k: usize) -> f64 {
    let actual = dcg(ranked.iter().map(|doc| gain(judged, doc)), k);
    let mut ideal: Vec<f64> = judged.values().copied().filter(|&rel| rel > 0.0).collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let best = dcg(ideal, k);
    if best > 0.0 { actual / best } else { 0.0 }
}

/// Recall@k: the share of the query's relevant documents in the top `k`.
fn recall_at(ranked: &[&str], judged: &BTreeMap<String, f64>, k: usize) -> f64 {
    let relevant = judged.values().filter(|&&rel| rel > 0.0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked
        .iter()
        .take(k)
        .filter(|doc| gain(judged, doc) > 0.0)
        .count();
    found as f64 / relevant as f64
}

/// MRR@k: 1/rank of the first relevant document within the top `k`, else 0.
fn mrr_at(ranked: &[&str], judged: &BTreeMap<String, f64>, k: usize) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|doc| gain(judged, doc) > 0.0)
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// The mean of each measure (all 0 for no queries).
fn mean<'a>(values: impl ExactSizeIterator<Item = &'a Metrics>) -> Metrics {
    let n = values.len();
    if n == 0 {
        return Metrics::default();
    }
    let sum = values.fold(Metrics::default(), |s, m| Metrics {
        ndcg_10: s.ndcg_10 + m.ndcg_10,
        recall_10: s.recall_10 + m.recall_10,
        recall_100: s.recall_100 + m.recall_100,
        mrr_10: s.mrr_10 + m.mrr_10,
    });
    let n = n as f64;
    Metrics {
        ndcg_10: sum.ndcg_10 / n,
        recall_10: sum.recall_10 / n,
        recall_100: sum.recall_100 / n,
        mrr_10: sum.mrr_10 / n,
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use serde_json::Value;

    use super::super::collection::{doc_id, read_qrels, write_trec};
    use super::*;
    use crate::testing::skip;

    /// score.py's test_score.py QRELS.
    const QRELS: &str = "query-id\tdoc-id\trelevance\n\
                         q1\td1\t2\nq1\td2\t1\nq1\td3\t0\nq1\td4\t1\n\
                         q2\td7\t1\nq3\td9\t1\nq4\td1\t0\n";

    /// test_score.py's TREC_RUN: q1 finds d3 (judged 0), d1 (gain 2), d5
    /// (unjudged), d2 (gain 1); q2 has ten non-relevant hits, then d7 at rank
    /// 11; q3 has no hits; q4 has no relevant document.
    fn trec_run() -> String {
        let mut run = String::from(
            "q1 Q0 d3 1 4.0 t\nq1 Q0 d1 2 3.0 t\nq1 Q0 d5 3 2.0 t\nq1 Q0 d2 4 1.0 t\n",
        );
        for i in 1..=10 {
            writeln!(run, "q2 Q0 x{i} {i} {}.0 t", 100 - i).unwrap();
        }
        run + "q2 Q0 d7 11 50.0 t\n"
    }

    /// Hand-computed q1 nDCG@10: (2/log2 3 + 1/log2 5) / (2 + 1/log2 3 + 1/2).
    fn q1_ndcg() -> f64 {
        (2.0 / 3f64.log2() + 1.0 / 5f64.log2()) / (2.0 + 1.0 / 3f64.log2() + 0.5)
    }

    fn qrels_of(text: &str) -> Qrels {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qrels.tsv");
        std::fs::write(&path, text).unwrap();
        read_qrels(&path).unwrap()
    }

    /// A run from TREC lines (rank column ignored, doc ids reduced as score.py does).
    fn run_of(trec: &str) -> Run {
        let mut run = Run::new();
        for line in trec.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let hit = (doc_id(fields[2]), fields[4].parse().unwrap());
            run.entry(fields[0].to_owned()).or_default().push(hit);
        }
        run
    }

    fn metrics(ndcg_10: f64, recall_10: f64, recall_100: f64, mrr_10: f64) -> Metrics {
        Metrics {
            ndcg_10,
            recall_10,
            recall_100,
            mrr_10,
        }
    }

    fn assert_close(actual: f64, expected: f64, tolerance: f64, what: &str) {
        assert!(
            (actual - expected).abs() <= tolerance,
            "{what}: {actual} != {expected}"
        );
    }

    #[test]
    fn hand_computed_case_of_test_score_py() {
        assert_close(q1_ndcg(), 0.5405859, 5e-7, "q1 nDCG by hand (places=6)");
        let eval = evaluate(&qrels_of(QRELS), &run_of(&trec_run()));
        assert_eq!(eval.queries, 3, "q4 has no relevant document");
        assert_eq!(eval.queries_without_results, 1, "q3");
        let q1 = eval.per_query["q1"];
        assert_close(q1.ndcg_10, 0.5405859, 5e-7, "q1 nDCG@10 (places=6)");
        assert_close(q1.ndcg_10, q1_ndcg(), 1e-15, "q1 nDCG@10");
        assert_eq!(
            (q1.recall_10, q1.recall_100, q1.mrr_10),
            (2.0 / 3.0, 2.0 / 3.0, 0.5)
        );
        assert_eq!(eval.per_query["q2"], metrics(0.0, 0.0, 1.0, 0.0));
        assert_eq!(eval.per_query["q3"], Metrics::default());
        assert!(!eval.per_query.contains_key("q4"));
        assert_close(eval.mean.ndcg_10, q1_ndcg() / 3.0, 1e-15, "mean nDCG@10");
        assert_close(
            eval.mean.recall_10,
            (2.0 / 3.0) / 3.0,
            1e-15,
            "mean Recall@10",
        );
        assert_close(
            eval.mean.recall_100,
            (2.0 / 3.0 + 1.0) / 3.0,
            1e-15,
            "mean Recall@100",
        );
        assert_close(eval.mean.mrr_10, 0.5 / 3.0, 1e-15, "mean MRR@10");
    }

    #[test]
    fn doc_paths_score_as_their_ids() {
        let trec = trec_run();
        let as_paths: String = trec
            .lines()
            .map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                format!("{} Q0 docs/{}.md {} {} t\n", f[0], f[2], f[3], f[4])
            })
            .collect();
        let qrels = qrels_of(QRELS);
        let by_path = evaluate(&qrels, &run_of(&as_paths));
        assert_eq!(by_path, evaluate(&qrels, &run_of(&trec)));
    }

    #[test]
    fn ties_follow_trec_eval_reverse_docid() {
        // Equal scores: the larger doc id (string order) comes first.
        let qrels = qrels_of("a\td1\t1\n");
        let eval = evaluate(&qrels, &run_of("a Q0 d1 1 1.0 t\na Q0 d2 2 1.0 t\n"));
        assert_eq!(eval.mean.mrr_10, 0.5);
        // String order, not numeric: "9" > "10".
        let qrels = qrels_of("a\t10\t1\n");
        let eval = evaluate(&qrels, &run_of("a Q0 10 1 1.0 t\na Q0 9 2 1.0 t\n"));
        assert_eq!(eval.mean.mrr_10, 0.5);
    }

    #[test]
    fn graded_ideal_is_cut_at_10() {
        // 12 relevant docs with gain 1; a perfect top 10 gives nDCG@10 = 1.
        let qrels: String = (0..12).map(|i| format!("a\td{i}\t1\n")).collect();
        let run: String = (0..10)
            .map(|i| format!("a Q0 d{i} {} {} t\n", i + 1, 100 - i))
            .collect();
        let eval = evaluate(&qrels_of(&qrels), &run_of(&run));
        assert_close(eval.mean.ndcg_10, 1.0, 1e-15, "nDCG@10");
        assert_eq!(eval.mean.recall_10, 10.0 / 12.0);
    }

    #[test]
    fn duplicate_hits_count_once() {
        let qrels = qrels_of("a\td1\t1\na\td2\t1\n");
        let eval = evaluate(
            &qrels,
            &run_of("a Q0 d1 1 3 t\na Q0 d1 2 2 t\na Q0 d2 3 1 t\n"),
        );
        assert_close(eval.mean.ndcg_10, 1.0, 1e-15, "nDCG@10");
        // The first occurrence in score order counts, wherever it is in the run.
        let qrels = qrels_of("a\td1\t1\n");
        let eval = evaluate(
            &qrels,
            &run_of("a Q0 d1 1 1 t\na Q0 d2 2 2 t\na Q0 d1 3 3 t\n"),
        );
        assert_eq!(eval.mean.mrr_10, 1.0);
    }

    #[test]
    fn gains_are_linear_and_non_positive_judgments_gain_nothing() {
        let qrels = qrels_of("a d1 3\na d2 1\na d3 0\na d4 -2\n");
        let run = run_of("a Q0 d4 1 5 t\na Q0 d3 2 4 t\na Q0 d2 3 3 t\na Q0 d1 4 2 t\n");
        let eval = evaluate(&qrels, &run);
        let expected = (1.0 / 4f64.log2() + 3.0 / 5f64.log2()) / (3.0 + 1.0 / 3f64.log2());
        assert_close(eval.mean.ndcg_10, expected, 1e-15, "nDCG@10");
        assert_eq!((eval.mean.recall_10, eval.mean.mrr_10), (1.0, 1.0 / 3.0));
    }

    #[test]
    fn recall_at_100_counts_rank_100_not_101() {
        let qrels = qrels_of("a d100 1\na d101 1\n");
        let run: String = (1..=150)
            .map(|i| format!("a Q0 d{i} {i} {} t\n", 1000 - i))
            .collect();
        let eval = evaluate(&qrels, &run_of(&run));
        assert_eq!(eval.per_query["a"], metrics(0.0, 0.0, 0.5, 0.0));
    }

    #[test]
    fn missing_queries_score_zero_and_queries_without_relevant_docs_are_skipped() {
        let qrels = qrels_of("a d1 1\nb d1 1\nc d1 0\nc d2 -1\n");
        let eval = evaluate(
            &qrels,
            &run_of("a Q0 d1 1 1 t\nc Q0 d1 1 1 t\nz Q0 d1 1 1 t\n"),
        );
        assert_eq!(eval.queries, 2);
        assert_eq!(eval.queries_without_results, 1);
        assert_eq!(eval.per_query["a"], metrics(1.0, 1.0, 1.0, 1.0));
        assert_eq!(eval.per_query["b"], Metrics::default());
        assert_eq!(eval.mean, metrics(0.5, 0.5, 0.5, 0.5));
        let empty = Run::from([("b".to_owned(), Vec::new())]);
        assert_eq!(evaluate(&qrels, &empty).queries_without_results, 2);
    }

    #[test]
    fn subset_keeps_only_the_chosen_queries() {
        let qrels = qrels_of("a d1 1\nb d1 1\n");
        let run = run_of("a Q0 d1 1 1 t\n");
        let only_b = evaluate_subset(&qrels, &run, |q| q == "b");
        assert_eq!((only_b.queries, only_b.queries_without_results), (1, 1));
        assert_eq!(only_b.mean, Metrics::default());
        let only_a = evaluate_subset(&qrels, &run, |q| q == "a");
        assert_eq!(only_a.mean, metrics(1.0, 1.0, 1.0, 1.0));
        assert_eq!(
            evaluate_subset(&qrels, &run, |_| false),
            Evaluation::default()
        );
        assert_eq!(evaluate(&Qrels::new(), &run), Evaluation::default());
    }

    #[test]
    fn metrics_serialize_with_score_py_names() {
        let json = serde_json::to_value(metrics(0.25, 0.5, 0.75, 1.0)).unwrap();
        let expected = serde_json::json!({"nDCG@10": 0.25, "Recall@10": 0.5, "Recall@100": 0.75, "MRR@10": 1.0});
        assert_eq!(json, expected);
    }

    /// splitmix64: a tiny deterministic generator for the parity collections.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        }
    }

    /// A pseudo-random collection as (qrels file text, run file text, our run):
    /// 40 queries, graded and negative judgments, queries with nothing
    /// relevant, queries missing from the run, a run query not in the qrels,
    /// many tied scores, duplicate hits, doc ids written as paths.
    fn random_collection(seed: u64) -> (String, String, Run) {
        let mut rng = Rng(seed);
        let mut qrels = String::from("query-id\tdoc-id\trelevance\n");
        let (mut trec, mut run) = (String::new(), Run::new());
        for q in (1..=40).chain([99]) {
            if q != 99 {
                for _ in 0..rng.below(15) {
                    let rel = rng.below(6) as i64 - 1;
                    writeln!(qrels, "{q}\t{}\t{rel}", rng.below(60) + 1).unwrap();
                }
            }
            if rng.below(8) == 0 {
                continue;
            }
            for rank in 1..=rng.below(150) + 1 {
                let doc = rng.below(120) + 1;
                let score = match rng.below(10) {
                    0 => 1.0 / (rng.below(7) + 1) as f64,
                    _ => rng.below(12) as f64 * 0.25,
                };
                let name = if rng.below(3) == 0 {
                    format!("docs/{doc}.md")
                } else {
                    doc.to_string()
                };
                writeln!(trec, "{q} Q0 {name} {rank} {score} t").unwrap();
                run.entry(q.to_string())
                    .or_default()
                    .push((doc_id(&name), score));
            }
        }
        (qrels, trec, run)
    }

    /// score.py: from `MEMIDX_SCORE_PY`, else the shared collections' copy.
    fn score_py_path() -> PathBuf {
        std::env::var_os("MEMIDX_SCORE_PY")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/score.py")
            })
    }

    /// Runs `score.py QRELS RUN --json --per-query [extra]`; `None` (after
    /// [`skip`]) when python3 or the script is missing.
    fn score_py(qrels: &Path, run: &Path, extra: &[&str]) -> Option<Value> {
        let script = score_py_path();
        if !script.is_file() {
            skip(&format!(
                "{} not found (set MEMIDX_SCORE_PY)",
                script.display()
            ));
            return None;
        }
        let output = Command::new("python3")
            .arg(&script)
            .args([qrels, run])
            .args(["--json", "--per-query"])
            .args(extra)
            .output();
        let output = match output {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                skip("python3 not found");
                return None;
            }
            other => other.expect("cannot run python3"),
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "score.py failed: {stderr}");
        Some(serde_json::from_slice(&output.stdout).expect("score.py prints JSON"))
    }

    /// Asserts that score.py's JSON output holds our numbers to 1e-9.
    fn assert_same_as_score_py(ours: &Evaluation, theirs: &Value) {
        assert_eq!(theirs["queries"], ours.queries);
        assert_eq!(
            theirs["queries_without_results"],
            ours.queries_without_results
        );
        assert_same_metrics(&ours.mean, theirs, "mean");
        let per_query = theirs["per_query"].as_object().expect("per_query object");
        assert_eq!(
            per_query.keys().collect::<Vec<_>>(),
            ours.per_query.keys().collect::<Vec<_>>()
        );
        for (qid, metrics) in &ours.per_query {
            assert_same_metrics(metrics, &per_query[qid], qid);
        }
    }

    fn assert_same_metrics(ours: &Metrics, theirs: &Value, what: &str) {
        let Value::Object(ours) = serde_json::to_value(ours).unwrap() else {
            unreachable!()
        };
        for (name, value) in ours {
            let theirs = theirs[&name]
                .as_f64()
                .unwrap_or_else(|| panic!("{what}: no {name}"));
            assert_close(
                value.as_f64().unwrap(),
                theirs,
                1e-9,
                &format!("{what} {name}"),
            );
        }
    }

    #[test]
    fn means_match_score_py_on_random_collections() {
        let dir = tempfile::tempdir().unwrap();
        for seed in [1, 2, 3] {
            let (qrels_text, trec, run) = random_collection(seed);
            let (qrels_path, run_path) =
                (dir.path().join("qrels.tsv"), dir.path().join("run.trec"));
            std::fs::write(&qrels_path, &qrels_text).unwrap();
            std::fs::write(&run_path, &trec).unwrap();
            let ours = evaluate(&read_qrels(&qrels_path).unwrap(), &run);
            assert!(
                ours.queries > 20 && ours.queries_without_results > 0 && ours.mean.ndcg_10 > 0.0
            );
            let Some(theirs) = score_py(&qrels_path, &run_path, &[]) else {
                return;
            };
            assert_same_as_score_py(&ours, &theirs);
        }
    }

    #[test]
    fn score_py_reads_back_write_trec_in_our_order() {
        let (qrels_text, _, run) = random_collection(4);
        let dir = tempfile::tempdir().unwrap();
        let (qrels_path, run_path) = (dir.path().join("qrels.tsv"), dir.path().join("run.trec"));
        std::fs::write(&qrels_path, qrels_text).unwrap();
        let order: Vec<String> = run.keys().cloned().collect();
        let mut file = std::fs::File::create(&run_path).unwrap();
        write_trec(&mut file, &run, &order, "memidx").unwrap();
        drop(file);
        let ours = evaluate(&read_qrels(&qrels_path).unwrap(), &run);
        // By score (trec_eval's rule) and by our rank column: the same numbers.
        for extra in [&[][..], &["--use-rank"]] {
            let Some(theirs) = score_py(&qrels_path, &run_path, extra) else {
                return;
            };
            assert_same_as_score_py(&ours, &theirs);
        }
    }
}
