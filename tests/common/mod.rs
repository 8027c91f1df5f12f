//! Shared helpers for the integration tests: a temporary copy of the
//! fixtures and the real `memidx` binary run inside it.

#![allow(dead_code)] // each test crate uses a different subset

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// A temporary folder holding a copy of `fixtures/corpus` (and optionally more).
pub struct Corpus {
    dir: tempfile::TempDir,
}

impl Corpus {
    /// A fresh copy of `fixtures/corpus`.
    pub fn fixtures() -> Self {
        let corpus = Self::empty();
        copy_dir(&fixtures_dir().join("corpus"), corpus.path());
        corpus
    }

    /// An empty folder.
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `memidx` with the working directory set to the corpus and no
    /// `MEMIDX_INDEX` from the environment.
    pub fn memidx(&self) -> Command {
        let mut cmd = Command::cargo_bin("memidx").expect("binary");
        cmd.current_dir(self.path()).env_remove("MEMIDX_INDEX");
        cmd
    }

    /// Runs `memidx index .` and asserts it succeeded.
    pub fn index(&self) -> std::process::Output {
        let output = self
            .memidx()
            .args(["index", ".", "--quiet"])
            .output()
            .expect("run");
        assert!(
            output.status.success(),
            "index failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Runs `memidx ARGS…`, asserts exit 0, parses stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.memidx().args(args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(0),
            "memidx {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("valid JSON")
    }

    /// Runs `memidx search QUERY --json ARGS…`, asserts exit 0, parses the JSON.
    pub fn search_json(&self, query: &str, args: &[&str]) -> Value {
        self.json(&[&["search", query, "--json"][..], args].concat())
    }
}

/// The repository's `fixtures/` folder.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Copies a folder tree (files and folders only).
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The chunk ids of a JSON response, in rank order.
pub fn chunk_ids(response: &Value) -> Vec<String> {
    response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["chunk_id"].as_str().expect("chunk_id").to_string())
        .collect()
}
