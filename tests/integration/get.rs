//! `memidx get`: a chunk by id (text from the index, equal to what search
//! returns), lines of an indexed file, budgets, and the refusals (unknown
//! ids and paths exit 1; `..`, outside paths, links out and changed files
//! are errors, exit 2).

use crate::common::Corpus;

use std::fs;

use serde_json::{Value, json};

const FILE: &str = "incidents/2023/q4/billing-month-end-timeouts.md";

/// Runs `memidx get ARGS…`; (exit code, stdout, stderr).
fn get(corpus: &Corpus, args: &[&str]) -> (i32, String, String) {
    let output = corpus.memidx().arg("get").args(args).output().unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn get_json(corpus: &Corpus, target: &str, extra: &[&str]) -> Value {
    let mut args = vec![target, "--json"];
    args.extend(extra);
    let (code, out, err) = get(corpus, &args);
    assert_eq!(code, 0, "{target}: {err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_chunk_by_id_is_the_text_search_returned() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let id = format!("{FILE}#1");
    let search = corpus.search_json("INC-2023-Q4-011", &["-k", "1"]);
    assert_eq!(search["results"][0]["chunk_id"], id);
    let got = get_json(&corpus, &id, &[]);
    assert_eq!(got["kind"], "chunk");
    assert_eq!(got["chunk_id"], id);
    assert_eq!(got["text"], search["results"][0]["text"]);
    assert_eq!(got["heading"], search["results"][0]["heading"]);
    assert_eq!(got["lines"], json!([13, 20]));
    assert_eq!(got["chars"], 503);
    assert_eq!(
        (got["truncated"].clone(), got["changed"].clone()),
        (json!(false), json!(false))
    );

    let cut = get_json(&corpus, &id, &["--max-chars", "50"]);
    assert_eq!(cut["text"], "## Summary\n\nIncident INC-2023-Q4-011. On 30");
    assert_eq!(
        (cut["chars"].clone(), cut["truncated"].clone()),
        (json!(503), json!(true))
    );

    let (code, out, _) = get(&corpus, &[&id]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(format!("{FILE}:13-20  {id}").as_str()));
    assert_eq!(
        lines.next(),
        Some("Billing API gateway timeouts during month-end invoicing > Summary")
    );
    assert_eq!(lines.next(), Some("## Summary"));
}

#[test]
fn lines_of_an_indexed_file_are_read_after_the_checks() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let on_disk = fs::read_to_string(corpus.path().join(FILE)).unwrap();
    let all: Vec<&str> = on_disk.split_inclusive('\n').collect();

    let range = get_json(&corpus, &format!("{FILE}:13-15"), &[]);
    assert_eq!(range["kind"], "lines");
    assert_eq!(range["chunk_id"], Value::Null);
    assert_eq!(range["lines"], json!([13, 15]));
    assert_eq!(range["total_lines"], all.len());
    assert_eq!(range["text"], all[12..15].concat());
    assert_eq!(range["metadata"]["environment"], json!(["production"]));

    let to_end = get_json(&corpus, &format!("{FILE}:70"), &[]);
    assert_eq!(to_end["lines"], json!([70, all.len()]));
    let past_end = get_json(&corpus, &format!("{FILE}:70-999"), &[]);
    assert_eq!(past_end["lines"], json!([70, all.len()]));
    let whole = get_json(&corpus, &format!("./{FILE}"), &[]);
    assert_eq!(whole["text"], on_disk);
    let absolute = corpus.path().join(FILE);
    let whole = get_json(&corpus, absolute.to_str().unwrap(), &[]);
    assert_eq!(whole["text"], on_disk);
}

#[test]
fn unknown_ids_and_paths_exit_1_and_unsafe_paths_are_refused() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "# Secret\n").unwrap();

    for (target, code, message) in [
        (
            format!("{FILE}#99"),
            1,
            "no chunk 'incidents/2023/q4/billing-month-end-timeouts.md#99' in the index; \
             incidents/2023/q4/billing-month-end-timeouts.md holds chunks #1 to #6",
        ),
        (
            "nowhere.md".to_string(),
            1,
            "'nowhere.md' is not an indexed file",
        ),
        (format!("../{FILE}"), 2, "contains '..'"),
        (
            format!("{FILE}/"),
            2,
            "ends in a separator, as a folder does",
        ),
        (format!("incidents/../{FILE}"), 2, "contains '..'"),
        (
            outside.path().join("secret.md").display().to_string(),
            2,
            "is outside the indexed folder",
        ),
        (format!("{FILE}:0-3"), 2, "line numbers start at 1"),
        (format!("{FILE}:9-3"), 2, "ends before it starts"),
        (
            format!("{FILE}:500"),
            2,
            "has 75 lines; line 500 is past its end",
        ),
    ] {
        let (got, out, err) = get(&corpus, &[&target]);
        assert_eq!(got, code, "{target}: {err}");
        assert!(out.is_empty(), "{target}");
        assert!(
            err.starts_with("memidx: ") && err.contains(message),
            "{target}: {err}"
        );
    }

    // An indexed file swapped for a link out, or changed since indexing.
    let linked = "notes/oncall-handoff-2024-w06.md";
    fs::remove_file(corpus.path().join(linked)).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), corpus.path().join(linked))
        .unwrap();
    let (code, _, err) = get(&corpus, &[linked]);
    assert_eq!(code, 2);
    assert!(err.contains("leads outside the indexed folder"), "{err}");
    fs::write(corpus.path().join(FILE), "# Rewritten\n").unwrap();
    let (code, _, err) = get(&corpus, &[&format!("{FILE}:1-2")]);
    assert_eq!(code, 2);
    assert!(err.contains("changed since indexing"), "{err}");
    // Its chunks are still served from the index, marked changed.
    let chunk = get_json(&corpus, &format!("{FILE}#1"), &[]);
    assert_eq!(chunk["changed"], true);
    assert_eq!(chunk["chars"], 503);
}

