//! Property tests (issue 8's fuzzing targets, as proptest suites that run in
//! CI): weighted RRF fusion, the tokenizer, the markdown chunker, the front
//! matter parser and the request parser. Case counts are modest so the suite
//! takes seconds; raise `PROPTEST_CASES` to search longer.

use std::collections::HashMap;

use memidx::corpus::chunk::{ChunkOptions, parse_file};
use memidx::corpus::front_matter::parse_front_matter;
use memidx::fusion::{Fused, Fusion, FusionMethod, Ranking, fuse};
use memidx::lists::ListHit;
use memidx::request::SearchRequest;
use memidx::text::tokenize::Analyzer;
use proptest::prelude::*;

/// Reciprocal Rank Fusion with constant `rrf_k`: the properties below are RRF's.
fn rrf(rrf_k: f64) -> Fusion {
    Fusion {
        method: FusionMethod::Rrf,
        rrf_k,
        own: true,
    }
}

/// `cases` cases per property, or `PROPTEST_CASES` when set.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        max_shrink_iters: 2_000,
        // Found cases are kept as plain tests below, not in a regressions file.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// Fusion
// ---------------------------------------------------------------------------

/// One ranked list: distinct chunks in a random order, with raw scores.
fn ranked_list() -> impl Strategy<Value = Vec<ListHit>> {
    prop::collection::hash_set(0u32..120, 0..40)
        .prop_map(|set| set.into_iter().collect::<Vec<_>>())
        .prop_shuffle()
        .prop_flat_map(|chunks| {
            let n = chunks.len();
            (Just(chunks), prop::collection::vec(-10.0f32..10.0, n))
        })
        .prop_map(|(chunks, scores)| {
            chunks
                .into_iter()
                .zip(scores)
                .map(|(chunk, score)| ListHit { chunk, score })
                .collect()
        })
}

/// RRF constants, including 0 (ranks start at 1, so no division by zero).
fn rrf_k() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), Just(60.0), 0.0f64..1_000.0]
}

fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), Just(0.3), 0.0f64..5.0]
}

fn weighted<'a>(lists: &'a [Vec<ListHit>], weights: &[f64]) -> Vec<Ranking<'a>> {
    lists
        .iter()
        .zip(weights)
        .map(|(hits, &weight)| Ranking {
            hits,
            weight,
            exact: false,
            tied: false,
        })
        .collect()
}

fn score_map(fused: &[Fused]) -> HashMap<u32, f64> {
    fused.iter().map(|f| (f.chunk, f.score)).collect()
}

