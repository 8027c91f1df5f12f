//! Damage that keeps a file's mtime, carried data, and an index its reader
//! may not write: each named, never laundered, never a panic.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::common::{Corpus, answers, fresh_answers};

/// The sealed mtime every finished generation file carries (see
/// `store::checks`): damage written back with it looks like bit rot.
const SEALED: u64 = 1_000_000_000;

fn live_generation_dir(corpus: &Corpus) -> PathBuf {
    let meta: Value =
        serde_json::from_slice(&fs::read(corpus.path().join(".memidx/meta.json")).unwrap())
            .unwrap();
    let n = meta["generation"].as_u64().unwrap();
    corpus.path().join(format!(".memidx/gen-{n}"))
}

/// Flips the bits of the byte at `offset` of `path` and restores the sealed
/// mtime, as rot on the medium would leave it.
fn rot(path: &Path, offset: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset] ^= 0xff;
    write_sealed(path, &bytes);
}

/// Writes `bytes` to `path` and gives it the sealed mtime.
fn write_sealed(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(UNIX_EPOCH + Duration::from_secs(SEALED))
        .unwrap();
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const QUERIES: [&str; 3] = [
    "INC-2023-Q4-011 gateway timeout",
    "connection pool exhausted",
    "what to do when the main database server dies",
];

#[test]
fn damage_in_carried_data_is_caught_and_rebuilt_not_laundered() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let texts = live_generation_dir(&corpus).join("texts.bin");
    let len = fs::metadata(&texts).unwrap().len() as usize;
    rot(&texts, len / 2);
    let verify = corpus
        .memidx()
        .args(["status", "--verify"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&verify.stdout).contains("texts.bin checksum mismatch")
            || stderr(&verify).contains("texts.bin checksum mismatch"),
        "verify names the damage: {verify:?}"
    );

    // One unrelated edit, then an incremental run.
    fs::write(
        corpus.path().join("notes/added.md"),
        "# Added\n\nA new note.\n",
    )
    .unwrap();
    let run = corpus.memidx().args(["index", "."]).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("previous index unusable, rebuilding it whole")
            && stderr(&run).contains("texts.bin checksum mismatch"),
        "{}",
        stderr(&run)
    );
    let verify = corpus
        .memidx()
        .args(["status", "--verify"])
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let modes = ["hybrid", "sparse"];
    assert_eq!(
        answers(&corpus, &QUERIES, &modes),
        fresh_answers(&corpus, &QUERIES, &modes),
        "the rebuilt index answers like a fresh one"
    );
}

#[test]
fn rot_in_the_sparse_files_is_named_or_unread_never_a_panic() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let sparse = live_generation_dir(&corpus).join("sparse");
    let files: Vec<PathBuf> = walkdir::WalkDir::new(&sparse)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.is_file() && fs::metadata(p).unwrap().len() > 0)
        .collect();
    assert!(files.len() >= 5, "{files:?}");
    let intact: Vec<Vec<u8>> = ["sparse", "hybrid"]
        .map(|mode| {
            let args = [
                "search",
                "connection pool timeout",
                "--json",
                "--mode",
                mode,
            ];
            corpus.memidx().args(args).output().unwrap().stdout
        })
        .to_vec();
    let mut errors = 0;
    for file in &files {
        let original = fs::read(file).unwrap();
        let len = original.len();
        let offsets = [
            0,
            len / 7,
            len / 3,
            len / 2,
            len - len / 5,
            len.saturating_sub(9),
            len - 1,
        ];
        // A sidecar of one block is 4 bytes long: `len - len / 5` is past it.
        for offset in offsets.map(|offset| offset.min(len - 1)) {
            rot(file, offset);
            for (mode, intact) in ["sparse", "hybrid"].into_iter().zip(&intact) {
                let output = corpus
                    .memidx()
                    .args([
                        "search",
                        "connection pool timeout",
                        "--json",
                        "--mode",
                        mode,
                    ])
                    .output()
                    .unwrap();
                let err = stderr(&output);
                let what = format!("{} at {offset}, {mode}: {err}", file.display());
                assert!(!err.contains("panicked"), "{what}");
                // Every file is checked where a search reads it: an answer
                // is the intact one.
                match output.status.code() {
                    Some(0 | 1) => assert_eq!(&output.stdout, intact, "{what}"),
                    Some(2) => {
                        errors += 1;
                        assert!(err.starts_with("memidx: index is damaged: "), "{what}");
                        assert_eq!(err.lines().count(), 1, "{what}");
                    }
                    other => panic!("exit {other:?}: {what}"),
                }
            }
            write_sealed(file, &original);
        }
    }
    assert!(errors > 0, "some rot must be named as damage");
}

