//! An index that grows by appending (issue 50): after any sequence of
//! edits, additions, deletions, copies, touches and compactions, each run
//! appending a delta part or writing the index whole as its policy says,
//! every answer in every mode equals a fresh full index's byte for byte —
//! ids, order (ties included: copied files tie exactly) and scores.

use crate::common;

use std::fs;

use common::Corpus;
use memidx::index::manifest::Manifest;
use proptest::prelude::*;

/// Words the generated notes are made of: few, so that queries match many
/// chunks and copies tie.
const WORDS: [&str; 12] = [
    "postgres", "pool", "timeout", "ledger", "invoice", "retry", "kafka", "lag", "token", "rotate",
    "deploy", "canary",
];

/// Queries compared after each step.
const QUERIES: [&str; 4] = [
    "postgres pool timeout",
    "ledger invoice",
    "rotate the token",
    "kafka",
];

/// Every list alone and fused.
const MODES: [&str; 4] = ["hybrid", "sparse", "dense", "recency"];

/// One change to the folder, then a run.
#[derive(Debug, Clone)]
enum Step {
    /// Writes note `file` with heading and words chosen by `seed` (a new
    /// file, or a changed one).
    Write { file: u8, seed: u32 },
    /// Deletes note `file`, if it is there.
    Delete { file: u8 },
    /// Copies note `from` over note `to` (same text: exact ties).
    Copy { from: u8, to: u8 },
    /// Runs `index --compact`.
    Compact,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..12, any::<u32>()).prop_map(|(file, seed)| Step::Write { file, seed }),
        2 => (0u8..12).prop_map(|file| Step::Delete { file }),
        2 => (0u8..12, 0u8..12).prop_map(|(from, to)| Step::Copy { from, to }),
        1 => Just(Step::Compact),
    ]
}

/// The path of note `file`: in two folders, so that a delta's files fall
/// between the base's.
fn note(file: u8) -> String {
    format!("{}/note-{file:02}.md", ["a", "b"][usize::from(file % 2)])
}

/// A note's markdown: a heading and two sections of words, from `seed`.
fn text(seed: u32) -> String {
    let word = |i: u32| WORDS[((seed.wrapping_mul(2_654_435_761) >> (i * 3)) % 12) as usize];
    format!(
        "# Note {}\n\n{} {} {} and {}.\n\n## More\n\n{} {} after {}.\n",
        seed % 7,
        word(0),
        word(1),
        word(2),
        word(3),
        word(4),
        word(5),
        word(6)
    )
}

fn run(corpus: &Corpus, args: &[&str]) {
    let output = corpus.index_with(args);
    assert!(output.status.success(), "{output:?}");
}

fn assert_matches_a_fresh_index(corpus: &Corpus, after: &[Step]) {
    common::assert_answers_as_a_fresh_index(corpus, &QUERIES, &MODES, &format!("{after:?}"));
}

/// How each step's run learns what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runs {
    /// `memidx index`, which walks the folder.
    Walk,
    /// A run told the changed path, as a watcher's or `remember`'s is
    /// (in process: the library's [`memidx::indexer::run`]).
    Told,
}

/// Runs the indexer on `corpus` told that `path` changed.
fn run_told(corpus: &Corpus, path: &str) {
    let index = memidx::index::Index::open(&corpus.path().join(".memidx")).unwrap();
    let mut options = memidx::indexer::IndexOptions::updating(&index);
    options.told = Some(vec![corpus.path().join(path)]);
    let embedder = memidx::embed::load(None).unwrap();
    memidx::indexer::run(&options, embedder, &memidx::progress::Silent).unwrap();
}

/// Applies `steps` one run each to a folder of six notes, checking the
/// answers after each; returns how many runs appended a delta.
fn check(steps: &[Step]) -> usize {
    check_with(steps, Runs::Walk)
}