proptest! {
    #![proptest_config(config(256))]

    /// Each score is the sum of its contributions, each contribution is
    /// w/(k+rank) at the chunk's rank in that list, every listed chunk
    /// appears exactly once, and results are sorted by score, best first.
    #[test]
    fn fused_scores_are_sums_of_rank_contributions(
        lists in prop::collection::vec(ranked_list(), 0..5),
        weights in prop::collection::vec(weight(), 5),
        k in rrf_k(),
    ) {
        let input = weighted(&lists, &weights);
        let fused = fuse(&input, rrf(k));

        let mut expected_chunks: Vec<u32> = lists.iter().flatten().map(|h| h.chunk).collect();
        expected_chunks.sort_unstable();
        expected_chunks.dedup();
        let mut got_chunks: Vec<u32> = fused.iter().map(|f| f.chunk).collect();
        got_chunks.sort_unstable();
        prop_assert_eq!(&got_chunks, &expected_chunks, "every listed chunk exactly once");

        for result in &fused {
            prop_assert_eq!(result.contributions.len(), lists.len());
            let mut sum = 0.0;
            for (index, contribution) in result.contributions.iter().enumerate() {
                let position = lists[index].iter().position(|h| h.chunk == result.chunk);
                match (contribution, position) {
                    (None, None) => {}
                    (Some(c), Some(position)) => {
                        prop_assert_eq!(c.rank, position + 1);
                        prop_assert_eq!(c.raw_score, lists[index][position].score);
                        prop_assert_eq!(c.value, weights[index] / (k + c.rank as f64));
                        sum += c.value;
                    }
                    (c, p) => prop_assert!(false, "list {} contribution {:?} but position {:?}", index, c, p),
                }
            }
            prop_assert_eq!(result.score, sum, "score is the left-to-right sum");
        }
        for pair in fused.windows(2) {
            prop_assert!(pair[0].score >= pair[1].score, "not sorted: {} then {}", pair[0].score, pair[1].score);
        }
    }

    /// A better rank never gives a smaller contribution, and with a single
    /// positively weighted list the fused order is the list's order.
    #[test]
    fn contributions_are_monotone_in_rank(
        lists in prop::collection::vec(ranked_list(), 1..4),
        weights in prop::collection::vec(weight(), 4),
        k in rrf_k(),
    ) {
        let fused = fuse(&weighted(&lists, &weights), rrf(k));
        for index in 0..lists.len() {
            let mut by_rank: Vec<(usize, f64)> = fused
                .iter()
                .filter_map(|f| f.contributions[index].map(|c| (c.rank, c.value)))
                .collect();
            by_rank.sort_by_key(|&(rank, _)| rank);
            for pair in by_rank.windows(2) {
                prop_assert!(
                    pair[0].1 >= pair[1].1,
                    "list {}: rank {} gives {} < rank {} gives {}",
                    index, pair[0].0, pair[0].1, pair[1].0, pair[1].1
                );
            }
        }
        if weights[0] > 0.0 {
            let single = fuse(&weighted(&lists[..1], &weights[..1]), rrf(k));
            let order: Vec<u32> = single.iter().map(|f| f.chunk).collect();
            let listed: Vec<u32> = lists[0].iter().map(|h| h.chunk).collect();
            prop_assert_eq!(order, listed);
        }
    }

    /// With equal weights, the order of two input lists changes nothing:
    /// the same scores exactly and the same result order.
    #[test]
    fn two_equal_weight_lists_are_order_invariant(
        a in ranked_list(),
        b in ranked_list(),
        w in weight(),
        k in rrf_k(),
    ) {
        let forward = fuse(&weighted(&[a.clone(), b.clone()], &[w, w]), rrf(k));
        let backward = fuse(&weighted(&[b, a], &[w, w]), rrf(k));
        prop_assert_eq!(score_map(&forward), score_map(&backward));
        let order = |fused: &[Fused]| fused.iter().map(|f| f.chunk).collect::<Vec<_>>();
        prop_assert_eq!(order(&forward), order(&backward));
    }

    /// With equal weights, any permutation of 3–5 lists gives the same
    /// scores up to floating-point rounding of the sum.
    #[test]
    fn many_equal_weight_lists_are_permutation_invariant(
        (lists, permuted) in prop::collection::vec(ranked_list(), 3..6)
            .prop_flat_map(|lists| (Just(lists.clone()), Just(lists).prop_shuffle())),
        w in weight(),
        k in rrf_k(),
    ) {
        let weights = vec![w; lists.len()];
        let original = score_map(&fuse(&weighted(&lists, &weights), rrf(k)));
        let shuffled = score_map(&fuse(&weighted(&permuted, &weights), rrf(k)));
        prop_assert_eq!(original.len(), shuffled.len());
        for (chunk, score) in &original {
            let other = shuffled[chunk];
            prop_assert!(
                (score - other).abs() <= 1e-12 * score.abs().max(1e-300),
                "chunk {}: {} vs {}", chunk, score, other
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------

/// Pieces that stress the tokenizer: identifiers, joiners, case changes,
/// CJK, combining marks, emoji with joiners, scripts without spaces.
fn token_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "\\PC{0,12}",
        2 => "[a-zA-Z0-9]{1,10}",
        1 => Just("-".to_string()),
        1 => Just("_".to_string()),
        1 => Just(".".to_string()),
        1 => Just("/".to_string()),
        1 => Just(":".to_string()),
        1 => Just("@".to_string()),
        1 => Just("'".to_string()),
        1 => Just("\u{2019}".to_string()),
        1 => Just(" ".to_string()),
        1 => Just("\u{200D}".to_string()),
        1 => Just("\u{0301}".to_string()),
        1 => Just("\u{FE0F}\u{20E3}".to_string()),
        1 => Just("👩‍👩‍👧".to_string()),
        1 => Just("東京都".to_string()),
        1 => Just("ภาษาไทย".to_string()),
        1 => Just("getUserById".to_string()),
        1 => Just("INC-2023-Q4-011".to_string()),
        1 => Just("İSTANBUL".to_string()),
        1 => (1usize..200).prop_map(|n| "a-".repeat(n)),
        1 => (1usize..200).prop_map(|n| "\u{200D}".repeat(n)),
        1 => (60usize..140).prop_map(|n| "x".repeat(n)),
        1 => (1usize..40).prop_map(|n| "ab_".repeat(n)),
    ]
}

fn tokenizer_input() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(token_piece(), 0..40).prop_map(|pieces| pieces.concat()),
    ]
}

