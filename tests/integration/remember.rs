//! `memidx remember` through the real binary: the file it writes (name,
//! front matter, text), names never reused, the note found by an exact
//! search right after, folders outside the root refused, and a held writer
//! lock leaving the note written for the next run; front matter that reads
//! back exactly as given (or a note refused before anything is written),
//! names cut by bytes, and notes created with the umask's mode.

use std::fs;

use memidx::corpus::front_matter::parse_front_matter;
use proptest::prelude::*;
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
fn a_note_is_indexed_without_walking_the_folder_for_other_changes() {
    let corpus = Corpus::fixtures();
    corpus.index();
    // Written since the last run: `remember` looks only at its note, so
    // this file waits for the next `memidx index`, which walks.
    let other = "notes/written-meanwhile.md";
    fs::write(
        corpus.path().join(other),
        "# Meanwhile\n\nThe snorkwhistle flag.\n",
    )
    .unwrap();
    let report = remember_json(&corpus, &["The plovercrest cache was flushed."]);
    assert_eq!(report["indexed"], true);
    assert_eq!(report["embedded"], 1);
    let hits = |word: &str| {
        let out = corpus
            .memidx()
            .args(["search", word, "--mode", "sparse"])
            .output()
            .unwrap();
        out.status.code()
    };
    assert_eq!(hits("plovercrest"), Some(0));
    assert_eq!(hits("snorkwhistle"), Some(1));
    let walked = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&walked.stdout).starts_with("indexed 20 files (19 unchanged)"),
        "{walked:?}"
    );
    assert_eq!(hits("snorkwhistle"), Some(0));
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
    let outside_dir = outside.path().to_str().unwrap().to_string();
    assert!(
        refused(&corpus, &["x", "--dir", "../elsewhere"], b"")
            .contains("is outside the indexed folder")
    );
    assert!(
        refused(&corpus, &["x", "--dir", &outside_dir], b"")
            .contains("is outside the indexed folder")
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(
        refused(&corpus, &["-"], b"caf\xe9\n")
            .starts_with("memidx: the note on stdin is not valid UTF-8 (at byte 3)")
    );
    assert!(
        refused(
            &corpus,
            &["-", "--max-file-size", "10"],
            b"a note of more than ten bytes"
        )
        .contains("over the 10-byte limit")
    );
    assert!(refused(&corpus, &["-"], b"  \n").contains("nothing to remember"));
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
fn a_lock_held_past_the_wait_reports_the_note_written_not_a_failure() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let held =
        memidx::store::lock::IndexLock::acquire(&corpus.path().join(".memidx/LOCK")).unwrap();
    let started = std::time::Instant::now();
    let report = remember_json(&corpus, &["Written while locked, marker LOCKNOTE77"]);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(10),
        "it waited"
    );
    let name = format!(
        "memories/{}-written-while-locked-marker-locknote77.md",
        today()
    );
    assert_eq!(report["path"], name.as_str());
    assert_eq!(report["indexed"], false);
    assert_eq!(report["chunk_ids"], serde_json::json!([]));
    assert!(corpus.path().join(&name).is_file());
    drop(held);
    corpus.index();
    let found = corpus.search_json("LOCKNOTE77", &["-k", "1"]);
    assert_eq!(
        found["results"][0]["chunk_id"],
        format!("{name}#1").as_str()
    );
}

#[test]
fn fifty_remembers_at_once_share_runs_and_all_are_indexed() {
    let corpus = Corpus::fixtures();
    corpus.index();
    // The run that holds the lock indexes the notes written beside its own
    // meanwhile, so the others find theirs indexed instead of waiting their
    // turn (twenty at once used to leave some unindexed past the wait).
    let runs: Vec<_> = (0..50)
        .map(|i| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("memidx"))
                .current_dir(corpus.path())
                .env_remove("MEMIDX_INDEX")
                .args([
                    "remember",
                    &format!("Parallel note number {i}, marker PARNOTE{i}X"),
                    "--json",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, run) in runs.into_iter().enumerate() {
        let out = run.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["indexed"], true, "{report}");
        assert_eq!(report["chunk_ids"].as_array().unwrap().len(), 1);
    }
    for i in 0..50 {
        let found = corpus.search_json(&format!("PARNOTE{i}X"), &["-k", "1", "--mode", "sparse"]);
        assert_eq!(found["results"].as_array().unwrap().len(), 1, "{i}");
    }
}

#[test]
fn a_dir_inside_the_index_folder_is_refused_before_writing() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--index", "idx"]);
    let err = refused(&corpus, &["x", "--dir", "idx/gen-1", "--index", "idx"], b"");
    assert!(err.contains("inside the index folder"), "{err}");
    assert_eq!(
        names_in(&corpus, "idx/gen-1")
            .iter()
            .filter(|n| n.ends_with(".md"))
            .count(),
        0
    );
}