/// [`check`], each run learning of the change as `runs` says.
fn check_with(steps: &[Step], runs: Runs) -> usize {
    let corpus = Corpus::empty();
    for dir in ["a", "b"] {
        fs::create_dir(corpus.path().join(dir)).unwrap();
    }
    for file in 0..6 {
        fs::write(corpus.path().join(note(file)), text(u32::from(file))).unwrap();
    }
    run(&corpus, &[]);
    let mut deltas = 0;
    for (at, step) in steps.iter().enumerate() {
        let changed = match step {
            Step::Write { file, seed } => {
                fs::write(corpus.path().join(note(*file)), text(*seed)).unwrap();
                Some(note(*file))
            }
            Step::Delete { file } => {
                let _ = fs::remove_file(corpus.path().join(note(*file)));
                Some(note(*file))
            }
            Step::Copy { from, to } => {
                let _ = fs::copy(
                    corpus.path().join(note(*from)),
                    corpus.path().join(note(*to)),
                );
                Some(note(*to))
            }
            Step::Compact => None,
        };
        match (changed, runs) {
            (Some(path), Runs::Told) => run_told(&corpus, &path),
            (Some(_), Runs::Walk) => run(&corpus, &[]),
            (None, _) => run(&corpus, &["--compact"]),
        }
        let manifest = Manifest::read(&corpus.path().join(".memidx"))
            .unwrap()
            .unwrap();
        deltas += usize::from(manifest.delta.is_some());
        assert_matches_a_fresh_index(&corpus, &steps[..=at]);
    }
    deltas
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(6),
        max_shrink_iters: 50,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any sequence of changes leaves the answers a fresh index gives.
    #[test]
    fn any_sequence_of_appends_and_compactions_answers_as_a_fresh_index(
        steps in proptest::collection::vec(step(), 1..7)
    ) {
        check(&steps);
    }

    /// So do runs told the changed path, which look at nothing else.
    #[test]
    fn runs_told_the_changed_path_answer_as_a_fresh_index(
        steps in proptest::collection::vec(step(), 1..7)
    ) {
        check_with(&steps, Runs::Told);
    }
}

#[test]
fn copies_that_tie_rank_in_path_order_across_the_base_and_the_delta() {
    // A copy placed before and one after its original, both in the delta:
    // the three tie in every list and must come in path order.
    let steps = [
        Step::Copy { from: 3, to: 0 },
        Step::Copy { from: 3, to: 11 },
        Step::Write { file: 4, seed: 3 },
        Step::Delete { file: 5 },
    ];
    assert_eq!(check(&steps), steps.len(), "every run appended a delta");
}

