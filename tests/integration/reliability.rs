//! Reliability tests of the `memidx` binary (issue 8): a killed `index` never
//! loses the previous index, a second `index` is refused while one runs and
//! searches during a run read one complete generation, every damaged index
//! file is detected and named, and hostile input files, hostile requests and
//! a read-only corpus neither abort a run nor get written to.
//!
//! Tests that time things compare against durations measured in the same
//! test, so they hold on a slow machine too; absolute bounds are generous
//! (debug builds, 2 cores, the other tests running in parallel).

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::{Corpus, copy_dir, copy_fixture, fixtures_dir};
use serde_json::Value;

/// Queries whose `search --json` output stands for "the index's results".
const QUERIES: [&str; 3] = [
    "connection pool",
    "INC-2023-Q4-011 gateway timeout",
    "what to do when the main database server dies",
];

/// Copies of `fixtures/corpus` in the large corpus (20 markdown files each).
const COPIES: usize = 60;

/// The `memidx` binary under test, as a plain `std` command (spawnable and
/// killable), run in `dir` with no `MEMIDX_INDEX` from the environment.
fn memidx_in(dir: &Path) -> StdCommand {
    let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_memidx"));
    cmd.current_dir(dir).env_remove("MEMIDX_INDEX");
    cmd
}

/// A corpus of `copies` copies of `fixtures/corpus`, in folders `c00`, `c01`, ….
fn big_corpus(copies: usize) -> Corpus {
    let corpus = Corpus::empty();
    let fixtures = fixtures_dir().join("corpus");
    for i in 0..copies {
        copy_fixture(&fixtures, &corpus.path().join(format!("c{i:02}")));
    }
    corpus
}

/// Runs `memidx index . ARGS` to completion and asserts it succeeded.
fn index_ok(dir: &Path, args: &[&str]) -> Output {
    let output = memidx_in(dir)
        .args(["index", "."])
        .args(args)
        .output()
        .expect("run memidx index");
    assert!(
        output.status.success(),
        "index {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Starts `memidx index . --full -q` in the background.
fn spawn_full_index(dir: &Path) -> Child {
    spawn_index(dir, &["--full"])
}

/// Starts `memidx index . -q` with `args` in `dir`.
fn spawn_index(dir: &Path, args: &[&str]) -> Child {
    memidx_in(dir)
        .args(["index", ".", "-q"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memidx index")
}

/// Runs `memidx search QUERY --json` in `dir`.
fn search(dir: &Path, query: &str) -> Output {
    memidx_in(dir)
        .args(["search", query, "--json"])
        .output()
        .expect("run memidx search")
}

/// The `search --json` output of every query in [`QUERIES`], asserting exit 0.
fn results(dir: &Path, context: &str) -> Vec<Vec<u8>> {
    QUERIES
        .iter()
        .map(|query| {
            let output = search(dir, query);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{context}: search {query:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            output.stdout
        })
        .collect()
}

/// `.memidx/meta.json`, parsed.
fn manifest(dir: &Path) -> Value {
    let bytes = fs::read(dir.join(".memidx/meta.json")).expect("meta.json");
    serde_json::from_slice(&bytes).expect("meta.json is JSON")
}

/// The live generation number, from `meta.json`.
fn live_generation(dir: &Path) -> u64 {
    manifest(dir)["generation"]
        .as_u64()
        .expect("meta.json has a numeric generation")
}

/// Names of the `gen-*` folders under `.memidx`, sorted.
fn generation_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir.join(".memidx"))
        .expect("read .memidx")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("gen-"))
        .collect();
    names.sort();
    names
}

/// Asserts `output` is a usage/runtime error: exit 2, nothing on stdout, one
/// line `memidx: …` on stderr, no panic. Returns the line.
#[track_caller]
fn assert_one_line_error(output: &Output, context: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !stderr.contains("panicked"),
        "{context}: memidx panicked: {stderr}"
    );
    assert_eq!(
        output.status.code(),
        Some(2),
        "{context}: expected exit 2, stderr: {stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "{context}: an error printed to stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let line = stderr.trim_end_matches('\n');
    assert!(
        line.starts_with("memidx: ") && !line.contains('\n'),
        "{context}: expected one line 'memidx: …' on stderr, got {stderr:?}"
    );
    line.to_string()
}

/// Whether the process `pid` holds a `flock` on the file at `lock` (read from
/// `/proc/locks`, so the test never touches the lock itself). `None` when
/// `/proc/locks` cannot be read.
fn holds_lock(lock: &Path, pid: u32) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let Ok(meta) = fs::metadata(lock) else {
        return Some(false);
    };
    let inode = format!(":{}", meta.ino());
    let pid = pid.to_string();
    Some(locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 5 && fields[1] == "FLOCK" && fields[4] == pid && fields[5].ends_with(&inode)
    }))
}

/// Kills `child` (SIGKILL) unless it has already exited; returns its exit
/// status if it finished on its own, and its stderr.
fn kill_or_reap(mut child: Child) -> (Option<std::process::ExitStatus>, String) {
    let finished = child.try_wait().expect("try_wait");
    if finished.is_none() {
        child.kill().expect("kill");
    }
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        pipe.read_to_string(&mut stderr).ok();
    }
    (finished.map(|_| status), stderr)
}

