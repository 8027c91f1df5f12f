//! Document dates, `--since`/`--until` and the recency list, through the
//! real binary: each date source and its precedence, every WHEN form, time
//! bounds applied with metadata filters before the lists take their
//! windows, and the recency list's ranks and contributions.

use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::common::{Corpus, fixtures_dir, set_mtime};

/// Writes `text` to `rel` under `corpus`, modified at `mtime`.
fn note(corpus: &Corpus, rel: &str, text: &str, mtime: SystemTime) {
    let path = corpus.path().join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    set_mtime(&path, mtime);
}

/// 2024-03-10T00:00:00Z.
fn march_10() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_710_028_800)
}

/// A corpus whose every date source is used: front matter keys in each
/// combination, dates in names and folders, and modification times. Every
/// note says "kestrel" once, so one query finds them all.
fn dated_corpus() -> Corpus {
    let corpus = Corpus::empty();
    let old = march_10();
    note(
        &corpus,
        "fm-date.md",
        "---\ndate: 2024-02-01\nupdated: 2024-02-20\ncreated: 2024-01-01\nteam: a\n---\n# Date wins\n\nkestrel date\n",
        old,
    );
    note(
        &corpus,
        "fm-updated.md",
        "---\nupdated: 2024-02-20T12:30:00+02:00\ncreated: 2024-01-01\nteam: b\n---\n# Updated wins\n\nkestrel updated\n",
        old,
    );
    note(
        &corpus,
        "fm-created.md",
        "---\ncreated: 2023-12-24 18:00\ndate: someday\nteam: a\n---\n# Created wins\n\nkestrel created\n",
        old,
    );
    note(
        &corpus,
        "log/2024-01-15-standup.md",
        "# Standup\n\nkestrel standup\n",
        old,
    );
    note(
        &corpus,
        "incidents/2023/q4/outage.md",
        "# Outage\n\nkestrel outage\n",
        old,
    );
    note(
        &corpus,
        "reviews/2023/summary.md",
        "---\nteam: b\n---\n# Summary\n\nkestrel summary\n",
        old,
    );
    note(&corpus, "undated.md", "# Undated\n\nkestrel undated\n", old);
    corpus.index();
    corpus
}

/// `(chunk id, date, source)` of each result of `search kestrel --json ARGS`.
fn dated_hits(corpus: &Corpus, args: &[&str]) -> Vec<(String, String, String)> {
    let response = corpus.search_json("kestrel", &[&["-k", "20"][..], args].concat());
    results(&response)
}

