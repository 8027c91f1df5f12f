//! End-to-end tests of `memidx index`: bad input is skipped by name and
//! never aborts the run, the user's files are never written, and a damaged,
//! foreign or interrupted index is detected rather than misread.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{Corpus, FIXTURE_CHUNKS, chunk_ids, copy_fixture, fixtures_dir};
use predicates::prelude::*;

/// Every file under `dir` outside `.memidx`, with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".memidx")
    {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            files.insert(
                entry.path().display().to_string(),
                fs::read(entry.path()).unwrap(),
            );
        }
    }
    files
}

fn summary_counts(stdout: &[u8]) -> (usize, usize, usize) {
    let text = String::from_utf8_lossy(stdout);
    let numbers: Vec<usize> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(4)
        .map(|s| s.parse().unwrap())
        .collect();
    // "indexed F files (U unchanged), C chunks, S skipped in …"
    (numbers[0], numbers[2], numbers[3])
}

#[test]
fn summary_reports_files_chunks_and_reuse() {
    let corpus = Corpus::fixtures();
    let first = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(first.status.success());
    let text = String::from_utf8_lossy(&first.stdout).to_string();
    assert!(
        text.starts_with("indexed 18 files (0 unchanged), "),
        "{text}"
    );
    // fixtures/corpus/.obsidian holds a note: the hidden folder is named.
    assert!(text.contains(", 1 skipped in "), "{text}");
    assert!(
        text.contains(&format!("(embedding {FIXTURE_CHUNKS} chunks: ")),
        "{text}"
    );
    // The bundled model reads 512 word pieces: every chunk whole.
    assert!(!text.contains("read only up to"), "{text}");
    // Nothing changed: no new generation is written.
    let second = corpus.memidx().args(["index", "."]).output().unwrap();
    let text2 = String::from_utf8_lossy(&second.stdout).to_string();
    assert!(
        text2.starts_with(&format!(
            "index is up to date: 18 files, {FIXTURE_CHUNKS} chunks (1 skipped as before: 'memidx status' lists them) (checked in "
        )),
        "{text2}"
    );
    assert!(corpus.path().join(".memidx/gen-1").is_dir());
    assert!(!corpus.path().join(".memidx/gen-2").exists());
    // One file's content changed: a new generation reuses the other 17 and
    // re-embeds only the changed file's chunks.
    let note = corpus.path().join("notes/oncall-handoff-2024-w06.md");
    let text = fs::read_to_string(&note)
        .unwrap()
        .replacen("# ", "# Edited: ", 1);
    fs::write(&note, text).unwrap();
    let third = corpus.memidx().args(["index", "."]).output().unwrap();
    let text3 = String::from_utf8_lossy(&third.stdout).to_string();
    assert!(
        text3.starts_with("indexed 18 files (17 unchanged), "),
        "{text3}"
    );
    assert!(
        !text3.contains("(embedding 0 chunks: ")
            && !text3.contains(&format!("(embedding {FIXTURE_CHUNKS} chunks: ")),
        "{text3}"
    );
    assert_eq!(
        summary_counts(&first.stdout).1,
        summary_counts(&third.stdout).1
    );
}

