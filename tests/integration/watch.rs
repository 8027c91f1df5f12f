//! Watching: `memidx index --watch` brings edits, new files and deletions
//! into the index without another command, reports a bad file or a failed
//! run and goes on, holds the writer lock for its whole life (a second
//! `memidx index` is refused, searches go on), and stops on SIGINT with exit
//! 0 and a whole index; `memidx mcp --watch` does the same beside the
//! server, its lines on stderr, until the session ends.
//!
//! Every wait is bounded ([`PATIENCE`]) and polls for what must become true
//! rather than sleeping for a guessed time, so a loaded machine makes the
//! tests slower, not flaky.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::common::{Corpus, FIXTURE_CHUNKS};
use memidx::store::lock::IndexLock;

/// How long a change may take to reach the index, and a process to end.
const PATIENCE: Duration = Duration::from_secs(30);

/// A file of the fixtures that the tests edit.
const EDITED: &str = "notes/auth-slow-login-query.md";

/// The watcher process, killed (if still running) when the test ends.
struct Watcher {
    child: Child,
    log: tempfile::TempDir,
}

impl Watcher {
    /// Starts `memidx index . --watch EXTRA…` in `corpus`, its output in a
    /// folder outside the corpus (writing inside would be a change to watch).
    fn start(corpus: &Corpus, extra: &[&str]) -> Self {
        let log = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_memidx"))
            .args([&["index", ".", "--watch"][..], extra].concat())
            .current_dir(corpus.path())
            .env_remove("MEMIDX_INDEX")
            .stdin(Stdio::null())
            .stdout(fs::File::create(log.path().join("stdout")).unwrap())
            .stderr(fs::File::create(log.path().join("stderr")).unwrap())
            .spawn()
            .unwrap();
        Self { child, log }
    }

    fn stdout(&self) -> String {
        fs::read_to_string(self.log.path().join("stdout")).unwrap_or_default()
    }

    fn stderr(&self) -> String {
        fs::read_to_string(self.log.path().join("stderr")).unwrap_or_default()
    }

    /// What the watcher printed so far, for a failure message.
    fn output(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout(), self.stderr())
    }

    /// The summary lines of the runs so far.
    fn runs(&self) -> Vec<String> {
        self.stdout()
            .lines()
            .filter(|l| l.starts_with("indexed ") || l.starts_with("index is up to date"))
            .map(str::to_string)
            .collect()
    }

    /// Waits until `done` holds, failing after [`PATIENCE`].
    fn wait_until(&mut self, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let started = Instant::now();
        while !done(self) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the watcher exited ({status}) before it could {what}\n{}",
                    self.output()
                );
            }
            assert!(
                started.elapsed() < PATIENCE,
                "the watcher did not {what} within {PATIENCE:?}\n{}",
                self.output()
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// Makes `change`, then waits until `done` holds and a run after the
    /// change has printed its summary line (a search may see the new
    /// generation a moment before its run prints).
    fn after(&mut self, what: &str, change: impl FnOnce(), mut done: impl FnMut(&Self) -> bool) {
        let before = self.runs().len();
        change();
        self.wait_until(what, |w| done(w) && w.runs().len() > before);
    }

    /// Sends SIGINT and waits for the watcher to end with exit 0.
    fn interrupt(&mut self) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: sends a signal to the child this test started and still owns.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        let status = wait_for_exit(&mut self.child);
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "SIGINT did not stop the watcher with exit 0 ({status:?})\n{}",
            self.output()
        );
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to [`PATIENCE`] for `child` to exit.
fn wait_for_exit(child: &mut Child) -> Option<ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < PATIENCE {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        sleep(Duration::from_millis(50));
    }
    None
}

/// The sources of the sparse results for `word` (none when nothing matches).
fn sources(corpus: &Corpus, word: &str) -> Vec<String> {
    let output = corpus
        .memidx()
        .args(["search", word, "--mode", "sparse", "--json", "-k", "100"])
        .output()
        .unwrap();
    match output.status.code() {
        Some(0) => {}
        Some(1) => return Vec::new(),
        _ => panic!("search failed: {}", String::from_utf8_lossy(&output.stderr)),
    }
    let response: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["source"].as_str().unwrap().to_string())
        .collect()
}

