//! Nothing written is unfindable: every word a file holds, headings and
//! Unicode forms included, is found by `memidx search --mode sparse`, with
//! the real binary on real files. (bench/findability.py measures the same
//! over whole collections.)

use std::fs;

use crate::common::Corpus;

/// The sources of the files a sparse search for `query` returns.
fn sparse_sources(corpus: &Corpus, query: &str) -> Vec<String> {
    let response = corpus.search_json(query, &["--mode", "sparse", "-k", "20"]);
    response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["source"].as_str().expect("source").to_string())
        .collect()
}

/// A corpus of `files` (name, bytes), indexed; returns it with the index run's stderr.
fn indexed(files: &[(&str, &[u8])]) -> (Corpus, String) {
    let corpus = Corpus::empty();
    for (name, bytes) in files {
        fs::write(corpus.path().join(name), bytes).unwrap();
    }
    let output = corpus.index();
    (corpus, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn headings_without_a_body_are_found() {
    let (corpus, stderr) = indexed(&[
        (
            "ends-in-heading.md",
            b"# Ops\n\nRotate the keys every quarter.\n\n## TODO rotate ptarmigan-88\n",
        ),
        ("one-line.md", b"# idea: quokka lattice\n"),
        ("only-headings.md", b"# Wombat\n## Burrow depth\n"),
        (
            "setext.md",
            b"Intro line.\n\nSetext narwhal\n--------------\n",
        ),
        (
            "crlf.md",
            b"# Top\r\n\r\nbody text\r\n\r\n## axolotl gills\r\n",
        ),
    ]);
    for (query, file) in [
        ("ptarmigan-88", "ends-in-heading.md"),
        ("quokka", "one-line.md"),
        ("lattice", "one-line.md"),
        ("wombat", "only-headings.md"),
        ("burrow", "only-headings.md"),
        ("narwhal", "setext.md"),
        ("axolotl", "crlf.md"),
    ] {
        assert_eq!(sparse_sources(&corpus, query), [file], "{query}");
    }
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn a_file_indexed_into_no_chunk_is_named() {
    let (corpus, stderr) = indexed(&[
        ("empty.md", b""),
        ("front-matter-only.md", b"---\ntitle: x\n---\n"),
        ("rules.md", b"---\n\n***\n"),
        ("note.md", b"# Kept\n\nwords\n"),
    ]);
    for name in ["empty.md", "front-matter-only.md", "rules.md"] {
        assert!(
            stderr.contains(&format!("warning: {name}: no text to index")),
            "{name}: {stderr}"
        );
    }
    assert!(!stderr.contains("note.md"), "{stderr}");
    assert_eq!(sparse_sources(&corpus, "kept"), ["note.md"]);
}

#[test]
fn unicode_forms_meet() {
    let (corpus, _) = indexed(&[
        // NFD, as macOS writes it: `café` and `Zürich` decomposed.
        (
            "nfd.md",
            "# Trip\n\nLunch at the cafe\u{301} in Zu\u{308}rich.\n".as_bytes(),
        ),
        ("nfc.md", "# Street\n\nThe Straße was closed.\n".as_bytes()),
        (
            "invisible.md",
            "# Words\n\nAn exam\u{AD}ple, a dead\u{200B}line, a ﬁle in ｆｕｌｌ width.\n"
                .as_bytes(),
        ),
    ]);
    for (query, file) in [
        ("café", "nfd.md"),
        ("cafe\u{301}", "nfd.md"),
        ("cafe", "nfd.md"),
        ("Zürich", "nfd.md"),
        ("zurich", "nfd.md"),
        ("strasse", "nfc.md"),
        ("Straße", "nfc.md"),
        ("example", "invisible.md"),
        ("deadline", "invisible.md"),
        ("file", "invisible.md"),
        ("full", "invisible.md"),
    ] {
        assert_eq!(sparse_sources(&corpus, query), [file], "{query}");
    }
}

#[test]
fn an_exact_form_ranks_above_a_folded_one_and_explain_says_which_matched() {
    let (corpus, _) = indexed(&[
        ("accented.md", "# One\n\nNotes from Zürich.\n".as_bytes()),
        ("plain.md", "# Two\n\nNotes from Zurich.\n".as_bytes()),
    ]);
    assert_eq!(
        sparse_sources(&corpus, "Zürich"),
        ["accented.md", "plain.md"]
    );
    assert_eq!(
        sparse_sources(&corpus, "Zurich"),
        ["plain.md", "accented.md"]
    );
    let explained = corpus.json(&["explain", "zurich", "--json", "--mode", "sparse"]);
    let reasons: Vec<(&str, &str)> = explained["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["source"].as_str().unwrap(),
                r["lists"][0]["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("plain.md", "matched zurich"),
            ("accented.md", "matched zurich (folded from Zürich)")
        ]
    );
}

#[test]
fn long_tokens_are_found_by_themselves() {
    let sha512 = "9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca7\
                  2323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043";
    let long_id = format!("com.example.{}.Handler", "deeply.nested.package".repeat(8));
    let base64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo".repeat(20);
    let text = format!("# Hashes\n\nsum {sha512}\n\nclass {long_id}\n\nblob {base64}\n");
    let (corpus, _) = indexed(&[("hashes.md", text.as_bytes())]);
    for query in [sha512, long_id.as_str(), base64.as_str()] {
        assert_eq!(sparse_sources(&corpus, query), ["hashes.md"], "{query}");
    }
    // Identifiers keep matching exactly as before.
    let (corpus, _) = indexed(&[(
        "code.md",
        b"# Code\n\nCall getUserById with user_id; see \xe6\x9d\xb1\xe4\xba\xac\xe9\x83\xbd.\n",
    )]);
    for query in ["getUserById", "user_id", "user", "東京"] {
        assert_eq!(sparse_sources(&corpus, query), ["code.md"], "{query}");
    }
}

#[test]
fn a_merged_chunk_is_labelled_by_every_section() {
    let (corpus, _) = indexed(&[(
        "pg.md",
        b"# Postgres\n\n## Check replication lag\n\nRun the lag query.\n\n\
          ## Kill a long query\n\nUse pg_terminate_backend.\n\n## Vacuum\n\nRun vacuum analyze.\n",
    )]);
    let response = corpus.search_json("vacuum", &["--mode", "sparse"]);
    assert_eq!(
        response["results"][0]["heading"],
        "Postgres > Check replication lag · Kill a long query · Vacuum"
    );
    let human = corpus
        .memidx()
        .args(["search", "vacuum", "--mode", "sparse"])
        .output()
        .unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.contains("Postgres > Check replication lag · Kill a long query · Vacuum"),
        "{human}"
    );
}
