//! Ranking on real-note shapes: a chunk holding an identifier the query
//! names is never outranked by meaning alone, the note *about* an
//! identifier comes before a note that mentions it, a French elision
//! hides no word from a search, and a page cut into sections is ranked
//! with the whole page's evidence.

use std::fs;

use crate::common::Corpus;
use serde_json::Value;

/// Writes `files` (path, text) into a fresh folder and indexes it.
fn corpus_of(files: &[(&str, String)]) -> Corpus {
    let corpus = Corpus::empty();
    for (path, text) in files {
        let path = corpus.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    corpus.index();
    corpus
}

/// The results of `search QUERY --json -k 50 --per-file 0 EXTRA…`.
fn results(corpus: &Corpus, query: &str, extra: &[&str]) -> Vec<Value> {
    let args = [&["-k", "50", "--per-file", "0"][..], extra].concat();
    let response = corpus.search_json(query, &args);
    response["results"].as_array().unwrap().clone()
}

/// How many of `results` carry a rank entry of the file list (the list ran
/// for them, whether or not it returned them).
fn file_ranked(results: &[Value]) -> usize {
    (results.iter())
        .filter(|r| r["ranks"].get("file").is_some())
        .count()
}

/// The EADDRINUSE shape: one long chunk defining the code among many
/// others, a few short mentions, and many chunks near it in meaning
/// (another code of the same family) holding no word of the query.
fn eaddrinuse() -> Corpus {
    let codes = [
        "EACCES (Permission denied): an attempt was made to access a file in a way forbidden by its permissions.",
        "EADDRINUSE (Address already in use): a bind to a local address failed because another server holds it.",
        "ECONNREFUSED (Connection refused): the target machine actively refused the connection.",
        "ECONNRESET (Connection reset by peer): a connection was forcibly closed by a peer.",
        "EEXIST (File exists): an existing file was the target of an operation that required that it not exist.",
        "EISDIR (Is a directory): an operation expected a file, but the given pathname was a directory.",
        "EMFILE (Too many open files): the maximum number of file descriptors has been reached.",
        "ENOENT (No such file or directory): a component of the specified pathname does not exist.",
        "ENOTDIR (Not a directory): a component of the given pathname was not a directory.",
        "EPERM (Operation not permitted): the operation requires elevated privileges.",
        "EPIPE (Broken pipe): a write on a pipe or socket with no process to read the data.",
        "ETIMEDOUT (Operation timed out): the connected party did not respond in time.",
    ];
    let mut files = vec![(
        "errors.md",
        format!(
            "# Errors\n\n## Common system errors\n\nThe errors a program meets most often. {}\n",
            codes.join(" ")
        ),
    )];
    let mention = |i| {
        format!(
            "# Deploying service {i}\n\nService {i} ships as a container image. When two copies start on one host, the second stops with EADDRINUSE.\n"
        )
    };
    let near = |i| {
        format!("# Socket error {i}\n\nEADDRNOTAVAIL on bind {i}: the address is not available.\n")
    };
    let names: Vec<(String, String)> = (1..=3)
        .map(|i| (format!("deploy-{i}.md"), mention(i)))
        .chain((1..=8).map(|i| (format!("socket-{i}.md"), near(i))))
        .collect();
    files.extend(names.iter().map(|(p, t)| (p.as_str(), t.clone())));
    corpus_of(&files)
}

#[test]
fn every_chunk_holding_an_identifier_ranks_above_meaning_alone() {
    let corpus = eaddrinuse();
    // The index's own fusion (relative scores with the bundled model; the
    // other methods are checked in src/fusion.rs).
    let fused = results(&corpus, "EADDRINUSE", &[]);
    let holds: Vec<bool> = (fused.iter())
        .map(|r| r["ranks"]["sparse"].is_object())
        .collect();
    assert_eq!(holds.iter().filter(|&&h| h).count(), 4, "{holds:?}");
    // Every chunk the keyword list returned comes before every other.
    let first_other = holds.iter().position(|&h| !h).unwrap();
    assert!(holds[first_other..].iter().all(|&h| !h), "{holds:?}");
    // The others are still shown, in the dense list's order, scored 0.
    let others = &fused[first_other..];
    assert!(others.len() >= 8, "{others:?}");
    assert!(others.iter().all(|r| r["rrf_score"] == 0.0));
    let dense: Vec<u64> = (others.iter())
        .map(|r| r["ranks"]["dense"]["rank"].as_u64().unwrap())
        .collect();
    assert!(dense.windows(2).all(|w| w[0] < w[1]), "{dense:?}");
    // A search that spells out its fusion gets exactly that formula.
    let spelled = [
        "--fusion",
        "rrf",
        "--sparse-weight",
        "1",
        "--dense-weight",
        "1",
    ];
    let rrf = results(&corpus, "EADDRINUSE", &spelled);
    let meaning_alone: Vec<&Value> = (rrf.iter())
        .filter(|r| r["ranks"]["sparse"].is_null())
        .collect();
    assert!(meaning_alone.len() >= 8, "{rrf:?}");
    for r in meaning_alone {
        let rank = r["ranks"]["dense"]["rank"].as_f64().unwrap();
        assert_eq!(r["rrf_score"].as_f64().unwrap(), 1.0 / (60.0 + rank), "{r}");
    }
    // explain says why a chunk holding no query word scored 0.
    let explained = corpus.json(&[
        "explain",
        "EADDRINUSE",
        "-k",
        "20",
        "--per-file",
        "0",
        "--json",
    ]);
    let gated: Vec<bool> = explained["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["gated"].as_bool().unwrap())
        .collect();
    assert_eq!(&gated[..4], [false; 4]);
    assert!(gated[4..].iter().all(|&g| g), "{gated:?}");
    let human = corpus
        .memidx()
        .args(["explain", "EADDRINUSE", "-k", "5"])
        .output()
        .unwrap();
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(
        human.contains("holds no exact term of the query"),
        "{human}"
    );
}

#[test]
fn the_note_about_an_identifier_ranks_above_a_note_that_mentions_it() {
    let corpus = corpus_of(&[
        (
            "errors/ERR-4471.md",
            "# ERR-4471: token refresh loop\n\nThe client refreshes its access token again and again when the host's clock drifts past the token lifetime. Sync the clock with NTP and restart the client.\n".into(),
        ),
        (
            "oncall/handbook.md",
            "# On-call handbook\n\n## Known errors\n\n- ERR-4470: session store full, see errors/ERR-4470.md\n- ERR-4471: token refresh loop, see errors/ERR-4471.md\n- ERR-4472: clock skew warning, see errors/ERR-4472.md\n".into(),
        ),
    ]);
    for mode in ["hybrid", "sparse"] {
        let results = results(&corpus, "ERR-4471", &["--mode", mode]);
        assert_eq!(
            results[0]["source"], "errors/ERR-4471.md",
            "{mode}: {results:?}"
        );
    }
    // The index records the field weights it was built with.
    let manifest = fs::read_to_string(corpus.path().join(".memidx/meta.json")).unwrap();
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(
        manifest["sparse_fields"],
        serde_json::json!({"heading": 0, "title": 1, "file_name": 4})
    );
}

#[test]
fn a_word_behind_a_french_elision_is_found_as_grep_finds_it() {
    let notes = [
        ("a.md", "# Accès\n\nL'utilisateur doit se connecter.\n"),
        (
            "b.md",
            "# Profil\n\nLe profil de l’utilisateur est privé.\n",
        ),
        ("c.md", "# Droits\n\nChaque utilisateur a un rôle.\n"),
        (
            "d.md",
            "# Aide\n\nQu'importe le navigateur, l'aide s'ouvre.\n",
        ),
    ];
    let corpus = corpus_of(&notes.map(|(p, t)| (p, t.to_string())));
    let grep = notes
        .iter()
        .filter(|(_, text)| text.to_lowercase().contains("utilisateur"))
        .count();
    assert_eq!(grep, 3);
    let found = results(&corpus, "utilisateur", &["--mode", "sparse"]);
    assert_eq!(found.len(), grep, "{found:?}");
    let found = results(&corpus, "l'utilisateur", &["--mode", "sparse"]);
    assert_eq!(found.len(), grep, "{found:?}");
}

/// A page of two sections, one holding each word of the query, beside a
/// short note holding one of them: cut into sections or not, the page is
/// one page.
fn backup_guide(cut: bool) -> Corpus {
    let copies = "A snapshot of every volume is taken at night by the scheduler and kept for thirty days. The scheduler runs on the storage host and writes its log next to the volumes it copies, so a failed night shows up in the morning report.";
    let back = "To restore a volume, pick the copy by date and mount it read-only on a spare host. Compare the files with the live ones before anything is copied back, and tell the owners of the volume when it is done.";
    let guide = match cut {
        true => format!(
            "# Backup guide\n\n## Taking copies\n\n{copies}\n\n## Getting data back\n\n{back}\n"
        ),
        false => format!("# Backup guide\n\n{copies}\n\n{back}\n"),
    };
    let mut files = vec![
        ("backup-guide.md".to_string(), guide),
        (
            "db-schedule.md".to_string(),
            "# Database schedule\n\nA snapshot of the orders database is taken every hour by the cluster itself. The copies stay in the same region and are dropped after a week, which the finance team asked for last spring.\n".to_string(),
        ),
    ];
    files.extend((1..=6).map(|i| {
        let text = format!(
            "# Storage note {i}\n\nThe storage host {i} keeps volumes for team {i}, and its disks are replaced every few years.\n"
        );
        (format!("note-{i}.md"), text)
    }));
    let files: Vec<(&str, String)> = (files.iter())
        .map(|(p, t)| (p.as_str(), t.clone()))
        .collect();
    corpus_of(&files)
}

#[test]
fn a_page_cut_into_sections_keeps_the_whole_page_s_evidence() {
    let sources = |results: &[Value]| -> Vec<String> {
        (results.iter().take(3))
            .map(|r| r["source"].as_str().unwrap().to_string())
            .collect()
    };
    let query = "snapshot restore";
    // Whole, the page holds both words in one chunk and comes first.
    let whole = backup_guide(false);
    assert_eq!(sources(&results(&whole, query, &[]))[0], "backup-guide.md");
    let cut = backup_guide(true);
    // Cut, each section holds one word; the file list gives both the page's
    // evidence, so each ranks above the note holding one word of it.
    let own = results(&cut, query, &[]);
    assert_eq!(
        sources(&own),
        ["backup-guide.md", "backup-guide.md", "db-schedule.md"],
        "{own:?}"
    );
    assert_eq!(file_ranked(&own), own.len(), "{own:?}");
    let file_ranks: Vec<&Value> = (own.iter().take(2))
        .map(|r| &r["ranks"]["file"]["rank"])
        .collect();
    assert_eq!(
        file_ranks,
        [1, 1],
        "a file's chunks share its rank: {own:?}"
    );
    // A search that spells out its weights gets exactly that formula, over
    // the chunks' lists alone: there the section holding `snapshot` falls
    // below the note, as a chunk holding half the page's evidence does.
    let spelled = results(
        &cut,
        query,
        &["--sparse-weight", "0.6", "--dense-weight", "0.4"],
    );
    assert_eq!(
        sources(&spelled),
        ["backup-guide.md", "db-schedule.md", "backup-guide.md"],
        "{spelled:?}"
    );
    assert_eq!(file_ranked(&spelled), 0, "{spelled:?}");
}

#[test]
fn an_index_without_the_file_list_searches_as_before_until_its_next_index_run() {
    // Written as a build before the file list wrote indexes (in process:
    // the library's options let a run leave it out).
    let corpus = Corpus::empty();
    let guide = backup_guide(true);
    for entry in fs::read_dir(guide.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            fs::copy(entry.path(), corpus.path().join(entry.file_name())).unwrap();
        }
    }
    let mut options = memidx::indexer::IndexOptions::new(corpus.path().to_path_buf());
    options.file_list = false;
    let embedder = memidx::embed::load(None).unwrap();
    memidx::indexer::run(&options, embedder, &memidx::progress::Silent).unwrap();
    assert!(!corpus.path().join(".memidx/gen-1/sparse-files").exists());
    let query = "snapshot restore";
    let before = results(&corpus, query, &[]);
    assert_eq!(file_ranked(&before), 0, "{before:?}");
    // The sparse list then weighs the words' whole weight, as a search
    // spelling out the old defaults does.
    let old = results(
        &corpus,
        query,
        &["--sparse-weight", "0.6", "--dense-weight", "0.4"],
    );
    assert_eq!(before, old);
    // `memidx index` rebuilds it with the file list.
    corpus.index();
    let after = results(&corpus, query, &[]);
    assert_eq!(file_ranked(&after), after.len(), "{after:?}");
}
