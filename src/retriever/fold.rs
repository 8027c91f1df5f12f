//! Folding: at most a few results from one file, the rest counted.
//!
//! A long file cut into many chunks — a runbook with six sections on one
//! topic, a log pasted as one enormous line — can fill a page of results
//! with near-duplicates of itself and push every other file out. A search
//! shows at most `per_file` chunks of one file (in fused order) and says
//! how many more of that file's chunks it passed over for that limit
//! before the page filled, so the page names more files and nothing is
//! hidden: the count says where to look, and `--per-file 0` shows them.
//! Scores and ranks are untouched; only which fused candidates fill the
//! `top_k` places changes.

use std::collections::HashMap;

use anyhow::Result;

use crate::fusion::Fused;
use crate::store::generation::ChunkOrd;

/// Results of one file a search shows unless asked otherwise.
pub const DEFAULT_PER_FILE: usize = 3;

/// Which fused candidates a search shows, after folding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folded {
    /// Positions in the fused ranking of the shown results, best first.
    pub shown: Vec<usize>,
    /// For each shown result: how many more of its file's candidates were
    /// passed over for the limit — counted on the file's last shown
    /// result, 0 on the others.
    pub more_in_file: Vec<usize>,
}

/// Picks up to `top_k` of `fused` (best first), at most `per_file` of
/// them from one file (0: no limit), and counts for each shown file how
/// many of its candidates were passed over for that limit before the page
/// filled (those `per_file` 0 would have shown in their place). `file_of`
/// names a chunk's file.
pub fn fold(
    fused: &[Fused],
    top_k: usize,
    per_file: usize,
    file_of: impl Fn(ChunkOrd) -> Result<u64>,
) -> Result<Folded> {
    if per_file == 0 {
        let shown: Vec<usize> = (0..fused.len().min(top_k)).collect();
        let more_in_file = vec![0; shown.len()];
        return Ok(Folded {
            shown,
            more_in_file,
        });
    }
    // Per file: results shown, the position (in `shown`) of its last one,
    // and candidates folded away.
    let mut files: HashMap<u64, (usize, usize, usize)> = HashMap::new();
    let mut shown = Vec::with_capacity(top_k.min(fused.len()));
    for (position, candidate) in fused.iter().enumerate() {
        if shown.len() == top_k {
            break;
        }
        let (count, last, folded) = files.entry(file_of(candidate.chunk)?).or_insert((0, 0, 0));
        if *count < per_file {
            *count += 1;
            *last = shown.len();
            shown.push(position);
        } else {
            *folded += 1;
        }
    }
    let mut more_in_file = vec![0; shown.len()];
    for (_, last, folded) in files.into_values() {
        more_in_file[last] += folded;
    }
    Ok(Folded {
        shown,
        more_in_file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fused candidates whose chunk ordinals are their files.
    fn ranking(files: &[u32]) -> Vec<Fused> {
        files
            .iter()
            .map(|&f| Fused {
                chunk: f,
                score: 0.0,
                contributions: Vec::new(),
                gated: false,
            })
            .collect()
    }

    fn folded(files: &[u32], top_k: usize, per_file: usize) -> Folded {
        fold(&ranking(files), top_k, per_file, |chunk| {
            Ok(u64::from(chunk))
        })
        .unwrap()
    }

    #[test]
    fn a_file_shows_at_most_per_file_results_and_counts_the_rest_on_its_last() {
        let f = folded(&[7, 7, 7, 7, 2, 7, 3], 10, 2);
        assert_eq!(f.shown, [0, 1, 4, 6]);
        assert_eq!(f.more_in_file, [0, 3, 0, 0]);
    }

    #[test]
    fn candidates_after_the_page_fills_are_not_counted() {
        // The page fills with 1, 1, 2; neither 9 nor the last 1 is counted.
        let f = folded(&[1, 1, 2, 9, 1], 3, 2);
        assert_eq!(f.shown, [0, 1, 2]);
        assert_eq!(f.more_in_file, [0, 0, 0]);
        // 1 is passed over for 2 before the page fills.
        let f = folded(&[1, 1, 2, 3], 2, 1);
        assert_eq!((f.shown, f.more_in_file), (vec![0, 2], vec![1, 0]));
    }

    #[test]
    fn zero_per_file_shows_the_fused_order_unfolded() {
        let f = folded(&[5, 5, 5, 5], 3, 0);
        assert_eq!((f.shown, f.more_in_file), (vec![0, 1, 2], vec![0, 0, 0]));
    }

    #[test]
    fn folding_never_reorders() {
        let f = folded(&[4, 1, 4, 1, 4, 1, 2], 5, 2);
        assert_eq!(f.shown, [0, 1, 2, 3, 6]);
        assert!(f.shown.is_sorted());
        assert_eq!(f.more_in_file, [0, 0, 1, 1, 0]);
    }
}
