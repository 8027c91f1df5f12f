//! The dense list's approximate index, the rows' sign codes (`index
//! --dense-index`, `search --exact`, `--dense-rescore`), through the real
//! binary, on the fixtures forced to have them.

use std::collections::HashMap;
use std::fs;

use serde_json::Value;

use crate::common::Corpus;

const QUERIES: &[&str] = &[
    "database failover during maintenance",
    "how do we rotate credentials",
    "search results were empty",
    "disk filled up on the primary",
    "payment retries and idempotency",
    "INC-2024-Q1-003",
];

/// `explain --mode dense --json ARGS…`, parsed.
fn explain_dense(corpus: &Corpus, query: &str, args: &[&str]) -> Value {
    corpus.json(&[&["explain", query, "--mode", "dense", "--json"][..], args].concat())
}

/// The generation folder of `corpus`'s index (its only one).
fn generation_dir(corpus: &Corpus) -> std::path::PathBuf {
    fs::read_dir(corpus.path().join(".memidx"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("gen-"))
        .unwrap()
}

/// Writes `bytes` over `path`, keeping its modification time, so that
/// only a checksum tells.
fn rewrite_unnoticed(path: &std::path::Path, bytes: &[u8]) {
    let mtime = fs::metadata(path).unwrap().modified().unwrap();
    fs::write(path, bytes).unwrap();
    crate::common::set_mtime(path, mtime);
}

/// Every allowed chunk's exact dense score (a window as large as the
/// allowed chunks scans exactly), by chunk id.
fn exact_scores(
    corpus: &Corpus,
    query: &str,
    chunks: usize,
    filter: &[&str],
) -> HashMap<String, f64> {
    let all = chunks.to_string();
    let args = [
        &[
            "--mode",
            "dense",
            "-k",
            &all,
            "--window",
            &all,
            "--exact",
            "--dense-feedback",
            "0",
            "--per-file",
            "0",
        ][..],
        filter,
    ]
    .concat();
    let response = corpus.search_json(query, &args);
    response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let id = r["chunk_id"].as_str().unwrap().to_string();
            (id, r["ranks"]["dense"]["score"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn a_rescored_window_scores_every_chunk_as_the_exact_scan_and_says_what_it_scanned() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--dense-index", "always"]);
    let status = corpus.json(&["status", "--json"]);
    let chunks = status["counts"]["chunks"].as_u64().unwrap() as usize;
    let dense = &status["dense_index"];
    assert_eq!(dense["setting"], "always");
    assert_eq!(dense["rows"].as_u64(), Some(chunks as u64), "{status}");
    // One bit per dimension: 256 dimensions make 32 bytes a row, in
    // blocks of 32 rows (the last one padded).
    assert_eq!(
        dense["bytes"].as_u64(),
        Some(32 * 32 * chunks.div_ceil(32) as u64)
    );
    assert_eq!(dense["rescore_per_window"], 20);
    // The codes are stored by cell: a header, a centroid of 256 int8
    // values and two words a cell, and two words a row.
    let cells = dense["cells_bytes"].as_u64().unwrap();
    assert!(cells > 24 + 8 * chunks as u64 + 264, "{status}");

    for filter in [&[][..], &["--filter", "environment=production"][..]] {
        for query in QUERIES {
            let exact = exact_scores(&corpus, query, chunks, filter);
            // Rescoring 30 rows for a window of 10 leaves most rows unscored
            // (and without feedback the query is the same both ways).
            let args = [
                &[
                    "-k",
                    "10",
                    "--window",
                    "10",
                    "--dense-rescore",
                    "30",
                    "--dense-feedback",
                    "0",
                ][..],
                filter,
            ]
            .concat();
            let rescored = explain_dense(&corpus, query, &args);
            let list = &rescored["lists"][0];
            let approximate = &list["approximate"];
            assert_eq!(
                approximate["scanned"].as_u64(),
                Some(exact.len() as u64),
                "{list}"
            );
            assert_eq!(approximate["rescored"], 30, "{list}");
            assert_eq!(list["matched"].as_u64(), Some(exact.len() as u64));
            for result in rescored["results"].as_array().unwrap() {
                let id = result["chunk_id"].as_str().unwrap();
                let score = result["lists"][0]["score"].as_f64().unwrap();
                assert_eq!(exact.get(id), Some(&score), "{query:?} {filter:?}: {id}");
            }
            // `--exact` scores every allowed row and says nothing was approximate.
            let scanned = explain_dense(&corpus, query, &[&["--exact"][..], filter].concat());
            assert!(scanned["lists"][0]["approximate"].is_null(), "{scanned}");
            assert_eq!(
                scanned["lists"][0]["matched"].as_u64(),
                Some(exact.len() as u64)
            );
            // Rescoring every allowed row is the exact scan.
            let all = exact.len().to_string();
            let whole = explain_dense(
                &corpus,
                query,
                &[&["--dense-rescore", &all][..], filter].concat(),
            );
            assert!(whole["lists"][0]["approximate"].is_null(), "{whole}");
        }
    }
    let human = corpus
        .memidx()
        .args([
            "explain",
            QUERIES[0],
            "--mode",
            "dense",
            "--dense-rescore",
            "30",
            "--window",
            "50",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains(&format!(", {chunks} codes scanned, 50 rescored)")),
        "{text}"
    );
    let human = corpus.memidx().args(["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("dense      sign codes, 1 bit per dimension ("),
        "{text}"
    );
}

#[test]
fn the_setting_is_kept_and_a_reindex_places_new_chunks_in_the_kept_cells() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let status = corpus.json(&["status", "--json"]);
    assert_eq!(status["dense_index"]["setting"], "auto");
    assert!(
        status["dense_index"]["rows"].is_null(),
        "the fixtures are small"
    );
    let scanned = explain_dense(&corpus, QUERIES[0], &[]);
    assert!(scanned["lists"][0]["approximate"].is_null());

    // Asking for the codes rebuilds an unchanged folder's index.
    corpus.index_with(&["--dense-index", "always"]);
    let before = corpus.json(&["status", "--json"])["dense_index"]["rows"].clone();
    assert!(before.as_u64().unwrap() > 1, "{before}");

    let note = "Bonsai care: the lobby juniper is watered on Tuesdays, misted daily and \
                repotted every second spring with akadama soil.";
    fs::write(
        corpus.path().join("notes/bonsai.md"),
        format!("# Bonsai\n\n{note}\n"),
    )
    .unwrap();
    corpus.index();
    let after = corpus.json(&["status", "--json"]);
    assert_eq!(
        after["dense_index"]["setting"], "always",
        "kept without the flag"
    );
    assert_eq!(
        after["dense_index"]["rows"].as_u64(),
        Some(before.as_u64().unwrap() + 1)
    );
    let found = corpus.search_json(
        "watering the lobby juniper bonsai",
        &[
            "--mode",
            "dense",
            "-k",
            "1",
            "--window",
            "10",
            "--dense-rescore",
            "20",
        ],
    );
    assert_eq!(
        found["results"][0]["chunk_id"], "notes/bonsai.md#1",
        "{found}"
    );

    corpus.index_with(&["--dense-index", "never"]);
    let never = corpus.json(&["status", "--json"]);
    assert_eq!(never["dense_index"]["setting"], "never");
    assert!(never["dense_index"]["rows"].is_null());
    assert_eq!(never["dense_index"]["bytes"], 0);
    let scanned = explain_dense(&corpus, QUERIES[0], &["--dense-rescore", "20"]);
    assert!(scanned["lists"][0]["approximate"].is_null());
}

#[test]
fn damaged_codes_are_named_and_exact_searches_skip_them() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--dense-index", "always"]);
    let gen_dir = generation_dir(&corpus);
    let path = gen_dir.join("codes.b32");
    let bytes = fs::read(&path).unwrap();
    // Zeroed codes of the same length and modification time (so only a
    // checksum would tell): the returned chunks' codes disagree with their
    // vectors.
    rewrite_unnoticed(&path, &vec![0u8; bytes.len()]);
    let search = [
        "search",
        QUERIES[0],
        "--mode",
        "dense",
        "--window",
        "10",
        "--dense-rescore",
        "20",
    ];
    let output = corpus.memidx().args(search).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("codes.b32") && stderr.contains("does not match"),
        "{stderr}"
    );
    // The exact scan reads no code.
    let exact = corpus
        .memidx()
        .args(["search", QUERIES[0], "--mode", "dense", "--exact"])
        .output()
        .unwrap();
    assert_eq!(exact.status.code(), Some(0), "{exact:?}");
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let output = corpus.memidx().args(search).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("codes.b32"), "{stderr}");
    let verify = corpus
        .memidx()
        .args(["status", "--verify"])
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&verify.stderr);
    // 119 rows fill four blocks of 32 (the file's whole length, 4096).
    assert!(stderr.contains("codes.b32 has 2048 bytes"), "{stderr}");
}

#[test]
fn zeroed_vectors_are_named_by_search_and_by_explain() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let path = corpus.path().join(".memidx/gen-1/vectors.i8");
    let bytes = fs::read(&path).unwrap();
    // Zeroed at the same length and modification time (so only a checksum
    // would tell): every score is 0, within a cosine's range; the rows of
    // the chunks returned fail their block checksums (and, in an index
    // without them, have length 0 where the table says 1).
    rewrite_unnoticed(&path, &vec![0u8; bytes.len()]);
    for args in [
        &["search", QUERIES[0], "--mode", "dense"][..],
        &["explain", QUERIES[0], "--mode", "dense", "-k", "3"],
    ] {
        let output = corpus.memidx().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("vectors.i8 checksum mismatch in bytes 0..4096"),
            "{args:?}: {stderr}"
        );
    }
}

