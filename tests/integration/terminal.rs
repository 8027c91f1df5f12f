//! Terminal safety: control characters of indexed content (headings, text,
//! metadata) and of file names reach the terminal escaped (`\u{1b}`, `\n`)
//! from every human printer, whatever the colour setting; a closed stdout
//! ends a run quietly with exit 0, as ripgrep does, and a failing stderr
//! changes nothing (the usual exit code, never a panic's 101).

use std::fs::{self, File};
use std::io::Read;
use std::process::{Command as StdCommand, Output, Stdio};

use crate::common;

use common::Corpus;
use serde_json::{Value, json};

/// The styles memidx itself writes with `--color always` (see the human
/// printer); nothing else may start with ESC.
const OWN_STYLES: [&str; 7] = [
    "\u{1b}[0m",
    "\u{1b}[1m",
    "\u{1b}[2m",
    "\u{1b}[31m",
    "\u{1b}[32m",
    "\u{1b}[35m",
    "\u{1b}[36m",
];

/// A file whose heading, text and front matter carry clear-screen, cursor,
/// OSC title and OSC 8 link sequences, BEL, backspace, a carriage return,
/// DEL, a tab and the C1 CSI (U+009B). The YAML escapes `\e`, `\a` and
/// `\x9b` put the same controls in metadata values.
const EVIL_MD: &str = "---\n\
title: \"t\\e]0;meta\\a\"\n\
owner: \"o\\x9b5m\"\n\
---\n\
# Clear \u{1b}[2J\u{1b}[H screen \u{9b}5m zebracorn\n\
\n\
Text \u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\ with a bell\u{7}, \
a back\u{8}space, a carriage\rreturn, a del\u{7f}, a C1\u{9b}5mCSI and a\ttab zebracorn.\n";

/// File names with controls: an OSC title, a C1 CSI, DEL, and a newline that
/// would forge a result line.
const ESC_NAME: &str = "esc\u{1b}]0;name\u{7}.md";
const C1_NAME: &str = "c1\u{9b}2J\u{7f}.md";
const FORGED_NAME: &str = "forged\n9. 0.01639  fake.md:1-1.md";
/// A file skipped as invalid UTF-8, so a warning names it.
const SKIPPED_NAME: &str = "skip\u{1b}[2J\u{8}.md";

/// A corpus of [`EVIL_MD`] and the files named above, indexed.
fn hostile_corpus() -> Corpus {
    let corpus = Corpus::empty();
    let dir = corpus.path();
    fs::write(dir.join("evil.md"), EVIL_MD).unwrap();
    fs::write(
        dir.join(ESC_NAME),
        "# Named\n\nzebracorn in a file named with OSC.\n",
    )
    .unwrap();
    fs::write(
        dir.join(C1_NAME),
        "# C1\n\nzebracorn in a file named with C1 CSI.\n",
    )
    .unwrap();
    fs::write(
        dir.join(FORGED_NAME),
        "zebracorn in a file whose name forges a line.\n",
    )
    .unwrap();
    corpus
}

/// `bytes` as text, after removing memidx's own styles when `colour`;
/// panics when any control character other than a newline is left.
fn assert_no_raw_controls(bytes: &[u8], colour: bool, what: &str) -> String {
    let mut text = String::from_utf8(bytes.to_vec()).expect("UTF-8 output");
    if colour {
        for style in OWN_STYLES {
            text = text.replace(style, "");
        }
    }
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && c.is_control())
        .collect();
    assert!(raw.is_empty(), "{what}: raw controls {raw:?} in {text:?}");
    text
}

/// Runs `memidx ARGS --color WHEN` and returns the output.
fn run(corpus: &Corpus, args: &[&str], when: &str) -> Output {
    corpus
        .memidx()
        .args(args)
        .args(["--color", when])
        .output()
        .unwrap()
}

