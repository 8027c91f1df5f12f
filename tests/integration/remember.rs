//! `memidx remember` through the real binary: the file it writes (name,
//! front matter, text), names never reused, the note found by an exact
//! search right after, folders outside the root refused, and a held writer
//! lock leaving the note written for the next run.

use std::fs;

use serde_json::Value;

use crate::common::Corpus;

/// Today's date, UTC, as `remember` names files (`YYYY-MM-DD`).
fn today() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}

/// The day of a report's `date` (`YYYY-MM-DD`): the one its file is named by.
fn day_of(report: &Value) -> String {
    report["date"].as_str().unwrap()[..10].to_string()
}

fn remember_json(corpus: &Corpus, args: &[&str]) -> Value {
    corpus.json(&[&["remember", "--json"][..], args].concat())
}

#[test]
fn a_note_is_written_dated_and_found_by_an_exact_search_at_once() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let report = remember_json(
        &corpus,
        &[
            "Rotated the ledger key after ZX-4471-QUOKKA.\n\nThe old key was revoked.",
            "--meta",
            "service=billing-service",
            "--meta",
            "environment=production",
        ],
    );
    let name = format!(
        "memories/{}-rotated-the-ledger-key-after-zx.md",
        day_of(&report)
    );
    assert_eq!(report["path"], name.as_str());
    assert_eq!(
        report["chunk_ids"],
        serde_json::json!([format!("{name}#1")])
    );
    // Only the new file was read and embedded.
    assert_eq!(report["embedded"], 1);
    let written = fs::read_to_string(corpus.path().join(&name)).unwrap();
    let date = report["date"].as_str().unwrap();
    assert_eq!(
        written,
        format!(
            "---\ndate: {date}\ntitle: \"Rotated the ledger key after ZX-4471-QUOKKA.\"\n\
             service: \"billing-service\"\nenvironment: \"production\"\n---\n\n\
             Rotated the ledger key after ZX-4471-QUOKKA.\n\nThe old key was revoked.\n"
        )
    );
    let found = corpus.search_json(
        "ZX-4471-QUOKKA",
        &["-k", "1", "--filter", "environment=production"],
    );
    let first = &found["results"][0];
    assert_eq!(first["chunk_id"], format!("{name}#1").as_str());
    assert_eq!(first["date"]["value"], date);
    assert_eq!(first["date"]["from"], "front matter");
    assert_eq!(first["ranks"]["sparse"]["rank"], 1);
    // The human output names the file, then each chunk id on its own line.
    let out = corpus
        .memidx()
        .args(["remember", "A second note", "--title", "Ledger key, part 2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let second = format!("memories/{}-ledger-key-part-2.md", today());
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!("remembered {second} (1 chunk, dated ")),
        "{text}"
    );
    assert_eq!(lines[1], format!("  {second}#1"));
    assert!(lines[2].starts_with("indexed in "), "{text}");
}

#[test]
fn a_taken_name_gets_a_suffix_and_no_file_is_ever_replaced() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let stem = format!("notes/{}-deploy-freeze", today());
    fs::create_dir_all(corpus.path().join("notes")).unwrap();
    // A file of the user's own already has the first name.
    fs::write(
        corpus.path().join(format!("{stem}.md")),
        "# mine\n\nkeep me\n",
    )
    .unwrap();
    let mut paths = Vec::new();
    for _ in 0..3 {
        let report = remember_json(
            &corpus,
            &[
                "Deploy freeze starts Monday",
                "--dir",
                "notes",
                "--title",
                "Deploy freeze",
            ],
        );
        paths.push(report["path"].as_str().unwrap().to_string());
    }
    assert_eq!(
        paths,
        [
            format!("{stem}-2.md"),
            format!("{stem}-3.md"),
            format!("{stem}-4.md")
        ]
    );
    assert_eq!(
        fs::read_to_string(corpus.path().join(format!("{stem}.md"))).unwrap(),
        "# mine\n\nkeep me\n"
    );
    // No temporary file is left behind.
    let leftovers: Vec<String> = fs::read_dir(corpus.path().join("notes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn text_from_stdin_is_checked_and_folders_outside_the_root_are_refused() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let outside = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], stdin: &[u8]| -> String {
        let out = corpus
            .memidx()
            .args([&["remember"][..], args].concat())
            .write_stdin(stdin.to_vec())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    };
    let outside_dir = outside.path().to_str().unwrap().to_string();
    assert!(
        refused(&["x", "--dir", "../elsewhere"], b"").contains("is outside the indexed folder")
    );
    assert!(refused(&["x", "--dir", &outside_dir], b"").contains("is outside the indexed folder"));
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(
        refused(&["-"], b"caf\xe9\n")
            .starts_with("memidx: the note on stdin is not valid UTF-8 (at byte 3)")
    );
    assert!(
        refused(
            &["-", "--max-file-size", "10"],
            b"a note of more than ten bytes"
        )
        .contains("over the 10-byte limit")
    );
    assert!(refused(&["-"], b"  \n").contains("nothing to remember"));
    assert!(!corpus.path().join("memories").exists());
    let out = corpus
        .memidx()
        .args(["remember", "-", "--json"])
        .write_stdin("# From stdin\n\nPiped text about QX-1234.\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["path"],
        format!("memories/{}-from-stdin.md", day_of(&report)).as_str()
    );
}

#[test]
fn a_held_lock_leaves_the_note_written_for_the_next_run() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let held =
        memidx::store::lock::IndexLock::acquire(&corpus.path().join(".memidx/LOCK")).unwrap();
    let out = corpus
        .memidx()
        .args(["remember", "Written while locked, marker LOCKNOTE77"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let name = format!(
        "memories/{}-written-while-locked-marker-locknote77.md",
        today()
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("memidx: wrote "), "{err}");
    assert!(err.contains(&name), "{err}");
    assert!(
        err.trim_end()
            .ends_with("; it stays, and the next 'memidx index' picks it up"),
        "{err}"
    );
    assert!(corpus.path().join(&name).is_file());
    drop(held);
    corpus.index();
    let found = corpus.search_json("LOCKNOTE77", &["-k", "1"]);
    assert_eq!(
        found["results"][0]["chunk_id"],
        format!("{name}#1").as_str()
    );
}
