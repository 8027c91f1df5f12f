//! Several indexes searched as one: a collection split into two folders,
//! each indexed on its own and searched together, ranks every query as one
//! index of the whole collection does (same chunks, same order, scores
//! within 1e-5) in the sparse, dense and hybrid modes; and what a user of
//! several indexes meets at the command line — names, mixed models, a
//! missing or damaged index, the same index twice, `get` with prefixed ids.

use std::fs;
use std::path::PathBuf;

use crate::common::{self, Corpus};
use memidx::filter::Filter;
use memidx::retriever::{ListSelection, Retriever, SearchParams};
use serde_json::Value;

/// A collection's documents in three folders: `whole`, and `a` and `b`
/// holding the first and second half of them in path order (so the two
/// indexes' chunks, one after the other, come in the whole one's order).
struct Split {
    dir: tempfile::TempDir,
    queries: Vec<String>,
}

impl Split {
    /// `../shared/eval/NAME` (its first `docs` documents in path order,
    /// all when `None`) split and indexed with `extra` index arguments;
    /// `None` (the skip said) when the collection is absent.
    fn of(name: &str, docs: Option<usize>, extra: &[&str]) -> Option<Self> {
        let collection = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/eval")
            .join(name);
        if !collection.join("queries.jsonl").is_file() {
            common::skip_unless_ci(&format!(
                "the collection {} is absent",
                collection.display()
            ));
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mut names: Vec<String> = fs::read_dir(collection.join("docs"))
            .expect("docs")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".md"))
            .collect();
        names.sort();
        names.truncate(docs.unwrap_or(names.len()));
        let half = names.len() / 2;
        for (i, name) in names.iter().enumerate() {
            let from = collection.join("docs").join(name);
            let part = if i < half { "a" } else { "b" };
            for folder in ["whole", part] {
                fs::create_dir_all(dir.path().join(folder)).unwrap();
                fs::copy(&from, dir.path().join(folder).join(name)).unwrap();
            }
        }
        let split = Self {
            dir,
            queries: fs::read_to_string(collection.join("queries.jsonl"))
                .unwrap()
                .lines()
                .map(|line| common::parse(line)["text"].as_str().unwrap().to_string())
                .collect(),
        };
        for folder in ["whole", "a", "b"] {
            split.index(folder, extra);
        }
        Some(split)
    }

    fn index(&self, folder: &str, extra: &[&str]) {
        let dir = self.dir.path().join(folder);
        let output = assert_cmd::Command::cargo_bin("memidx")
            .unwrap()
            .args([&["index", "--quiet"][..], &[dir.to_str().unwrap()], extra].concat())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn index_dir(&self, folder: &str) -> PathBuf {
        self.dir.path().join(folder).join(".memidx")
    }

    /// Checks every query in every mode (see the module doc); returns how
    /// many results were compared.
    fn check_every_query(&self) -> usize {
        let modes = [(true, false), (false, true), (true, true)];
        let mut compared = 0;
        for (sparse, dense) in modes {
            let selection = ListSelection {
                sparse,
                dense,
                ..ListSelection::default()
            };
            let one = Retriever::open(&self.index_dir("whole"), &selection).unwrap();
            let named = [(None, self.index_dir("a")), (None, self.index_dir("b"))];
            let two = Retriever::open_several(&named, &selection).unwrap();
            assert!(two.indexes().several());
            for query in &self.queries {
                compared += same_answer(&one, &two, query, (sparse, dense));
            }
        }
        compared
    }
}