/// Runs `args` with `--color always` and `--color never`, asserts both exit
/// with `code` and hold no raw controls but memidx's styles and newlines, and
/// that the coloured output is the plain one plus styles; returns the plain
/// stdout and stderr.
fn both_colours(corpus: &Corpus, args: &[&str], code: i32) -> (String, String) {
    let always = run(corpus, args, "always");
    let never = run(corpus, args, "never");
    for output in [&always, &never] {
        assert_eq!(output.status.code(), Some(code), "{args:?}: {output:?}");
    }
    let label = format!("{args:?}");
    let styled = assert_no_raw_controls(&always.stdout, true, &label);
    let plain = assert_no_raw_controls(&never.stdout, false, &label);
    // Timings (explain's `… ms`) differ from run to run.
    let untimed = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.contains(" ms"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        untimed(&styled),
        untimed(&plain),
        "{args:?}: only styles may differ"
    );
    let err_always = assert_no_raw_controls(&always.stderr, false, &label);
    let err_never = assert_no_raw_controls(&never.stderr, false, &label);
    assert_eq!(err_always, err_never);
    (plain, err_never)
}

#[test]
fn search_and_explain_print_content_and_names_escaped() {
    let corpus = hostile_corpus();
    corpus.index();
    let (search, _) = both_colours(&corpus, &["search", "zebracorn", "-k", "10"], 0);
    // memidx's own styles are still written with colour on.
    let styled = String::from_utf8(run(&corpus, &["search", "zebracorn"], "always").stdout);
    assert!(
        styled
            .as_deref()
            .unwrap()
            .contains("\u{1b}[35mevil.md\u{1b}[0m:\u{1b}[32m5\u{1b}[0m-8"),
        "{styled:?}"
    );
    // Heading (own line) and snippet of evil.md: every control escaped; the
    // carriage return was a line break in the text (CommonMark), the tab a
    // space in the one-line snippet.
    assert!(
        search.contains("\n   Clear \\u{1b}[2J\\u{1b}[H screen \\u{9b}5m zebracorn\n"),
        "{search}"
    );
    assert!(
        search.contains(
            "\n   Text \\u{1b}]8;;https://evil.example/\\u{1b}\\link\\u{1b}]8;;\\u{1b}\\ with a \
             bell\\u{7}, a back\\u{8}space, a carriage return, a del\\u{7f}, a \
             C1\\u{9b}5mCSI and a tab zebracorn.\n"
        ),
        "{search}"
    );
    assert!(search.contains("  evil.md:5-8  ["), "{search}");
    assert!(
        search.contains("  esc\\u{1b}]0;name\\u{7}.md:1-3  ["),
        "{search}"
    );
    assert!(
        search.contains("  c1\\u{9b}2J\\u{7f}.md:1-3  ["),
        "{search}"
    );
    // The newline of a file name cannot start a forged result line.
    assert!(
        search.contains("  forged\\n9. 0.01639  fake.md:1-1.md:1-1  ["),
        "{search}"
    );
    assert!(
        !search.lines().any(|l| l.starts_with("9. 0.01639")),
        "{search}"
    );
    let results = search.lines().filter(|l| {
        l.split_once(". ")
            .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
    });
    assert_eq!(results.count(), 4, "{search}");

    let (explain, _) = both_colours(
        &corpus,
        &["explain", "zebracorn", "--filter", "owner=o\u{9b}5m"],
        0,
    );
    assert!(
        explain.starts_with(
            "query \"zebracorn\" (relative scores, window 200, filter owner=o\\u{9b}5m)\n"
        ),
        "{explain}"
    );
    assert!(
        explain.contains("\n   1  evil.md:5-8  evil.md#1\n"),
        "{explain}"
    );
    assert!(
        explain.contains("\n      Clear \\u{1b}[2J\\u{1b}[H screen \\u{9b}5m zebracorn\n"),
        "{explain}"
    );
    let (explain, _) = both_colours(&corpus, &["explain", "zebracorn"], 0);
    assert!(
        explain.contains(
            "  forged\\n9. 0.01639  fake.md:1-1.md:1-1  forged\\n9. 0.01639  fake.md:1-1.md#1\n"
        ),
        "{explain}"
    );
    assert!(
        explain.contains("  esc\\u{1b}]0;name\\u{7}.md:1-3  esc\\u{1b}]0;name\\u{7}.md#1\n"),
        "{explain}"
    );
}