/// `files` markdown files of `sections` sections each under `dir`, every
/// section long enough to be its own chunk, its words drawn from a small
/// vocabulary by a fixed generator (so runs agree).
fn sections_corpus(dir: &std::path::Path, files: usize, sections: usize) {
    const WORDS: &[&str] = &[
        "alpha", "beta", "gamma", "delta", "kernel", "socket", "timeout", "replica", "cluster",
        "shard", "index", "vector", "query", "token", "parser", "buffer", "cache", "thread",
        "mutex", "queue",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    fs::create_dir_all(dir).unwrap();
    for file in 0..files {
        let mut text = format!("# File {file}\n\n");
        for section in 0..sections {
            text += &format!("## Section {file}-{section}\n\n");
            for _ in 0..60 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text += WORDS[(state % WORDS.len() as u64) as usize];
                text += " ";
            }
            text += &format!("item{file}x{section}.\n\n");
        }
        fs::write(dir.join(format!("f{file:03}.md")), text).unwrap();
    }
}

#[test]
fn auto_writes_codes_for_a_mid_sized_index_which_a_search_of_it_alone_does_not_use() {
    let corpus = Corpus::empty();
    sections_corpus(corpus.path(), 100, 101);
    corpus.index();
    let status = corpus.json(&["status", "--json"]);
    let chunks = status["counts"]["chunks"].as_u64().unwrap();
    let dense = &status["dense_index"];
    assert!((10_000..100_000).contains(&chunks), "{chunks}");
    assert_eq!(dense["setting"], "auto");
    assert_eq!(dense["auto_min_chunks"], 10_000);
    assert_eq!(dense["auto_search_min_chunks"], 100_000);
    assert_eq!(dense["rows"].as_u64(), Some(chunks), "{status}");
    let alone = explain_dense(&corpus, "socket timeout item3x4", &[]);
    assert!(alone["lists"][0]["approximate"].is_null(), "{alone}");
    let human = corpus.memidx().arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("dense      exact scan of every vector; its sign codes (")
            && text.contains("serve searches over 100000 chunks and more"),
        "{text}"
    );

    // Ten copies of the index searched together cover 100,000 rows: their
    // codes choose the rows to rescore, and the best chunk is the one the
    // exact scan finds (every copy's, in copy order).
    let mut args = vec!["--index".to_string(), ".memidx".to_string()];
    for copy in 1..10 {
        let dir = corpus.path().join(format!("copy{copy}"));
        crate::common::copy_dir(&corpus.path().join(".memidx"), &dir);
        args.extend(["--index".to_string(), dir.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let query = "socket timeout item3x4";
    // By default they rescore 4,000 rows, and cells holding 20 times that
    // are over half the rows: every code is scored.
    let whole = explain_dense(&corpus, query, &args);
    let approximate = &whole["lists"][0]["approximate"];
    assert_eq!(approximate["scanned"].as_u64(), Some(10 * chunks));
    assert!(approximate["cells"].is_null(), "{approximate}");
    // Rescoring 2,000, they probe the cells holding 40 %.
    let together = explain_dense(
        &corpus,
        query,
        &[&args[..], &["--dense-rescore", "2000"]].concat(),
    );
    let approximate = &together["lists"][0]["approximate"];
    let rescored = approximate["rescored"].as_u64().unwrap();
    let scanned = approximate["scanned"].as_u64().unwrap();
    assert!(
        20 * rescored <= scanned && scanned < 10 * chunks,
        "{approximate}"
    );
    let cells = &approximate["cells"];
    assert!(
        cells["probed"].as_u64() < cells["of"].as_u64(),
        "{approximate}"
    );
    let exact = explain_dense(&corpus, query, &[&args[..], &["--exact"][..]].concat());
    assert!(exact["lists"][0]["approximate"].is_null());
    let top = |v: &Value| v["results"][0]["chunk_id"].as_str().unwrap().to_string();
    assert_eq!(top(&together), top(&exact));
    assert_eq!(top(&alone), top(&together).split_once(':').unwrap().1);
}

#[test]
fn an_index_without_codes_searched_with_one_that_has_them_has_every_row_rescored() {
    let corpus = crate::common::two_indexes();
    let (notes, work) = (corpus.path().join("notes"), corpus.path().join("work"));
    for (dir, setting) in [(&notes, "always"), (&work, "never")] {
        let output = (corpus.memidx())
            .args(["index", "--quiet", "--dense-index", setting])
            .arg(dir)
            .output()
            .unwrap();
        assert!(output.status.success());
    }
    let chunks = |dir: &std::path::Path| {
        let index = dir.join(".memidx").display().to_string();
        corpus.json(&["status", "--json", "--index", &index])["counts"]["chunks"]
            .as_u64()
            .unwrap()
    };
    let (coded, uncoded) = (chunks(&notes), chunks(&work));
    let args = [
        "--index",
        "notes/.memidx",
        "--index",
        "work/.memidx",
        "--dense-feedback",
        "0",
        "--window",
        "10",
        "--dense-rescore",
        "10",
    ];
    for query in QUERIES {
        let mixed = explain_dense(&corpus, query, &args);
        let list = &mixed["lists"][0];
        assert_eq!(
            list["approximate"]["scanned"].as_u64(),
            Some(coded),
            "{list}"
        );
        assert_eq!(
            list["approximate"]["rescored"].as_u64(),
            Some(10 + uncoded),
            "{list}"
        );
        assert_eq!(list["matched"].as_u64(), Some(coded + uncoded));
        // The index without codes loses nothing: its rows are all scored.
        let exact = explain_dense(&corpus, query, &[&args[..8], &["--exact"][..]].concat());
        let work_ids = |v: &Value| -> Vec<String> {
            (v["results"].as_array().unwrap().iter())
                .map(|r| r["chunk_id"].as_str().unwrap().to_string())
                .filter(|id| id.starts_with("work:"))
                .collect()
        };
        let (from_mixed, from_exact) = (work_ids(&mixed), work_ids(&exact));
        assert!(
            from_exact.iter().all(|id| from_mixed.contains(id)),
            "{query}: {from_mixed:?} {from_exact:?}"
        );
    }
}

#[test]
fn probing_the_nearest_cells_scores_fewer_codes_and_returns_exact_scores() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--dense-index", "always"]);
    let status = corpus.json(&["status", "--json"]);
    let chunks = status["counts"]["chunks"].as_u64().unwrap() as usize;
    let mut fewer = 0;
    for query in QUERIES {
        let exact = exact_scores(&corpus, query, chunks, &[]);
        let args = [
            "-k",
            "10",
            "--window",
            "10",
            "--dense-rescore",
            "20",
            "--dense-feedback",
            "0",
            "--dense-probe",
            "0.3",
        ];
        let probed = explain_dense(&corpus, query, &args);
        let list = &probed["lists"][0];
        let approximate = &list["approximate"];
        let scanned = approximate["scanned"].as_u64().unwrap() as usize;
        // Whole blocks of 32 codes are scored, so a probe of a third of
        // the rows may score them all in a small index.
        assert!((32..=chunks).contains(&scanned), "{list}");
        fewer += usize::from(scanned < chunks);
        let cells = &approximate["cells"];
        let of = cells["of"].as_u64().unwrap();
        assert!(
            (1..=of).contains(&cells["probed"].as_u64().unwrap()),
            "{list}"
        );
        assert!(approximate["rescored"].as_u64().unwrap() <= 20, "{list}");
        // Each chunk found scores as the exact scan scores it.
        for result in probed["results"].as_array().unwrap() {
            let id = result["chunk_id"].as_str().unwrap();
            let score = result["lists"][0]["score"].as_f64().unwrap();
            assert_eq!(exact.get(id), Some(&score), "{query:?}: {id}");
        }
        // Under a filter only the allowed rows count towards the share:
        // the probed cells hold at least 30 % of them, or (a probe that
        // stopped short) every code is scored; scores stay exact.
        let filter = ["--filter", "environment=production"];
        let allowed_exact = exact_scores(&corpus, query, chunks, &filter);
        let filtered = explain_dense(&corpus, query, &[&args[..], &filter[..]].concat());
        let list = &filtered["lists"][0];
        let matched = list["matched"].as_u64().unwrap();
        assert!(matched < chunks as u64, "{list}");
        let approximate = &list["approximate"];
        let scanned = approximate["scanned"].as_u64().unwrap();
        assert!(
            approximate["cells"].is_null() || 10 * scanned >= 3 * matched,
            "{list}"
        );
        for result in filtered["results"].as_array().unwrap() {
            let id = result["chunk_id"].as_str().unwrap();
            let score = result["lists"][0]["score"].as_f64().unwrap();
            assert_eq!(allowed_exact.get(id), Some(&score), "{query:?}: {id}");
        }
        // Probing every cell scores every code, as without cells.
        let whole = explain_dense(
            &corpus,
            query,
            &[&args[..8], &["--dense-probe", "1"]].concat(),
        );
        let approximate = &whole["lists"][0]["approximate"];
        assert_eq!(approximate["scanned"].as_u64(), Some(chunks as u64));
        assert!(approximate["cells"].is_null(), "{whole}");
    }
    assert!(fewer > 0, "no probe scored fewer codes than all");
    let human = corpus
        .memidx()
        .args([
            "explain",
            QUERIES[0],
            "--mode",
            "dense",
            "--dense-rescore",
            "20",
        ])
        .args(["--window", "50", "--dense-probe", "0.3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains(" cells, 50 rescored)"), "{text}");
    for (args, message) in [
        (
            &["--dense-probe", "0"][..],
            "not a share above 0 and at most 1",
        ),
        (
            &["--dense-probe", "1.5"][..],
            "not a share above 0 and at most 1",
        ),
        (
            &["--dense-probe", "0.5", "--exact"][..],
            "cannot be used with",
        ),
    ] {
        let output = corpus
            .memidx()
            .args(["search", QUERIES[0]])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn a_damaged_cells_file_is_named_and_exact_searches_skip_it() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--dense-index", "always"]);
    let gen_dir = generation_dir(&corpus);
    let path = gen_dir.join("cells.bin");
    // Another layout's magic, at the same length and modification time (so
    // only a checksum would tell).
    let mut bytes = fs::read(&path).unwrap();
    bytes[0] ^= 1;
    rewrite_unnoticed(&path, &bytes);
    let search = [
        "search",
        QUERIES[0],
        "--mode",
        "dense",
        "--dense-rescore",
        "20",
    ];
    let output = corpus.memidx().args(search).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cells.bin"), "{stderr}");
    let exact = corpus
        .memidx()
        .args(["search", QUERIES[0], "--mode", "dense", "--exact"])
        .output()
        .unwrap();
    assert_eq!(exact.status.code(), Some(0), "{exact:?}");
    let verify = corpus
        .memidx()
        .args(["status", "--verify"])
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&verify.stderr).contains("cells.bin"));
}
