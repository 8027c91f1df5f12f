//! The sparse list checked against an independent BM25: the `bm25` crate's
//! `Scorer`, fed exactly the same tokens (our analyzer, over each chunk's
//! sparse document with its fields) with the same k1 and b (memidx's
//! defaults). Both use Lucene's IDF `ln(1 + (N − n + 0.5)/(n + 0.5))` and the
//! `tf·(k1+1)/(tf + k1·(1 − b + b·dl/avgdl))` term weight.
//!
//! Both sides use exact document lengths (memidx stores each chunk's token
//! count), so scores agree to f32 rounding: 1e-4 relative is allowed, and the
//! rankings must agree.

use crate::common;

use bm25::{EmbedderBuilder, Scorer, Tokenizer};
use common::Corpus;
use memidx::filter::Filter;
use memidx::lists::sparse::Bm25Params;
use memidx::retriever::{ListSelection, Retriever, SearchParams};
use memidx::text::tokenize::Analyzer;

/// Our analyzer behind the oracle's tokenizer interface.
#[derive(Default)]
struct OurTokens(Analyzer);

impl Tokenizer for OurTokens {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        self.0.terms(input_text)
    }
}

#[test]
fn sparse_ranking_agrees_with_the_bm25_crate() {
    let corpus = Corpus::fixtures();
    corpus.index();
    let sparse_only = ListSelection {
        dense: false,
        ..ListSelection::default()
    };
    let retriever = Retriever::open(&corpus.path().join(".memidx"), &sparse_only).unwrap();
    let indexes = retriever.indexes();
    let docs: Vec<String> = (0..indexes.first().parts().len() as u32)
        .map(|ord| indexes.sparse_document(ord).unwrap())
        .collect();
    let params = Bm25Params::default();
    let doc_refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let embedder = EmbedderBuilder::<u64, OurTokens>::with_tokenizer_and_fit_to_corpus(
        OurTokens::default(),
        &doc_refs,
    )
    .k1(params.k1)
    .b(params.b)
    .build();
    let mut scorer = Scorer::<u32, u64>::new();
    for (ord, doc) in docs.iter().enumerate() {
        scorer.upsert(&(ord as u32), embedder.embed(doc));
    }

    let queries = [
        "INC-2023-Q4-011",
        "postgres connection pool exhausted",
        "getUserById slow query",
        "rollback of the payments gateway release",
        "kubernetes node drain pod disruption budget",
    ];
    for query in queries {
        let params = SearchParams {
            top_k: 10,
            window: Some(10),
            rrf_k: None,
            fusion: None,
            filter: Filter::default(),
            per_file: 0,
            here: None,
            keep_all: false,
        };
        let ours = retriever.search(query, &params).unwrap();
        let oracle = scorer.matches(&embedder.embed(query));
        assert!(!ours.results.is_empty(), "{query}");
        for (rank, fused) in ours.results.iter().enumerate() {
            let our_score = fused.contributions[0].unwrap().raw_score;
            let their_score = scorer.score(&fused.chunk, &embedder.embed(query)).unwrap();
            let relative = (our_score - their_score).abs() / their_score;
            assert!(
                relative < 1e-4,
                "{query} rank {}: memidx {our_score} vs bm25 crate {their_score}",
                rank + 1
            );
        }
        // Same top result, and the same top-3 set.
        assert_eq!(ours.results[0].chunk, oracle[0].id, "{query}");
        let mut our_top: Vec<u32> = ours.results.iter().take(3).map(|f| f.chunk).collect();
        let mut their_top: Vec<u32> = oracle.iter().take(3).map(|d| d.id).collect();
        our_top.sort_unstable();
        their_top.sort_unstable();
        assert_eq!(our_top, their_top, "{query}");
    }
}
