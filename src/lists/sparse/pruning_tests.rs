//! MaxScore pruning gives exactly what scoring every posting gives: the same
//! chunks, ranks and `f32` scores, on every query of the shared evaluation
//! collections and on random queries over the fixtures, with and without a
//! filter, on a fresh index and on one updated in place (dead documents and
//! a second segment).

use std::fs;
use std::path::Path;

use super::*;
use crate::eval::collection::read_queries;
use crate::testing::{shared_eval, skip};

/// The texts of the markdown files directly in or under `dir`, by path.
fn texts(dir: &Path) -> Vec<String> {
    let mut paths: Vec<_> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| e.into_path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| fs::read_to_string(p).unwrap_or_default())
        .collect()
}

/// Writes a sparse list of `docs` (uid = position) into `dir`, from `base`
/// when given, with `ords` as the uid → ordinal map.
fn write(dir: &Path, base: Option<&Path>, added: &[(u32, &str)], ords: &[u32]) -> SparseStats {
    let mut writer = SparseWriter::create(dir, Analyzer::default(), base).unwrap();
    writer.add(added).unwrap();
    writer.finish(ords).unwrap().stats
}

/// The list in `dir`, pruning every query (however many its terms) or
/// none.
fn open(dir: &Path, stats: SparseStats, prune: bool) -> SparseList {
    let mut list = SparseList::open(
        dir,
        Analyzer::default(),
        Bm25Params::default(),
        stats,
        stats.docs,
        Checksums::new(),
    )
    .unwrap();
    list.pruned_terms = if prune { usize::MAX } else { 0 };
    list
}

/// Hits as (chunk, score bits): equal only if bit-identical.
fn bits(ranked: &RankedList) -> Vec<(u32, u32)> {
    ranked
        .hits
        .iter()
        .map(|h| (h.chunk, h.score.to_bits()))
        .collect()
}

fn hits(list: &SparseList, query: &str, window: usize, allow: &AllowSet) -> Vec<(u32, u32)> {
    bits(&list.search(query, window, allow).unwrap())
}