/// Asserts that `two` answers `query` as `one` does: the same chunk ids
/// (without the index's name), in the same order, with fused and per-list
/// scores within 1e-5; returns how many results it compared.
fn same_answer(one: &Retriever, two: &Retriever, query: &str, mode: (bool, bool)) -> usize {
    let params = SearchParams {
        top_k: 10,
        window: None,
        rrf_k: None,
        fusion: None,
        filter: Filter::default(),
        per_file: 0,
        keep_all: true,
        here: None,
    };
    let (a, b) = (
        one.search(query, &params).unwrap(),
        two.search(query, &params).unwrap(),
    );
    let ids = |retriever: &Retriever, outcome: &memidx::retriever::SearchOutcome| -> Vec<String> {
        let decoded = retriever.decode(outcome.shown_chunks()).unwrap();
        let ids = outcome
            .shown_chunks()
            .map(|c| decoded.get(c).unwrap().view.id());
        ids.map(|id| {
            id.split_once(':')
                .map_or(id.clone(), |(_, rest)| rest.to_string())
        })
        .collect()
    };
    assert_eq!(ids(one, &a), ids(two, &b), "{mode:?} {query}");
    for (x, y) in a.results.iter().zip(&b.results) {
        assert!(
            (x.score - y.score).abs() <= 1e-5,
            "{mode:?} {query}: {} vs {}",
            x.score,
            y.score
        );
        for (p, q) in x.contributions.iter().zip(&y.contributions) {
            let (p, q) = (p.map(|c| c.raw_score), q.map(|c| c.raw_score));
            let close = match (p, q) {
                (Some(p), Some(q)) => (p - q).abs() <= 1e-5,
                (p, q) => p == q,
            };
            assert!(close, "{mode:?} {query}: {p:?} vs {q:?}");
        }
    }
    a.results.len()
}

#[test]
fn a_split_cranfield_ranks_as_one_index() {
    if let Some(split) = Split::of("cranfield", None, &[]) {
        assert!(split.check_every_query() > 3 * 225 * 9);
    }
}

#[test]
fn a_split_nfcorpus_ranks_as_one_index() {
    if let Some(split) = Split::of("nfcorpus", None, &[]) {
        assert!(split.check_every_query() > 3 * 323 * 9);
    }
}

#[test]
fn a_split_arguana_ranks_as_one_index() {
    if let Some(split) = Split::of("arguana", None, &[]) {
        assert!(split.check_every_query() > 3 * 1400 * 9);
    }
}

/// A filter over several indexes means what it means over one index of
/// them all: a value only one index holds narrows the other to nothing
/// instead of failing the search, and only a key or value no index holds is
/// an error (named as one index of them all names it).
#[test]
fn a_filter_over_a_split_collection_selects_as_over_one_index() {
    let Some(split) = Split::of("arguana", Some(300), &[]) else {
        return;
    };
    let dir = |folder: &str| split.index_dir(folder).to_str().unwrap().to_string();
    let (whole, a, b) = (dir("whole"), dir("a"), dir("b"));
    let search = |indexes: &[&str], filter: &str| {
        let mut command = assert_cmd::Command::cargo_bin("memidx").unwrap();
        command.args([
            "search",
            "human rights",
            "--json",
            "-k",
            "20",
            "--per-file",
            "0",
        ]);
        for index in indexes {
            command.args(["--index", index]);
        }
        command.args(["--filter", filter]).output().unwrap()
    };
    let ids = |output: &std::process::Output| -> Vec<String> {
        assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
        let response = common::parse(&String::from_utf8_lossy(&output.stdout));
        let ids = common::chunk_ids(&response).into_iter();
        ids.map(|id| {
            id.split_once(':')
                .map_or(id.clone(), |(_, rest)| rest.to_string())
        })
        .collect()
    };
    // The debate of b's last document: no document of a holds it.
    let last = common::parse(&String::from_utf8_lossy(
        &search(&[&b], "stance=con").stdout,
    ));
    let metadata = &last["results"][0]["metadata"];
    let debate = format!("debate={}", metadata["debate"][0].as_str().unwrap());
    let in_a = search(&[&a], &debate);
    assert_eq!(in_a.status.code(), Some(2), "a holds {debate}");
    for filter in [debate.as_str(), "stance=con", "kind=point"] {
        let one = ids(&search(&[&whole], filter));
        assert!(!one.is_empty(), "{filter}");
        assert_eq!(ids(&search(&[&a, &b], filter)), one, "{filter}");
        assert_eq!(ids(&search(&[&b, &a], filter)), one, "{filter}");
    }
    // Held by no index: the error one index of them all gives.
    for filter in ["debate=no-such-debate", "no_such_key=1"] {
        let (one, two) = (search(&[&whole], filter), search(&[&a, &b], filter));
        assert_eq!(
            (one.status.code(), two.status.code()),
            (Some(2), Some(2)),
            "{filter}"
        );
        assert_eq!(stderr(&one), stderr(&two), "{filter}");
        assert!(
            stderr(&two).contains("no indexed file has"),
            "{}",
            stderr(&two)
        );
    }
}

