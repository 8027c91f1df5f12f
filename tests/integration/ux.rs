//! Terminal behaviour: colour only when asked or on a terminal (never when
//! piped, never with NO_COLOR), JSON Lines, `--here`, and the notice about
//! results from files changed since indexing.

use crate::common;

use common::Corpus;
use predicates::prelude::*;
use serde_json::Value;

const ESC: &str = "\u{1b}[";

#[test]
fn piped_output_has_no_colour_unless_forced() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let piped = corpus
        .memidx()
        .args(["search", "connection pool", "-k", "2"])
        .output()
        .unwrap();
    assert!(!String::from_utf8(piped.stdout).unwrap().contains(ESC));
    let forced = corpus
        .memidx()
        .args(["search", "connection pool", "-k", "2", "--color", "always"])
        .output()
        .unwrap();
    let forced = String::from_utf8(forced.stdout).unwrap();
    assert!(forced.contains(&format!("{ESC}35mrunbooks/")), "{forced}");
    assert!(
        forced.contains(&format!("{ESC}1m{ESC}31mpool{ESC}0m")),
        "{forced}"
    );
    let never = corpus
        .memidx()
        .args(["search", "connection pool", "--color", "never"])
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8(never.stdout).unwrap().contains(ESC));
    // NO_COLOR wins over auto detection; JSON is never coloured.
    let no_color = corpus
        .memidx()
        .args(["search", "connection pool"])
        .env("NO_COLOR", "1")
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    assert!(!String::from_utf8(no_color.stdout).unwrap().contains(ESC));
    let json = corpus
        .memidx()
        .args(["search", "connection pool", "--json", "--color", "always"])
        .output()
        .unwrap();
    assert!(!String::from_utf8(json.stdout).unwrap().contains(ESC));
}

#[test]
fn json_lines_streams_one_result_per_line() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let output = corpus
        .memidx()
        .args(["search", "connection pool", "-k", "7", "--jsonl"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 7);
    let response = corpus.search_json("connection pool", &["-k", "7"]);
    assert_eq!(Value::Array(lines), response["results"]);
    corpus
        .memidx()
        .args(["search", "x", "--json", "--jsonl"])
        .assert()
        .code(2);
}

#[test]
fn here_limits_results_to_the_current_folder() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let output = corpus
        .memidx()
        .current_dir(corpus.path().join("runbooks/billing"))
        .args(["search", "connection pool", "--here", "-k", "50", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let response: Value = serde_json::from_slice(&output.stdout).unwrap();
    let results = response["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| {
        r["source"]
            .as_str()
            .unwrap()
            .starts_with("runbooks/billing/")
    }));
    let outside = Corpus::empty();
    outside
        .memidx()
        .args(["search", "pool", "--here", "--index"])
        .arg(corpus.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--here: the current folder is not inside the indexed folder",
        ));
}

#[test]
fn results_from_changed_files_get_one_notice() {
    let corpus = Corpus::fixtures();
    corpus.index();
    corpus
        .memidx()
        .args(["search", "getUserById"])
        .assert()
        .code(0)
        .stderr("");
    let note = corpus.path().join("notes/auth-slow-login-query.md");
    let text = std::fs::read_to_string(&note).unwrap();
    std::fs::write(&note, format!("{text}\nedited\n")).unwrap();
    corpus
        .memidx()
        .args(["search", "getUserById", "-k", "3"])
        .assert()
        .code(0)
        .stderr(predicate::eq(
            "memidx: warning: results come from files changed since indexing (notes/auth-slow-login-query.md); run 'memidx index' to update\n",
        ));
    // A deleted file is said to be deleted, not changed.
    std::fs::remove_file(&note).unwrap();
    corpus
        .memidx()
        .args(["search", "getUserById", "-k", "3"])
        .assert()
        .code(0)
        .stderr(predicate::eq(
            "memidx: warning: results come from files deleted since indexing (notes/auth-slow-login-query.md); run 'memidx index' to update\n",
        ));
    corpus
        .memidx()
        .args(["get", "notes/auth-slow-login-query.md"])
        .assert()
        .code(2)
        .stderr(predicate::eq(
            "memidx: 'notes/auth-slow-login-query.md' was deleted since indexing; run 'memidx index' (or get its chunks by id)\n",
        ));
}

#[test]
fn a_command_line_mistake_is_one_line_naming_where_the_usage_is() {
    let corpus = Corpus::fixtures();
    let output = corpus
        .memidx()
        .args(["search", "pool", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "memidx: unexpected argument '--bogus' found; to pass '--bogus' as a value, use '-- --bogus'; see 'memidx search --help'\n"
    );
    let output = corpus
        .memidx()
        .args(["index", "--chunk-tokens", "3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("memidx: invalid value '3' for '--chunk-tokens <N>'"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("; see 'memidx index --help'\n"),
        "{stderr}"
    );
    // Help is still help, on stdout, exit 0.
    let help = corpus.memidx().args(["search", "--help"]).output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(
        String::from_utf8(help.stdout)
            .unwrap()
            .starts_with("Search the index")
    );
}

#[test]
fn a_usage_error_names_the_missing_arguments_on_one_line() {
    let corpus = Corpus::empty();
    let output = corpus.memidx().arg("search").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "memidx: the following required arguments were not provided: <QUERY>...; \
         see 'memidx search --help'\n"
    );
    let bad = corpus
        .memidx()
        .args(["search", "lag", "--mode", "bm25"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(bad.stderr).unwrap(),
        "memidx: invalid value 'bm25' for '--mode <MODE>' \
         (possible values: hybrid, sparse, dense, graph, recency); see 'memidx search --help'\n"
    );
}

#[test]
fn a_mistyped_subcommand_suggests_the_closest_first() {
    let corpus = Corpus::empty();
    for (typed, tip) in [
        (
            "serach",
            "some similar subcommands exist: 'search', 'graph'",
        ),
        ("serch", "a similar subcommand exists: 'search'"),
    ] {
        let output = corpus.memidx().args([typed, "x"]).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            String::from_utf8(output.stderr).unwrap(),
            format!("memidx: unrecognized subcommand '{typed}'; {tip}; see 'memidx --help'\n")
        );
    }
}

#[test]
fn a_query_of_several_words_needs_no_quotes() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let run = |args: &[&str]| corpus.memidx().args(args).output().unwrap();
    let quoted = run(&["search", "replication lag", "-k", "3", "--json"]);
    let bare = run(&["search", "replication", "lag", "-k", "3", "--json"]);
    assert_eq!(bare.status.code(), Some(0));
    assert_eq!(bare.stdout, quoted.stdout);
    let quoted = run(&["explain", "replication lag", "-k", "2", "--json"]);
    let bare = run(&["explain", "replication", "lag", "-k", "2", "--json"]);
    assert_eq!(bare.status.code(), Some(0));
    let (quoted, bare): (Value, Value) = (
        serde_json::from_slice(&quoted.stdout).unwrap(),
        serde_json::from_slice(&bare.stdout).unwrap(),
    );
    assert_eq!(bare["results"], quoted["results"]);
}