#[test]
fn json_keeps_the_exact_text_with_c0_controls_escaped() {
    let corpus = hostile_corpus();
    corpus.index();
    for (format, code) in [("--json", 0), ("--jsonl", 0)] {
        let output = run(
            &corpus,
            &["search", "zebracorn", "-k", "10", format],
            "always",
        );
        assert_eq!(output.status.code(), Some(code));
        let text = String::from_utf8(output.stdout).unwrap();
        // serde_json escapes C0 (ESC as \u001b); DEL and C1 are legal JSON
        // and stay as they are, inside strings only.
        assert!(
            !text.chars().any(|c| c != '\n' && u32::from(c) < 0x20),
            "{text:?}"
        );
        assert!(
            text.contains("Clear \\u001b[2J\\u001b[H screen \u{9b}5m"),
            "{text}"
        );
        assert!(
            text.contains("\"forged\\n9. 0.01639  fake.md:1-1.md\""),
            "{text}"
        );
    }
    let response = corpus.search_json("zebracorn", &["-k", "10"]);
    let evil = response["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["source"] == "evil.md")
        .expect("evil.md found");
    assert_eq!(evil["metadata"]["title"], json!(["t\u{1b}]0;meta\u{7}"]));
    assert_eq!(evil["metadata"]["owner"], json!(["o\u{9b}5m"]));
    assert_eq!(
        evil["heading"],
        Value::from("Clear \u{1b}[2J\u{1b}[H screen \u{9b}5m zebracorn")
    );
}

#[test]
fn warnings_stale_notices_and_status_print_names_escaped() {
    let corpus = hostile_corpus();
    fs::write(corpus.path().join(SKIPPED_NAME), b"\xff\xfe zebracorn\n").unwrap();
    for when in ["always", "never"] {
        let output = run(&corpus, &["index", ".", "--full"], when);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let err = assert_no_raw_controls(&output.stderr, false, "index warnings");
        assert!(
            err.starts_with("memidx: warning: skipped skip\\u{1b}[2J\\u{8}.md: "),
            "{err}"
        );
        let out = assert_no_raw_controls(&output.stdout, when == "always", "index summary");
        assert!(out.starts_with("indexed 4 files (0 unchanged), "), "{out}");
    }
    fs::remove_file(corpus.path().join(SKIPPED_NAME)).unwrap();

    fs::write(
        corpus.path().join(ESC_NAME),
        "# Named\n\nzebracorn, edited.\n\n",
    )
    .unwrap();
    fs::write(
        corpus.path().join("new\u{1b}]0;added\u{7}.md"),
        "zebracorn\n",
    )
    .unwrap();
    let (_, notice) = both_colours(&corpus, &["search", "zebracorn", "-k", "10"], 0);
    assert_eq!(
        notice,
        "memidx: warning: results come from files changed since indexing \
         (esc\\u{1b}]0;name\\u{7}.md); run 'memidx index' to update\n"
    );

    let (status, _) = both_colours(&corpus, &["status"], 0);
    assert!(
        status.contains(
            "stale      1 changed, 1 added, 0 deleted since indexing; run 'memidx index' to update\n\
             \x20 changed  esc\\u{1b}]0;name\\u{7}.md\n\
             \x20 added    new\\u{1b}]0;added\\u{7}.md\n"
        ),
        "{status}"
    );
}

#[test]
fn graph_views_print_entity_names_escaped() {
    let corpus = hostile_corpus();
    corpus.index_with(&["--graph"]);
    let (entities, _) = both_colours(&corpus, &["graph", "entities", "--limit", "1000"], 0);
    for name in [
        "esc\\u{1b}]0;name\\u{7}.md",
        "c1\\u{9b}2J\\u{7f}.md",
        "forged\\n9. 0.01639  fake.md:1-1.md",
    ] {
        assert!(
            entities
                .lines()
                .any(|l| l.starts_with("document ") && l.ends_with(&format!("  {name}"))),
            "{name} in {entities}"
        );
    }
    let (communities, _) = both_colours(&corpus, &["graph", "communities", "--limit", "1000"], 0);
    assert!(
        communities.contains("\n  central: esc\\u{1b}]0;name\\u{7}.md (document, 1.00)\n"),
        "{communities}"
    );
    assert!(
        communities.contains("  evil.md#1  Clear \\u{1b}[2J\\u{1b}[H screen \\u{9b}5m zebracorn\n"),
        "{communities}"
    );
    let (neighbors, _) = both_colours(
        &corpus,
        &["graph", "neighbors", "esc\u{1b}]0;name\u{7}.md"],
        0,
    );
    assert!(
        neighbors.starts_with("document 'esc\\u{1b}]0;name\\u{7}.md' (1 chunks)\n"),
        "{neighbors}"
    );
}

/// Runs `memidx ARGS` in `corpus` with its stdout a pipe whose read end is
/// closed before the command writes anything, so every write fails with
/// EPIPE; stderr is captured.
fn into_closed_pipe(corpus: &Corpus, args: &[&str]) -> Output {
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_memidx"))
        .current_dir(corpus.path())
        .env_remove("MEMIDX_INDEX")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stderr = Vec::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    Output {
        status,
        stdout: Vec::new(),
        stderr,
    }
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let cases: [&[&str]; 5] = [
        &["completions", "bash"],
        &["search", "connection pool", "-k", "100", "--json"],
        &["search", "connection pool", "-k", "100", "--jsonl"],
        &["search", "connection pool", "-k", "100"],
        &["explain", "connection pool", "-k", "50", "--json"],
    ];
    let mut ended = Vec::new();
    for args in cases {
        // Over twice the 8 KiB output buffer: writes fail while the printer
        // runs, not only at the final flush (which was always caught).
        let full = corpus.memidx().args(args).output().unwrap();
        assert_eq!(full.status.code(), Some(0), "{args:?}");
        assert!(
            full.stdout.len() > 16 * 1024,
            "{args:?}: {}",
            full.stdout.len()
        );
        let closed = into_closed_pipe(&corpus, args);
        let stderr = String::from_utf8_lossy(&closed.stderr).into_owned();
        ended.push((args, closed.status.code(), stderr));
    }
    let quiet: Vec<_> = cases
        .iter()
        .map(|&args| (args, Some(0), String::new()))
        .collect();
    assert_eq!(
        ended, quiet,
        "into a closed pipe: exit 0, nothing on stderr"
    );
}

/// Runs `memidx ARGS` in `corpus` with stderr on `/dev/full` (every write
/// fails with ENOSPC).
fn with_full_stderr(corpus: &Corpus, args: &[&str]) -> Output {
    let full = File::options().write(true).open("/dev/full").unwrap();
    StdCommand::new(env!("CARGO_BIN_EXE_memidx"))
        .current_dir(corpus.path())
        .env_remove("MEMIDX_INDEX")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::from(full))
        .output()
        .unwrap()
}

#[test]
fn a_failing_stderr_never_panics() {
    let corpus = hostile_corpus();
    fs::write(corpus.path().join(SKIPPED_NAME), b"\xff\xfe zebracorn\n").unwrap();
    // A warning to write: the run still indexes and exits 0.
    let index = with_full_stderr(&corpus, &["index", "."]);
    assert_eq!(index.status.code(), Some(0), "{index:?}");
    let summary = String::from_utf8(index.stdout).unwrap();
    assert!(
        summary.starts_with("indexed 4 files (0 unchanged), "),
        "{summary}"
    );
    // A stale notice to write: the results are still printed, exit 0.
    fs::write(
        corpus.path().join(ESC_NAME),
        "# Named\n\nzebracorn, edited.\n\n",
    )
    .unwrap();
    let search = with_full_stderr(&corpus, &["search", "zebracorn", "--jsonl"]);
    assert_eq!(search.status.code(), Some(0), "{search:?}");
    assert_eq!(String::from_utf8(search.stdout).unwrap().lines().count(), 4);
    // An error to write: exit 2 as usual, not a panic's 101.
    let missing = with_full_stderr(&corpus, &["search", "x", "--index", "no-such-index"]);
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    assert!(missing.stdout.is_empty());
}