/// Under a transformer (cosines of another spread, a noise floor measured
/// over both indexes): a third of cranfield, which the model embeds three
/// times (whole and halves) in a test's time, and every query.
#[test]
fn a_split_collection_ranks_as_one_index_under_minilm() {
    let Some(model) = common::minilm_dir() else {
        return;
    };
    if let Some(split) = Split::of(
        "cranfield",
        Some(466),
        &["--model", model.to_str().unwrap()],
    ) {
        assert!(split.check_every_query() > 3 * 225 * 9);
    }
}

/// The chunk ids `search "postgres failover" --json` finds over the
/// indexes `indexes` (each after an `--index`).
fn search_ids(corpus: &Corpus, indexes: &[&str]) -> Vec<String> {
    let mut args = vec!["search", "postgres failover", "--json"];
    for index in indexes {
        args.extend(["--index", index]);
    }
    common::chunk_ids(&corpus.json(&args))
}

fn run(corpus: &Corpus, args: &[&str]) -> std::process::Output {
    corpus.memidx().args(args).output().unwrap()
}

/// `memidx ARGS… --index notes --index work`.
fn on_both(corpus: &Corpus, args: &[&str]) -> std::process::Output {
    run(
        corpus,
        &[args, &["--index", "notes", "--index", "work"]].concat(),
    )
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn results_from_two_indexes_carry_their_names_and_get_reads_them() {
    let corpus = common::two_indexes();
    let search = on_both(&corpus, &["search", "postgres failover", "--json"]);
    let response: Value = common::parse(&String::from_utf8(search.stdout).unwrap());
    let ids = common::chunk_ids(&response);
    assert!(
        ids.iter().any(|id| id.starts_with("notes:runbooks/")),
        "{ids:?}"
    );
    assert!(
        ids.iter()
            .all(|id| id.starts_with("notes:") || id.starts_with("work:")),
        "{ids:?}"
    );
    let first = &response["results"][0];
    let (name, _) = first["chunk_id"].as_str().unwrap().split_once(':').unwrap();
    assert!(
        first["source"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{name}:"))
    );
    // `get` takes the id as search printed it, and a path with lines.
    let id = first["chunk_id"].as_str().unwrap();
    let got = on_both(&corpus, &["get", id, "--json"]);
    assert!(got.status.success(), "{}", stderr(&got));
    let got: Value = common::parse(&String::from_utf8(got.stdout).unwrap());
    assert_eq!(got["chunk_id"], first["chunk_id"]);
    assert_eq!(got["text"], first["text"]);
    let path = first["source"].as_str().unwrap();
    let lines = on_both(&corpus, &["get", &format!("{path}:1-2")]);
    assert!(lines.status.success(), "{}", stderr(&lines));
    // An id without a name, or with an unknown one, is not found (exit 1),
    // naming the indexes.
    let bare = id.split_once(':').unwrap().1;
    for wrong in [bare.to_string(), format!("other:{bare}")] {
        let out = on_both(&corpus, &["get", &wrong]);
        assert_eq!(out.status.code(), Some(1), "{wrong}");
        assert!(stderr(&out).contains("notes, work"), "{}", stderr(&out));
    }
    // With one index nothing changes: no names.
    let one = search_ids(&corpus, &["notes"]);
    assert!(one.iter().all(|id| id.starts_with("runbooks/")), "{one:?}");
}

#[test]
fn names_are_given_or_the_folders_and_the_same_index_twice_is_searched_once() {
    let corpus = common::two_indexes();
    let ids = search_ids(&corpus, &["ops=notes", "work/.memidx"]);
    assert!(ids.iter().any(|id| id.starts_with("ops:")), "{ids:?}");
    // The same index given twice (by two spellings) is one index: no names.
    let twice = search_ids(&corpus, &["notes", "notes/.memidx"]);
    assert!(
        twice.iter().all(|id| id.starts_with("runbooks/")),
        "{twice:?}"
    );
    // Two indexes given one name is an error.
    let clash = run(
        &corpus,
        &["search", "x", "--index", "a=notes", "--index", "a=work"],
    );
    assert_eq!(clash.status.code(), Some(2));
    assert!(
        stderr(&clash).contains("two indexes are named 'a'"),
        "{}",
        stderr(&clash)
    );
    // MEMIDX_INDEX lists several the platform's way.
    let joined = std::env::join_paths([corpus.path().join("notes"), corpus.path().join("work")]);
    let out = corpus
        .memidx()
        .env("MEMIDX_INDEX", joined.unwrap())
        .args(["search", "postgres failover", "--json"])
        .output()
        .unwrap();
    let response = common::parse(&String::from_utf8(out.stdout).unwrap());
    assert!(
        common::chunk_ids(&response)
            .iter()
            .any(|id| id.starts_with("notes:"))
    );
    // A command that reads one index says so rather than seeking "notes:work".
    let joined = std::env::join_paths([corpus.path().join("notes"), corpus.path().join("work")]);
    let status = corpus
        .memidx()
        .env("MEMIDX_INDEX", joined.unwrap())
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2));
    assert!(
        stderr(&status).contains("MEMIDX_INDEX lists 2 indexes, and this command reads one"),
        "{}",
        stderr(&status)
    );
}

