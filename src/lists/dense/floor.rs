//! The dense list's noise floor: how close meaningless text comes to an
//! index's chunks.
//!
//! A transformer gives every text some cosine with every other (its vectors
//! share a common direction), so the dense list ranks chunks for any query
//! at all, `xyzzyplugh` included, and a relative score makes the best of
//! them look like an answer. The floor says what such a cosine is worth in
//! this index under this model: the best cosine that [`PROBES`] random
//! strings of letters reach among its chunks (deterministic, the same for
//! every index). A query whose own best cosine, before feedback moves it,
//! stays below the floor is no closer to any chunk than noise is.
//!
//! Static models have no floor: one averages the vectors of a word's
//! pieces, so a random string that happens to hold a medical word piece
//! lands closer to a medical corpus than real words the model splits
//! (measured: docs/eval.md, *Knowing when nothing matches*).

use anyhow::Result;

use crate::embed::{Embedder, ModelKind};

/// Random strings measured per index: enough that the floor is the top of
/// what noise reaches rather than one draw, few enough to cost one batch of
/// short embeddings and as many window-1 searches.
pub const PROBES: usize = 96;

/// The `PROBES` probe strings: one to three words of five to eleven
/// lowercase letters, drawn from a fixed hash sequence.
pub fn probes() -> Vec<String> {
    (0..PROBES as u64).map(probe).collect()
}

fn probe(index: u64) -> String {
    let mut state = index;
    let mut draw = |below: u64| {
        state = xxhash_rust::xxh3::xxh3_64_with_seed(&state.to_le_bytes(), index);
        state % below
    };
    let words = 1 + draw(3);
    (0..words)
        .map(|_| {
            let letters = 5 + draw(7);
            (0..letters)
                .map(|_| char::from(b'a' + draw(26) as u8))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The noise floor of an index whose best cosine for a unit query vector
/// `best` gives (`None`: the index has no rows), under `embedder`; `None`
/// for a static model (see the module doc) or an index without rows.
pub fn noise_floor(
    embedder: &dyn Embedder,
    best: impl Fn(&[f32]) -> Result<Option<f32>>,
) -> Result<Option<f32>> {
    if embedder.kind() == ModelKind::Static {
        return Ok(None);
    }
    let vectors = embedder.embed(&probes())?;
    let mut floor: Option<f32> = None;
    for vector in vectors.chunks_exact(embedder.info().dim) {
        if vector.iter().all(|v| *v == 0.0) {
            continue;
        }
        if let Some(score) = best(vector)? {
            floor = Some(floor.map_or(score, |f| f.max(score)));
        }
    }
    Ok(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_fixed_random_words() {
        let probes = probes();
        assert_eq!(probes.len(), PROBES);
        assert_eq!(probes, super::probes(), "the same every time");
        let distinct: std::collections::HashSet<&String> = probes.iter().collect();
        assert_eq!(distinct.len(), PROBES);
        for probe in &probes {
            let words: Vec<&str> = probe.split(' ').collect();
            assert!((1..=3).contains(&words.len()), "{probe}");
            for word in words {
                assert!((5..=11).contains(&word.len()), "{probe}");
                assert!(word.bytes().all(|b| b.is_ascii_lowercase()), "{probe}");
            }
        }
    }
}