/// True when the file `source` is among `word`'s results.
fn found(corpus: &Corpus, word: &str, source: &str) -> bool {
    sources(corpus, word).iter().any(|s| s == source)
}

/// Appends `text` to `path` in one write (no moment with the file empty).
fn append(path: &Path, text: &str) {
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Asserts that a watcher's stderr `text` says first that it watches the
/// corpus (after the first run's warning naming the fixtures' hidden
/// folder), and that every line after that is `line` (there is one at
/// least).
fn assert_lines(text: &str, line: &str) {
    let hidden = "memidx: warning: skipped .obsidian: hidden folder";
    let mut lines = text.lines().skip_while(|l| l.starts_with(hidden));
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with("memidx: watching ") && first.ends_with(" for changes (Ctrl-C stops)"),
        "{text}"
    );
    let rest: Vec<&str> = lines.collect();
    assert!(
        !rest.is_empty() && rest.iter().all(|l| *l == line),
        "expected only lines {line:?} after the first, got:\n{text}"
    );
}

/// Asserts that `memidx index .` in `corpus` is refused because the lock
/// is held, with exit 2 and the one-line message saying who holds it.
fn assert_index_refused(corpus: &Corpus) {
    corpus
        .memidx()
        .args(["index", "."])
        .timeout(PATIENCE)
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::starts_with(
            "memidx: another 'memidx index' is running on this index (lock held on ./.memidx/LOCK); \
             wait for it to finish (a watcher, 'memidx index --watch' or 'memidx mcp --watch', \
             holds it until stopped)\n",
        ));
}

#[test]
fn watch_indexes_edits_additions_and_deletions_warns_of_a_bad_file_and_stops_on_sigint() {
    let corpus = Corpus::fixtures();
    let mut watcher = Watcher::start(&corpus, &[]);
    watcher.wait_until("build the first index", |w| w.runs().len() == 1);
    assert!(watcher.runs()[0].starts_with(&format!(
        "indexed 18 files (0 unchanged), {FIXTURE_CHUNKS} chunks"
    )));
    let deleted = "notes/status-page-translations.md";
    assert!(found(&corpus, "translations", deleted));

    assert!(!found(&corpus, "zorblatquux", EDITED));
    let edit = || {
        append(
            &corpus.path().join(EDITED),
            "\n\nThe zorblatquux cache was warmed by hand.\n",
        );
    };
    watcher.after("index an edited file", edit, |_| {
        found(&corpus, "zorblatquux", EDITED)
    });
    // Only the edited file was read again.
    assert!(
        watcher.runs()[1].starts_with(&format!(
            "indexed 18 files (17 unchanged), {FIXTURE_CHUNKS} chunks"
        )),
        "{}",
        watcher.output()
    );

    let added = "notes/watch-added-note.md";
    let add = || {
        let text = "# A new note\n\nThe flimbertonic job runs nightly.\n";
        fs::write(corpus.path().join(added), text).unwrap();
    };
    watcher.after("index a new file", add, |_| {
        found(&corpus, "flimbertonic", added)
    });

    let delete = || fs::remove_file(corpus.path().join(deleted)).unwrap();
    watcher.after("drop a deleted file's chunks", delete, |_| {
        !found(&corpus, "translations", deleted)
    });

    // A file that cannot be indexed is a warning; the watch goes on.
    let bad = || fs::write(corpus.path().join("notes/bad.md"), b"\xff\xfe not text").unwrap();
    watcher.after("warn of a bad file", bad, |w| {
        w.stderr().contains("skipped notes/bad.md")
    });
    assert_lines(
        &watcher.stderr(),
        "memidx: warning: skipped notes/bad.md: not valid UTF-8 (at byte 0)",
    );
    let edit = || {
        append(
            &corpus.path().join(added),
            "\nAfter it, the quorvex step.\n",
        )
    };
    watcher.after("index an edit after the bad file", edit, |_| {
        found(&corpus, "quorvex", added)
    });

    // A new hidden folder is one run (finding nothing to do); what happens
    // inside it, as inside the index folder, starts none.
    let runs = watcher.runs().len();
    let git = || fs::create_dir(corpus.path().join(".git")).unwrap();
    watcher.after("look at a new folder", git, |_| true);
    assert!(
        watcher.runs()[runs].starts_with("index is up to date: 18 files"),
        "{}",
        watcher.output()
    );
    fs::write(corpus.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    sleep(Duration::from_secs(2));
    assert_eq!(watcher.runs().len(), runs + 1, "{}", watcher.output());

    watcher.interrupt();
    corpus
        .memidx()
        .args(["status", "--verify"])
        .assert()
        .code(0);
    // The index is what a fresh run over the folder makes.
    let fresh = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&fresh.stdout).starts_with("index is up to date: 18 files"),
        "{fresh:?}"
    );
}

