//! The resident path (src/cmd/resident.rs): while `memidx mcp` serves an
//! index, `memidx search`, `explain` and `get` are answered by it through
//! the socket in the index folder, with the bytes and exit codes of the
//! in-process path (`--no-server`); a socket left stale, open to others or
//! owned by another user is never used. The server's CPU time tells
//! whether it answered.

use crate::common::Corpus;
use crate::common::mcp::HttpServer;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

const INCIDENT: &str = "incidents/2023/q4/billing-month-end-timeouts.md";

fn indexed() -> Corpus {
    let corpus = Corpus::fixtures();
    corpus.index();
    corpus
}

fn socket(corpus: &Corpus) -> PathBuf {
    corpus.path().join(".memidx/serve.sock")
}

/// Waits until the server's socket is in place.
fn wait_for_socket(corpus: &Corpus) {
    let started = Instant::now();
    while !socket(corpus).exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `memidx ARGS` run from `dir` under `corpus`: exit code, stdout, stderr.
fn run(corpus: &Corpus, dir: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let output = corpus
        .memidx()
        .current_dir(corpus.path().join(dir))
        .args(args)
        .output()
        .expect("run memidx");
    (
        output.status.code(),
        String::from_utf8(output.stdout).expect("UTF-8"),
        String::from_utf8(output.stderr).expect("UTF-8"),
    )
}

/// The CPU time the process `pid` used so far, all its threads, ended ones
/// included, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// How many times the work is done to tell who did it by CPU time: a
/// search the server answers costs it milliseconds, so this many make tens
/// of clock ticks (28–32 measured); one it declines costs it a small part
/// of that (2), one it never sees nothing.
const REPEATS: usize = 60;

/// The CPU ticks the server `pid` spent while `memidx` ran `args` from the
/// corpus [`REPEATS`] times (`binary`, else the one under test), each
/// printing results.
fn server_ticks(pid: u32, corpus: &Corpus, binary: Option<&Path>, args: &[&str]) -> u64 {
    let before = cpu_ticks(pid);
    for _ in 0..REPEATS {
        let mut command = match binary {
            Some(binary) => std::process::Command::new(binary),
            None => std::process::Command::new(assert_cmd::cargo::cargo_bin("memidx")),
        };
        let output = (command.current_dir(corpus.path()))
            .env_remove("MEMIDX_INDEX")
            .args(args)
            .output()
            .expect("run memidx");
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert!(output.stdout.len() > 1000, "{args:?}");
    }
    cpu_ticks(pid) - before
}

/// An explain report with its timings left out.
fn untimed(mut report: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|key, _| !key.ends_with("_ms"));
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut report);
    report
}