#[test]
fn rot_in_a_table_a_search_reads_is_named_never_served() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let generation = live_generation_dir(&corpus);
    let plain = &["search", "connection pool exhausted", "--json", "-k", "50"][..];
    let filtered = &[
        plain,
        &[
            "--filter",
            "environment=production",
            "--since",
            "2000-01-01",
        ],
    ]
    .concat()[..];
    // Every chunk among the dense list's answers, so every row is returned.
    let every_row = &[
        "search",
        "connection pool exhausted",
        "--json",
        "--mode",
        "dense",
        "-k",
        "1000",
        "--window",
        "1000",
    ][..];
    for (name, query) in [
        ("chunks.bin", plain),
        ("headings.bin", plain),
        ("files.bin", plain),
        ("files.idx", plain),
        ("file_chunks.u32", filtered),
        ("dates.bin", filtered),
        ("metadata.bin", filtered),
        ("sparse/ords.bin", plain),
        ("vectors.i8", every_row),
        ("scales.f32", every_row),
    ] {
        let intact = corpus.memidx().args(query).output().unwrap();
        assert_eq!(intact.status.code(), Some(0), "{}", stderr(&intact));
        let file = generation.join(name);
        let original = fs::read(&file).unwrap();
        let len = original.len();
        for offset in [0, len / 3, len / 2, len - 1] {
            for bit in [0x01, 0x80, 0xff] {
                let mut bytes = original.clone();
                bytes[offset] ^= bit;
                write_sealed(&file, &bytes);
                let output = corpus.memidx().args(query).output().unwrap();
                let err = stderr(&output);
                let what = format!("{name} at {offset} ^ {bit:#x}: {err}");
                assert_eq!(output.status.code(), Some(2), "{what}");
                assert!(
                    err.starts_with("memidx: index is damaged: ")
                        && err.contains(name)
                        && err.lines().count() == 1,
                    "{what}"
                );
            }
        }
        write_sealed(&file, &original);
        // Restored, the index answers as before.
        let back = corpus.memidx().args(query).output().unwrap();
        assert_eq!(back.stdout, intact.stdout, "{name}");
    }
}

/// Runs `memidx ARGS…` as a user who may read but not write the index: as
/// root, through `setpriv` as `nobody`; otherwise with write bits cleared.
#[cfg(unix)]
fn as_reader(corpus: &Corpus, args: &[&str]) -> Output {
    use std::os::unix::fs::PermissionsExt;
    let binary = assert_cmd::cargo::cargo_bin("memidx");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    for entry in walkdir::WalkDir::new(corpus.path()) {
        let entry = entry.unwrap();
        let dir = entry.file_type().is_dir();
        let mode = match (dir, root) {
            (true, true) => 0o755,
            (false, true) => 0o644,
            (true, false) => 0o555,
            (false, false) => 0o444,
        };
        fs::set_permissions(entry.path(), fs::Permissions::from_mode(mode)).unwrap();
    }
    // The build may sit under a folder the reader cannot enter (a clone in
    // /root): the reader runs a copy from a folder anyone may read.
    let bin_dir = tempfile::tempdir().unwrap();
    let mut command = if root {
        let copy = bin_dir.path().join("memidx");
        fs::copy(&binary, &copy).unwrap();
        fs::set_permissions(bin_dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy);
        c
    } else {
        std::process::Command::new(&binary)
    };
    let output = command
        .args(args)
        .current_dir(corpus.path())
        .env_remove("MEMIDX_INDEX")
        .output()
        .unwrap();
    for entry in walkdir::WalkDir::new(corpus.path()) {
        let entry = entry.unwrap();
        let mode = if entry.file_type().is_dir() {
            0o755
        } else {
            0o644
        };
        fs::set_permissions(entry.path(), fs::Permissions::from_mode(mode)).unwrap();
    }
    output
}