#[test]
fn folders_moved_out_and_in_and_a_new_ignore_rule_reach_the_index_as_a_walk_would() {
    let corpus = Corpus::fixtures();
    let mut watcher = Watcher::start(&corpus, &[]);
    watcher.wait_until("build the first index", |w| w.runs().len() == 1);
    let (runbook, moved) = (
        "runbooks/databases/postgres-replication.md",
        "runbooks/db/postgres-replication.md",
    );
    assert!(found(&corpus, "replication", runbook));

    // A folder moved away is one event, for the folder: its files leave.
    let away = tempfile::tempdir().unwrap();
    let folder = corpus.path().join("runbooks/databases");
    let out = || fs::rename(&folder, away.path().join("databases")).unwrap();
    watcher.after("drop a folder moved away", out, |_| {
        !found(&corpus, "replication", runbook)
    });
    // Moved back under another name: its files come back there.
    let back = || {
        fs::rename(
            away.path().join("databases"),
            corpus.path().join("runbooks/db"),
        )
        .unwrap()
    };
    watcher.after("index a folder moved in", back, |_| {
        found(&corpus, "replication", moved)
    });
    // A new ignore rule drops what it matches.
    let rule = || fs::write(corpus.path().join("runbooks/.memidxignore"), "db/\n").unwrap();
    watcher.after("apply a new ignore rule", rule, |_| {
        !found(&corpus, "replication", moved)
    });
    watcher.interrupt();
    let fresh = corpus.memidx().args(["index", "."]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&fresh.stdout).starts_with("index is up to date: 17 files"),
        "{fresh:?}"
    );
}

#[test]
fn a_second_index_beside_a_watcher_is_refused_while_searches_go_on() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let mut watcher = Watcher::start(&corpus, &["--full"]);
    watcher.wait_until("finish the first run", |w| w.runs().len() == 1);
    assert!(watcher.runs()[0].starts_with("indexed 18 files (0 unchanged)"));

    // Between runs too: the watcher holds the lock for its whole life.
    assert_index_refused(&corpus);
    let hits = corpus.search_json("max_connections", &["-k", "1"]);
    assert_eq!(hits["total_retrieved"], 1);

    let edit = || append(&corpus.path().join(EDITED), "\n\nThe zorblatquux cache.\n");
    watcher.after("index an edited file", edit, |_| {
        found(&corpus, "zorblatquux", EDITED)
    });
    // --full applies to the first run only.
    assert!(
        watcher.runs()[1..]
            .iter()
            .all(|l| l.starts_with("indexed 18 files (17 unchanged)")),
        "{}",
        watcher.output()
    );
    assert_index_refused(&corpus);

    watcher.interrupt();
    corpus.index();
}