fn results(response: &Value) -> Vec<(String, String, String)> {
    response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["chunk_id"].as_str().unwrap().to_string(),
                r["date"]["value"].as_str().unwrap().to_string(),
                r["date"]["from"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn sorted(mut hits: Vec<(String, String, String)>) -> Vec<(String, String, String)> {
    hits.sort();
    hits
}

fn hit(id: &str, date: &str, from: &str) -> (String, String, String) {
    (id.to_string(), date.to_string(), from.to_string())
}

#[test]
fn every_file_is_dated_by_front_matter_then_path_then_mtime() {
    let corpus = dated_corpus();
    assert_eq!(
        sorted(dated_hits(&corpus, &[])),
        [
            hit("fm-created.md#1", "2023-12-24T18:00:00Z", "front matter"),
            hit("fm-date.md#1", "2024-02-01T00:00:00Z", "front matter"),
            hit("fm-updated.md#1", "2024-02-20T10:30:00Z", "front matter"),
            hit(
                "incidents/2023/q4/outage.md#1",
                "2023-10-01T00:00:00Z",
                "path"
            ),
            hit(
                "log/2024-01-15-standup.md#1",
                "2024-01-15T00:00:00Z",
                "path"
            ),
            hit("reviews/2023/summary.md#1", "2023-01-01T00:00:00Z", "path"),
            hit("undated.md#1", "2024-03-10T00:00:00Z", "mtime"),
        ]
    );
    let status = corpus.json(&["status", "--json"]);
    assert_eq!(
        status["dates"],
        json!({
            "oldest": {"path": "reviews/2023/summary.md", "date": "2023-01-01T00:00:00Z", "from": "path"},
            "newest": {"path": "undated.md", "date": "2024-03-10T00:00:00Z", "from": "mtime"},
            "files_by_source": {"front matter": 3, "path": 3, "mtime": 1}
        })
    );
    let human = corpus.memidx().args(["status"]).output().unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.contains(
            "dates      2023-01-01 to 2024-03-10 (3 from front matter, 1 from mtime, 3 from path)\n"
        ),
        "{human}"
    );
    // A stated date shows in the human result line; a modification time
    // does not.
    let out = corpus
        .memidx()
        .args(["search", "kestrel standup", "-k", "1", "--no-text"])
        .output()
        .unwrap();
    let first = String::from_utf8(out.stdout).unwrap();
    assert!(
        first.starts_with("1. ") && first.contains("log/2024-01-15-standup.md:1-3  2024-01-15  ["),
        "{first}"
    );
}

#[test]
fn since_and_until_take_every_form_and_bound_inclusively() {
    let corpus = dated_corpus();
    let ids = |args: &[&str]| -> Vec<String> {
        let out = corpus
            .memidx()
            .args([&["search", "kestrel", "--json", "-k", "20"][..], args].concat())
            .output()
            .unwrap();
        match out.status.code() {
            Some(1) => Vec::new(),
            Some(0) => sorted(results(&serde_json::from_slice(&out.stdout).unwrap()))
                .into_iter()
                .map(|(id, _, _)| id)
                .collect(),
            _ => panic!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)),
        }
    };
    assert_eq!(
        ids(&["--since", "2024-02-01"]),
        ["fm-date.md#1", "fm-updated.md#1", "undated.md#1"]
    );
    // An --until date includes that whole day; a date-time is exact.
    assert_eq!(
        ids(&["--until", "2023-12-24"]),
        [
            "fm-created.md#1",
            "incidents/2023/q4/outage.md#1",
            "reviews/2023/summary.md#1"
        ]
    );
    assert_eq!(
        ids(&["--until", "2023-12-24T17:59:59"]),
        ["incidents/2023/q4/outage.md#1", "reviews/2023/summary.md#1"]
    );
    // An offset moves the instant: 12:29 at +02:00 is before 10:30Z.
    assert_eq!(
        ids(&[
            "--since",
            "2024-02-20T12:30+02:00",
            "--until",
            "2024-02-20T10:30:00Z"
        ]),
        ["fm-updated.md#1"]
    );
    assert!(
        ids(&[
            "--since",
            "2024-02-20T12:31+02:00",
            "--until",
            "2024-02-20T23:00"
        ])
        .is_empty()
    );
    // Spans count back from now: everything here is older than a week and
    // younger than a hundred years.
    assert!(ids(&["--since", "1w"]).is_empty());
    assert_eq!(ids(&["--since", "100y"]).len(), 7);
    assert_eq!(ids(&["--until", "7d"]).len(), 7);
    let request = corpus.path().join("request.json");
    fs::write(
        &request,
        r#"{"search_text": "kestrel", "top_k": 20, "time_filter": {"since": "2024-01-15", "until": "2024-02-01"}}"#,
    )
    .unwrap();
    let response = corpus.json(&["search", "--request", request.to_str().unwrap()]);
    let mut got: Vec<String> = results(&response).into_iter().map(|h| h.0).collect();
    got.sort();
    assert_eq!(got, ["fm-date.md#1", "log/2024-01-15-standup.md#1"]);
}

#[test]
fn a_malformed_or_impossible_bound_is_an_error_naming_the_forms() {
    let corpus = dated_corpus();
    for (args, wanted) in [
        (
            vec!["--since", "yesterday"],
            "memidx: --since 'yesterday' is not a time; give an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset such as +02:00 or Z) or a span back from now (7d, 2w, 6m, 1y)\n",
        ),
        (
            vec!["--until", "2024-02-30"],
            "memidx: --until '2024-02-30' is not a time; give an ISO date",
        ),
        (
            vec!["--since", "2024-03-01", "--until", "2024-02-01"],
            "memidx: --since 2024-03-01 (2024-03-01T00:00:00Z) is after --until 2024-02-01 (2024-02-01T23:59:59Z): no date could pass both\n",
        ),
    ] {
        let out = corpus
            .memidx()
            .args([&["search", "kestrel"][..], &args].concat())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with(wanted), "{args:?}: {err}");
    }
    assert!(
        refused_request(
            &corpus,
            r#"{"search_text": "kestrel", "time_filter": {"since": "soon"}}"#
        )
        .starts_with("memidx: time_filter.since 'soon' is not a time;")
    );
}