#[test]
fn a_server_answers_the_cli_with_the_same_bytes_and_exit_codes() {
    let corpus = indexed();
    let mut server = HttpServer::start(corpus.path(), &[]);
    wait_for_socket(&corpus);
    let mode = std::fs::metadata(socket(&corpus))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "owner-only");
    let id = format!("{INCIDENT}#1");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (".", vec!["search", "INC-2023-Q4-011 gateway timeout"]),
        (
            ".",
            vec!["search", "replication", "lag", "--json", "-k", "3"],
        ),
        (
            ".",
            vec![
                "search",
                "failover",
                "--filter",
                "environment=production",
                "--jsonl",
            ],
        ),
        ("runbooks", vec!["search", "replication lag", "--here"]),
        (".", vec!["search", "xyzzyplugh"]),
        (".", vec!["search", "lag", "--filter", "nope=1"]),
        (".", vec!["search", "lag", "--index", "/nonexistent"]),
        (".", vec!["get", &id]),
        (
            "incidents",
            vec!["get", "2023/q4/billing-month-end-timeouts.md:1-3"],
        ),
        (".", vec!["get", "notes/none.md#1", "--json"]),
        (".", vec!["explain", "replication lag", "-k", "2"]),
        (
            ".",
            vec!["--color", "always", "search", "canary deploys", "-k", "2"],
        ),
    ];
    for (dir, args) in &cases {
        let served = run(&corpus, dir, args);
        let mut alone: Vec<&str> = args.clone();
        alone.push("--no-server");
        let answered = run(&corpus, dir, &alone);
        if args.contains(&"explain") {
            // Its timings differ from run to run; the rest may not.
            assert_eq!(served.0, answered.0, "{args:?}");
            let lines = |text: &str| -> Vec<String> {
                (text.lines())
                    .filter(|line| !line.contains(" ms"))
                    .map(String::from)
                    .collect()
            };
            assert_eq!(lines(&served.1), lines(&answered.1), "{args:?}");
            continue;
        }
        assert_eq!(served, answered, "{dir}: {args:?}");
    }
    let json = |extra: &[&str]| {
        let mut args = vec![
            "explain",
            "failover",
            "--json",
            "--filter",
            "environment=production",
        ];
        args.extend(extra);
        let (code, out, _) = run(&corpus, ".", &args);
        assert_eq!(code, Some(0));
        untimed(serde_json::from_str(&out).unwrap())
    };
    assert_eq!(json(&[]), json(&["--no-server"]));
    // The server did the work: its CPU time grew with the searches it
    // answered…
    let pid = server.pid();
    let search = ["search", "replication lag"];
    let served = server_ticks(pid, &corpus, None, &search);
    // …and not with searches told to answer themselves…
    let alone = server_ticks(
        pid,
        &corpus,
        None,
        &["search", "replication lag", "--no-server"],
    );
    // …nor with those of another binary (an upgrade since it started),
    // which it declines, and which answer themselves.
    let copy = tempfile::tempdir().unwrap();
    let other = copy.path().join("memidx");
    std::fs::copy(assert_cmd::cargo::cargo_bin("memidx"), &other).unwrap();
    let declined = server_ticks(pid, &corpus, Some(&other), &search);
    assert!(
        served >= 8 && alone * 8 <= served && declined * 4 <= served,
        "server ticks: {served} answering, {alone} for --no-server, {declined} declining"
    );
    // A re-index beside the server: the next command it answers reads the
    // new generation (what it kept open from the old one is let go).
    let note = corpus.path().join("notes/kept-open.md");
    std::fs::write(
        &note,
        "# Kept open\n\nThe zanzibarquux relay was retired.\n",
    )
    .unwrap();
    corpus.index();
    let served = run(&corpus, ".", &["search", "zanzibarquux", "--json"]);
    assert_eq!(served.0, Some(0), "{served:?}");
    assert!(served.1.contains("notes/kept-open.md#1"), "{}", served.1);
    assert_eq!(
        served,
        run(
            &corpus,
            ".",
            &["search", "zanzibarquux", "--json", "--no-server"]
        )
    );
    // Its stop removes the socket, and the CLI answers itself again.
    assert_eq!(server.signal("TERM"), Some(0));
    assert!(!socket(&corpus).exists());
    let (code, out, _) = run(&corpus, ".", &["search", "INC-2023-Q4-011"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("billing-month-end-timeouts.md"), "{out}");
}

/// A socket at `path` whose every connection is counted and dropped.
fn counting_socket(path: &Path) -> Arc<AtomicUsize> {
    let listener = UnixListener::bind(path).expect("bind");
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            count.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    accepted
}

#[test]
fn a_stale_foreign_or_open_socket_is_never_used() {
    let corpus = indexed();
    let expected = run(&corpus, ".", &["search", "replication lag", "--no-server"]);
    assert_eq!(expected.0, Some(0));
    // Stale: nothing listens behind it.
    drop(UnixListener::bind(socket(&corpus)).expect("bind"));
    assert!(socket(&corpus).exists());
    assert_eq!(run(&corpus, ".", &["search", "replication lag"]), expected);
    std::fs::remove_file(socket(&corpus)).unwrap();

    // Open to other users: never connected to.
    let accepted = counting_socket(&socket(&corpus));
    std::fs::set_permissions(socket(&corpus), std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(run(&corpus, ".", &["search", "replication lag"]), expected);
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    // Owned by another user (only root can give it away).
    std::fs::set_permissions(socket(&corpus), std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = std::ffi::CString::new(socket(&corpus).to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; chown has no other precondition.
    if unsafe { libc::chown(path.as_ptr(), 65534, 65534) } == 0 {
        assert_eq!(run(&corpus, ".", &["search", "replication lag"]), expected);
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
    }
    std::fs::remove_file(socket(&corpus)).unwrap();

    // A server started over a stale socket takes its place.
    drop(UnixListener::bind(socket(&corpus)).expect("bind"));
    let _server = HttpServer::start(corpus.path(), &[]);
    let started = Instant::now();
    while std::os::unix::net::UnixStream::connect(socket(&corpus)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "no server");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run(&corpus, ".", &["search", "replication lag"]), expected);
}

#[test]
fn a_file_that_is_no_socket_is_left_alone() {
    let corpus = indexed();
    std::fs::write(socket(&corpus), "mine").unwrap();
    let mut server = HttpServer::start(corpus.path(), &[]);
    let (code, out, _) = run(&corpus, ".", &["search", "INC-2023-Q4-011"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("billing-month-end-timeouts.md"), "{out}");
    assert_eq!(server.signal("TERM"), Some(0));
    assert_eq!(std::fs::read_to_string(socket(&corpus)).unwrap(), "mine");
}
