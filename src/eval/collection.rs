//! The file formats of judged evaluation collections: queries
//! JSONL, qrels and TREC runs, plus the rule that turns a markdown path into a
//! doc id and the fixed held-out split of the queries.
//!
//! `memidx eval` must report the numbers that the collections' scorer,
//! `score.py` (which mirrors trec_eval 9), reports, so everything that score.py reads is read here
//! exactly as score.py reads it: Python's universal newlines and `str.split()`
//! whitespace, its header rule for qrels, its `norm_docid`. A run is ordered as
//! trec_eval orders it ([`trec_order`]), and [`write_trec`] writes runs that
//! score.py reads back in exactly our order.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use serde_json::Value;

use crate::store::bounded;

/// One evaluation query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalQuery {
    /// The query id, as the qrels name it.
    pub id: String,
    /// The query text to search for.
    pub text: String,
}

/// Judgments: query id -> doc id -> relevance (> 0 = relevant, larger =
/// better; the value is the gain nDCG uses).
pub type Qrels = BTreeMap<String, BTreeMap<String, f64>>;

/// A ranked run: query id -> hits (doc id, score), in any order; the order
/// that counts is [`trec_order`].
pub type Run = BTreeMap<String, Vec<(String, f64)>>;

/// One line of a queries file; fields other than these are ignored.
#[derive(Deserialize)]
struct QueryLine {
    id: Value,
    text: String,
}

/// Reads a queries JSONL file: one object per line with `"id"` (a string or an
/// integer) and `"text"`; other fields (e.g. `"orig_id"`) are ignored and blank
/// lines skipped. Errors name the file and line; an id given twice is an error.
pub fn read_queries(path: &Path) -> Result<Vec<EvalQuery>> {
    let text = read_text(path, "queries")?;
    let mut queries = Vec::new();
    let mut first_line: BTreeMap<String, usize> = BTreeMap::new();
    for (n, line) in (1..).zip(text.lines()) {
        if line.trim().is_empty() {
            continue;
        }
        let query = parse_query(line).map_err(|e| anyhow!("{}:{n}: {e}", path.display()))?;
        if let Some(first) = first_line.insert(query.id.clone(), n) {
            bail!(
                "{}:{n}: duplicate query id {:?} (first on line {first})",
                path.display(),
                query.id
            );
        }
        queries.push(query);
    }
    Ok(queries)
}

/// Parses one non-blank queries line.
fn parse_query(line: &str) -> Result<EvalQuery> {
    let QueryLine { id, text } = serde_json::from_str(line)?;
    let id = match id {
        Value::String(s) => s,
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        other => bail!("\"id\" must be a string or an integer, not {other}"),
    };
    if id.is_empty() {
        bail!("\"id\" is empty");
    }
    Ok(EvalQuery { id, text })
}

/// Reads a qrels file exactly as score.py's `load_qrels` does: per line,
/// whitespace-separated `qid docid rel` or `qid 0 docid rel`; blank lines and
/// lines starting with `#` are skipped; a non-numeric relevance on line 1 is a
/// header. A pair judged twice keeps its last value. Errors name `file:line`.
pub fn read_qrels(path: &Path) -> Result<Qrels> {
    let text = read_text(path, "qrels")?;
    let mut qrels = Qrels::new();
    for (n, line) in (1..).zip(python_lines(&text)) {
        let fields: Vec<&str> = python_split(line).collect();
        if fields.is_empty() || line.starts_with('#') {
            continue;
        }
        let (qid, docid, rel) = match fields[..] {
            [q, d, r] | [q, _, d, r] => (q, d, r),
            _ => bail!(
                "{}:{n}: expected 3 or 4 columns, got {}",
                path.display(),
                fields.len()
            ),
        };
        let Some(rel) = parse_relevance(rel) else {
            if n == 1 {
                continue; // a header line
            }
            bail!("{}:{n}: bad relevance value {rel:?}", path.display());
        };
        qrels
            .entry(qid.to_owned())
            .or_default()
            .insert(docid.to_owned(), rel);
    }
    Ok(qrels)
}

/// Largest queries or qrels file read (MS MARCO's dev qrels are 1 MB, its
/// 500k training queries 20 MB).
pub const MAX_COLLECTION_FILE_BYTES: u64 = 256 << 20;