#[test]
fn chunks_a_delta_buries_are_neither_found_nor_counted_as_filtered_out() {
    let corpus = Corpus::fixtures();
    run(&corpus, &[]);
    let chunks = corpus.json(&["status", "--json"])["counts"]["chunks"].clone();
    fs::remove_file(corpus.path().join("services/auth-service.md")).unwrap();
    run(&corpus, &[]);
    let status = corpus.json(&["status", "--json"]);
    assert_eq!(status["delta"]["buried_files"], 1, "{status:#}");
    assert!(status["counts"]["chunks"].as_u64() < chunks.as_u64());
    let explained = corpus.json(&["explain", "how do we rotate the signing keys", "--json"]);
    for list in explained["lists"].as_array().unwrap() {
        assert_eq!(list["filtered_out"], 0, "{list:#}");
    }
    assert_eq!(
        explained["lists"][1]["matched"], status["counts"]["chunks"],
        "the dense list scans the live chunks"
    );
    let output = corpus
        .memidx()
        .args(["get", "services/auth-service.md#1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
}

#[test]
fn status_and_filter_errors_over_a_delta_read_as_a_fresh_index() {
    // The base holds a.md (status: draft), b.md and c.md, all dated alike;
    // the delta drops a.md's front matter and adds d.md (tags: t1), which
    // sorts before the others and ties on date.
    let corpus = Corpus::empty();
    let note = |name: &str, front: &str, body: &str| {
        let front = format!("---\ndate: 2024-01-01\n{front}---\n");
        fs::write(
            corpus.path().join(name),
            format!("{front}# {name}\n\n{body}\n"),
        )
        .unwrap();
    };
    note("b.md", "status: draft\n", "apple tart");
    note("c.md", "", "banana");
    note("e.md", "", "cherry");
    run(&corpus, &[]);
    note("b.md", "", "apple tart");
    note("a.md", "tags: t1\n", "apple crumble");
    run(&corpus, &[]);
    let fresh = Corpus::empty();
    common::copy_fixture(corpus.path(), fresh.path());
    run(&fresh, &[]);
    let status = |corpus: &Corpus| {
        let mut status = corpus.json(&["status", "--json"]);
        let status = status.as_object_mut().unwrap();
        for varying in [
            "index",
            "root",
            "generation",
            "delta",
            "built",
            "index_bytes",
        ] {
            status.remove(varying);
        }
        serde_json::Value::Object(status.clone())
    };
    assert!(corpus.json(&["status", "--json"])["delta"].is_object());
    assert_eq!(status(&corpus), status(&fresh), "stale files and dates");
    for filter in ["status=draft", "tags=t2", "tags=t1"] {
        let search = |corpus: &Corpus| {
            let output = corpus
                .memidx()
                .args(["search", "apple", "-f", filter, "--json"])
                .output()
                .unwrap();
            (output.status.code(), output.stdout, output.stderr)
        };
        assert_eq!(search(&corpus), search(&fresh), "-f {filter}");
    }
}

#[test]
fn a_told_run_reads_only_what_it_uses_and_a_walking_run_heals_a_damaged_base() {
    let corpus = Corpus::fixtures();
    run(&corpus, &[]);
    // The base's texts damaged in place (same length and time: only a
    // checksum tells).
    let texts = corpus.path().join(".memidx/gen-1/texts.bin");
    let mtime = fs::metadata(&texts).unwrap().modified().unwrap();
    let mut bytes = fs::read(&texts).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs::write(&texts, bytes).unwrap();
    common::set_mtime(&texts, mtime);
    let verify = |corpus: &Corpus| {
        corpus
            .memidx()
            .args(["status", "--verify"])
            .output()
            .unwrap()
    };
    fs::write(
        corpus.path().join("notes/told.md"),
        "# Told\n\nRotate the canary token.\n",
    )
    .unwrap();
    // A told run appends the note without re-reading the base whole: the
    // damage stays where it is, and `status --verify` still names it.
    run_told(&corpus, "notes/told.md");
    let manifest = Manifest::read(&corpus.path().join(".memidx"))
        .unwrap()
        .unwrap();
    assert_eq!(manifest.delta.as_ref().map(|d| d.files), Some(1));
    let got = corpus.json(&["get", "notes/told.md#1", "--json"]);
    assert!(
        got.to_string().contains("Rotate the canary token."),
        "{got:#}"
    );
    let damaged = verify(&corpus);
    assert_eq!(damaged.status.code(), Some(2), "{damaged:?}");
    assert!(
        String::from_utf8_lossy(&damaged.stderr).contains("texts.bin checksum mismatch"),
        "{damaged:?}"
    );
    // A walking run re-reads what it carries, finds the damage and
    // rebuilds the index whole.
    let walked = corpus.index_with(&[]);
    assert_eq!(walked.status.code(), Some(0), "{walked:?}");
    let warned = String::from_utf8_lossy(&walked.stderr);
    assert!(
        warned.contains("previous index unusable, rebuilding it whole")
            && warned.contains("texts.bin checksum mismatch"),
        "{warned}"
    );
    assert_eq!(verify(&corpus).status.code(), Some(0));
    assert_matches_a_fresh_index(&corpus, &[]);
}