/// `n` delays spread geometrically from 5 ms to `longest`.
fn spread(longest: Duration, n: u32) -> Vec<Duration> {
    let first = 0.005_f64;
    let last = longest.as_secs_f64().max(first * 2.0);
    (0..n)
        .map(|i| {
            let t = f64::from(i) / f64::from(n - 1);
            Duration::from_secs_f64(first * (last / first).powf(t))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// 1. Crash safety
// ---------------------------------------------------------------------------

#[test]
fn killing_index_at_any_point_keeps_the_previous_index_and_the_next_run_equals_a_fresh_one() {
    let a = big_corpus(COPIES);
    let started = Instant::now();
    index_ok(a.path(), &["--full", "-q"]);
    let full = started.elapsed();
    let before = results(a.path(), "after the first complete index");

    // Dense early (walking, parsing) and late (writing, fsync, the manifest
    // swap, removing the old generation).
    let mut delays = spread(full.mul_f64(0.6), 8);
    delays.extend([0.7, 0.8, 0.9, 0.95, 1.0].map(|f| full.mul_f64(f)));
    let mut killed = 0;
    let mut log = Vec::new();
    for delay in &delays {
        let child = spawn_full_index(a.path());
        std::thread::sleep(*delay);
        let (finished, stderr) = kill_or_reap(child);
        match finished {
            Some(status) => {
                assert!(
                    status.success(),
                    "an uninterrupted index run after earlier kills failed: {stderr}"
                );
                log.push(format!("{delay:?}: finished before the kill"));
            }
            None => {
                killed += 1;
                log.push(format!(
                    "{delay:?}: killed; gen folders left: {:?}",
                    generation_dirs(a.path())
                ));
            }
        }
        for (query, expected) in QUERIES.iter().zip(&before) {
            let output = search(a.path(), query);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!stderr.contains("panicked"), "{stderr}");
            assert_eq!(
                output.status.code(),
                Some(0),
                "search {query:?} after killing index at {delay:?} failed: {stderr}"
            );
            assert!(
                output.stdout == *expected,
                "search {query:?} after killing index at {delay:?} differs from the previous complete index"
            );
        }
    }
    eprintln!(
        "crash safety: full index took {full:?}; {killed} of {} runs killed\n  {}",
        delays.len(),
        log.join("\n  ")
    );
    assert!(
        killed >= delays.len() / 2,
        "only {killed} of {} runs were still running when killed: {log:?}",
        delays.len()
    );

    // The next run completes, cleans up what the killed runs left, and
    // serves the same results as a fresh index of a separate copy.
    index_ok(a.path(), &["--full", "-q"]);
    let live = format!("gen-{}", live_generation(a.path()));
    assert_eq!(
        generation_dirs(a.path()),
        [live],
        "leftover generations after a completed run"
    );
    let after = results(a.path(), "after the completing run");

    // A separate copy whose first run is killed: no index exists yet, so a
    // search must say so (exit 2, one line), never panic.
    let b = big_corpus(COPIES);
    for delay in [
        Duration::from_millis(5),
        Duration::from_millis(60),
        full / 4,
        full / 2,
    ] {
        let child = spawn_full_index(b.path());
        std::thread::sleep(delay);
        let (finished, stderr) = kill_or_reap(child);
        if let Some(status) = finished {
            // Only at the later delays, on a machine less loaded than when
            // `full` was measured: the run must have succeeded, and its
            // index is checked below like the one a later run builds.
            assert!(
                delay >= full / 4 && status.success(),
                "the first run finished within {delay:?} (full index takes {full:?}): {stderr}"
            );
            break;
        }
        let output = search(b.path(), QUERIES[0]);
        let line = assert_one_line_error(
            &output,
            &format!("search after killing the first index at {delay:?}"),
        );
        assert!(
            line.contains("run 'memidx index"),
            "the message should say no index exists and how to build one: {line}"
        );
    }
    index_ok(b.path(), &["-q"]);
    assert_eq!(
        generation_dirs(b.path()),
        [format!("gen-{}", live_generation(b.path()))],
        "leftover generations from killed first runs"
    );
    let fresh = results(b.path(), "fresh index of a separate copy");
    for ((query, got), want) in QUERIES.iter().zip(&after).zip(&fresh) {
        assert!(
            got == want,
            "search {query:?}: the index rebuilt after kills differs from a fresh one"
        );
    }
    for ((query, got), want) in QUERIES.iter().zip(&after).zip(&before) {
        assert!(
            got == want,
            "search {query:?}: a --full rebuild of an unchanged corpus changed the results"
        );
    }
}

/// Appends a line of its own to copy `copy`'s billing service note.
fn edit_copy(dir: &Path, copy: usize) {
    let note = dir.join(format!("c{copy:02}/services/billing-service.md"));
    let mut text = fs::read_to_string(&note).unwrap();
    text.push_str(&format!(
        "\nLedger drift number {copy} was reconciled by hand.\n"
    ));
    fs::write(&note, text).unwrap();
}

#[test]
fn killing_a_run_that_appends_a_delta_or_compacts_keeps_the_previous_index() {
    let a = big_corpus(COPIES);
    index_ok(a.path(), &["--full", "-q"]);
    edit_copy(a.path(), 0);
    index_ok(a.path(), &["-q"]);
    assert!(
        manifest(a.path())["delta"].is_object(),
        "a one-file change appends a delta"
    );
    // The run to interrupt: forty files changed, which the next delta holds
    // with the first; or, with --compact, the index written whole.
    for copy in 1..=40 {
        edit_copy(a.path(), copy);
    }
    let timing = Corpus::empty();
    copy_dir(a.path(), timing.path());
    let started = Instant::now();
    index_ok(timing.path(), &["-q"]);
    let appending = started.elapsed();
    assert!(
        manifest(timing.path())["delta"].is_object(),
        "forty files still make a delta"
    );
    // What a run that completes answers: a kill may land after the switch,
    // while the run cleans up (a delta and a compaction answer alike).
    let after = results(timing.path(), "after a complete run");
    let mut killed = 0;
    for args in [&[][..], &["--compact"][..]] {
        // What the last complete run answers (a run of the loop before
        // may have finished).
        let before = results(a.path(), "before the interrupted runs");
        for delay in spread(appending.mul_f64(1.2), 8) {
            let child = spawn_index(a.path(), args);
            std::thread::sleep(delay);
            let (finished, stderr) = kill_or_reap(child);
            let Some(status) = finished else {
                killed += 1;
                let got = results(
                    a.path(),
                    &format!("after killing index {args:?} at {delay:?}"),
                );
                assert!(
                    got == before || got == after,
                    "killing index {args:?} at {delay:?} left neither the last complete index nor the next"
                );
                continue;
            };
            assert!(status.success(), "index {args:?} failed: {stderr}");
            break;
        }
    }
    assert!(
        killed >= 4,
        "only {killed} runs were still running when killed"
    );
    // The next run completes as a delta, leaves only what the manifest
    // names, and answers as a fresh index of a copy does.
    index_ok(a.path(), &["-q"]);
    let meta = manifest(a.path());
    let mut live = vec![format!("gen-{}", meta["generation"])];
    if let Some(delta) = meta["delta"]["generation"].as_u64() {
        live.push(format!("gen-{delta}"));
    }
    live.sort();
    assert_eq!(
        generation_dirs(a.path()),
        live,
        "leftovers after a completed run"
    );
    let fresh = Corpus::empty();
    copy_fixture(a.path(), fresh.path());
    index_ok(fresh.path(), &["-q"]);
    let got = results(a.path(), "after the completing run");
    assert!(
        got == results(fresh.path(), "a fresh index"),
        "differs from a fresh index"
    );
}

// ---------------------------------------------------------------------------
// 2. Concurrency
// ---------------------------------------------------------------------------

#[test]
fn a_second_index_is_refused_and_searches_during_a_run_see_the_old_or_the_new_index() {
    let corpus = big_corpus(COPIES);
    index_ok(corpus.path(), &["-q"]);
    let lock = corpus.path().join(".memidx/LOCK");
    let query = QUERIES[0];

    let mut attempts = Vec::new();
    for attempt in 0..4 {
        let old = results(corpus.path(), "before the run")[0].clone();
        // Make the next index differ from this one for the query.
        let note = corpus
            .path()
            .join(format!("zz-concurrency/note-{attempt}.md"));
        fs::create_dir_all(note.parent().unwrap()).unwrap();
        fs::write(
            &note,
            format!(
                "# Connection pool {attempt}\n\nThe connection pool of service {attempt} \
                 ran out of connections; the connection pool size was raised.\n"
            ),
        )
        .unwrap();

        let mut first = spawn_full_index(corpus.path());
        let pid = first.id();
        // Wait until the run holds the lock (or is gone).
        let waited = Instant::now();
        let mut holding = false;
        while waited.elapsed() < Duration::from_secs(30) && first.try_wait().unwrap().is_none() {
            match holds_lock(&lock, pid) {
                Some(true) => {
                    holding = true;
                    break;
                }
                Some(false) => std::thread::sleep(Duration::from_millis(5)),
                None => {
                    // No /proc/locks: give the run a head start instead.
                    std::thread::sleep(Duration::from_millis(300));
                    holding = true;
                    break;
                }
            }
        }
        let second = holding.then(|| {
            memidx_in(corpus.path())
                .args(["index", ".", "-q"])
                .output()
                .expect("run the second index")
        });
        let overlapped = holding && first.try_wait().unwrap().is_none();

        // Search repeatedly while the first run is going.
        let mut during = Vec::new();
        while first.try_wait().unwrap().is_none() {
            let output = search(corpus.path(), query);
            during.push(output);
        }
        let (status, stderr) = kill_or_reap(first);
        assert!(
            status.is_some_and(|s| s.success()),
            "the first index run failed: {stderr}"
        );
        let new = results(corpus.path(), "after the run")[0].clone();
        assert!(old != new, "the added note did not change the results");

        let (mut saw_old, mut saw_new, mut errors) = (0, 0, Vec::new());
        for output in &during {
            let stderr = String::from_utf8_lossy(&output.stderr);
            if output.status.code() != Some(0) {
                errors.push(format!(
                    "exit {:?}: {}",
                    output.status.code(),
                    stderr.trim_end()
                ));
            } else if output.stdout == old {
                saw_old += 1;
            } else if output.stdout == new {
                saw_new += 1;
            } else {
                errors.push(format!(
                    "neither the old nor the new results:\n{}",
                    String::from_utf8_lossy(&output.stdout)
                ));
            }
        }
        attempts.push(format!(
            "attempt {attempt}: overlapped {overlapped}, {} searches during the run ({saw_old} old, {saw_new} new, {} failed)",
            during.len(),
            errors.len()
        ));
        assert!(
            errors.is_empty(),
            "{} of {} searches during 'index' failed ({attempts:?}); first: {}",
            errors.len(),
            during.len(),
            errors[0]
        );

        if let Some(second) = second.filter(|_| overlapped) {
            let line = assert_one_line_error(&second, "second concurrent index");
            assert!(
                line.contains("another 'memidx index' is running") && line.contains("lock held on"),
                "the refusal should name the lock: {line}"
            );
            assert!(!during.is_empty(), "no search ran during the index run");
            eprintln!("concurrency:\n  {}", attempts.join("\n  "));
            return;
        }
    }
    panic!("never managed to run a second index while the first held the lock: {attempts:?}");
}

// ---------------------------------------------------------------------------
// 3. Damage detection
// ---------------------------------------------------------------------------

/// The ways a file is damaged.
#[derive(Debug, Clone, Copy)]
enum Damage {
    TruncateHalf,
    Zero,
    FlipMiddle,
}

impl Damage {
    const ALL: [Damage; 3] = [Damage::TruncateHalf, Damage::Zero, Damage::FlipMiddle];

    fn name(self) -> &'static str {
        match self {
            Damage::TruncateHalf => "truncate/2",
            Damage::Zero => "zero",
            Damage::FlipMiddle => "flip mid",
        }
    }

    fn apply(self, path: &Path) {
        let mut bytes = fs::read(path).unwrap();
        match self {
            Damage::TruncateHalf => bytes.truncate(bytes.len() / 2),
            Damage::Zero => bytes.iter_mut().for_each(|b| *b = 0),
            Damage::FlipMiddle => {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0xFF;
            }
        }
        fs::write(path, bytes).unwrap();
    }
}

/// Every file under `dir`, as `/`-separated paths relative to `dir`, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            e.path()
                .strip_prefix(dir)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    files.sort();
    files
}