#[test]
fn a_negative_span_is_refused_and_every_rfc_3339_time_is_accepted() {
    let corpus = dated_corpus();
    let run = |args: &[&str]| {
        let out = corpus
            .memidx()
            .args([&["search", "kestrel", "--json", "-k", "20"][..], args].concat())
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    // A span back from now with a minus sign would be a time in the future.
    // Given as `--flag=-1d` or as a separate word, the same refusal.
    for (flag, span) in [("--since", "-1d"), ("--until", "-2w"), ("--since", "-0y")] {
        let joined = format!("{flag}={span}");
        for args in [&[joined.as_str()][..], &[flag, span][..]] {
            let (code, out, err) = run(args);
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(out.is_empty());
            assert!(
                err.starts_with(&format!(
                    "memidx: {flag} '{span}' would be a time in the future: a span back from now is positive (7d, not -7d); give an ISO date"
                )),
                "{args:?}: {err}"
            );
        }
    }
    assert!(
        refused_request(
            &corpus,
            r#"{"search_text": "kestrel", "time_filter": {"since": "-1d"}}"#
        )
        .starts_with("memidx: time_filter.since '-1d' would be a time in the future")
    );

    // The last instants RFC 3339 can write are times: nothing is dated
    // after them, everything before.
    for (flag, when, found) in [
        ("--since", "9999-12-31T23:59:59Z", 0),
        ("--since", "9999-12-31t23:59:59.5z", 0),
        ("--since", "9999-12-31T23:59:59-23:59", 0),
        ("--since", "9999-12-31", 0),
        ("--until", "9999-12-31T23:59:59Z", 7),
        ("--until", "9999-12-31", 7),
        ("--since", "0000-01-01T00:00:00Z", 7),
        ("--since", "0000-01-01T00:00:00+23:59", 7),
    ] {
        let (code, out, err) = run(&[flag, when]);
        assert_eq!(code, if found == 0 { 1 } else { 0 }, "{flag} {when}: {err}");
        let response: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(results(&response).len(), found, "{flag} {when}");
    }
    let (code, _, err) = run(&["--since", "9999-12-31T23:59:59Z", "--until", "2024-01-01"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(
            "memidx: --since 9999-12-31T23:59:59Z is after --until 2024-01-01 (2024-01-01T23:59:59Z)"
        ),
        "{err}"
    );
    let explained = corpus.json(&["explain", "kestrel", "--json", "--until", "9999-12-31"]);
    assert_eq!(
        explained["filter"],
        json!(["until=9999-12-31 (9999-12-31T23:59:59Z)"])
    );
}

#[test]
fn time_bounds_join_metadata_filters_before_any_window_is_taken() {
    let corpus = dated_corpus();
    // team=a is fm-date (2024-02-01) and fm-created (2023-12-24); the time
    // bound keeps the first. With a window of 1, the filters are applied
    // before it: the one allowed chunk is still found by both lists.
    for window in ["1", "50"] {
        let hits = dated_hits(
            &corpus,
            &[
                "--filter",
                "team=a",
                "--since",
                "2024-01-01",
                "--window",
                window,
            ],
        );
        assert_eq!(
            hits,
            [hit("fm-date.md#1", "2024-02-01T00:00:00Z", "front matter")],
            "window {window}"
        );
    }
    let response = corpus.search_json(
        "kestrel",
        &[
            "--filter",
            "team=b",
            "--until",
            "2024-01-01",
            "-k",
            "1",
            "--window",
            "1",
        ],
    );
    assert_eq!(
        results(&response),
        [hit(
            "reviews/2023/summary.md#1",
            "2023-01-01T00:00:00Z",
            "path"
        )]
    );
    let ranks = &response["results"][0]["ranks"];
    assert_eq!(ranks["sparse"]["rank"], 1);
    assert_eq!(ranks["dense"]["rank"], 1);
    // explain names the bounds, and why a chunk outside them is absent.
    let explained = corpus.json(&[
        "explain",
        "kestrel summary",
        "--json",
        "--filter",
        "team=b",
        "--until",
        "2024-01-01",
        "--chunk",
        "fm-updated.md#1",
    ]);
    assert_eq!(
        explained["filter"],
        json!(["team=b", "until=2024-01-01 (2024-01-01T23:59:59Z)"])
    );
    let reasons: Vec<&str> = explained["results"][0]["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["absent"].as_str().unwrap_or(""))
        .collect();
    for reason in reasons {
        assert_eq!(
            reason,
            "removed by filter until=2024-01-01 (2024-01-01T23:59:59Z) (dated 2024-02-20T10:30:00Z)"
        );
    }
}

#[test]
fn the_recency_list_ranks_newest_first_and_its_contributions_add_up() {
    let corpus = dated_corpus();
    let response = corpus.search_json("kestrel", &["--mode", "recency", "-k", "20"]);
    let ranked: Vec<(String, f64)> = response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["chunk_id"].as_str().unwrap().to_string(),
                r["ranks"]["recency"]["score"].as_f64().unwrap(),
            )
        })
        .collect();
    let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "undated.md#1",
            "fm-updated.md#1",
            "fm-date.md#1",
            "log/2024-01-15-standup.md#1",
            "fm-created.md#1",
            "incidents/2023/q4/outage.md#1",
            "reviews/2023/summary.md#1",
        ]
    );
    // The raw score halves every 30 days behind the newest: fm-date is
    // 38 days behind undated (2024-03-10 − 2024-02-01).
    assert_eq!(ranked[0].1, 1.0);
    assert_eq!(ranked[2].1 as f32, 0.5f64.powf(38.0 / 30.0) as f32);
    // Fused with the query's lists, at the weight --recent gives it.
    let explained = corpus.json(&[
        "explain",
        "kestrel standup",
        "--json",
        "--recent",
        "-k",
        "3",
    ]);
    let lists: Vec<(&str, f64)> = explained["lists"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["name"].as_str().unwrap(), l["weight"].as_f64().unwrap()))
        .collect();
    assert_eq!(
        lists,
        [
            ("sparse", 0.3),
            ("dense", 0.4),
            ("file", 0.3),
            ("recency", 0.1)
        ]
    );
    for result in explained["results"].as_array().unwrap() {
        let sum: f64 = result["lists"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["contribution"].as_f64())
            .sum();
        assert_eq!(sum, result["rrf_score"].as_f64().unwrap(), "{result:#}");
    }
    let top = &explained["results"][0];
    assert_eq!(top["chunk_id"], "log/2024-01-15-standup.md#1");
    let recency = &top["lists"][3];
    assert_eq!(recency["rank"], 4);
    assert_eq!(
        recency["contribution"].as_f64().unwrap(),
        0.1 * f64::from(0.5f64.powf(55.0 / 30.0) as f32)
    );
    // The search agrees with explain, and --recency-weight sets the weight.
    let searched = corpus.search_json("kestrel standup", &["--recency-weight", "0.1", "-k", "3"]);
    assert_eq!(searched["results"][0]["rrf_score"], top["rrf_score"]);
    assert_eq!(searched["results"][0]["ranks"]["recency"]["rank"], 4);
}

