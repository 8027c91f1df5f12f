//! The README's tour runs as shown: every `$ memidx …` line of the tour's
//! `console` block is run, in order, in a fresh copy of `fixtures/corpus`,
//! and must exit 0 and print every line the README shows under it, in that
//! order (among others it may print). Runs of spaces count as one; `…`
//! stands for any text (timings, dates, a snippet's cut end).

use crate::common::Corpus;

/// The tour's commands (the words after `$ memidx`) and the lines shown
/// under each.
fn tour() -> Vec<(Vec<String>, Vec<String>)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## A 60-second tour")
        .nth(1)
        .expect("the README has a tour");
    let block = section
        .split("```console\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the tour has a console block");
    let mut steps: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for line in block.lines() {
        if let Some(command) = line.strip_prefix("$ memidx ") {
            steps.push((words(command), Vec::new()));
        } else if !line.trim().is_empty() {
            let step = steps.last_mut().expect("output follows a command");
            step.1.push(line.to_string());
        }
    }
    steps
}

/// A command line's words: split at spaces, except inside double quotes.
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// `text` with runs of whitespace as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `actual` is the `shown` line, where `…` stands for any text.
fn shows(shown: &str, actual: &str) -> bool {
    let (shown, actual) = (collapse(shown), collapse(actual));
    let mut parts = shown.split('…');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    for part in parts {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn the_readme_tour_runs_as_shown() {
    let steps = tour();
    assert!(steps.len() >= 5, "the tour shows {} commands", steps.len());
    let corpus = Corpus::fixtures();
    for (args, shown) in steps {
        let output = corpus.memidx().args(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "memidx {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!shown.is_empty(), "memidx {args:?} shows no output");
        let mut lines = stdout.lines();
        for line in &shown {
            assert!(
                lines.any(|actual| shows(line, actual)),
                "memidx {args:?} no longer prints, in this order:\n{line}\n--- it printed:\n{stdout}"
            );
        }
    }
}

#[test]
fn a_shown_line_matches_with_its_placeholders_only() {
    assert!(shows(
        "indexed … chunks in … s",
        "indexed 18 files, 119 chunks in 0.13 s"
    ));
    assert!(shows("a  b…", "a b c"));
    assert!(!shows("indexed … chunks", "reindexed 119 chunks"));
    assert!(!shows("b … a", "b c"));
    assert_eq!(words(r#"search "a b" -k 2"#), ["search", "a b", "-k", "2"]);
}