proptest! {
    #![proptest_config(config(512))]

    /// Never panics; every term is non-empty and at most 128 bytes (64
    /// without the Unicode rules); offsets are ordered char boundaries inside
    /// the input; positions never go back.
    #[test]
    fn tokenizer_terms_are_bounded_and_offsets_are_char_boundaries(text in tokenizer_input()) {
        for (analyzer, bound) in [
            (Analyzer::default(), 128),
            (Analyzer { stem: false, stop_words: false, ..Analyzer::default() }, 128),
            (Analyzer { stem: true, stop_words: true, normalize: false, fold: false, elisions: false }, 64),
        ] {
            let tokens = analyzer.tokenize(&text);
            let mut last_position = 0;
            for token in &tokens {
                prop_assert!(!token.text.is_empty(), "empty term in {:?}", tokens);
                prop_assert!(token.text.len() <= bound, "term of {} bytes: {:?}", token.text.len(), token.text);
                prop_assert!(token.offset_from <= token.offset_to && token.offset_to <= text.len(),
                    "offsets {}..{} outside 0..{}", token.offset_from, token.offset_to, text.len());
                prop_assert!(text.is_char_boundary(token.offset_from) && text.is_char_boundary(token.offset_to),
                    "offsets {}..{} are not char boundaries", token.offset_from, token.offset_to);
                prop_assert!(token.position >= last_position, "positions go back: {:?}", tokens);
                last_position = token.position;
            }
        }
    }
}

/// Cases the properties above found, kept as plain regression tests.
#[test]
fn found_tokenizer_cases() {
    for text in [
        // A CJK character whose grapheme cluster is extended by 20 zero-width
        // joiners: its bigram was a 66-byte term.
        format!("東京都{}", "\u{200D}".repeat(20)),
        format!("東{}京", "\u{0301}".repeat(40)),
        format!("a{}b", "\u{200D}".repeat(100)),
    ] {
        for token in Analyzer::default().tokenize(&text) {
            assert!(
                token.text.len() <= 128,
                "{text:?}: term of {} bytes",
                token.text.len()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Markdown chunker and front matter
// ---------------------------------------------------------------------------

/// One line of markdown-ish source from a small grammar.
fn markdown_line() -> impl Strategy<Value = String> {
    let text = "[a-zA-Z0-9 ,.!?*_`#>|:-]{0,40}";
    prop_oneof![
        4 => text.prop_map(String::from),
        2 => Just(String::new()),
        2 => (1usize..8, text).prop_map(|(n, t)| format!("{} {t}", "#".repeat(n))),
        1 => (0usize..12, text).prop_map(|(indent, t)| format!("{}- {t}", " ".repeat(indent))),
        1 => (0usize..6, text).prop_map(|(indent, t)| format!("{}1. {t}", "  ".repeat(indent))),
        1 => (1usize..300).prop_map(|n| format!("{}deep", "- ".repeat(n))),
        1 => (1usize..300, text).prop_map(|(n, t)| format!("{} {t}", ">".repeat(n))),
        1 => prop_oneof![Just("```"), Just("```rust"), Just("~~~"), Just("    indented code")]
            .prop_map(String::from),
        1 => (1usize..30).prop_map(|n| format!("|{}", "a|".repeat(n))),
        1 => (1usize..30).prop_map(|n| format!("|{}", "---|".repeat(n))),
        1 => prop_oneof![Just("---"), Just("..."), Just("==="), Just("***"), Just("title: x"),
                         Just("tags: [a, b]"), Just("a: &a [1, 2]"), Just("b: *a"), Just("- - -")]
            .prop_map(String::from),
        1 => prop_oneof![Just("<div>"), Just("</div>"), Just("<!-- c -->"), Just("[^1]: note"),
                         Just("[link]: http://x"), Just("\t\ttabbed")]
            .prop_map(String::from),
        1 => "\\PC{0,30}",
        1 => (100usize..3_000).prop_map(|n| "word ".repeat(n)),
        1 => (100usize..12_000).prop_map(|n| "y".repeat(n)),
    ]
}

/// A markdown-ish document: maybe front matter, then lines joined by \n,
/// \r\n or \r, maybe with a trailing newline or a byte-order mark.
fn markdown_document() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(markdown_line(), 0..60),
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        any::<bool>(),
    )
        .prop_map(|(bom, front_matter, lines, eol, trailing)| {
            let mut doc = String::new();
            if bom {
                doc.push('\u{FEFF}');
            }
            if front_matter {
                doc.push_str("---");
                doc.push_str(eol);
            }
            doc.push_str(&lines.join(eol));
            if trailing {
                doc.push_str(eol);
            }
            doc
        })
}

/// Lines as the chunker counts them: `\n`, `\r\n` and a lone `\r` end a
/// line, and text after the last line ending is one more line.
fn line_count(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut count = 0;
    let mut i = 0;
    let mut line_has_content = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                count += 1;
                i += 2;
                line_has_content = false;
                continue;
            }
            b'\n' | b'\r' => {
                count += 1;
                line_has_content = false;
            }
            _ => line_has_content = true,
        }
        i += 1;
    }
    count + usize::from(line_has_content)
}