#[test]
fn a_dir_the_index_would_not_read_is_refused_before_writing() {
    let corpus = Corpus::fixtures();
    fs::write(corpus.path().join(".gitignore"), "scratch/\n").unwrap();
    corpus.index_with(&["--exclude", "drafts/**"]);
    let left_out = "is left out of the index (a hidden folder, an --exclude or --include pattern, or an ignore file rules it out), so a note there would never be found; nothing was written";
    let hidden = "is a hidden folder, which the index leaves out";
    for (dir, says) in [
        ("scratch", left_out),
        ("drafts", left_out),
        ("drafts/2026", left_out),
        (".private", hidden),
        ("notes/.hidden", hidden),
    ] {
        let err = refused(&corpus, &["A note nobody would find.", "--dir", dir], b"");
        assert!(err.contains(says), "{dir}: {err}");
        let notes = names_in(&corpus, dir);
        assert!(
            notes.iter().all(|n| !n.ends_with(".md")),
            "{dir}: {notes:?}"
        );
    }
    // A folder the index reads takes it, and it is found at once.
    let report = remember_json(&corpus, &["A note in the runbooks.", "--dir", "runbooks"]);
    assert_eq!(report["indexed"], true, "{report}");
}

/// The written note's front matter, parsed by the indexer's own reader.
fn front_matter_of(corpus: &Corpus, report: &Value) -> memidx::corpus::Metadata {
    let path = corpus.path().join(report["path"].as_str().unwrap());
    let fm = parse_front_matter(&fs::read_to_string(path).unwrap());
    assert_eq!(fm.error, None);
    fm.metadata
}

/// Runs `memidx remember ARGS…` with `stdin`, asserts exit 2 and no output
/// on stdout, and returns stderr.
fn refused(corpus: &Corpus, args: &[&str], stdin: &[u8]) -> String {
    let out = corpus
        .memidx()
        .args([&["remember"][..], args].concat())
        .write_stdin(stdin.to_vec())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty());
    String::from_utf8(out.stderr).unwrap()
}

/// The names in `dir` of `corpus`, sorted (none when it does not exist).
fn names_in(corpus: &Corpus, dir: &str) -> Vec<String> {
    let Ok(entries) = fs::read_dir(corpus.path().join(dir)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn control_characters_and_yaml_words_in_front_matter_read_back_as_given() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let odd = "a\u{7f}b\u{80}c\u{85}d\u{9f}e \"q\" \\ \u{2028}\u{feff}\t# x: y";
    let report = remember_json(
        &corpus,
        &[
            "Control characters, marker CTRLNOTE31",
            "--title",
            "Title with DEL \u{7f} and C1 \u{9b}",
            "--meta",
            "null=~",
            "--meta",
            "0x10=1e3",
            "--meta",
            "1e3=0x10",
            "--meta",
            "true=null",
            "--meta",
            "yes=false",
            "--meta",
            "01234=.inf",
            "--meta",
            &format!("odd={odd}"),
            "--meta",
            "empty=",
        ],
    );
    let meta = front_matter_of(&corpus, &report);
    let expected: Vec<(&str, &str)> = vec![
        ("0x10", "1e3"),
        ("01234", ".inf"),
        ("1e3", "0x10"),
        ("date", report["date"].as_str().unwrap()),
        ("empty", ""),
        ("null", "~"),
        ("odd", odd),
        ("title", "Title with DEL \u{7f} and C1 \u{9b}"),
        ("true", "null"),
        ("yes", "false"),
    ];
    let expected: memidx::corpus::Metadata = expected
        .into_iter()
        .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
        .collect();
    assert_eq!(meta, expected);
    // The index read the same front matter: the note is dated by it.
    let found = corpus.search_json("CTRLNOTE31", &["-k", "1"]);
    assert_eq!(found["results"][0]["date"]["from"], "front matter");
    // A title taken from the text's first line keeps its control characters too.
    let report = remember_json(&corpus, &["Line \u{80}one\u{7f}\n\nbody text"]);
    let meta = front_matter_of(&corpus, &report);
    assert_eq!(meta["title"], ["Line \u{80}one\u{7f}"]);
    assert_eq!(meta["date"], [report["date"].as_str().unwrap()]);
}

#[test]
fn a_key_given_twice_is_refused_before_writing() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let err = refused(
        &corpus,
        &["x", "--meta", "k=a", "--meta", "other=1", "--meta", "k=b"],
        b"",
    );
    assert!(
        err.starts_with("memidx: --meta sets 'k' twice: give each key once"),
        "{err}"
    );
    assert!(!corpus.path().join("memories").exists());
}