#[test]
fn automatic_names_do_not_depend_on_the_order_of_the_flags() {
    let corpus = Corpus::empty();
    let fixtures = common::fixtures_dir().join("corpus");
    // Two folders named docs: the runbooks in x/docs, the rest in y/docs.
    let (x, y) = (corpus.path().join("x/docs"), corpus.path().join("y/docs"));
    common::copy_fixture(&fixtures, &y);
    fs::create_dir_all(&x).unwrap();
    fs::rename(y.join("runbooks"), x.join("runbooks")).unwrap();
    for dir in [&x, &y] {
        let output = run(&corpus, &["index", "--quiet", dir.to_str().unwrap()]);
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let (x, y) = (x.to_str().unwrap(), y.to_str().unwrap());
    let forward = search_ids(&corpus, &[x, y]);
    assert!(
        forward.iter().any(|id| id.starts_with("docs:runbooks/")),
        "{forward:?}"
    );
    assert!(
        forward.iter().all(|id| !id.starts_with("docs-2:runbooks/")),
        "{forward:?}"
    );
    assert_eq!(search_ids(&corpus, &[y, x]), forward);
}

#[test]
fn a_missing_or_damaged_index_is_named_and_skip_missing_says_what_it_skipped() {
    let corpus = common::two_indexes();
    let missing = run(
        &corpus,
        &["search", "postgres", "--index", "notes", "--index", "gone"],
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("gone"), "{}", stderr(&missing));
    let skipped = run(
        &corpus,
        &[
            "search",
            "postgres",
            "--json",
            "--index",
            "notes",
            "--index",
            "gone",
            "--skip-missing",
        ],
    );
    assert_eq!(skipped.status.code(), Some(0), "{}", stderr(&skipped));
    assert!(
        stderr(&skipped).contains("skipped gone"),
        "{}",
        stderr(&skipped)
    );
    // A damaged index fails the search, named, even under --skip-missing.
    let meta = corpus.path().join("work/.memidx/meta.json");
    fs::write(&meta, "{ not json").unwrap();
    let damaged = on_both(&corpus, &["search", "postgres", "--skip-missing"]);
    assert_eq!(damaged.status.code(), Some(2));
    assert!(stderr(&damaged).contains("work"), "{}", stderr(&damaged));
}

/// `memidx ARGS… --index work --index notes --index extra`.
fn on_three(corpus: &Corpus, args: &[&str]) -> std::process::Output {
    let indexes = ["--index", "work", "--index", "notes", "--index", "extra"];
    run(corpus, &[args, &indexes].concat())
}

#[test]
fn indexes_of_two_models_keep_cosines_apart_and_say_so() {
    // work, then notes embedded by another model, then extra (a copy of
    // work's ADRs): the dense list leaves out the index in the middle.
    let corpus = common::two_indexes();
    let (notes, extra) = (corpus.path().join("notes"), corpus.path().join("extra"));
    common::copy_dir(&corpus.path().join("work/adr"), &extra.join("adr"));
    let other = corpus.path().join("other-model");
    common::other_static_model(&other);
    let model = other.to_str().unwrap();
    for (dir, extra_args) in [(&notes, &["--full", "--model", model][..]), (&extra, &[])] {
        let output = run(
            &corpus,
            &[&["index", "--quiet", dir.to_str().unwrap()][..], extra_args].concat(),
        );
        assert!(output.status.success(), "{}", stderr(&output));
    }
    // With BM25 leading, the best chunks are notes' runbooks, which seed
    // the dense list's feedback though it does not rank them.
    let out = on_three(
        &corpus,
        &[
            "search",
            "postgres failover",
            "--json",
            "--dense-weight",
            "0.1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let note = stderr(&out);
    assert!(note.contains("the dense list leaves out notes"), "{note}");
    let response = common::parse(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(
        response["notices"].as_array().map(Vec::len),
        Some(1),
        "{response}"
    );
    let ids = common::chunk_ids(&response);
    assert!(
        ids[..3].iter().any(|id| id.starts_with("notes:")),
        "{ids:?}"
    );
    // notes' chunks have no dense rank; the others may.
    for result in response["results"].as_array().unwrap() {
        if result["chunk_id"].as_str().unwrap().starts_with("notes:") {
            assert!(result["ranks"]["dense"].is_null(), "{result}");
        }
    }
    // extra's chunks, after the gap notes leaves in the dense list, are
    // its own: each one's text and cosine are its twin's in work.
    let dense = on_three(
        &corpus,
        &[
            "search",
            "canary deploys with argo rollouts",
            "--mode",
            "dense",
            "--json",
            "-k",
            "20",
            "--per-file",
            "0",
        ],
    );
    let dense = common::parse(&String::from_utf8(dense.stdout).unwrap());
    let results = dense["results"].as_array().unwrap();
    let of = |id: &str| results.iter().find(|r| r["chunk_id"] == id);
    let twins: Vec<_> = results
        .iter()
        .filter_map(|r| Some((r, of(&r["chunk_id"].as_str()?.replace("extra:", "work:"))?)))
        .filter(|(r, _)| r["chunk_id"].as_str().unwrap().starts_with("extra:"))
        .collect();
    assert!(!twins.is_empty(), "{dense}");
    for (copy, original) in twins {
        assert_eq!(copy["text"], original["text"]);
        assert_eq!(
            copy["ranks"]["dense"]["score"],
            original["ranks"]["dense"]["score"]
        );
    }
    // explain says so too; both outputs hold to their schemas in both drafts.
    let explain = on_three(&corpus, &["explain", "postgres failover", "--json"]);
    assert!(
        stderr(&explain).contains("the dense list leaves out notes"),
        "{}",
        stderr(&explain)
    );
    let explained = common::parse(&String::from_utf8(explain.stdout).unwrap());
    assert_eq!(explained["notices"], response["notices"]);
    let schemas = [
        (
            include_str!("../../schemas/search-response.schema.json"),
            &response,
        ),
        (
            include_str!("../../schemas/explain-response.schema.json"),
            &explained,
        ),
    ];
    for (schema, instance) in schemas {
        for draft in [jsonschema::Draft::Draft7, jsonschema::Draft::Draft202012] {
            let validator = jsonschema::options()
                .with_draft(draft)
                .build(&common::parse(schema))
                .unwrap();
            let errors: Vec<String> = validator
                .iter_errors(instance)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{draft:?}: {errors:?}");
        }
    }
}