#[test]
fn a_malformed_line_range_is_a_usage_error_naming_the_forms() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let forms = "give PATH:FROM (line FROM to the end), PATH:FROM- (the same) or PATH:FROM-TO (lines FROM through TO), with line numbers from 1";
    for range in ["", "-1", "+3", "-", "1-2-3", "1--2", " 3", "-1-3"] {
        let target = format!("{FILE}:{range}");
        let (code, out, err) = get(&corpus, &[&target]);
        assert_eq!(code, 2, "{target}: {err}");
        assert!(out.is_empty(), "{target}");
        assert_eq!(
            err,
            format!(
                "memidx: '{target}': the line range '{range}' is not one memidx reads; {forms}\n"
            ),
            "{target}"
        );
    }
    let (code, _, err) = get(&corpus, &[":3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names no file before the line range"), "{err}");

    // `PATH:FROM-` runs to the end, like `PATH:FROM`.
    let on_disk = fs::read_to_string(corpus.path().join(FILE)).unwrap();
    let total = on_disk.split_inclusive('\n').count();
    let open_ended = get_json(&corpus, &format!("{FILE}:70-"), &[]);
    assert_eq!(open_ended["lines"], json!([70, total]));
    assert_eq!(open_ended, get_json(&corpus, &format!("{FILE}:70"), &[]));
    let (code, out, _) = get(&corpus, &[&format!("{FILE}:1-")]);
    assert_eq!((code, out.ends_with(&on_disk)), (0, true));
    // Text after the last ':' that is no range is part of the path.
    let (code, _, err) = get(&corpus, &[&format!("{FILE}:x")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not an indexed file"), "{err}");
}

#[test]
fn an_empty_file_is_shown_as_empty_not_as_line_1() {
    let corpus = Corpus::fixtures();
    fs::write(corpus.path().join("notes/empty.md"), "").unwrap();
    corpus.index();
    let output = corpus
        .memidx()
        .args(["get", "notes/empty.md"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "notes/empty.md  [an empty file]\n"
    );
}

#[test]
fn paths_show_and_read_from_the_current_folder() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let sub = corpus.path().join("runbooks/kubernetes");
    let in_sub = |args: &[&str]| {
        let output = corpus
            .memidx()
            .current_dir(&sub)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    // Human output opens from here, as ripgrep's does ...
    let shown = in_sub(&["search", "drain a node", "-k", "3", "--color", "never"]);
    let first = shown.lines().next().unwrap();
    assert!(first.contains("  node-drain.md:"), "{shown}");
    let path_and_lines = first.split_whitespace().nth(2).unwrap();
    // ... and get reads what it shows, and paths from here or from the root.
    let got = in_sub(&["get", path_and_lines]);
    assert!(got.starts_with(&format!("{path_and_lines}\n")), "{got}");
    let sibling = in_sub(&["get", "../databases/postgres-replication.md#2"]);
    assert!(
        sibling.starts_with("../databases/postgres-replication.md:"),
        "{sibling}"
    );
    let rooted = in_sub(&["get", "runbooks/databases/postgres-replication.md#2"]);
    assert_eq!(rooted, sibling);
    let explained = in_sub(&["explain", "drain a node", "-k", "1"]);
    assert!(
        explained
            .lines()
            .nth(2)
            .unwrap()
            .contains("  node-drain.md:"),
        "{explained}"
    );
    // JSON keeps the root-relative source: it is an id, not a direction.
    let json: serde_json::Value =
        serde_json::from_str(&in_sub(&["search", "drain a node", "-k", "1", "--json"])).unwrap();
    assert!(
        json["results"][0]["source"]
            .as_str()
            .unwrap()
            .starts_with("runbooks/kubernetes/"),
        "{json}"
    );
    // A path that leaves the root is refused, as from the root.
    corpus
        .memidx()
        .current_dir(&sub)
        .args(["get", "../../../outside.md"])
        .assert()
        .code(2);
}
