//! End-to-end tests of vector reuse: a chunk whose text this model has
//! embedded before — in an unchanged, moved or copied file, or before a
//! switch to another model and back — is not embedded again, and the
//! results equal those of a fresh full index, byte for byte.

use crate::common;

use std::fs;

use common::{Corpus, FIXTURE_CHUNKS, other_static_model};

/// Queries whose `--json` answers are compared between indexes.
const QUERIES: [&str; 4] = [
    "postgres connection pool exhausted",
    "INC-2023-Q4-011",
    "how do we rotate the signing keys",
    "max_connections",
];

/// The number of chunks an index run says it embedded.
fn embedded(corpus: &Corpus, args: &[&str]) -> usize {
    let output = corpus
        .memidx()
        .args([&["index", "."][..], args].concat())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let count = stdout
        .split("(embedding ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no embedding count in {stdout}"));
    count.parse().unwrap()
}

/// Every query's hybrid `search --json` output, as bytes.
fn answers(corpus: &Corpus) -> Vec<Vec<u8>> {
    common::answers(corpus, &QUERIES, &["hybrid"])
}

/// The answers of a fresh full index of a copy of `corpus`.
fn fresh_answers(corpus: &Corpus) -> Vec<Vec<u8>> {
    common::fresh_answers(corpus, &QUERIES, &["hybrid"])
}

/// The fixtures, and another static model in a temp folder (kept alive by
/// the returned guard) at the returned path.
fn fixtures_and_other_model() -> (Corpus, tempfile::TempDir, std::path::PathBuf) {
    let models = tempfile::tempdir().unwrap();
    let other = models.path().join("other-static");
    other_static_model(&other);
    (Corpus::fixtures(), models, other)
}

#[test]
fn moved_and_copied_files_reuse_their_vectors_and_match_a_fresh_index() {
    let corpus = Corpus::fixtures();
    assert_eq!(embedded(&corpus, &[]), FIXTURE_CHUNKS);
    let services = corpus.path().join("services");
    fs::create_dir(corpus.path().join("archive")).unwrap();
    fs::rename(
        services.join("auth-service.md"),
        corpus.path().join("archive/auth-service-2023.md"),
    )
    .unwrap();
    fs::copy(
        services.join("billing-service.md"),
        corpus.path().join("archive/billing-copy.md"),
    )
    .unwrap();
    assert_eq!(embedded(&corpus, &[]), 0, "moved and copied text is reused");
    assert_eq!(answers(&corpus), fresh_answers(&corpus));

    // A new paragraph is the only text embedded.
    let note = corpus.path().join("archive/billing-copy.md");
    let mut text = fs::read_to_string(&note).unwrap();
    text.push_str("\n## Appendix\n\nA brand new paragraph about ledger snapshots.\n");
    fs::write(&note, text).unwrap();
    assert_eq!(embedded(&corpus, &[]), 1);
    assert_eq!(answers(&corpus), fresh_answers(&corpus));
}

#[test]
fn switching_models_and_back_embeds_nothing_twice() {
    let (corpus, _models, other) = fixtures_and_other_model();
    let other_arg = other.to_str().unwrap();

    assert_eq!(embedded(&corpus, &[]), FIXTURE_CHUNKS);
    let bundled_answers = answers(&corpus);
    // Another model: every chunk is embedded; the bundled vectors are kept.
    assert_eq!(embedded(&corpus, &["--model", other_arg]), FIXTURE_CHUNKS);
    let other_model = corpus.json(&["status", "--json"])["embedder"].clone();
    let cache = corpus.path().join(".memidx/cache");
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
    // A plain re-index keeps the model: a changed file is embedded with it
    // (every vector of another model would be), and status names it.
    let runbook = corpus.path().join("services/auth-service.md");
    let text = fs::read_to_string(&runbook).unwrap();
    fs::write(&runbook, format!("{text}\nOne more line.\n")).unwrap();
    let kept = embedded(&corpus, &[]);
    assert!((1..FIXTURE_CHUNKS).contains(&kept), "{kept}");
    assert_eq!(corpus.json(&["status", "--json"])["embedder"], other_model);
    // Back to the bundled model: the answers are the same; only the changed
    // file's chunks are embedded again.
    fs::write(&runbook, &text).unwrap();
    assert_eq!(embedded(&corpus, &["--bundled-model"]), 0);
    assert_eq!(answers(&corpus), bundled_answers);
    // And to the other model again, after a file changed: only its chunks are embedded.
    fs::write(&runbook, text.replace("token", "credential")).unwrap();
    let changed = embedded(&corpus, &["--model", other_arg]);
    assert!((1..FIXTURE_CHUNKS).contains(&changed), "{changed}");
    // Each model's cache holds the other's vectors; the live model has none.
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 1);
}

#[test]
fn a_damaged_cache_is_ignored_with_a_warning_and_results_stay_right() {
    let (corpus, _models, other) = fixtures_and_other_model();
    corpus.index();
    let bundled_answers = answers(&corpus);
    let output = corpus
        .memidx()
        .args(["index", ".", "--quiet", "--model", other.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success());
    let cached = fs::read_dir(corpus.path().join(".memidx/cache"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    fs::write(cached.join("vectors.i8"), b"zeroed").unwrap();
    let output = corpus
        .memidx()
        .args(["index", ".", "--bundled-model"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not reusing the vectors in") && stderr.contains("vectors.i8"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains(&format!("(embedding {FIXTURE_CHUNKS} chunks"))
    );
    assert_eq!(answers(&corpus), bundled_answers);
}

#[test]
fn a_kept_model_that_is_gone_is_named_with_the_way_back() {
    let (corpus, models, other) = fixtures_and_other_model();
    assert_eq!(
        embedded(&corpus, &["--model", other.to_str().unwrap()]),
        FIXTURE_CHUNKS
    );
    fs::remove_dir_all(&other).unwrap();
    let runbook = corpus.path().join("services/auth-service.md");
    let text = fs::read_to_string(&runbook).unwrap();
    fs::write(&runbook, format!("{text}\nOne more line.\n")).unwrap();
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "memidx: cannot load the model {} (given with --model or kept from the index's last run); give its folder with --model DIR, or go back to the bundled model with --bundled-model: ",
            fs::canonicalize(models.path()).unwrap().join("other-static").display()
        )),
        "{stderr}"
    );
    // The previous index still answers.
    assert_eq!(
        corpus
            .memidx()
            .args(["status"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
    assert_eq!(embedded(&corpus, &["--bundled-model"]), FIXTURE_CHUNKS);
}