fn check_chunks(source: &str, opts: &ChunkOptions) -> Result<(), TestCaseError> {
    let parsed = parse_file(source, opts);
    let lines = line_count(source);
    let mut previous = (1, 1);
    for chunk in &parsed.chunks {
        let (start, end) = chunk.lines;
        prop_assert!(
            1 <= start && start <= end && end <= lines,
            "chunk lines {:?} outside 1..={}",
            chunk.lines,
            lines
        );
        prop_assert!(
            start >= previous.0 && end >= previous.1,
            "chunk {:?} comes before the previous chunk {:?}",
            chunk.lines,
            previous
        );
        previous = chunk.lines;
    }
    let front_matter = &parsed.front_matter;
    prop_assert!(front_matter.body_start <= source.len());
    prop_assert!(source.is_char_boundary(front_matter.body_start));
    prop_assert!(front_matter.body_first_line >= 1);
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// The chunker never panics; chunks lie within the file's lines, start
    /// no later than they end, and come in document order.
    #[test]
    fn chunks_stay_within_the_file_and_in_order(doc in markdown_document()) {
        check_chunks(&doc, &ChunkOptions::default())?;
    }

    /// The same with small budgets, which force block cutting and merging.
    #[test]
    fn small_budgets_keep_chunks_in_range(
        doc in markdown_document(),
        budget in 0usize..64,
        min in 0usize..32,
        hard in 0usize..128,
    ) {
        let opts = ChunkOptions { budget_tokens: budget, min_tokens: min, hard_limit_tokens: hard };
        check_chunks(&doc, &opts)?;
    }

    /// Arbitrary strings never panic the chunker either.
    #[test]
    fn arbitrary_text_never_panics_the_chunker(text in any::<String>()) {
        check_chunks(&text, &ChunkOptions::default())?;
    }
}

/// Front matter blocks: YAML-ish lines between fences.
fn front_matter_source() -> impl Strategy<Value = String> {
    let yaml_line = prop_oneof![
        "[a-z]{1,8}: [a-zA-Z0-9 ]{0,20}",
        "[a-z]{1,8}: \\[[a-z, ]{0,20}\\]",
        "  - [a-z]{0,10}",
        "[a-z]{1,4}: &[a-z]{1,3} \\[[a-z0-9, *]{0,20}\\]",
        "[a-z]{1,4}: \\*[a-z]{1,3}",
        "[a-z]{1,4}: \\{[a-z: ,{}]{0,20}",
        "\\PC{0,30}",
        Just("---".to_string()),
        Just("...".to_string()),
        Just("? complex".to_string()),
        Just("!!binary aGVsbG8=".to_string()),
        Just("x: .nan".to_string()),
        Just("y: 0x1F".to_string()),
        (1usize..200).prop_map(|n| format!("deep: {}", "[".repeat(n))),
    ];
    (
        prop::collection::vec(yaml_line, 0..20),
        prop_oneof![Just("---"), Just("..."), Just("")],
        "\\PC{0,40}",
    )
        .prop_map(|(lines, close, body)| format!("---\n{}\n{close}\n{body}", lines.join("\n")))
}

/// A billion-laughs alias bomb with `levels` levels of 9 references each.
fn alias_bomb(levels: usize) -> String {
    let mut yaml = String::from("---\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..=levels {
        let refs = vec![format!("*l{}", level - 1); 9].join(", ");
        yaml.push_str(&format!("l{level}: &l{level} [{refs}]\n"));
    }
    yaml.push_str("---\n# body\n");
    yaml
}

proptest! {
    #![proptest_config(config(256))]

    /// The front matter parser never panics, and what it reports points
    /// inside the source.
    #[test]
    fn front_matter_never_panics(source in prop_oneof![front_matter_source(), any::<String>()]) {
        let front_matter = parse_front_matter(&source);
        prop_assert!(front_matter.body_start <= source.len());
        prop_assert!(source.is_char_boundary(front_matter.body_start));
        prop_assert!(front_matter.body_first_line >= 1);
    }

    /// Alias bombs of any depth are cut off quickly with an error.
    #[test]
    fn alias_bombs_are_bounded(levels in 3usize..12) {
        let source = alias_bomb(levels);
        let started = std::time::Instant::now();
        let front_matter = parse_front_matter(&source);
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(5));
        if levels >= 6 {
            prop_assert!(front_matter.error.is_some(), "9^{} values accepted", levels + 1);
        }
    }
}

