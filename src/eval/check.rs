//! What a qrels file says that `eval` cannot use: judged documents the
//! index does not hold, judged queries the queries file does not have.
//!
//! Both are scored silently otherwise (a missing document as a miss, a
//! missing query not at all), so a typo in an id, or ids written as paths
//! (`errors/ERR-4471` where the index's doc id is `ERR-4471`), make a
//! collection score low with exit 0. The check turns them into warnings
//! with counts and examples, or an error under `--strict`.

use std::collections::{BTreeSet, HashSet};

use super::collection::{EvalQuery, Qrels};

/// Examples named per kind of problem.
const EXAMPLES: usize = 3;

/// One line per kind of problem found in `qrels` against the `queries` and
/// the index's doc ids (`docs`); empty when every judgment is usable.
pub(super) fn unusable_judgments(
    qrels: &Qrels,
    queries: &[EvalQuery],
    docs: &[String],
) -> Vec<String> {
    let docs: HashSet<&str> = docs.iter().map(String::as_str).collect();
    let query_ids: HashSet<&str> = queries.iter().map(|q| q.id.as_str()).collect();
    let mut problems = Vec::new();
    let missing_queries: BTreeSet<&str> = qrels
        .keys()
        .map(String::as_str)
        .filter(|q| !query_ids.contains(q))
        .collect();
    if !missing_queries.is_empty() {
        let n = missing_queries.len();
        problems.push(format!(
            "{n} judged quer{} not in the queries file, e.g. {}; {} not scored",
            number(n, "y is", "ies are"),
            examples(&missing_queries),
            number(n, "it is", "they are"),
        ));
    }
    let missing_docs: BTreeSet<&str> = qrels
        .values()
        .flat_map(|judged| judged.iter())
        .filter(|(doc, relevance)| **relevance > 0.0 && !docs.contains(doc.as_str()))
        .map(|(doc, _)| doc.as_str())
        .collect();
    if !missing_docs.is_empty() {
        let hint = if missing_docs
            .iter()
            .any(|d| d.contains(['/', '\\']) || d.ends_with(".md"))
        {
            " (a doc id is a file name without .md: errors/ERR-4471.md is ERR-4471)"
        } else {
            ""
        };
        let n = missing_docs.len();
        problems.push(format!(
            "{n} relevant document{} not in the index, e.g. {}{hint}; {} as misses",
            number(n, " is", "s are"),
            examples(&missing_docs),
            number(n, "it counts", "they count"),
        ));
    }
    problems
}

/// `one` for a count of 1, else `many`.
fn number<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// The first few ids, quoted.
fn examples(ids: &BTreeSet<&str>) -> String {
    let mut named: Vec<String> = ids
        .iter()
        .take(EXAMPLES)
        .map(|id| format!("{id:?}"))
        .collect();
    if ids.len() > EXAMPLES {
        named.push("…".into());
    }
    named.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qrels(lines: &[(&str, &str, f64)]) -> Qrels {
        let mut qrels = Qrels::new();
        for (q, d, r) in lines {
            qrels
                .entry(q.to_string())
                .or_default()
                .insert(d.to_string(), *r);
        }
        qrels
    }

    fn queries(ids: &[&str]) -> Vec<EvalQuery> {
        ids.iter()
            .map(|id| EvalQuery {
                id: id.to_string(),
                text: "q".into(),
            })
            .collect()
    }

    fn docs(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn usable_judgments_raise_nothing() {
        let judged = qrels(&[("1", "a", 1.0), ("2", "b", 2.0), ("2", "gone", 0.0)]);
        assert!(
            unusable_judgments(&judged, &queries(&["1", "2", "3"]), &docs(&["a", "b"])).is_empty()
        );
    }

    #[test]
    fn missing_queries_and_documents_are_counted_with_examples() {
        let judged = qrels(&[
            ("1", "a", 1.0),
            ("7", "a", 1.0),
            ("1", "x1", 1.0),
            ("1", "x2", 1.0),
            ("1", "x3", 1.0),
            ("1", "x4", 1.0),
        ]);
        let problems = unusable_judgments(&judged, &queries(&["1"]), &docs(&["a"]));
        assert_eq!(
            problems,
            [
                "1 judged query is not in the queries file, e.g. \"7\"; it is not scored",
                "4 relevant documents are not in the index, e.g. \"x1\", \"x2\", \"x3\", …; they count as misses",
            ]
        );
    }

    #[test]
    fn path_style_ids_get_the_rule_for_doc_ids() {
        let judged = qrels(&[("1", "errors/ERR-4471", 1.0)]);
        let problems = unusable_judgments(&judged, &queries(&["1"]), &docs(&["ERR-4471"]));
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("a doc id is a file name without .md"),
            "{problems:?}"
        );
    }
}