#[test]
fn the_dated_fixture_measures_the_recency_weights_the_readme_reports() {
    let corpus = Corpus::empty();
    let dated = fixtures_dir().join("dated");
    crate::common::copy_fixture(&dated.join("docs"), corpus.path());
    corpus.index();
    let ndcg = |set: &str, weight: &str| -> (f64, f64) {
        let report = corpus.json(&[
            "eval",
            "--json",
            "--quiet",
            "--queries",
            dated.join(format!("queries{set}.jsonl")).to_str().unwrap(),
            "--qrels",
            dated.join(format!("qrels{set}.tsv")).to_str().unwrap(),
            "--recency-weight",
            weight,
        ]);
        let of = |mode: &str| {
            report["modes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["mode"] == mode)
                .unwrap()["metrics"]["nDCG@10"]
                .as_f64()
                .unwrap()
        };
        (of("hybrid"), of("hybrid+recency"))
    };
    let round = |(a, b): (f64, f64)| ((a * 1e4).round() / 1e4, (b * 1e4).round() / 1e4);
    assert_eq!(round(ndcg("-time", "0.1")), (0.9576, 1.0));
    assert_eq!(round(ndcg("-neutral", "0.1")), (1.0, 1.0));
    assert_eq!(round(ndcg("-neutral", "1.0")), (1.0, 0.7321));
}

/// Runs `memidx search --request FILE` with `request` in FILE, asserts
/// exit 2, and returns stderr.
fn refused_request(corpus: &Corpus, request: &str) -> String {
    let path = corpus.path().join("request.json");
    fs::write(&path, request).unwrap();
    let out = corpus
        .memidx()
        .args(["search", "--request", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{request}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn a_date_from_mtime_is_shown_where_it_decides() {
    let corpus = dated_corpus();
    let human = |args: &[&str]| -> String {
        let output = corpus
            .memidx()
            .args(
                [
                    &["search", "kestrel undated", "-k", "1", "--color", "never"][..],
                    args,
                ]
                .concat(),
            )
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    // An mtime says little about a note: without a time filter it is not shown ...
    assert!(
        human(&[]).starts_with("1. ") && !human(&[]).contains("2024-03-10"),
        "{}",
        human(&[])
    );
    // ... but --since lets the note through by it, and --recent ranks by it.
    for args in [&["--since", "2024-03-01"][..], &["--recent"][..]] {
        let shown = human(args);
        assert!(
            shown
                .lines()
                .next()
                .unwrap()
                .contains("undated.md:1-3  2024-03-10 (mtime)  ["),
            "{args:?}: {shown}"
        );
    }
}