#[test]
fn bad_files_are_skipped_by_name_and_the_rest_is_indexed() {
    let corpus = Corpus::fixtures();
    copy_fixture(&fixtures_dir().join("bad"), &corpus.path().join("bad"));
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("memidx: warning: skipped bad/invalid-utf8.md: not valid UTF-8"),
        "{stderr}"
    );
    assert!(
        stderr.contains("memidx: warning: skipped bad/binary.md: looks binary"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad/broken-front-matter.md: front matter ignored"),
        "{stderr}"
    );
    assert!(
        stderr.contains("bad/billion-laughs.md: front matter ignored"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Two bad files and the fixtures' hidden folder.
    assert!(stdout.contains(", 3 skipped in "), "{stdout}");
    // Files with broken front matter are still indexed, without metadata.
    for word in ["brokenfrontmatterbody", "laughsbody"] {
        let response = corpus.search_json(word, &[]);
        let top = &response["results"][0];
        assert!(
            top["source"].as_str().unwrap().starts_with("bad/"),
            "{word}"
        );
        let keys: Vec<_> = top["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["dir", "path", "title"], "{word}");
    }
    // The good files are all there.
    corpus.search_json("INC-2023-Q4-011", &[]);
}

#[test]
fn a_huge_file_is_skipped_with_the_limit_named() {
    let corpus = Corpus::fixtures();
    let line = "lorem ipsum ".repeat(1024);
    let big: String =
        std::iter::repeat_n(line.as_str(), 50 * 1024 * 1024 / line.len() + 1).collect();
    fs::write(corpus.path().join("huge.md"), big).unwrap();
    corpus
        .memidx()
        .args(["index", "."])
        .assert()
        .success()
        .stderr(
            predicate::str::contains("skipped huge.md: ")
                .and(predicate::str::contains("--max-file-size")),
        );
    corpus.search_json("max_connections", &[]);
    corpus
        .memidx()
        .args(["search", "lorem", "--mode", "sparse"])
        .assert()
        .code(1);
}

#[cfg(unix)]
#[test]
fn unreadable_files_and_symlink_loops_do_not_stop_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let corpus = Corpus::fixtures();
    let secret = corpus.path().join("secret.md");
    fs::write(&secret, "# Secret\n\nunreadableword lives here\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    std::os::unix::fs::symlink(corpus.path(), corpus.path().join("runbooks/loop")).unwrap();
    std::os::unix::fs::symlink("/etc", corpus.path().join("outside")).unwrap();
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    if fs::read(&secret).is_err() {
        assert!(
            stderr.contains("skipped secret.md: cannot be read: permission denied"),
            "{stderr}"
        );
        corpus
            .memidx()
            .args(["search", "unreadableword", "--mode", "sparse"])
            .assert()
            .code(1);
    } else {
        // Running as root: mode 000 does not stop reading, so the file is indexed.
        assert_eq!(
            chunk_ids(&corpus.search_json("unreadableword", &["--mode", "sparse"])),
            ["secret.md#1"]
        );
    }
    // The loop and the link out of the root were not followed.
    let response = corpus.search_json("max_connections", &["-k", "100"]);
    assert!(
        chunk_ids(&response)
            .iter()
            .all(|id| !id.starts_with("runbooks/loop") && !id.starts_with("outside"))
    );
}

#[test]
fn empty_folders_index_to_nothing_with_a_clear_summary() {
    let corpus = Corpus::empty();
    fs::write(corpus.path().join("readme.txt"), "not markdown").unwrap();
    corpus
        .memidx()
        .args(["index", "."])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "indexed 0 files (0 unchanged), 0 chunks, 0 skipped",
        ))
        .stderr(predicate::str::contains(
            "no markdown files (.md, .markdown) found",
        ));
    corpus
        .memidx()
        .args(["search", "anything"])
        .assert()
        .code(1)
        .stdout("");
}

#[test]
fn indexing_a_missing_folder_is_an_error() {
    let corpus = Corpus::empty();
    corpus
        .memidx()
        .args(["index", "no-such-folder"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "memidx: no such folder 'no-such-folder'; give the folder of markdown to index",
        ));
}

#[test]
fn the_users_files_are_never_written() {
    let corpus = Corpus::fixtures();
    copy_fixture(&fixtures_dir().join("bad"), &corpus.path().join("bad"));
    let before = snapshot(corpus.path());
    corpus.index();
    corpus.index();
    corpus
        .memidx()
        .args(["index", ".", "--full", "--quiet"])
        .assert()
        .success();
    assert_eq!(before, snapshot(corpus.path()));
}

#[test]
fn changed_added_and_deleted_files_are_picked_up() {
    let corpus = Corpus::fixtures();
    corpus.index();
    fs::write(
        corpus.path().join("new-note.md"),
        "# New\n\nfreshlyaddedword\n",
    )
    .unwrap();
    fs::remove_file(corpus.path().join("services/auth-service.md")).unwrap();
    let runbook = corpus
        .path()
        .join("runbooks/billing/connection-pool-production.md");
    let text = fs::read_to_string(&runbook)
        .unwrap()
        .replace("max_connections", "max_conns_renamed");
    fs::write(&runbook, text).unwrap();
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("indexed 18 files (16 unchanged), "),
        "{stdout}"
    );
    assert_eq!(
        chunk_ids(&corpus.search_json("freshlyaddedword", &["--mode", "sparse"])),
        ["new-note.md#1"]
    );
    let sources = |query: &str| -> Vec<String> {
        let response = corpus.search_json(query, &["-k", "100"]);
        response["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["source"].as_str().unwrap().to_string())
            .collect()
    };
    // Parts of the identifier still match elsewhere; the deleted file is gone.
    assert!(!sources("ERR_TOKEN_EXPIRED").contains(&"services/auth-service.md".to_string()));
    let renamed = corpus.search_json("max_conns_renamed", &[]);
    assert!(
        renamed["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("max_conns_renamed")
    );
    let old = corpus.search_json("max_connections", &[]);
    assert!(
        !old["results"][0]["text"]
            .as_str()
            .unwrap()
            .contains("max_connections")
    );
}

#[test]
fn a_damaged_index_is_named_and_a_reindex_repairs_it() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let gen_dir = corpus.path().join(".memidx/gen-1");
    let chunks = gen_dir.join("chunks.bin");
    let bytes = fs::read(&chunks).unwrap();
    fs::write(&chunks, &bytes[..bytes.len() / 2]).unwrap();
    corpus
        .memidx()
        .args(["search", "max_connections"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("index is damaged")
                .and(predicate::str::contains("chunks.bin")),
        );
    corpus
        .memidx()
        .args(["index", "."])
        .assert()
        .success()
        .stderr(predicate::str::contains("previous index unusable"));
    corpus.search_json("max_connections", &[]);
}

#[test]
fn a_truncated_text_file_or_manifest_is_named() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let texts = corpus.path().join(".memidx/gen-1/texts.bin");
    let bytes = fs::read(&texts).unwrap();
    fs::write(&texts, &bytes[..10]).unwrap();
    corpus
        .memidx()
        .args(["search", "max_connections"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("index is damaged").and(predicate::str::contains("texts.bin")),
        );
    let meta = corpus.path().join(".memidx/meta.json");
    fs::write(&meta, "{\"format_version\": 1, \"generat").unwrap();
    corpus
        .memidx()
        .args(["search", "max_connections"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("index is damaged").and(predicate::str::contains("meta.json")),
        );
}

#[test]
fn an_unknown_format_version_is_refused_with_the_supported_range() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let meta = corpus.path().join(".memidx/meta.json");
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
    json["format_version"] = serde_json::Value::from(99);
    fs::write(&meta, serde_json::to_vec(&json).unwrap()).unwrap();
    let supported = memidx::index::manifest::SUPPORTED_FORMAT_VERSIONS;
    let range = format!("{}..={}", supported.start(), supported.end());
    corpus
        .memidx()
        .args(["search", "max_connections"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("format version 99").and(predicate::str::contains(range)));
}

#[test]
fn an_interrupted_run_leaves_the_previous_index_usable_and_is_cleaned_up() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let before = corpus.search_json("max_connections", &[]);
    // What a run killed before switching the manifest leaves behind.
    let leftover = corpus.path().join(".memidx/gen-2");
    fs::create_dir_all(leftover.join("sparse")).unwrap();
    fs::write(leftover.join("chunks.bin"), b"partial").unwrap();
    assert_eq!(before, corpus.search_json("max_connections", &[]));
    // The next run removes the leftover (nothing changed, so gen-1 stays live)…
    corpus.index();
    assert!(!leftover.exists());
    assert!(corpus.path().join(".memidx/gen-1").is_dir());
    assert_eq!(before, corpus.search_json("max_connections", &[]));
    // …and a full run writes gen-2 afresh and removes gen-1.
    corpus
        .memidx()
        .args(["index", ".", "--full", "-q"])
        .assert()
        .success();
    assert!(!corpus.path().join(".memidx/gen-1").exists());
    assert!(corpus.path().join(".memidx/gen-2/chunks.bin").exists());
    assert_eq!(
        chunk_ids(&before),
        chunk_ids(&corpus.search_json("max_connections", &[]))
    );
}

#[test]
fn a_second_concurrent_index_is_refused() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let _held =
        memidx::store::lock::IndexLock::acquire(&corpus.path().join(".memidx/LOCK")).unwrap();
    corpus
        .memidx()
        .args(["index", "."])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "another 'memidx index' is running",
        ));
    corpus.search_json("max_connections", &[]);
}

#[test]
fn a_plain_re_index_keeps_the_walk_globs_and_chunk_size_of_the_last_run() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--exclude", "incidents/**", "--chunk-tokens", "200"]);
    let recorded = |corpus: &Corpus| {
        let meta = memidx::index::manifest::Manifest::read(&corpus.path().join(".memidx"))
            .unwrap()
            .unwrap();
        (
            meta.walk.exclude.clone(),
            meta.chunker.budget_tokens,
            meta.counts.files,
        )
    };
    let (exclude, tokens, files) = recorded(&corpus);
    assert_eq!(
        (exclude.clone(), tokens),
        (vec!["incidents/**".to_string()], 200)
    );
    assert!(files < 18, "{files}");
    // A plain run changes nothing: same globs, same chunks, up to date.
    let output = corpus.index_with(&[]);
    assert!(String::from_utf8_lossy(&output.stdout).is_empty());
    assert_eq!(recorded(&corpus), (exclude, tokens, files));
    let again = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("up to date"));
    // Giving a walk flag replaces them.
    corpus.index_with(&["--include", "**"]);
    assert_eq!(recorded(&corpus), (Vec::new(), 200, 18));
}