/// A string of characters, mostly the ones YAML and the CLI treat specially.
fn tricky_string(max: usize) -> impl Strategy<Value = String> {
    let special = prop::sample::select(vec![
        "\u{7f}",
        "\u{80}",
        "\u{85}",
        "\u{9f}",
        "\u{a0}",
        "\u{2028}",
        "\u{feff}",
        "\u{fffe}",
        "\u{ffff}",
        "\u{1f600}",
        "\"",
        "'",
        "\\",
        ":",
        ": ",
        "#",
        " #",
        "-",
        "--",
        "- ",
        "?",
        "&a",
        "*a",
        "!x",
        "|",
        ">",
        "%",
        "@",
        "`",
        "{",
        "}",
        "[",
        "]",
        ",",
        " ",
        "\t",
        "\n",
        "\r",
        "\x01",
        "\x1b",
        "null",
        "~",
        "0x10",
        "1e3",
        "true",
        "no",
        ".inf",
        "---",
        "...",
        "=",
        "a",
        "Z",
        "7",
        "_",
        ".",
    ]);
    prop::collection::vec(
        prop_oneof![3 => special.prop_map(str::to_string), 1 => any::<char>().prop_map(String::from)],
        0..max,
    )
    .prop_map(|parts| parts.concat().replace('\0', ""))
}

/// A `--meta` key: mostly one memidx accepts (YAML words and numbers among
/// them), sometimes any string.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(vec![
            "null", "Null", "true", "no", "y", "on", "0x10", "1e3", "01234", "1_000", ".inf",
            ".nan", "-1", "1.0", "2024-01-05", "k", "a.b", "ünï", "_", "-", "nan",
        ])
        .prop_map(str::to_string),
        2 => "[a-zA-Z0-9_.-]{1,8}",
        1 => tricky_string(4),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Whatever the keys, values, title and text, a note's front matter
    /// reads back exactly as given (the title on one line), or `remember`
    /// refuses it and writes nothing.
    #[test]
    fn front_matter_reads_back_exactly_or_the_note_is_refused(
        title in prop::option::of(tricky_string(8)),
        meta in prop::collection::vec((key(), tricky_string(6)), 0..4),
        text in tricky_string(10),
    ) {
        let corpus = shared_corpus();
        let before = names_in(corpus, "memories");
        let mut args = vec!["remember".to_string(), "-".to_string(), "--json".to_string()];
        if let Some(title) = &title {
            args.push(format!("--title={title}"));
        }
        for (key, value) in &meta {
            args.push(format!("--meta={key}={value}"));
        }
        let out = corpus.memidx().args(&args).write_stdin(text.clone()).output().unwrap();
        if out.status.code() != Some(0) {
            prop_assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
            prop_assert_eq!(names_in(corpus, "memories"), before, "a refused note wrote nothing");
            return Ok(());
        }
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let source = fs::read_to_string(corpus.path().join(report["path"].as_str().unwrap())).unwrap();
        let fm = parse_front_matter(&source);
        prop_assert_eq!(fm.error, None);
        prop_assert_eq!(&fm.metadata["date"], &vec![report["date"].as_str().unwrap().to_string()]);
        if let Some(title) = &title {
            let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
            prop_assert_eq!(&fm.metadata["title"], &vec![one_line]);
        } else {
            prop_assert!(fm.metadata.contains_key("title"));
        }
        for (key, value) in &meta {
            // As the CLI reads `--meta KEY=VALUE`: split at the first `=`, the key trimmed.
            let pair = format!("{key}={value}");
            let (key, value) = pair.split_once('=').unwrap();
            prop_assert_eq!(fm.metadata.get(key.trim()), Some(&vec![value.to_string()]), "key {:?}", key);
        }
        prop_assert_eq!(fm.metadata.len(), meta.len() + 2);
    }
}

/// One indexed corpus for every case of the property test.
fn shared_corpus() -> &'static Corpus {
    static CORPUS: std::sync::OnceLock<Corpus> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let corpus = Corpus::empty();
        fs::write(corpus.path().join("seed.md"), "# Seed\n\nA first note.\n").unwrap();
        corpus.index();
        corpus
    })
}

#[test]
fn bad_notes_are_refused_before_anything_is_written() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let err = refused(&corpus, &["-"], b"before\0after\n");
    assert!(
        err.starts_with("memidx: the text contains a NUL byte (at byte 6)"),
        "{err}"
    );
    for text in [
        "---\ntitle: x\ntags: [a]\n---\n",
        "---\n---",
        "---\n\n---\n",
    ] {
        let err = refused(&corpus, &["-"], text.as_bytes());
        assert!(
            err.contains("the text is only a front matter block"),
            "{err}"
        );
    }
    // Thematic breaks and link definitions alone make no chunk.
    let err = refused(&corpus, &["-"], b"***\n\n[a]: https://example.com\n");
    assert!(err.contains("so the note would make no chunk"), "{err}");
    assert!(!corpus.path().join("memories").exists());
    #[cfg(unix)]
    {
        fs::create_dir(corpus.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", corpus.path().join("alias")).unwrap();
        let absolute = corpus.path().join("alias/sub");
        for dir in ["alias", "alias/sub", absolute.to_str().unwrap()] {
            let err = refused(&corpus, &["behind a link", "--dir", dir], b"");
            assert!(
                err.contains("alias is a symbolic link, which the index does not follow"),
                "{err}"
            );
        }
        assert_eq!(names_in(&corpus, "real"), Vec::<String>::new());
    }
}