/// Compares the pruned and the exhaustive list on every query: at the
/// fused default's window and eval's run depth, and with every third
/// chunk allowed; returns the share of postings the pruned walk scored.
fn compare(pruned: &SparseList, exhaustive: &SparseList, chunks: usize, queries: &[String]) -> f64 {
    let third = AllowSet::Only((0..chunks).map(|i| i % 3 == 0).collect());
    let (scored, total) = queries
        .par_iter()
        .map(|query| {
            let (mut scored, mut total) = (0u64, 0u64);
            for (window, allow) in [(10, &AllowSet::All), (100, &AllowSet::All), (10, &third)] {
                let ranked = pruned.search(query, window, allow).unwrap();
                let want = hits(exhaustive, query, window, allow);
                assert_eq!(bits(&ranked), want, "{query:?} at window {window}");
                let counts = ranked.postings.unwrap_or(PostingCounts {
                    total: 0,
                    scored: 0,
                });
                scored += counts.scored;
                total += counts.total;
            }
            (scored, total)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    scored as f64 / total.max(1) as f64
}

/// Builds `docs` fresh, then updated: a third of them removed and ten
/// added as a new segment. Checks pruned against exhaustive on both, and the
/// updated index's scores against a fresh build of the same chunks.
fn check_collection(docs: &[String], queries: &[String]) {
    let tmp = tempfile::tempdir().unwrap();
    let all: Vec<(u32, &str)> = docs
        .iter()
        .enumerate()
        .map(|(i, t)| (i as u32, t.as_str()))
        .collect();
    let fresh_dir = tmp.path().join("fresh");
    let ords: Vec<u32> = (0..docs.len() as u32).collect();
    let stats = write(&fresh_dir, None, &all, &ords);
    let share = compare(
        &open(&fresh_dir, stats, true),
        &open(&fresh_dir, stats, false),
        docs.len(),
        queries,
    );
    assert!(share < 1.0, "pruning skipped no posting");

    // Update in place: every third document dies, ten documents come back
    // under new uids in a second segment; live chunks are renumbered.
    let (base, extra) = all.split_at(all.len() - 10);
    let base_ords: Vec<u32> = (0..base.len() as u32).collect();
    let base_dir = tmp.path().join("base");
    write(&base_dir, None, base, &base_ords);
    let added: Vec<(u32, &str)> = extra.iter().map(|&(uid, text)| (uid, text)).collect();
    let mut next = 0;
    let mut live_texts = Vec::new();
    let updated_ords: Vec<u32> = all
        .iter()
        .map(|&(uid, text)| {
            if uid % 3 == 1 && (uid as usize) < base.len() {
                DEAD
            } else {
                live_texts.push(text);
                next += 1;
                next - 1
            }
        })
        .collect();
    let updated_dir = tmp.path().join("updated");
    let updated = write(&updated_dir, Some(&base_dir), &added, &updated_ords);
    let pruned = open(&updated_dir, updated, true);
    assert!(pruned.segments.iter().any(|s| !s.dead.is_empty()));
    // Every fourth query: the walk over dead documents and two segments is
    // the same code whatever the query.
    let some: Vec<String> = queries.iter().step_by(4).cloned().collect();
    let exhaustive = open(&updated_dir, updated, false);
    compare(&pruned, &exhaustive, live_texts.len(), &some);

    let rebuilt: Vec<(u32, &str)> = live_texts
        .iter()
        .enumerate()
        .map(|(i, t)| (i as u32, *t))
        .collect();
    let rebuilt_dir = tmp.path().join("rebuilt");
    let rebuilt_ords: Vec<u32> = (0..rebuilt.len() as u32).collect();
    let rebuilt_stats = write(&rebuilt_dir, None, &rebuilt, &rebuilt_ords);
    let rebuilt = open(&rebuilt_dir, rebuilt_stats, true);
    for query in queries.iter().take(50) {
        assert_eq!(
            hits(&pruned, query, 10, &AllowSet::All),
            hits(&rebuilt, query, 10, &AllowSet::All),
            "{query:?}"
        );
    }

    // Every hit's text gives the score the updated list gave it, so a
    // search can check its results (`check_hits`) with no false alarm; the
    // same text with the query added does not.
    for query in queries.iter().take(50) {
        for hit in pruned.search(query, 10, &AllowSet::All).unwrap().hits {
            let text = live_texts[hit.chunk as usize];
            pruned.check_hits(query, &[(text, hit.score)]).unwrap();
            let altered = format!("{text}\n{query}");
            let err = pruned
                .check_hits(query, &[(text, hit.score), (&altered, hit.score)])
                .unwrap_err()
                .to_string();
            assert!(err.contains("where its text gives"), "{err}");
        }
    }
}

#[test]
fn pruning_matches_scoring_every_posting_on_the_shared_collections() {
    let Some(eval) = shared_eval() else {
        return skip("../shared/eval is missing");
    };
    for name in ["cranfield", "arguana", "nfcorpus"] {
        let dir = eval.join(name);
        let queries: Vec<String> = read_queries(&dir.join("queries.jsonl"))
            .unwrap()
            .into_iter()
            .map(|q| q.text)
            .collect();
        check_collection(&texts(&dir.join("docs")), &queries);
    }
}

#[test]
fn pruning_matches_scoring_every_posting_on_random_fixture_queries() {
    let docs = texts(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"));
    let mut vocabulary: Vec<String> = docs
        .iter()
        .flat_map(|d| Analyzer::default().terms(d))
        .collect();
    vocabulary.sort();
    vocabulary.dedup();
    // A fixed linear congruential sequence: the same queries every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    };
    let queries: Vec<String> = (0..300)
        .map(|_| {
            let words = 1 + next(8);
            (0..words)
                .map(|_| vocabulary[next(vocabulary.len())].clone())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    check_collection(&docs, &queries);
}

#[test]
fn both_walks_name_an_ordinal_past_the_chunk_table() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = [(0, "alpha beta"), (1, "beta gamma"), (2, "gamma delta")];
    // Three live chunks, the last one's ordinal past them: a damaged map.
    let stats = write(tmp.path(), None, &docs, &[0, 1, 7]);
    for prune in [true, false] {
        let list = open(tmp.path(), stats, prune);
        // A query that never reaches the bad ordinal is answered…
        assert_eq!(hits(&list, "alpha", 10, &AllowSet::All).len(), 1);
        // …one that does names the file.
        let err = list.search("delta", 10, &AllowSet::All).unwrap_err();
        assert!(format!("{err:#}").contains(ORDS_FILE), "{err:#}");
        assert!(format!("{err:#}").contains("past the end"), "{err:#}");
    }
}
