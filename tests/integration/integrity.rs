//! `meta.json`'s own checksum and bounds, and reads that must end: a
//! flipped bit or an out-of-bounds value in the manifest is damage named
//! with the fix (never "embedded with another model"), and a device, FIFO
//! or endless stream where a file is expected is refused at once, naming
//! the file (issue 17, items 5 and 9).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common::{Corpus, fixtures_dir};
use memidx::index::manifest::Manifest;

/// Longest any of these commands may run: each should end at once.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `args` in `corpus`, killed after [`TIMEOUT`]; fails the test if it
/// was killed.
fn run(corpus: &Corpus, args: &[&str]) -> Output {
    let output = corpus
        .memidx()
        .args(args)
        .timeout(TIMEOUT)
        .output()
        .unwrap();
    assert!(
        output.status.code().is_some(),
        "{args:?} did not end within {TIMEOUT:?}"
    );
    output
}

/// Asserts `output` is exit 2 with one stderr line, and returns it.
fn one_line_error(output: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{what}: {stderr}");
    let line = stderr.strip_suffix('\n').unwrap_or(&stderr);
    assert!(!line.contains('\n'), "{what}: not one line: {stderr}");
    line.to_string()
}

/// The index folder as memidx names it (the working directory is resolved).
fn index_dir(corpus: &Corpus) -> PathBuf {
    fs::canonicalize(corpus.path()).unwrap().join(".memidx")
}

/// The damaged-index line for `meta.json` with `what` wrong.
fn damaged_manifest(corpus: &Corpus, what: &str) -> String {
    format!(
        "memidx: index is damaged: {} {what}; run 'memidx index --full' to rebuild it",
        index_dir(corpus).join("meta.json").display()
    )
}

/// The byte offset of the last character of the value at `keys` (a path of
/// object keys, each found after the one before) in pretty-printed JSON,
/// skipping a string's closing quote.
fn last_value_byte(json: &str, keys: &[&str]) -> usize {
    let mut at = 0;
    for key in keys {
        let needle = format!("\"{key}\": ");
        at += json[at..]
            .find(&needle)
            .unwrap_or_else(|| panic!("{keys:?}"))
            + needle.len();
    }
    let end = at + json[at..].find([',', '\n']).unwrap();
    if json.as_bytes()[end - 1] == b'"' {
        end - 2
    } else {
        end - 1
    }
}

#[test]
fn a_flipped_bit_in_meta_json_is_damage_never_another_model() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--graph"]);
    let path = corpus.path().join(".memidx/meta.json");
    let intact = fs::read_to_string(&path).unwrap();
    let mismatch = damaged_manifest(&corpus, "checksum mismatch");
    for keys in [
        &["bm25", "k1"][..],
        &["bm25", "b"],
        &["embedder", "fingerprint"],
        &["embedder", "dim"],
        &["fusion", "sparse_weight"],
        &["fusion", "dense_weight"],
        &["fusion", "rrf_k"],
        &["fusion", "dense_feedback"],
        &["sparse", "docs"],
        &["sparse", "tokens"],
        &["graph", "weight"],
        &["counts", "chunks"],
        &["counts", "files"],
    ] {
        // The lowest bit of the value's last character: a digit stays a
        // digit, a hex digit a character, so the JSON still parses.
        let mut bytes = intact.clone().into_bytes();
        bytes[last_value_byte(&intact, keys)] ^= 1;
        fs::write(&path, &bytes).unwrap();
        for args in [
            &["search", "connection pool"][..],
            &["search", "connection pool", "--mode", "dense"],
            &["status", "--verify"],
        ] {
            let line = one_line_error(&run(&corpus, args), &format!("{keys:?} {args:?}"));
            assert_eq!(line, mismatch, "{keys:?} {args:?}");
        }
    }
    fs::write(&path, &intact).unwrap();
    assert_eq!(run(&corpus, &["status", "--verify"]).status.code(), Some(0));
}

/// A change that puts a value of the manifest out of bounds.
type Spoil = fn(&mut Manifest);