/// Runs a command with a timeout; `Err` describes a timeout or spawn failure.
fn run_bounded(mut cmd: assert_cmd::Command, secs: u64) -> Result<Output, String> {
    cmd.timeout(Duration::from_secs(secs));
    let started = Instant::now();
    match cmd.output() {
        Ok(output) if output.status.code().is_none() => Err(format!(
            "killed by a signal after {:?} (timeout {secs} s, or a crash)",
            started.elapsed()
        )),
        Ok(output) => Ok(output),
        Err(err) => Err(format!("did not finish: {err}")),
    }
}

#[test]
fn every_damaged_index_file_is_detected_by_verify_and_never_misread() {
    let base = Corpus::fixtures();
    base.index();
    let baseline = base
        .memidx()
        .args(["search", "connection pool", "--json"])
        .output()
        .unwrap();
    assert_eq!(baseline.status.code(), Some(0));
    let generation = live_generation(base.path());
    let gen_rel = format!(".memidx/gen-{generation}");
    let mut targets: Vec<String> = files_under(&base.path().join(&gen_rel))
        .into_iter()
        .map(|f| format!("{gen_rel}/{f}"))
        .collect();
    targets.push(".memidx/meta.json".to_string());
    assert!(
        targets.iter().any(|t| t.contains("/sparse/")),
        "no sparse files found: {targets:?}"
    );

    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for target in &targets {
        let size = fs::metadata(base.path().join(target)).unwrap().len();
        for damage in Damage::ALL {
            if size == 0 {
                rows.push((
                    target.clone(),
                    damage.name(),
                    "n/a".into(),
                    "n/a (empty file)".into(),
                ));
                continue;
            }
            let case = Corpus::empty();
            copy_dir(base.path(), case.path());
            damage.apply(&case.path().join(target));
            let inner = target
                .strip_prefix(&format!("{gen_rel}/"))
                .unwrap_or(target);
            let label = format!("{target} {}", damage.name());

            // status --verify: exit 2, names the file, says "index is damaged".
            let mut verify = case.memidx();
            verify.args(["status", "--verify"]);
            let verify_cell = match run_bounded(verify, 20) {
                Err(err) => {
                    failures.push(format!("{label}: status --verify {err}"));
                    "TIMEOUT/CRASH".to_string()
                }
                Ok(output) => {
                    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
                    let code = output.status.code().unwrap_or(-1);
                    let ok = code == 2
                        && stderr.contains("index is damaged")
                        && stderr.contains(inner)
                        && !stderr.contains("panicked");
                    if !ok {
                        failures.push(format!(
                            "{label}: status --verify exit {code}, stderr {:?}",
                            stderr.trim_end()
                        ));
                    }
                    if stderr.contains("panicked") {
                        "PANIC".to_string()
                    } else if ok {
                        "2 named".to_string()
                    } else {
                        format!("FAIL exit {code}")
                    }
                }
            };

            // search: exit 2 "index is damaged", or exit 0; never a panic or hang.
            let mut query = case.memidx();
            query.args(["search", "connection pool", "--json"]);
            let search_cell = match run_bounded(query, 20) {
                Err(err) => {
                    failures.push(format!("{label}: search {err}"));
                    "TIMEOUT/CRASH".to_string()
                }
                Ok(output) => {
                    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
                    match output.status.code() {
                        _ if stderr.contains("panicked") => {
                            failures.push(format!("{label}: search panicked: {stderr}"));
                            "PANIC".to_string()
                        }
                        Some(2) if stderr.contains("index is damaged") => {
                            if stderr.contains(inner) {
                                "2 damaged (named)".to_string()
                            } else {
                                format!("2 damaged (other file: {})", stderr.trim_end())
                            }
                        }
                        Some(0) if output.stdout == baseline.stdout => "0 same results".to_string(),
                        Some(0) => {
                            // The issue: a damaged file is never misread.
                            failures.push(format!(
                                "{label}: search exit 0 with results that differ from the undamaged index"
                            ));
                            "0 DIFFERENT results".to_string()
                        }
                        code => {
                            failures.push(format!(
                                "{label}: search exit {code:?}, stderr {:?}",
                                stderr.trim_end()
                            ));
                            format!("FAIL exit {code:?}: {}", stderr.trim_end())
                        }
                    }
                }
            };
            rows.push((target.clone(), damage.name(), verify_cell, search_cell));
        }
    }

    let width = targets.iter().map(String::len).max().unwrap_or(10);
    let mut table = format!(
        "damage table ({} files × {} damages):\n| {:width$} | {:10} | {:14} | {}\n",
        targets.len(),
        Damage::ALL.len(),
        "file",
        "damage",
        "status --verify",
        "search \"connection pool\""
    );
    for (file, damage, verify, found) in &rows {
        table.push_str(&format!(
            "| {file:width$} | {damage:10} | {verify:14} | {found}\n"
        ));
    }
    eprintln!("{table}");
    assert!(
        failures.is_empty(),
        "{} of {} damage cases failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn an_index_from_a_future_format_version_is_refused_with_the_supported_range() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let path = corpus.path().join(".memidx/meta.json");
    let mut meta = manifest(corpus.path());
    meta["format_version"] = Value::from(999);
    fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();

    let supported = memidx::index::manifest::SUPPORTED_FORMAT_VERSIONS;
    for args in [
        &["search", "connection pool", "--json"][..],
        &["status", "--verify"][..],
    ] {
        let output = corpus.memidx().args(args).output().unwrap();
        let line = assert_one_line_error(&output, &format!("{args:?} on format_version 999"));
        assert!(
            line.contains("999")
                && line.contains(&supported.start().to_string())
                && line.contains(&supported.end().to_string())
                && line.contains("version"),
            "{args:?}: the refusal should name version 999 and the supported range {supported:?}: {line}"
        );
    }
}

/// Rewrites the manifest in `dir` as a build of format `version` wrote it:
/// that version, sealed with the CRC-32 of the bytes before its seal field.
fn record_format(dir: &Path, version: u32) {
    let path = dir.join("meta.json");
    let text = fs::read_to_string(&path).unwrap();
    let (head, _) = text.rsplit_once(",\n  \"meta_crc32\"").unwrap();
    let head = head.replace(
        &format!(
            "\"format_version\": {}",
            memidx::index::manifest::FORMAT_VERSION
        ),
        &format!("\"format_version\": {version}"),
    );
    let crc = crc32fast::hash(head.as_bytes());
    fs::write(&path, format!("{head},\n  \"meta_crc32\": {crc}\n}}\n")).unwrap();
}

#[test]
fn an_index_of_an_older_sparse_format_is_refused_by_search_and_upgraded_by_index() {
    use memidx::index::manifest::{Manifest, SPARSE_FORMAT_VERSION};
    let corpus = Corpus::fixtures();
    corpus.index();
    let dir = corpus.path().join(".memidx");
    let sparse_files = |generation: u64| -> Vec<String> {
        let sparse = dir.join(format!("gen-{generation}/sparse"));
        let mut names: Vec<String> = fs::read_dir(sparse)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".term"))
            .collect();
        names.sort();
        names
    };
    let old_terms = sparse_files(Manifest::read(&dir).unwrap().unwrap().generation);
    record_format(&dir, SPARSE_FORMAT_VERSION - 1);

    let output = corpus
        .memidx()
        .args(["search", "connection pool"])
        .output()
        .unwrap();
    let line = assert_one_line_error(&output, "search on an index of the older format");
    assert!(
        line.contains(&format!("version {}", SPARSE_FORMAT_VERSION - 1))
            && line.contains("'memidx index'"),
        "the refusal should name the old version and the fix: {line}"
    );

    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the upgrade failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains("embedding 0 chunks"),
        "the upgrade should keep every vector: {said}"
    );
    let new = Manifest::read(&dir).unwrap().unwrap();
    assert_eq!(new.format_version, memidx::index::manifest::FORMAT_VERSION);
    let new_terms = sparse_files(new.generation);
    assert!(
        !new_terms.is_empty() && new_terms.iter().all(|name| !old_terms.contains(name)),
        "the sparse list should be built anew, not linked: {old_terms:?} -> {new_terms:?}"
    );
    let output = corpus
        .memidx()
        .args(["search", "connection pool", "--mode", "sparse"])
        .output()
        .unwrap();
    assert!(
        output.status.success() && !output.stdout.is_empty(),
        "the upgraded index should be searched: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---------------------------------------------------------------------------
// 4. Hostile input files
// ---------------------------------------------------------------------------

/// Writes `size` bytes of `x` with no newline, 1 MiB at a time.
fn write_single_line(path: &Path, size: usize) {
    use std::io::Write;
    let mut file = std::io::BufWriter::new(fs::File::create(path).unwrap());
    let block = vec![b'x'; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len());
        file.write_all(&block[..n]).unwrap();
        left -= n;
    }
    file.flush().unwrap();
}