#[test]
fn a_failed_run_is_reported_and_the_next_change_is_indexed() {
    let corpus = Corpus::fixtures();
    let mut watcher = Watcher::start(&corpus, &[]);
    watcher.wait_until("build the first index", |w| w.runs().len() == 1);

    // Someone replaces the lock file and holds the new one: the watcher's
    // lock no longer keeps them out, so its next run must fail.
    let lock = corpus.path().join(".memidx/LOCK");
    fs::remove_file(&lock).unwrap();
    let held = IndexLock::acquire(&lock).unwrap();
    append(&corpus.path().join(EDITED), "\n\nThe zorblatquux cache.\n");
    watcher.wait_until("report the failed run", |w| {
        w.stderr().contains("still watching")
    });
    assert_lines(
        &watcher.stderr(),
        "memidx: another 'memidx index' is running on this index (lock held on ./.memidx/LOCK); \
         wait for it to finish (a watcher, 'memidx index --watch' or 'memidx mcp --watch', \
         holds it until stopped); still watching",
    );
    assert!(!found(&corpus, "zorblatquux", EDITED));

    // Once it is free, the next change takes the lock again and both
    // changes reach the index.
    drop(held);
    let edit = || append(&corpus.path().join(EDITED), "\n\nThe quorvex step.\n");
    watcher.after("index after the failure", edit, |_| {
        found(&corpus, "quorvex", EDITED)
    });
    assert!(found(&corpus, "zorblatquux", EDITED));
    assert_index_refused(&corpus);
    watcher.interrupt();
}

#[test]
fn a_watcher_that_cannot_take_the_lock_fails_at_once() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let _held = IndexLock::acquire(&corpus.path().join(".memidx/LOCK")).unwrap();
    corpus
        .memidx()
        .args(["index", ".", "--watch"])
        .timeout(PATIENCE)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "memidx: another 'memidx index' is running",
        ));
}

#[cfg(feature = "mcp")]
mod mcp {
    //! `memidx mcp --watch`, driven with raw JSON-RPC lines over its stdio.

    use std::io::{BufRead, BufReader, Write};
    use std::process::{ChildStdin, Command, Stdio};
    use std::sync::mpsc::{self, Receiver};
    use std::time::Instant;

    use serde_json::{Value, json};

    use super::*;

    /// A running `memidx mcp --watch` and what it wrote to stdout.
    struct Server {
        child: Child,
        stdin: Option<ChildStdin>,
        lines: Receiver<String>,
        seen: Vec<Value>,
        next_id: u64,
        log: tempfile::TempDir,
    }