#[cfg(unix)]
#[test]
fn an_index_its_reader_may_not_write_is_searched_not_called_damaged() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let expected = corpus.search_json("connection pool", &["--mode", "sparse"]);
    for mode in ["sparse", "hybrid"] {
        let output = as_reader(
            &corpus,
            &["search", "connection pool", "--json", "--mode", mode],
        );
        assert_eq!(output.status.code(), Some(0), "{mode}: {}", stderr(&output));
        let response: Value = serde_json::from_slice(&output.stdout).unwrap();
        if mode == "sparse" {
            assert_eq!(response, expected);
        }
    }
    let output = as_reader(&corpus, &["status", "--verify"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// A tmpfs of `bytes` mounted on a new folder, unmounted on drop.
#[cfg(target_os = "linux")]
struct SmallDisk {
    dir: tempfile::TempDir,
}

#[cfg(target_os = "linux")]
impl SmallDisk {
    /// Mounts one, or `None` when this user may not mount (not root).
    fn mount(bytes: u64) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
            .arg("tmpfs")
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(target_os = "linux")]
impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// Every name directly in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_fails_a_run_with_the_file_and_cause_and_frees_what_it_wrote() {
    let Some(disk) = SmallDisk::mount(2 << 20) else {
        crate::common::note_skip("mounting a tmpfs needs root");
        return;
    };
    let corpus = Corpus::fixtures();
    let index_dir = disk.path().join("idx");
    let index = |extra: &[&str]| {
        corpus
            .memidx()
            .args(["index", ".", "--quiet", "--index"])
            .arg(&index_dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let search = || {
        corpus
            .memidx()
            .args(["search", "connection pool", "--json", "--index"])
            .arg(&index_dir)
            .output()
            .unwrap()
    };
    assert_eq!(index(&[]).status.code(), Some(0));
    let before = search();
    assert_eq!(before.status.code(), Some(0));
    let mut listing = names_in(&index_dir);
    let filler = disk.path().join("filler");
    let mut failures = 0;
    for free in [
        0u64,
        8 << 10,
        24 << 10,
        40 << 10,
        56 << 10,
        72 << 10,
        96 << 10,
    ] {
        let _ = fs::remove_file(&filler);
        let fill = free_bytes(disk.path()).saturating_sub(free);
        // The write itself may run out of room a little early: fine.
        let _ = fs::write(&filler, vec![0u8; fill as usize]);
        let run = index(&["--full"]);
        let err = stderr(&run);
        match run.status.code() {
            Some(0) => listing = names_in(&index_dir),
            Some(2) => {
                failures += 1;
                assert_eq!(err.lines().count(), 1, "free {free}: {err}");
                assert!(
                    err.to_lowercase().contains("no space left on device")
                        && err.contains(&*index_dir.to_string_lossy()),
                    "free {free}: the error names the file and the cause: {err}"
                );
                assert_eq!(
                    names_in(&index_dir),
                    listing,
                    "free {free}: nothing left behind"
                );
                assert_eq!(
                    search().stdout,
                    before.stdout,
                    "free {free}: the old index answers"
                );
            }
            other => panic!("free {free}: exit {other:?}: {err}"),
        }
    }
    assert!(failures > 0, "a full disk must fail some run");
    fs::remove_file(&filler).unwrap();
    assert_eq!(index(&["--full"]).status.code(), Some(0));
    assert_eq!(search().stdout, before.stdout);
}

/// Bytes free on the file system of `dir`.
#[cfg(target_os = "linux")]
fn free_bytes(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs writes into the zeroed struct it is given; the path is
    // a valid NUL-terminated string.
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(path.as_ptr(), &mut stat), 0);
        stat.f_bavail as u64 * stat.f_frsize as u64
    }
}