// ---------------------------------------------------------------------------
// Request parser
// ---------------------------------------------------------------------------

const VALID_REQUESTS: [&str; 4] = [
    r#"{"query_id": "mem_req_99214", "search_text": "HTTP 504 gateway timeout postgres connection pool", "top_k": 5, "hybrid_params": {"dense_weight": 0.6, "sparse_weight": 0.4, "rrf_k_constant": 60}, "metadata_filter": {"environment": "production", "service": "billing-service"}}"#,
    r#"{"search_text": "x"}"#,
    r#"{"search_text": "pool", "metadata_filter": {"service": ["a", "b"]}}"#,
    r#"{"search_text": "pool", "top_k": 10000, "hybrid_params": {}}"#,
];

/// A mutation of a valid request: byte edits and splices of JSON fragments.
#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Insert(usize, String),
    Replace(usize, u8),
    Truncate(usize),
    Nest(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let fragment = prop_oneof![
        Just("{"),
        Just("}"),
        Just("["),
        Just("]"),
        Just("\""),
        Just(","),
        Just(":"),
        Just("NaN"),
        Just("-1"),
        Just("1e999"),
        Just("null"),
        Just("\\u0000"),
        Just("\\ud800"),
        Just("18446744073709551616"),
        Just("\"top_k\": 0,"),
        Just("\"x\": 1,"),
    ]
    .prop_map(String::from);
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), fragment).prop_map(|(at, s)| Mutation::Insert(at, s)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Replace(at, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1usize..3_000).prop_map(|(at, depth)| Mutation::Nest(at, depth)),
    ]
}

fn mutate(source: &str, mutations: &[Mutation]) -> String {
    let mut bytes = source.as_bytes().to_vec();
    for mutation in mutations {
        let len = bytes.len().max(1);
        match mutation {
            Mutation::Delete(at) if !bytes.is_empty() => {
                bytes.remove(at % bytes.len());
            }
            Mutation::Delete(_) => {}
            Mutation::Insert(at, text) => {
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, text.bytes());
            }
            Mutation::Replace(at, byte) if !bytes.is_empty() => {
                let at = at % bytes.len();
                bytes[at] = *byte;
            }
            Mutation::Replace(..) => {}
            Mutation::Truncate(at) => bytes.truncate(at % len),
            Mutation::Nest(at, depth) => {
                let at = at % (bytes.len() + 1);
                let nested = format!("{}{}", "[".repeat(*depth), "]".repeat(*depth));
                bytes.splice(at..at, nested.bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(config(512))]

    /// Arbitrary strings never panic the request parser.
    #[test]
    fn request_parser_never_panics_on_arbitrary_text(text in any::<String>()) {
        let _ = SearchRequest::parse(&text);
    }

    /// Mutated valid requests never panic it, and an error names the
    /// request in one line.
    #[test]
    fn request_parser_never_panics_on_mutated_requests(
        base in 0..VALID_REQUESTS.len(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let text = mutate(VALID_REQUESTS[base], &mutations);
        if let Err(err) = SearchRequest::parse(&text) {
            let message = err.to_string();
            prop_assert!(message.contains("request"), "{}", message);
            prop_assert!(!message.contains('\n'), "multi-line error: {:?}", message);
        }
    }
}

/// Cases the request properties found, kept as plain regression tests.
#[test]
fn found_request_cases() {
    // An unknown field whose name holds an escaped newline was echoed raw,
    // so the error (and memidx's stderr) took two lines.
    for text in [
        r#"{"search_text": "x", "a\nb": 1}"#,
        r#"{"search_text": "x", "hybrid_params": {"a\r\nb": 1}}"#,
    ] {
        let err = SearchRequest::parse(text).unwrap_err().to_string();
        assert!(
            !err.contains(['\n', '\r']),
            "multi-line error for {text}: {err:?}"
        );
    }
}

#[test]
fn valid_requests_parse() {
    for text in VALID_REQUESTS {
        SearchRequest::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

#[test]
fn deeply_nested_requests_are_errors_not_stack_overflows() {
    let depth = 100_000;
    for text in [
        format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
        format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth)),
        format!(
            r#"{{"search_text": "x", "metadata_filter": {{"k": {}{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        ),
    ] {
        assert!(SearchRequest::parse(&text).is_err());
    }
}