    impl Server {
        fn start(corpus: &Corpus) -> Self {
            let log = tempfile::tempdir().unwrap();
            let mut child = Command::new(env!("CARGO_BIN_EXE_memidx"))
                .args(["mcp", "--watch", "--index", "."])
                .current_dir(corpus.path())
                .env_remove("MEMIDX_INDEX")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(fs::File::create(log.path().join("stderr")).unwrap())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (sender, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
            let stdin = child.stdin.take();
            let mut server = Self {
                child,
                stdin,
                lines,
                seen: Vec::new(),
                next_id: 1,
                log,
            };
            let init = server.request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "watch-test", "version": "0"}}),
            );
            assert_eq!(init["result"]["serverInfo"]["name"], "memidx");
            server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            server
        }

        fn stderr(&self) -> String {
            fs::read_to_string(self.log.path().join("stderr")).unwrap_or_default()
        }

        fn send(&mut self, message: &Value) {
            let stdin = self.stdin.as_mut().unwrap();
            writeln!(stdin, "{message}").unwrap();
            stdin.flush().unwrap();
        }

        /// Sends a request and returns its response (every stdout line
        /// must be a JSON-RPC message).
        fn request(&mut self, method: &str, params: Value) -> Value {
            let id = self.next_id;
            self.next_id += 1;
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
            let started = Instant::now();
            loop {
                let left = PATIENCE.saturating_sub(started.elapsed());
                let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                    panic!(
                        "no answer to {method} within {PATIENCE:?}\nstderr:\n{}",
                        self.stderr()
                    )
                });
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|_| panic!("stdout carried a line that is not JSON: {line:?}"));
                assert_eq!(message["jsonrpc"], "2.0", "{line}");
                self.seen.push(message.clone());
                if message["id"] == id {
                    return message;
                }
            }
        }

        /// A tool call's structured result, failing on a tool error.
        fn call(&mut self, tool: &str, arguments: Value) -> Value {
            let response =
                self.request("tools/call", json!({"name": tool, "arguments": arguments}));
            let result = &response["result"];
            assert_ne!(result["isError"], true, "{tool}: {response}");
            result["structuredContent"].clone()
        }

        /// The sources of a sparse search for `word`.
        fn sources(&mut self, word: &str) -> Vec<String> {
            let found = self.call(
                "search",
                json!({"query": word, "mode": "sparse", "top_k": 50, "include_text": false}),
            );
            found["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["source"].as_str().unwrap().to_string())
                .collect()
        }

        /// Polls `search` until `done` holds of `word`'s sources.
        fn wait_for(&mut self, what: &str, word: &str, done: impl Fn(&[String]) -> bool) {
            let started = Instant::now();
            loop {
                let sources = self.sources(word);
                if done(&sources) {
                    return;
                }
                assert!(
                    started.elapsed() < PATIENCE,
                    "the server's watcher did not {what} within {PATIENCE:?} (sources {sources:?})\nstderr:\n{}",
                    self.stderr()
                );
                sleep(Duration::from_millis(100));
            }
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[test]
    fn mcp_watch_serves_changes_keeps_stdout_for_protocol_and_ends_with_input() {
        let corpus = Corpus::fixtures();
        corpus.index();
        // Changed while nothing watched: the watcher's first run finds it.
        append(
            &corpus.path().join(EDITED),
            "\n\nThe glimmerwhisk checklist.\n",
        );
        let mut server = Server::start(&corpus);
        server.wait_for("run at start", "glimmerwhisk", |s| s == [EDITED]);
        assert!(server.sources("flimbertonic").is_empty());

        let added = "notes/watch-added-note.md";
        fs::write(
            corpus.path().join(added),
            "# A new note\n\nThe flimbertonic job runs nightly.\n",
        )
        .unwrap();
        server.wait_for("index a new file", "flimbertonic", |s| s == [added]);
        append(
            &corpus.path().join(EDITED),
            "\n\nThe zorblatquux cache was warmed by hand.\n",
        );
        server.wait_for("index an edited file", "zorblatquux", |s| s == [EDITED]);
        fs::remove_file(corpus.path().join(added)).unwrap();
        server.wait_for("drop a deleted file", "flimbertonic", <[String]>::is_empty);

        // The server holds the writer lock: another index is refused, while
        // its own reindex runs under that lock.
        assert_index_refused(&corpus);
        let reindexed = server.call("reindex", json!({}));
        assert_eq!(reindexed["up_to_date"], true, "{reindexed}");
        assert_eq!(reindexed["files"], 18);

        // End of input ends the session, the watcher with it: exit 0.
        drop(server.stdin.take());
        let status = wait_for_exit(&mut server.child);
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "{status:?}\n{}",
            server.stderr()
        );
        while let Ok(line) = server.lines.recv_timeout(Duration::from_secs(5)) {
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("stdout carried a line that is not JSON: {line:?}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
        }
        // The watcher's lines went to stderr: a first run at start, then
        // one per change.
        let stderr = server.stderr();
        assert!(
            stderr.contains(", re-indexing when its files change"),
            "{stderr}"
        );
        assert!(
            stderr
                .lines()
                .next()
                .is_some_and(|l| l.starts_with("memidx mcp: serving ")),
            "{stderr}"
        );
        let runs: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("indexed ") || l.starts_with("index is up to date"))
            .collect();
        assert!(
            runs.first()
                .is_some_and(|l| l.starts_with("indexed 18 files (17 unchanged)")),
            "{stderr}"
        );
        let count = |start: &str| runs.iter().filter(|l| l.starts_with(start)).count();
        // The addition and the edit, then the deletion.
        assert!(count("indexed 19 files (18 unchanged)") >= 2, "{stderr}");
        assert!(count("indexed 18 files (18 unchanged)") >= 1, "{stderr}");
        // The lock went with the server.
        corpus.index();
    }

    #[test]
    fn mcp_watch_is_refused_with_read_only() {
        let corpus = Corpus::fixtures();
        corpus.index();
        corpus
            .memidx()
            .args(["mcp", "--watch", "--read-only"])
            .timeout(PATIENCE)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(
                "the argument '--watch' cannot be used with '--read-only'",
            ));
    }
}