#[test]
fn an_out_of_bounds_value_in_meta_json_is_damage_naming_the_field() {
    let corpus = Corpus::fixtures();
    corpus.index_with(&["--graph"]);
    let dir = corpus.path().join(".memidx");
    let intact = Manifest::read(&dir).unwrap().unwrap();
    let docs = intact.sparse.docs;
    let cases: [(Spoil, String); 6] = [
        (
            |m| m.fusion.window = Some(0),
            "fusion.window: window must be between 1 and 100000, got 0".into(),
        ),
        (
            |m| m.fusion.dense_weight = 1e308,
            "fusion.dense_weight: the dense weight must be between 0 and 1000000, got 1e308".into(),
        ),
        (
            |m| m.fusion.rrf_k = -60.0,
            "fusion.rrf_k: the RRF k must be a finite number ≥ 0, got -60.0".into(),
        ),
        (
            |m| m.graph.as_mut().unwrap().weight = -1.0,
            "graph.weight: the graph weight must be between 0 and 1000000, got -1.0".into(),
        ),
        (
            |m| m.bm25.k1 = -1.5,
            "bm25.k1: k1 must be a finite number ≥ 0, got -1.5".into(),
        ),
        (
            |m| m.counts.chunks += 1,
            format!("sparse.docs: {docs} documents for {} chunks", docs + 1),
        ),
    ];
    for (spoil, message) in cases {
        let mut manifest = intact.clone();
        spoil(&mut manifest);
        manifest.write(&dir).unwrap();
        let expected = damaged_manifest(&corpus, &format!("field {message}"));
        for args in [&["search", "connection pool"][..], &["status", "--verify"]] {
            let line = one_line_error(&run(&corpus, args), &message);
            assert_eq!(line, expected, "{args:?}");
        }
    }
    // `index` rebuilds a damaged manifest's index whole, with a warning.
    let output = run(&corpus, &["index", ".", "--quiet"]);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("previous index unusable, rebuilding it whole")
            && stderr.contains("sparse.docs"),
        "{stderr}"
    );
    assert_eq!(
        run(&corpus, &["search", "connection pool"]).status.code(),
        Some(0)
    );
}

/// Makes a FIFO at `path` (with no writer: reading it would block).
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

#[test]
fn a_request_or_eval_file_that_is_a_device_or_fifo_is_refused_at_once() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let fifo = corpus.path().join("fifo");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    for (file, kind) in [("/dev/zero", "a character device"), (fifo, "a FIFO")] {
        let line = one_line_error(&run(&corpus, &["search", "--request", file]), file);
        assert_eq!(
            line,
            format!("memidx: request file {file} is {kind}, not a regular file")
        );
        let eval = fixtures_dir().join("eval");
        let queries = eval.join("queries.jsonl");
        let qrels = eval.join("qrels.tsv");
        let (queries, qrels) = (queries.to_str().unwrap(), qrels.to_str().unwrap());
        for (role, args) in [
            ("queries", ["eval", "--queries", file, "--qrels", qrels]),
            ("qrels", ["eval", "--queries", queries, "--qrels", file]),
        ] {
            let line = one_line_error(&run(&corpus, &args), &format!("{role} {file}"));
            assert_eq!(
                line,
                format!("memidx: {role} file {file} is {kind}, not a regular file")
            );
        }
    }
}

#[test]
fn a_request_on_stdin_is_read_only_up_to_its_limit() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let big = vec![b' '; (memidx::request::MAX_REQUEST_BYTES + 1) as usize];
    let output = corpus
        .memidx()
        .args(["search", "--request", "-"])
        .write_stdin(big)
        .timeout(TIMEOUT)
        .output()
        .unwrap();
    assert_eq!(
        one_line_error(&output, "stdin"),
        "memidx: the request on stdin is larger than the limit of 16 MiB"
    );
}

#[test]
fn a_manifest_linked_to_dev_zero_is_damage_and_index_rebuilds_it() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let path = corpus.path().join(".memidx/meta.json");
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let expected = damaged_manifest(&corpus, "is a character device, not a regular file");
    for args in [
        &["search", "connection pool"][..],
        &["status"],
        &["status", "--verify"],
    ] {
        assert_eq!(
            one_line_error(&run(&corpus, args), "meta.json"),
            expected,
            "{args:?}"
        );
    }
    let output = run(&corpus, &["index", ".", "--quiet"]);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("previous index unusable, rebuilding it whole"),
        "{stderr}"
    );
    assert!(fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(
        run(&corpus, &["search", "connection pool"]).status.code(),
        Some(0)
    );
}

#[test]
fn a_generation_file_replaced_by_a_device_or_fifo_is_named_by_verify_and_search() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let generation = Manifest::read(&corpus.path().join(".memidx"))
        .unwrap()
        .unwrap()
        .generation;
    let gen_dir = index_dir(&corpus).join(format!("gen-{generation}"));
    for (name, kind) in [
        ("chunks.bin", "a character device"),
        ("texts.bin", "a FIFO"),
    ] {
        let path = gen_dir.join(name);
        let intact = fs::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        if kind == "a FIFO" {
            mkfifo(&path);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        }
        let problem = format!(
            "memidx: index is damaged: {} is {kind}, not a regular file; run 'memidx index --full' to rebuild it",
            path.display()
        );
        let output = run(&corpus, &["status", "--verify"]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().next(), Some(problem.as_str()), "{stderr}");
        let line = one_line_error(&run(&corpus, &["search", "connection pool"]), name);
        assert_eq!(line, problem);
        fs::remove_file(&path).unwrap();
        fs::write(&path, intact).unwrap();
    }
}