#[test]
fn a_long_title_of_four_byte_characters_gets_a_suffix_when_its_name_is_taken() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let title = "\u{1d400}".repeat(100);
    let mut paths = Vec::new();
    for _ in 0..2 {
        let report = remember_json(&corpus, &["Long title", "--title", &title]);
        paths.push(report["path"].as_str().unwrap().to_string());
    }
    // Cut at 50 characters: 200 bytes.
    let slug = "\u{1d400}".repeat(50);
    let day = today();
    assert_eq!(
        paths,
        [
            format!("memories/{day}-{slug}.md"),
            format!("memories/{day}-{slug}-2.md")
        ]
    );
}

#[cfg(unix)]
#[test]
fn a_note_is_created_with_the_mode_the_umask_gives_any_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let corpus = Corpus::fixtures();
    corpus.index();
    // A file created now shows the umask the binary inherits: 0666 less it.
    let probe = corpus.path().join("probe.txt");
    fs::write(&probe, "x").unwrap();
    let expected = fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
    fs::remove_file(&probe).unwrap();
    let report = remember_json(&corpus, &["Mode check"]);
    let written = corpus.path().join(report["path"].as_str().unwrap());
    let mode = fs::metadata(written).unwrap().permissions().mode() & 0o777;
    assert_eq!(format!("{mode:o}"), format!("{expected:o}"));
    assert_ne!(
        mode, 0o600,
        "not a temporary file's mode (unless umask 066)"
    );
}

#[test]
#[cfg(unix)]
fn a_folder_swapped_for_a_link_while_notes_are_written_never_carries_one_out() {
    use memidx::corpus::note::{Destination, Note, write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let inbox = root.path().join("inbox");
    fs::create_dir(&inbox).unwrap();
    // Swaps `inbox` for a link to `outside` and back, as fast as it can.
    // While `inbox` is away a writer may create it anew (missing folders
    // are made); the real one is then kept under another name in the root.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, inbox, outside) = (stop.clone(), inbox.clone(), outside.path().to_path_buf());
        let root = root.path().to_path_buf();
        std::thread::spawn(move || {
            let mut swaps = 0;
            while !stop.load(Ordering::SeqCst) {
                let real = root.join(format!("inbox-{swaps}"));
                if fs::rename(&inbox, &real).is_err() {
                    continue;
                }
                if std::os::unix::fs::symlink(&outside, &inbox).is_ok() {
                    fs::remove_file(&inbox).unwrap();
                }
                let _ = fs::rename(&real, &inbox);
                swaps += 1;
                // A pause with `inbox` in place, so that a loaded machine
                // still lets some writes through.
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            swaps
        })
    };
    let index_dir = root.path().join(".memidx");
    let walk = memidx::corpus::walk::WalkOptions::default();
    let to = Destination {
        root: root.path(),
        index_dir: &index_dir,
        walk: &walk,
        max_bytes: 1 << 20,
    };
    let now = jiff::Timestamp::now();
    // Writes until 100 have landed (or 20,000 were tried): how many are
    // refused depends on the machine's load, not on the code under test.
    let (mut written, mut refused) = (0, 0);
    for i in 0..20_000 {
        if written == 100 {
            break;
        }
        let note = Note {
            text: format!("Race note {i}."),
            ..Note::default()
        };
        match write(to, std::path::Path::new("inbox"), &note, now) {
            Ok(path) => {
                assert!(path.starts_with("inbox/"), "{path}");
                written += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::SeqCst);
    let swaps = swapper.join().unwrap();
    eprintln!("{written} written, {refused} refused, {swaps} swaps");
    assert!(written > 0, "no note landed in {refused} tries");
    assert!(swaps > 0, "the folder was never swapped");
    let outside_files: Vec<_> = fs::read_dir(outside.path()).unwrap().collect();
    assert!(
        outside_files.is_empty(),
        "notes landed outside: {outside_files:?}"
    );
    // Every note is in the root, and no temporary file is left anywhere.
    let (mut notes, mut left) = (0, Vec::new());
    for entry in walkdir::WalkDir::new(root.path()) {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_file() {
            match name.ends_with(".md") {
                true => notes += 1,
                false => left.push(name),
            }
        }
    }
    assert!(left.is_empty(), "temporary files left: {left:?}");
    assert_eq!(notes, written);
}