/// Reads a whole UTF-8 text file, a regular file of at most
/// [`MAX_COLLECTION_FILE_BYTES`], naming it and its role on failure.
fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = bounded::read_regular(path, MAX_COLLECTION_FILE_BYTES)
        .map_err(|err| anyhow!("{what} file {} {err}", path.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{what} file {} is not UTF-8", path.display()))
}

/// The lines of a text as Python's universal newlines see them: `\n`, `\r\n`
/// and a lone `\r` each end a line.
fn python_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let terminator = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = rest.get(end + terminator..).unwrap_or("");
        Some(line)
    })
}

/// Python's `str.isspace`: Unicode White_Space plus the ASCII separators
/// U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's argument-less `str.split()`.
fn python_split(line: &str) -> impl Iterator<Item = &str> {
    line.split(is_python_space)
        .filter(|field| !field.is_empty())
}

/// A relevance value as Python's `int(r)`, else `float(r)`, accepts it:
/// decimal or exponent notation, `inf`/`nan`, and `_` between digits.
/// (Non-ASCII digits, which Python also accepts, are rejected.)
fn parse_relevance(text: &str) -> Option<f64> {
    if !text.contains('_') {
        return text.parse().ok();
    }
    let bytes = text.as_bytes();
    let digit_at = |i: Option<usize>| i.and_then(|i| bytes.get(i)).is_some_and(u8::is_ascii_digit);
    let underscores_between_digits = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'_')
        .all(|(i, _)| digit_at(i.checked_sub(1)) && digit_at(Some(i + 1)));
    if !underscores_between_digits {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// Reduces a source path or doc name to its doc id as score.py's `norm_docid`
/// does: trim whitespace, keep what follows the last `/` or `\`, drop a
/// trailing `.md` (`"docs/4983.md"` -> `"4983"`).
pub fn doc_id(path: &str) -> String {
    let trimmed = path.trim_matches(is_python_space);
    let name = trimmed.rsplit(['/', '\\']).next().unwrap_or(trimmed);
    name.strip_suffix(".md").unwrap_or(name).to_owned()
}

/// Aggregates chunk hits (source path, score) to documents, each scored by its
/// best chunk: [`doc_id`] of the source, maximum score. Returns the documents
/// best first (score descending, then doc id ascending).
pub fn best_chunk_per_doc<'a>(
    hits: impl IntoIterator<Item = (&'a str, f64)>,
) -> Vec<(String, f64)> {
    let mut best: BTreeMap<String, f64> = BTreeMap::new();
    for (source, score) in hits {
        best.entry(doc_id(source))
            .and_modify(|b| *b = b.max(score))
            .or_insert(score);
    }
    // BTreeMap iteration is by doc id and the sort is stable.
    let mut docs: Vec<(String, f64)> = best.into_iter().collect();
    docs.sort_by(|a, b| by_score_desc(a.1, b.1));
    docs
}

/// Orders one query's hits as trec_eval and score.py do: score descending,
/// ties broken by doc id in reverse string order; of a doc id that occurs more
/// than once only the first occurrence in that order is kept. (score.py's
/// order of NaN scores is undefined; here they come last.)
pub fn trec_order(hits: &[(String, f64)]) -> Vec<(&str, f64)> {
    let mut ordered: Vec<(&str, f64)> = hits.iter().map(|(d, s)| (d.as_str(), *s)).collect();
    ordered.sort_by(|a, b| by_score_desc(a.1, b.1).then_with(|| b.0.cmp(a.0)));
    let mut seen = HashSet::new();
    ordered.retain(|(doc, _)| seen.insert(*doc));
    ordered
}

/// A total order on scores, highest first, where `-0.0 == 0.0` (as in Python)
/// and NaN comes last.
fn by_score_desc(a: f64, b: f64) -> Ordering {
    let canonical = |x: f64| if x == 0.0 { 0.0 } else { x };
    a.is_nan()
        .cmp(&b.is_nan())
        .then_with(|| canonical(b).total_cmp(&canonical(a)))
}

/// Writes a TREC run, one line per hit: `qid Q0 docid rank score tag`. Queries
/// come in the order of the ids in `order` (ids without hits in `run` write
/// nothing); each query's hits in [`trec_order`], ranks from 1, scores at full
/// precision (f64 `Display`, which round-trips), so score.py reads back exactly
/// our ranking. Fails on anything score.py would read differently: an empty
/// field or one with whitespace, a doc id that `norm_docid` would change, a
/// NaN score.
pub fn write_trec(out: &mut dyn Write, run: &Run, order: &[String], tag: &str) -> Result<()> {
    check_field("run tag", tag)?;
    for qid in order {
        let Some(hits) = run.get(qid) else { continue };
        check_field("query id", qid)?;
        for (rank, (doc, score)) in (1..).zip(trec_order(hits)) {
            check_hit(doc, score)
                .with_context(|| format!("cannot write the run of query {qid:?}"))?;
            writeln!(out, "{qid} Q0 {doc} {rank} {score} {tag}")?;
        }
    }
    Ok(())
}

/// A TREC run field must be one non-empty whitespace-free token.
fn check_field(what: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.contains(is_python_space) {
        bail!("{what} {value:?} cannot be written in a TREC run (empty or contains whitespace)");
    }
    Ok(())
}

/// A hit must read back as the same doc id with the same place in the order.
fn check_hit(doc: &str, score: f64) -> Result<()> {
    check_field("doc id", doc)?;
    let read_back = doc_id(doc);
    if read_back != doc {
        bail!("doc id {doc:?} would be read back as {read_back:?}; reduce doc ids with doc_id()");
    }
    if score.is_nan() {
        bail!("doc id {doc:?} has score NaN, which score.py cannot order");
    }
    Ok(())
}

/// The fixed held-out split: a query is held out when the xxh3-64 hash (seed
/// 0) of its id's UTF-8 bytes is odd. The split depends on nothing but the id,
/// so it is the same on every run and platform and for any subset of queries;
/// about half of any large set of ids is held out (104 of Cranfield's 225).
/// Tune on the other half, report on this one.
pub fn is_held_out(query_id: &str) -> bool {
    xxhash_rust::xxh3::xxh3_64(query_id.as_bytes()) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` to `name` in a fresh temp dir (kept alive by the guard).
    fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn queries_of(text: &str) -> Result<Vec<EvalQuery>> {
        let (_dir, path) = temp_file("q.jsonl", text);
        read_queries(&path)
    }

    fn qrels_of(text: &str) -> Result<Qrels> {
        let (_dir, path) = temp_file("qrels.tsv", text);
        read_qrels(&path)
    }

    fn query(id: &str, text: &str) -> EvalQuery {
        EvalQuery {
            id: id.into(),
            text: text.into(),
        }
    }

    fn judged(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|&(d, r)| (d.to_owned(), r)).collect()
    }

    fn hits(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|&(d, s)| (d.to_owned(), s)).collect()
    }

    fn trec_text(run: &Run, order: &[&str], tag: &str) -> Result<String> {
        let order: Vec<String> = order.iter().map(|q| q.to_string()).collect();
        let mut out = Vec::new();
        write_trec(&mut out, run, &order, tag)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn queries_take_string_and_integer_ids_and_skip_blank_lines() {
        let text = "{\"id\": \"1\", \"text\": \"heat flow\", \"orig_id\": \"001\"}\n\
                    \n   \n\
                    {\"id\": 2, \"text\": \"shock waves\"}\r\n\
                    {\"text\": \"q three\", \"id\": \"a-3\", \"extra\": [1]}";
        let queries = queries_of(text).unwrap();
        assert_eq!(
            queries,
            vec![
                query("1", "heat flow"),
                query("2", "shock waves"),
                query("a-3", "q three")
            ]
        );
    }

    #[test]
    fn queries_errors_name_file_and_line() {
        let cases = [
            (
                "{\"id\": \"1\", \"text\": \"a\"}\n{\"id\": \"2\"\n",
                ":2: ",
                "EOF",
            ),
            (
                "{\"id\": \"1\", \"text\": \"a\"}\n\n{\"id\": \"2\"}\n",
                ":3: ",
                "missing field `text`",
            ),
            (
                "{\"id\": 1.5, \"text\": \"a\"}\n",
                ":1: ",
                "\"id\" must be a string or an integer",
            ),
            ("{\"id\": null, \"text\": \"a\"}\n", ":1: ", "not null"),
            (
                "{\"id\": \"\", \"text\": \"a\"}\n",
                ":1: ",
                "\"id\" is empty",
            ),
            ("{\"id\": \"1\", \"text\": 7}\n", ":1: ", "invalid type"),
            (
                "{\"id\": 1, \"text\": \"a\"}\n{\"id\": \"1\", \"text\": \"b\"}\n",
                ":2: ",
                "first on line 1",
            ),
        ];
        for (text, line, message) in cases {
            let err = format!("{:#}", queries_of(text).unwrap_err());
            assert!(err.contains(&format!("q.jsonl{line}")), "{err}");
            assert!(err.contains(message), "{err}");
        }
    }

    #[test]
    fn missing_files_are_named() {
        let err = read_queries(Path::new("/nonexistent/q.jsonl")).unwrap_err();
        assert!(
            format!("{err:#}").starts_with("queries file /nonexistent/q.jsonl cannot be read"),
            "{err:#}"
        );
        let err = read_qrels(Path::new("/nonexistent/qrels.tsv")).unwrap_err();
        assert!(
            format!("{err:#}").starts_with("qrels file /nonexistent/qrels.tsv cannot be read"),
            "{err:#}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused() {
        let err = read_qrels(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "qrels file /dev/zero is a character device, not a regular file"
        );
    }

    #[test]
    fn qrels_header_three_and_four_columns_comments_and_blanks() {
        let text = "query-id\tdoc-id\trelevance\n\
                    1\t184\t3\n\
                    # a comment with 3 words\n\
                    \n\
                    1 0 29 2.5\n\
                    2\t7\t0\n\
                    2\t8\t-1\n\
                    1\t184\t4\n";
        let qrels = qrels_of(text).unwrap();
        assert_eq!(qrels.len(), 2);
        assert_eq!(qrels["1"], judged(&[("184", 4.0), ("29", 2.5)]));
        assert_eq!(qrels["2"], judged(&[("7", 0.0), ("8", -1.0)]));
    }

    #[test]
    fn qrels_numeric_first_line_is_data() {
        assert_eq!(qrels_of("q1 d1 1\n").unwrap()["q1"], judged(&[("d1", 1.0)]));
    }

    #[test]
    fn qrels_follow_python_lines_and_whitespace() {
        // Lone '\r' ends a line; U+001F separates fields; '#' counts only in column 1.
        let qrels = qrels_of("a d1 1\rb\u{1f}d2\u{a0}2\r\n #c d3 1\n").unwrap();
        assert_eq!(qrels["a"], judged(&[("d1", 1.0)]));
        assert_eq!(qrels["b"], judged(&[("d2", 2.0)]));
        assert_eq!(qrels["#c"], judged(&[("d3", 1.0)]));
    }

    #[test]
    fn qrels_relevance_parses_like_python() {
        let cases = [
            ("1_0", 10.0),
            ("1_0.5e1_0", 1.05e11),
            ("+1", 1.0),
            (".5", 0.5),
            ("1.", 1.0),
        ];
        for (text, value) in cases {
            assert_eq!(parse_relevance(text), Some(value), "{text}");
        }
        assert_eq!(parse_relevance("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_relevance("+nan").unwrap().is_nan());
        for bad in ["1__0", "_1", "1_", "1_.5", "1e", "0x10", "yes", ""] {
            assert_eq!(parse_relevance(bad), None, "{bad}");
        }
    }

    #[test]
    fn qrels_errors_name_file_and_line() {
        let err = qrels_of("h1 h2 h3\nq d 1\nq d high\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("qrels.tsv:3: bad relevance value \"high\""),
            "{err}"
        );
        let err = qrels_of("q d 1\nq d\n").unwrap_err().to_string();
        assert!(
            err.ends_with("qrels.tsv:2: expected 3 or 4 columns, got 2"),
            "{err}"
        );
        let err = qrels_of("a b c d e\n").unwrap_err().to_string();
        assert!(
            err.ends_with("qrels.tsv:1: expected 3 or 4 columns, got 5"),
            "{err}"
        );
    }

    #[test]
    fn doc_id_mirrors_norm_docid() {
        let cases = [
            ("docs/4983.md", "4983"),
            ("4983", "4983"),
            ("wiki\\ops\\pool.md", "pool"),
            ("  docs/x.md\n", "x"),
            ("a/b.md.md", "b.md"),
            ("notes.markdown", "notes.markdown"),
            ("README.MD", "README.MD"),
            ("dir/", ""),
        ];
        for (path, id) in cases {
            assert_eq!(doc_id(path), id, "{path:?}");
        }
    }

    #[test]
    fn best_chunk_per_doc_keeps_max_and_orders_by_score_then_id() {
        let chunks = [
            ("docs/2.md", 0.5),
            ("docs/10.md", 0.9),
            ("docs/2.md", 0.9),
            ("docs/3.md", f64::NAN),
            ("docs/3.md", 0.1),
            ("docs/1.md", 0.2),
            ("docs/1.md", 0.1),
        ];
        let docs = best_chunk_per_doc(chunks);
        assert_eq!(
            docs,
            hits(&[("10", 0.9), ("2", 0.9), ("1", 0.2), ("3", 0.1)])
        );
    }

    #[test]
    fn trec_order_breaks_ties_by_reverse_docid_and_keeps_first_duplicate() {
        let run = hits(&[
            ("9", 1.0),
            ("10", 1.0),
            ("d1", 0.5),
            ("10", 0.2),
            ("d2", 0.5),
            ("x", 3.0),
        ]);
        let order: Vec<&str> = trec_order(&run).into_iter().map(|(d, _)| d).collect();
        assert_eq!(order, ["x", "9", "10", "d2", "d1"]);
        let zeros = hits(&[("a", -0.0), ("b", 0.0), ("c", f64::NAN), ("d", -1.0)]);
        let order: Vec<&str> = trec_order(&zeros).into_iter().map(|(d, _)| d).collect();
        assert_eq!(order, ["b", "a", "d", "c"]);
    }

    #[test]
    fn write_trec_sorts_ranks_and_keeps_full_precision() {
        let run = Run::from([
            (
                "2".to_owned(),
                hits(&[("5", 0.1 + 0.2), ("7", 1e-7), ("6", 0.1 + 0.2), ("5", 0.0)]),
            ),
            ("1".to_owned(), hits(&[("3", 2.0), ("4", 12.5)])),
            ("3".to_owned(), hits(&[("8", 1.0)])),
        ]);
        let text = trec_text(&run, &["2", "9", "1"], "memidx-sparse").unwrap();
        assert_eq!(
            text,
            "2 Q0 6 1 0.30000000000000004 memidx-sparse\n\
             2 Q0 5 2 0.30000000000000004 memidx-sparse\n\
             2 Q0 7 3 0.0000001 memidx-sparse\n\
             1 Q0 4 1 12.5 memidx-sparse\n\
             1 Q0 3 2 2 memidx-sparse\n"
        );
        let score: f64 = text
            .lines()
            .next()
            .unwrap()
            .split(' ')
            .nth(4)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(score, 0.1 + 0.2);
    }

    #[test]
    fn write_trec_refuses_what_would_read_back_differently() {
        let run_of =
            |qid: &str, doc: &str, score: f64| Run::from([(qid.to_owned(), hits(&[(doc, score)]))]);
        let cases = [
            (run_of("q 1", "d", 1.0), "t", "query id \"q 1\""),
            (run_of("q", "d", 1.0), "my tag", "run tag \"my tag\""),
            (run_of("q", "", 1.0), "t", "doc id \"\""),
            (
                run_of("q", "docs/4.md", 1.0),
                "t",
                "would be read back as \"4\"",
            ),
            (run_of("q", "4.md", 1.0), "t", "would be read back as \"4\""),
            (run_of("q", "d", f64::NAN), "t", "score NaN"),
        ];
        for (run, tag, message) in cases {
            let qid = run.keys().next().unwrap().clone();
            let err = format!("{:#}", trec_text(&run, &[&qid], tag).unwrap_err());
            assert!(err.contains(message), "{err}");
        }
    }

    #[test]
    fn held_out_splits_cranfield_ids_about_in_half() {
        let ids: Vec<String> = (1..=225).map(|i| i.to_string()).collect();
        let held_out = ids.iter().filter(|id| is_held_out(id)).count();
        assert!((90..=135).contains(&held_out), "{held_out} of 225 held out");
        // Pinned: the split must never change.
        assert_eq!(held_out, 104);
        let first_ten: Vec<&str> = ids[..10]
            .iter()
            .map(String::as_str)
            .filter(|id| is_held_out(id))
            .collect();
        assert_eq!(first_ten, ["4", "6"]);
    }
}
