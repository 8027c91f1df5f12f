//! `search --max-chars N`, the request's `max_chars` and `--no-text`:
//! results kept whole in rank order until the budget is spent, a first
//! result over the budget cut at a word boundary, and the response saying
//! so (`truncated`, `omitted`, one human line).

use crate::common::{Corpus, chunk_ids};

use serde_json::{Value, json};

const QUERY: &str = "INC-2023-Q4-011";

/// The top five for [`QUERY`] and their texts' lengths in characters.
const TOP: [(&str, usize); 5] = [
    ("incidents/2023/q4/billing-month-end-timeouts.md#1", 503),
    ("incidents/2023/q3/payments-webhook-backlog.md#1", 374),
    ("incidents/2024/q1/search-staging-empty-results.md#1", 440),
    ("index.md#4", 778),
    ("adr/0008-canary-deploys-with-argo-rollouts.md#9", 302),
];

fn text_chars(response: &Value) -> Vec<usize> {
    response["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap().chars().count())
        .collect()
}

#[test]
fn results_are_kept_whole_in_rank_order_until_the_budget_is_spent() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let all = corpus.search_json(QUERY, &["-k", "5"]);
    assert_eq!(chunk_ids(&all), TOP.map(|(id, _)| id));
    assert_eq!(text_chars(&all), TOP.map(|(_, n)| n));
    assert_eq!(
        (all["truncated"].clone(), all["omitted"].clone()),
        (json!(false), json!(0))
    );

    // 503 + 374 + 440 = 1317 fits 1500; the fourth (778) would need 2095.
    for budget in ["1317", "1500", "2094"] {
        let kept = corpus.search_json(QUERY, &["-k", "5", "--max-chars", budget]);
        assert_eq!(
            chunk_ids(&kept),
            TOP[..3].iter().map(|(id, _)| *id).collect::<Vec<_>>()
        );
        assert_eq!(text_chars(&kept), [503, 374, 440], "{budget}");
        assert_eq!(
            kept["results"],
            Value::Array(all["results"].as_array().unwrap()[..3].to_vec())
        );
        assert_eq!(
            (
                kept["truncated"].clone(),
                kept["omitted"].clone(),
                kept["total_retrieved"].clone()
            ),
            (json!(true), json!(2), json!(3)),
            "{budget}"
        );
    }
    let exact = corpus.search_json(QUERY, &["-k", "5", "--max-chars", "2553"]);
    assert_eq!(chunk_ids(&exact).len(), 5);
    assert_eq!(
        (exact["truncated"].clone(), exact["omitted"].clone()),
        (json!(false), json!(0))
    );

    // The same budget through the request shape.
    let output = corpus
        .memidx()
        .args(["search", "--request", "-"])
        .write_stdin(format!(
            r#"{{"search_text": "{QUERY}", "top_k": 5, "max_chars": 1000}}"#
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let requested: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(chunk_ids(&requested), [TOP[0].0, TOP[1].0]);
    assert_eq!(requested["omitted"], 3);
}

#[test]
fn a_first_result_over_the_budget_is_cut_at_a_word_boundary() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let cut = corpus.search_json(QUERY, &["-k", "5", "--max-chars", "100"]);
    assert_eq!(chunk_ids(&cut), [TOP[0].0]);
    let text = cut["results"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "## Summary\n\nIncident INC-2023-Q4-011. On 30 November 2023, between 23:12 and 00:47 UTC, the"
    );
    assert_eq!(text.chars().count(), 91);
    assert_eq!(
        (cut["truncated"].clone(), cut["omitted"].clone()),
        (json!(true), json!(4))
    );

    let human = corpus
        .memidx()
        .args(["search", QUERY, "-k", "5", "--max-chars", "100"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(human.stdout).unwrap();
    assert_eq!(
        stdout.lines().last(),
        Some("[4 more results left out by --max-chars; raise it, or 'memidx get ID' a result]")
    );
    assert_eq!(stdout.matches("left out").count(), 1);
}

#[test]
fn no_text_leaves_only_ids_scores_sources_lines_metadata_and_ranks() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let all = corpus.search_json(QUERY, &["-k", "5"]);
    let bare = corpus.search_json(QUERY, &["-k", "5", "--no-text"]);
    assert_eq!(chunk_ids(&bare), TOP.map(|(id, _)| id));
    for (with, without) in all["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(bare["results"].as_array().unwrap())
    {
        let mut expected = with.clone();
        expected.as_object_mut().unwrap().remove("text");
        assert_eq!(without, &expected);
    }
    assert_eq!(
        (bare["truncated"].clone(), bare["omitted"].clone()),
        (json!(false), json!(0))
    );
    let human = corpus
        .memidx()
        .args(["search", QUERY, "-k", "1", "--no-text"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(human.stdout).unwrap(),
        "1. 0.98718  incidents/2023/q4/billing-month-end-timeouts.md:13-20  2023-11-30  [dense #2, file #1, sparse #1]\n   Billing API gateway timeouts during month-end invoicing > Summary\n\n"
    );
}