/// Where a sparse search for a unique term finds it: the sources, or `None`
/// for exit 1 (no result).
fn sparse_sources(corpus: &Corpus, term: &str) -> Option<Vec<String>> {
    let output = corpus
        .memidx()
        .args(["search", term, "--mode", "sparse", "--json", "-k", "50"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    match output.status.code() {
        Some(1) => None,
        Some(0) => {
            let json: Value = serde_json::from_slice(&output.stdout).unwrap();
            let mut sources: Vec<String> = json["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["source"].as_str().unwrap().to_string())
                .collect();
            sources.dedup();
            Some(sources)
        }
        code => panic!("search {term:?} exit {code:?}: {stderr}"),
    }
}

#[cfg(unix)]
#[test]
fn hostile_input_files_are_skipped_by_name_or_indexed_and_never_stop_a_run() {
    use std::os::unix::fs::{PermissionsExt, symlink};

    const BOUND: Duration = Duration::from_secs(60);
    let corpus = Corpus::empty();
    let root = corpus.path();
    let outside = tempfile::tempdir().unwrap();

    // Good files, each with a unique word.
    let good = [
        ("good/alpha.md", "quokkaflux"),
        ("good/beta.md", "zyxwarble"),
        ("good/delete-me.md", "ephemeralword"),
    ];
    for (path, word) in good {
        fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        fs::write(
            root.join(path),
            format!("# Good note\n\nThis note mentions {word} in a plain sentence.\n"),
        )
        .unwrap();
    }

    // Files that must be skipped with a warning naming them.
    fs::write(
        root.join("bad-utf8.md"),
        b"# Bad\n\nvalid start \xff\xfe badutfword\n",
    )
    .unwrap();
    fs::write(root.join("nul.md"), b"# Nul\n\nnulword\x00nulword\n").unwrap();
    write_single_line(&root.join("huge-line.md"), 100 << 20);

    // Hostile but valid markdown: indexed (findable by its word) or skipped by name.
    let mut valid = Vec::new();
    let mut add = |name: &str, word: &str, text: String| {
        fs::write(root.join(name), text).unwrap();
        valid.push((name.to_string(), word.to_string()));
    };
    add(
        "nested-lists.md",
        "deeplistword",
        format!("# Lists\n\n{}deeplistword\n", "- ".repeat(10_000)),
    );
    add(
        "nested-ordered.md",
        "deeporderedword",
        format!("# Ordered\n\n{}deeporderedword\n", "1. ".repeat(10_000)),
    );
    add(
        "nested-quotes.md",
        "deepquoteword",
        format!("# Quotes\n\n{} deepquoteword\n", ">".repeat(10_000)),
    );
    add(
        "nested-mixed.md",
        "deepmixedword",
        format!("# Mixed\n\n{}deepmixedword\n", "> - ".repeat(5_000)),
    );
    add(
        "huge-heading.md",
        "headingbodyword",
        format!(
            "# {}\n\nheadingbodyword under a huge heading\n",
            "h ".repeat(1 << 19)
        ),
    );
    {
        let columns = 5_000;
        let header: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
        let mut table = format!(
            "# Wide table\n\nwidetableword\n\n|{}|\n|{}|\n",
            header.join("|"),
            vec!["---"; columns].join("|")
        );
        for _ in 0..100 {
            table.push_str(&format!("|{}|\n", vec!["v"; columns].join("|")));
        }
        add("wide-table.md", "widetableword", table);
    }
    add(
        "pipes.md",
        "pipesword",
        format!(
            "# Pipes\n\npipesword\n\na|b\n-|-\n{}\n",
            "|".repeat(100_000)
        ),
    );
    {
        let mut yaml = String::from(
            "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for pair in names.windows(2) {
            let refs = vec![format!("*{}", pair[0]); 9].join(",");
            yaml.push_str(&format!("{}: &{} [{refs}]\n", pair[1], pair[1]));
        }
        yaml.push_str("---\n# Laughs\n\nlaughsbodyword after an alias bomb\n");
        add("laughs.md", "laughsbodyword", yaml);
    }

    // Symlinks: a loop, and a folder outside the root.
    fs::create_dir_all(root.join("loop")).unwrap();
    symlink(root, root.join("loop/back-to-root")).unwrap();
    symlink(root.join("loop"), root.join("loop/self")).unwrap();
    fs::write(
        outside.path().join("secret.md"),
        "# Outside\n\noutsidesecretword must never be indexed\n",
    )
    .unwrap();
    symlink(outside.path(), root.join("outside-link")).unwrap();
    symlink(
        outside.path().join("secret.md"),
        root.join("outside-file.md"),
    )
    .unwrap();

    // Unreadable file and folder.
    fs::write(root.join("unreadable.md"), "# Locked\n\nlockedfileword\n").unwrap();
    fs::create_dir(root.join("noread")).unwrap();
    fs::write(root.join("noread/inner.md"), "# Inner\n\nlockeddirword\n").unwrap();
    fs::set_permissions(
        root.join("unreadable.md"),
        fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    fs::set_permissions(root.join("noread"), fs::Permissions::from_mode(0o000)).unwrap();
    // Root (and CAP_DAC_OVERRIDE) reads regardless of permissions.
    let permissions_bind = fs::read(root.join("unreadable.md")).is_err();

    let run = |label: &str| -> (Duration, String) {
        let mut cmd = corpus.memidx();
        cmd.args(["index", ".", "-q"]);
        let started = Instant::now();
        let output = run_bounded(cmd, 2 * BOUND.as_secs())
            .unwrap_or_else(|err| panic!("{label}: index {err}"));
        let elapsed = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{label}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{label}: {stderr}");
        assert!(
            elapsed < BOUND,
            "{label}: index took {elapsed:?} (bound {BOUND:?})"
        );
        for line in stderr.lines() {
            assert!(
                line.starts_with("memidx: "),
                "{label}: stray stderr line {line:?}"
            );
        }
        (elapsed, stderr)
    };

    let (elapsed, stderr) = run("first run");
    let warned = |name: &str| {
        stderr
            .lines()
            .any(|l| l.contains("warning") && l.contains(name))
    };
    let mut report = vec![format!("first run: {elapsed:?}")];

    for (name, word) in [("bad-utf8.md", "badutfword"), ("nul.md", "nulword")] {
        assert!(warned(name), "{name} not named in a warning:\n{stderr}");
        assert_eq!(sparse_sources(&corpus, word), None, "{name} was indexed");
        report.push(format!("{name}: skipped with a warning"));
    }
    // 100 MB single line: skipped by the 10M limit (or indexed in bounded time).
    if warned("huge-line.md") {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("huge-line.md") && l.contains("limit")),
            "huge-line.md warning does not name the size limit:\n{stderr}"
        );
        report.push("huge-line.md (100 MB, one line): skipped by the size limit".into());
    } else {
        report.push(format!(
            "huge-line.md (100 MB, one line): indexed within {elapsed:?}"
        ));
    }
    for (name, word) in &valid {
        let found = sparse_sources(&corpus, word);
        if let Some(sources) = &found {
            assert!(
                sources.iter().any(|s| s == name),
                "{word} found in {sources:?}, not in {name}"
            );
            report.push(format!("{name}: indexed"));
        } else {
            assert!(
                warned(name),
                "{name} neither indexed nor named in a warning:\n{stderr}"
            );
            report.push(format!("{name}: skipped with a warning"));
        }
    }
    assert!(
        warned("laughs.md") || sparse_sources(&corpus, "laughsbodyword").is_some(),
        "laughs.md: neither a front matter warning nor indexed"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("laughs.md") && l.contains("front matter")),
        "the alias bomb in laughs.md was not reported:\n{stderr}"
    );
    assert_eq!(
        sparse_sources(&corpus, "outsidesecretword"),
        None,
        "a file outside the root was indexed through a symlink"
    );
    report.push("symlinks (loop, folder and file outside the root): not followed".into());
    if permissions_bind {
        assert!(
            warned("unreadable.md"),
            "unreadable.md not named:\n{stderr}"
        );
        assert!(
            warned("noread"),
            "the unreadable folder is not named:\n{stderr}"
        );
        assert_eq!(sparse_sources(&corpus, "lockedfileword"), None);
        assert_eq!(sparse_sources(&corpus, "lockeddirword"), None);
        report.push("unreadable file and folder: skipped with warnings".into());
    } else {
        // Running as root: permissions do not stop reads, so both are indexed.
        assert_eq!(
            sparse_sources(&corpus, "lockedfileword"),
            Some(vec!["unreadable.md".to_string()])
        );
        assert_eq!(
            sparse_sources(&corpus, "lockeddirword"),
            Some(vec!["noread/inner.md".to_string()])
        );
        report.push("unreadable file and folder: root reads them, indexed".into());
    }
    for (path, word) in good {
        assert_eq!(
            sparse_sources(&corpus, word),
            Some(vec![path.to_string()]),
            "good file {path} is not searchable"
        );
    }

    // A file deleted between runs disappears; the rest stays searchable.
    fs::remove_file(root.join("good/delete-me.md")).unwrap();
    let (elapsed, _) = run("second run, after deleting a file");
    report.push(format!("second run after a deletion: {elapsed:?}"));
    assert_eq!(sparse_sources(&corpus, "ephemeralword"), None);
    assert_eq!(
        sparse_sources(&corpus, "quokkaflux"),
        Some(vec!["good/alpha.md".to_string()])
    );
    assert_eq!(
        sparse_sources(&corpus, "zyxwarble"),
        Some(vec!["good/beta.md".to_string()])
    );

    // Let the temporary folder be removed.
    fs::set_permissions(root.join("noread"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(
        root.join("unreadable.md"),
        fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    eprintln!("hostile input:\n  {}", report.join("\n  "));
}

// ---------------------------------------------------------------------------
// 5. Hostile requests
// ---------------------------------------------------------------------------

/// What a hostile request must produce.
enum Expect {
    /// Exit 2, one line naming all of these (any one of each inner list).
    Error(&'static [&'static [&'static str]]),
    /// Exit 0 with results.
    Ok,
    /// Exit 0 or a one-line error, within the bound.
    OkOrErrorWithin(Duration),
}

#[test]
fn hostile_requests_get_a_one_line_error_or_a_bounded_answer() {
    let corpus = Corpus::fixtures();
    corpus.index();

    let deep = 10_000;
    let five_mb_padding = format!(
        r#"{{"search_text": "pool", "padding": [{}0]}}"#,
        "0,".repeat(5 << 19)
    );
    let cases: Vec<(&str, String, Expect)> = vec![
        (
            "5 MB request (unknown field holding a huge array)",
            five_mb_padding,
            Expect::Error(&[&["padding"]]),
        ),
        (
            "10,000-deep arrays",
            format!("{}{}", "[".repeat(deep), "]".repeat(deep)),
            Expect::Error(&[&["invalid request"]]),
        ),
        (
            "10,000-deep objects",
            format!("{}1{}", r#"{"a":"#.repeat(deep), "}".repeat(deep)),
            Expect::Error(&[&["invalid request"]]),
        ),
        (
            "10,000-deep arrays in metadata_filter",
            format!(
                r#"{{"search_text": "pool", "metadata_filter": {{"service": {}{}}}}}"#,
                "[".repeat(deep),
                "]".repeat(deep)
            ),
            Expect::Error(&[&["metadata_filter"]]),
        ),
        (
            "10,000-deep objects in query_id",
            format!(
                r#"{{"search_text": "pool", "query_id": {}1{}}}"#,
                r#"{"a":"#.repeat(deep),
                "}".repeat(deep)
            ),
            Expect::Error(&[&["query_id"]]),
        ),
        (
            "10,000-deep objects in hybrid_params",
            format!(
                r#"{{"search_text": "pool", "hybrid_params": {}1{}}}"#,
                r#"{"a":"#.repeat(deep),
                "}".repeat(deep)
            ),
            Expect::Error(&[&["hybrid_params"]]),
        ),
        (
            "top_k as a string",
            r#"{"search_text": "pool", "top_k": "5"}"#.into(),
            Expect::Error(&[&["top_k"]]),
        ),
        (
            "top_k fractional",
            r#"{"search_text": "pool", "top_k": 1.5}"#.into(),
            Expect::Error(&[&["top_k"]]),
        ),
        (
            "top_k negative",
            r#"{"search_text": "pool", "top_k": -3}"#.into(),
            Expect::Error(&[&["top_k"]]),
        ),
        (
            "top_k above u64",
            r#"{"search_text": "pool", "top_k": 18446744073709551616}"#.into(),
            Expect::Error(&[&["top_k"]]),
        ),
        (
            "search_text as a number",
            r#"{"search_text": 5}"#.into(),
            Expect::Error(&[&["search_text"]]),
        ),
        (
            "dense_weight as a string",
            r#"{"search_text": "pool", "hybrid_params": {"dense_weight": "high"}}"#.into(),
            Expect::Error(&[&["dense_weight"]]),
        ),
        (
            "metadata_filter value as a number",
            r#"{"search_text": "pool", "metadata_filter": {"environment": 5}}"#.into(),
            Expect::Error(&[&["metadata_filter"]]),
        ),
        (
            "request is a string",
            r#""connection pool""#.into(),
            Expect::Error(&[&["invalid request"]]),
        ),
        ("empty input", String::new(), Expect::Error(&[&["request"]])),
        (
            "truncated JSON",
            r#"{"search_text": "pool", "top_k": "#.into(),
            Expect::Error(&[&["request"]]),
        ),
        (
            "unknown top-level field",
            r#"{"search_text": "pool", "topk": 5}"#.into(),
            Expect::Error(&[&["topk"]]),
        ),
        (
            "unknown field whose name holds an escaped newline",
            r#"{"search_text": "pool", "a\nb": 1}"#.into(),
            Expect::Error(&[&["unknown field"]]),
        ),
        (
            "metadata_filter key holding an escaped newline",
            r#"{"search_text": "pool", "metadata_filter": {"env\nironment": "x"}}"#.into(),
            Expect::Error(&[&["metadata", "filter"]]),
        ),
        (
            "unknown hybrid_params field",
            r#"{"search_text": "pool", "hybrid_params": {"alpha": 0.5}}"#.into(),
            Expect::Error(&[&["alpha"]]),
        ),
        (
            "duplicate field",
            r#"{"search_text": "pool", "search_text": "other"}"#.into(),
            Expect::Error(&[&["search_text"]]),
        ),
        (
            "NaN weight (not JSON)",
            r#"{"search_text": "pool", "hybrid_params": {"dense_weight": NaN}}"#.into(),
            Expect::Error(&[&["dense_weight"]]),
        ),
        (
            "Infinity weight (not JSON)",
            r#"{"search_text": "pool", "hybrid_params": {"sparse_weight": Infinity}}"#.into(),
            Expect::Error(&[&["sparse_weight"]]),
        ),
        (
            "weight 1e999 (out of range)",
            r#"{"search_text": "pool", "hybrid_params": {"sparse_weight": 1e999}}"#.into(),
            Expect::Error(&[&["sparse_weight"]]),
        ),
        (
            "negative sparse weight",
            r#"{"search_text": "pool", "hybrid_params": {"sparse_weight": -1}}"#.into(),
            Expect::Error(&[&["sparse"], &["weight"]]),
        ),
        (
            "negative dense weight",
            r#"{"search_text": "pool", "hybrid_params": {"dense_weight": -0.5}}"#.into(),
            Expect::Error(&[&["dense"], &["weight"]]),
        ),
        (
            "both weights zero",
            r#"{"search_text": "pool", "hybrid_params": {"dense_weight": 0, "sparse_weight": 0}}"#
                .into(),
            Expect::Error(&[&["weight"]]),
        ),
        (
            "sparse weight zero",
            r#"{"search_text": "pool", "hybrid_params": {"sparse_weight": 0}}"#.into(),
            Expect::Ok,
        ),
        (
            "dense weight zero",
            r#"{"search_text": "pool", "hybrid_params": {"dense_weight": 0}}"#.into(),
            Expect::Ok,
        ),
        (
            "top_k 0",
            r#"{"search_text": "pool", "top_k": 0}"#.into(),
            Expect::Error(&[&["top_k"], &["10000", "10,000"]]),
        ),
        (
            "top_k 10^9",
            r#"{"search_text": "pool", "top_k": 1000000000}"#.into(),
            Expect::Error(&[&["top_k"], &["10000", "10,000"]]),
        ),
        (
            "top_k 10,000 (the maximum)",
            r#"{"search_text": "pool", "top_k": 10000}"#.into(),
            Expect::Ok,
        ),
        (
            "rrf k negative",
            r#"{"search_text": "pool", "hybrid_params": {"rrf_k_constant": -1}}"#.into(),
            Expect::Error(&[&["RRF", "rrf"]]),
        ),
        (
            "empty query",
            r#"{"search_text": ""}"#.into(),
            Expect::Error(&[&["query", "search_text"]]),
        ),
        (
            "blank query",
            r#"{"search_text": " \t\n "}"#.into(),
            Expect::Error(&[&["query", "search_text"]]),
        ),
        (
            "1 MB query",
            serde_json::json!({"search_text": "connection pool timeout ".repeat(44_000)})
                .to_string(),
            Expect::OkOrErrorWithin(Duration::from_secs(30)),
        ),
        (
            "1 MB query_id",
            serde_json::json!({"search_text": "pool", "query_id": "x".repeat(1 << 20)}).to_string(),
            Expect::OkOrErrorWithin(Duration::from_secs(30)),
        ),
    ];

    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (label, body, expect) in cases {
        let mut cmd = corpus.memidx();
        cmd.args(["search", "--request", "-"]).write_stdin(body);
        let started = Instant::now();
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_request_outcome(label, cmd, &expect, started)
        }));
        match checked {
            Ok(line) => report.push(line),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                report.push(format!("{label}: FAILED"));
                failures.push(message);
            }
        }
    }
    eprintln!("hostile requests:\n  {}", report.join("\n  "));
    assert!(
        failures.is_empty(),
        "{} of {} hostile requests failed:\n{}",
        failures.len(),
        report.len(),
        failures.join("\n")
    );
}

/// Runs one hostile request and checks it against `expect`; returns a report line.
fn check_request_outcome(
    label: &str,
    cmd: assert_cmd::Command,
    expect: &Expect,
    started: Instant,
) -> String {
    let output = run_bounded(cmd, 60).unwrap_or_else(|err| panic!("{label}: {err}"));
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("overflow"),
        "{label}: {stderr}"
    );
    match expect {
        Expect::Error(needles) => {
            let line = assert_one_line_error(&output, label);
            for any_of in *needles {
                assert!(
                    any_of.iter().any(|n| line.contains(n)),
                    "{label}: the error should mention one of {any_of:?}: {line}"
                );
            }
            format!("{label}: exit 2 ({elapsed:?}) {line}")
        }
        Expect::Ok => {
            assert_eq!(output.status.code(), Some(0), "{label}: {stderr}");
            let json: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert!(json["total_retrieved"].as_u64().unwrap() > 0, "{label}");
            format!("{label}: exit 0 ({elapsed:?})")
        }
        Expect::OkOrErrorWithin(bound) => {
            assert!(
                elapsed < *bound,
                "{label}: took {elapsed:?} (bound {bound:?})"
            );
            if output.status.code() == Some(0) {
                serde_json::from_slice::<Value>(&output.stdout)
                    .unwrap_or_else(|e| panic!("{label}: not JSON: {e}"));
                format!("{label}: accepted, exit 0 in {elapsed:?}")
            } else {
                let line = assert_one_line_error(&output, label);
                format!("{label}: exit 2 in {elapsed:?}: {line}")
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 6. Read-only corpus
// ---------------------------------------------------------------------------

/// Every entry under `dir`: its kind, bytes (files) and modification time.
fn snapshot_with_mtimes(dir: &Path) -> BTreeMap<PathBuf, (bool, Vec<u8>, SystemTime)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .map(|e| {
            let meta = e.metadata().unwrap();
            let bytes = if meta.is_file() {
                fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            (
                e.path().to_path_buf(),
                (meta.is_dir(), bytes, meta.modified().unwrap()),
            )
        })
        .collect()
}

/// Sets or clears write permission on everything under `dir`.
#[cfg(unix)]
fn set_writable(dir: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    for entry in walkdir::WalkDir::new(dir).contents_first(writable) {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode();
        let mode = if writable {
            mode | 0o200
        } else {
            mode & !0o222
        };
        fs::set_permissions(entry.path(), fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_corpus_is_indexed_elsewhere_and_left_untouched() {
    let corpus = Corpus::fixtures();
    let outside = tempfile::tempdir().unwrap();
    let index_dir = outside.path().join("corpus-index");
    set_writable(corpus.path(), false);
    let before = snapshot_with_mtimes(corpus.path());

    let output = corpus
        .memidx()
        .args(["index", "."])
        .arg("--index")
        .arg(&index_dir)
        .arg("-q")
        .output()
        .unwrap();
    let after = snapshot_with_mtimes(corpus.path());
    set_writable(corpus.path(), true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "index --index failed: {stderr}"
    );

    assert!(
        !corpus.path().join(".memidx").exists(),
        "a .memidx was created inside the corpus"
    );
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "entries were added to or removed from the corpus"
    );
    for (path, old) in &before {
        assert!(
            after[path] == *old,
            "{} changed (bytes or mtime)",
            path.display()
        );
    }
    assert!(
        index_dir.join("meta.json").is_file(),
        "no index at --index PATH"
    );

    let found = corpus
        .memidx()
        .args(["search", "connection pool", "--json", "--index"])
        .arg(&index_dir)
        .output()
        .unwrap();
    assert_eq!(
        found.status.code(),
        Some(0),
        "search --index failed: {}",
        String::from_utf8_lossy(&found.stderr)
    );
}

#[test]
fn an_index_without_the_paths_and_stamps_columns_is_read_and_upgraded_by_its_next_change() {
    use memidx::index::manifest::Manifest;
    use memidx::store::generation::{PATH_INDEX_FILE, PATHS_FILE, STAMPS_FILE};
    let corpus = Corpus::fixtures();
    corpus.index();
    let dir = corpus.path().join(".memidx");
    let before = corpus.search_json("connection pool exhausted", &[]);
    // The index as format 26 wrote it: no columns, and a manifest without them.
    let mut manifest = Manifest::read(&dir).unwrap().unwrap();
    let gen_dir = dir.join(format!("gen-{}", manifest.generation));
    let columns = [PATH_INDEX_FILE, PATHS_FILE, STAMPS_FILE];
    for name in columns {
        for file in [name.to_string(), format!("{name}.blocks")] {
            fs::remove_file(gen_dir.join(&file)).unwrap();
            assert!(manifest.checksums.remove(&file).is_some(), "{file}");
        }
    }
    manifest.write(&dir).unwrap();
    record_format(&dir, 26);

    assert_eq!(
        corpus.search_json("connection pool exhausted", &[]),
        before,
        "an index without the columns answers as it did"
    );
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && said.contains("up to date"),
        "the stamps in the file entries should find nothing changed: {said}"
    );
    let edited = corpus.path().join("services/billing-service.md");
    let text = fs::read_to_string(&edited).unwrap();
    fs::write(&edited, format!("{text}\nOne more line.\n")).unwrap();
    let output = corpus.memidx().args(["index", "."]).output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && said.contains("(17 unchanged)"),
        "one edit should re-read one file: {said}"
    );
    let upgraded = Manifest::read(&dir).unwrap().unwrap();
    assert_eq!(
        upgraded.format_version,
        memidx::index::manifest::FORMAT_VERSION
    );
    assert!(
        upgraded.delta.is_none(),
        "an index of an older format is written whole, not appended to"
    );
    for name in columns {
        assert!(upgraded.checksums.contains_key(name), "{name} written");
    }
}
