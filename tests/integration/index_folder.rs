//! What `memidx index` may touch: only an index folder it made.

use std::fs;
use std::path::Path;

use crate::common::Corpus;

/// Runs `memidx index ARGS…` in `corpus` and returns (exit code, stderr).
fn index(corpus: &Corpus, args: &[&str]) -> (Option<i32>, String) {
    let output = corpus
        .memidx()
        .args([&["index", "--quiet"][..], args].concat())
        .output()
        .expect("run");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_folder_of_other_files_given_as_the_index_is_refused_and_left_untouched() {
    let corpus = Corpus::fixtures();
    let other = corpus.path().join("s");
    fs::create_dir_all(other.join("gen-1")).unwrap();
    fs::write(other.join("gen-1/thesis.txt"), "chapter one").unwrap();
    fs::write(other.join("meta.json"), "{\"mine\": true}").unwrap();
    let (code, stderr) = index(&corpus, &[".", "--index", "s"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("memidx: ")
            && stderr.contains("is not a memidx index and is not empty")
            && stderr.contains("nothing was changed"),
        "{stderr}"
    );
    assert_eq!(read(&other.join("gen-1/thesis.txt")), "chapter one");
    assert_eq!(read(&other.join("meta.json")), "{\"mine\": true}");
    let names: Vec<_> = fs::read_dir(&other)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "nothing added: {names:?}");
}

#[test]
fn the_indexed_folder_itself_is_never_the_index() {
    let corpus = Corpus::empty();
    let root = corpus.path().join("r");
    fs::create_dir_all(root.join("gen-2020")).unwrap();
    fs::write(
        root.join("gen-2020/retro.md"),
        "# Retro\n\nWhat went well.\n",
    )
    .unwrap();
    let (code, stderr) = index(&corpus, &["r", "--index", "r"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is the folder being indexed"), "{stderr}");
    assert_eq!(
        read(&root.join("gen-2020/retro.md")),
        "# Retro\n\nWhat went well.\n"
    );

    // An index folder that holds the root is refused the same way.
    let (code, stderr) = index(&corpus, &["r", "--index", "."]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("or holds it"), "{stderr}");
    assert!(root.join("gen-2020/retro.md").exists());
}

#[test]
fn an_index_folder_given_as_the_folder_to_index_is_refused_with_the_command_that_updates_it() {
    let corpus = Corpus::fixtures();
    let kept = tempfile::tempdir().unwrap();
    let index_dir = kept.path().join("notes-index");
    let index_arg = index_dir.to_str().unwrap();
    let (code, stderr) = index(&corpus, &[".", "--index", index_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    let before: Vec<_> = fs::read_dir(&index_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let (code, stderr) = index(&corpus, &[index_arg]);
    assert_eq!(code, Some(2), "{stderr}");
    let root = fs::canonicalize(corpus.path()).unwrap();
    assert!(
        stderr.contains("is a memidx index, not a folder of markdown")
            && stderr.contains(&format!(
                "memidx index '{}' --index '{index_arg}'",
                root.display()
            )),
        "{stderr}"
    );
    // Nothing was written into it: no index of the index.
    let after: Vec<_> = fs::read_dir(&index_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after);
    // An index from before the tag is known by its manifest alike.
    fs::remove_file(index_dir.join("memidx.tag")).unwrap();
    let (code, stderr) = index(&corpus, &[index_arg]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!index_dir.join(".memidx").exists());
}

#[test]
fn a_new_or_empty_index_folder_is_tagged_and_an_untagged_old_index_is_adopted() {
    let corpus = Corpus::fixtures();
    fs::create_dir(corpus.path().join("empty")).unwrap();
    let (code, stderr) = index(&corpus, &[".", "--index", "empty"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(corpus.path().join("empty/memidx.tag").is_file());

    // An index written before the tag existed is known by its meta.json.
    corpus.index();
    let tag = corpus.path().join(".memidx/memidx.tag");
    fs::remove_file(&tag).unwrap();
    fs::write(
        corpus.path().join("runbooks/new.md"),
        "# New\n\nA new runbook.\n",
    )
    .unwrap();
    let (code, stderr) = index(&corpus, &["."]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(tag.is_file());
}

#[test]
fn a_file_where_the_index_folder_should_be_is_named() {
    let corpus = Corpus::fixtures();
    fs::write(corpus.path().join(".memidx"), "not a folder").unwrap();
    let (code, stderr) = index(&corpus, &["."]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(".memidx is a file, not an index folder"),
        "{stderr}"
    );
    assert_eq!(read(&corpus.path().join(".memidx")), "not a folder");
}

#[test]
fn leftovers_of_interrupted_runs_are_removed_and_nothing_else() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let index_dir = corpus.path().join(".memidx");
    fs::write(index_dir.join(".tmp-abc123"), "half a manifest").unwrap();
    fs::create_dir_all(index_dir.join("gen-99")).unwrap();
    fs::create_dir_all(index_dir.join("cache/xxh3-0001.tmp")).unwrap();
    fs::create_dir_all(index_dir.join("cache/notes")).unwrap();
    let (code, stderr) = index(&corpus, &["."]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!index_dir.join(".tmp-abc123").exists());
    assert!(!index_dir.join("gen-99").exists());
    assert!(!index_dir.join("cache/xxh3-0001.tmp").exists());
    assert!(
        index_dir.join("cache/notes").is_dir(),
        "not memidx's to remove"
    );
}

#[test]
fn a_skipped_file_alone_does_not_rewrite_the_index_and_is_named_once_per_change() {
    let corpus = Corpus::fixtures();
    fs::write(
        corpus.path().join("notes/blob.md"),
        b"PK\x03\x04\x00\x00binary",
    )
    .unwrap();
    fs::write(
        corpus.path().join("notes/.draft.md"),
        "# Draft\n\nNot yet.\n",
    )
    .unwrap();
    let run = || {
        let output = corpus.memidx().args(["index", "."]).output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // The newest generation written: the delta's when a run appended one.
    let generation = || -> u64 {
        let meta: serde_json::Value =
            serde_json::from_slice(&fs::read(corpus.path().join(".memidx/meta.json")).unwrap())
                .unwrap();
        let delta = meta["delta"]["generation"].as_u64();
        delta.unwrap_or_else(|| meta["generation"].as_u64().unwrap())
    };
    let warnings = "memidx: warning: skipped .obsidian: hidden folder (its name starts with '.') with 1 markdown file; rename it to index it\nmemidx: warning: skipped notes/.draft.md: hidden (its name starts with '.'); rename it to index it\nmemidx: warning: skipped notes/blob.md: looks binary (contains NUL bytes)\n";
    let (_, first) = run();
    assert_eq!(first, warnings);
    assert_eq!(generation(), 1);
    let (summary, again) = run();
    assert!(
        summary.contains("up to date: 18 files, ")
            && summary.contains(" (3 skipped as before: 'memidx status' lists them)"),
        "{summary}"
    );
    assert_eq!(again, "", "the same skips are not named again");
    assert_eq!(generation(), 1, "no new generation for an unchanged corpus");
    // status names them, with why.
    let skipped = corpus.json(&["status", "--json"])["skipped"].clone();
    assert_eq!(
        skipped,
        serde_json::json!([
            {"path": ".obsidian", "reason": "hidden folder (its name starts with '.') with 1 markdown file; rename it to index it"},
            {"path": "notes/.draft.md", "reason": "hidden (its name starts with '.'); rename it to index it"},
            {"path": "notes/blob.md", "reason": "looks binary (contains NUL bytes)"}
        ])
    );
    corpus
        .memidx()
        .arg("status")
        .assert()
        .code(0)
        .stdout(predicates::str::contains(
            "  skipped  notes/blob.md: looks binary (contains NUL bytes)\n",
        ));
    // A run that writes a generation for another change does not name them either.
    fs::write(corpus.path().join("notes/new.md"), "# New\n\nA new note.\n").unwrap();
    let (_, after_a_change) = run();
    assert_eq!(after_a_change, "");
    assert_eq!(generation(), 2);
    fs::remove_file(corpus.path().join("notes/new.md")).unwrap();
    let (_, removed) = run();
    assert_eq!(removed, "");
    assert_eq!(generation(), 3);
    // Nor does status call the skipped file new ...
    let stale = |corpus: &Corpus| corpus.json(&["status", "--json"])["stale"].clone();
    assert_eq!(
        stale(&corpus),
        serde_json::json!({"changed": [], "added": [], "deleted": []})
    );

    // ... until it changes: a change to the skipped file is a change, and
    // a file skipped anew (changed, still binary) is named again.
    fs::write(
        corpus.path().join("notes/blob.md"),
        b"PK\x03\x04\x00changed",
    )
    .unwrap();
    let (_, changed) = run();
    assert_eq!(
        changed,
        "memidx: warning: skipped notes/blob.md: looks binary (contains NUL bytes)\n"
    );
    fs::write(corpus.path().join("notes/blob.md"), "# Blob\n\nNow text.\n").unwrap();
    assert_eq!(
        stale(&corpus)["added"],
        serde_json::json!(["notes/blob.md"])
    );
    let (summary, _) = run();
    assert!(!summary.contains("up to date"), "{summary}");
    assert_eq!(generation(), 5);
}

#[test]
fn another_folder_is_not_indexed_into_a_folder_s_index_but_a_moved_folder_keeps_it() {
    let first = Corpus::fixtures();
    first.index();
    let meta = first.path().join(".memidx/meta.json");
    let before = fs::read(&meta).unwrap();
    let other = Corpus::empty();
    fs::write(other.path().join("one.md"), "# One\n\nA single note.\n").unwrap();
    let index_dir = first.path().join(".memidx");
    let canonical = |p: &Path| p.canonicalize().unwrap().display().to_string();
    // Through --index and through MEMIDX_INDEX alike.
    for through_env in [false, true] {
        let mut command = other.memidx();
        command.args(["index", "."]);
        if through_env {
            command.env("MEMIDX_INDEX", &index_dir);
        } else {
            command.arg("--index").arg(&index_dir);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!(
                "memidx: the index {} belongs to {}, not to {}; give {} its own index (--index PATH, or unset MEMIDX_INDEX), or remove {} first to reuse the folder",
                canonical(&index_dir),
                canonical(first.path()),
                canonical(other.path()),
                canonical(other.path()),
                canonical(&index_dir)
            )
        );
        assert_eq!(
            fs::read(&meta).unwrap(),
            before,
            "the first index is untouched"
        );
    }
    // A folder moved with its index inside keeps it.
    let moved = tempfile::tempdir().unwrap();
    let target = moved.path().join("renamed");
    fs::rename(first.path(), &target).unwrap();
    let output = assert_cmd::Command::cargo_bin("memidx")
        .unwrap()
        .args(["index", "--quiet"])
        .arg(&target)
        .env_remove("MEMIDX_INDEX")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    fs::rename(&target, first.path()).unwrap();
}

#[test]
fn the_index_folder_keeps_itself_out_of_git() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let ignore = corpus.path().join(".memidx/.gitignore");
    assert_eq!(read(&ignore), "# memidx index: keep it out of git\n*\n");
    // A user's own rules are left as they are.
    fs::write(&ignore, "mine\n").unwrap();
    fs::write(corpus.path().join("notes/new.md"), "# New\n\nText.\n").unwrap();
    corpus.index();
    assert_eq!(read(&ignore), "mine\n");
}

#[test]
fn a_copied_folders_index_acts_on_the_copy_not_the_original() {
    let original = Corpus::fixtures();
    original.index();
    let copy = Corpus::empty();
    crate::common::copy_dir(original.path(), copy.path());
    let note = "notes/payments-gateway-rollback-2024-02.md";
    let mut text = read(&copy.path().join(note));
    text.push_str("\nThe copy alone mentions the wrenchkite procedure.\n");
    fs::write(copy.path().join(note), &text).unwrap();
    let json = |corpus: &Corpus, args: &[&str]| -> serde_json::Value {
        let output = corpus.memidx().args(args).output().expect("run");
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&output.stderr))
        })
    };

    // Reads: the copy's root, its changed file, its lines.
    let status = json(&copy, &["status", "--json"]);
    let root = fs::canonicalize(copy.path()).unwrap();
    assert_eq!(status["root"], root.display().to_string());
    assert_eq!(status["stale"]["changed"], serde_json::json!([note]));
    let got = copy.memidx().args(["get", note]).output().unwrap();
    assert_eq!(got.status.code(), Some(2), "the changed file is refused");
    assert!(String::from_utf8_lossy(&got.stderr).contains("changed since"));

    // Writes: remember writes into the copy, and its index run indexes it
    // (the note alone); an index run brings in the changed file.
    let remembered = json(&copy, &["remember", "The gannetwing ledger.", "--json"]);
    let path = remembered["path"].as_str().unwrap();
    assert!(copy.path().join(path).is_file(), "{path}");
    assert!(!original.path().join("memories").exists());
    let found = json(
        &copy,
        &["search", "gannetwing", "--mode", "sparse", "--json"],
    );
    assert_eq!(
        crate::common::chunk_ids(&found)[0].split('#').next(),
        Some(path)
    );
    copy.index();
    let found = json(
        &copy,
        &["search", "wrenchkite", "--mode", "sparse", "--json"],
    );
    assert_eq!(
        crate::common::chunk_ids(&found)[0].split('#').next(),
        Some(note)
    );
    let missing = original
        .memidx()
        .args([
            "search",
            "wrenchkite gannetwing",
            "--mode",
            "sparse",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1), "the original holds neither");
}
