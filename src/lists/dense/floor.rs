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
//! stays below the floor is no closer to any chunk than noise is. The
//! indexer measures it when it writes an index and records it in the
//! manifest, so a search embeds only its query; an index written before
//! that is measured by its first search that needs it.
//!
//! Static models have no cosine floor: one averages the vectors of a
//! word's pieces, so a random string that happens to hold a medical word
//! piece lands closer to a medical corpus than real words the model splits
//! (measured: docs/eval.md, *Knowing when nothing matches*). What such a
//! model says of a query is how well it knows its words: the **word
//! floor** is the fewest word pieces per character among the same probes'
//! words (how word-like random letters get under this model), and a query
//! none of whose words the model splits into fewer is noise to it.

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

/// The fewest word pieces per character among `text`'s words (split at
/// anything but letters and digits) under `embedder`; `None` when it
/// cannot count pieces or `text` has no word.
pub fn pieces_per_char(embedder: &dyn Embedder, text: &str) -> Option<f32> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| {
            let pieces = embedder.word_pieces(word)?;
            Some(pieces as f32 / word.chars().count() as f32)
        })
        .try_fold(None, |least: Option<f32>, ratio| {
            let ratio = ratio?;
            Some(Some(least.map_or(ratio, |l| l.min(ratio))))
        })?
}

/// The word floor of a static model (see the module doc): the fewest word
/// pieces per character among the probes' words; `None` for a model that
/// cannot count pieces (transformers have a noise floor instead).
pub fn word_floor(embedder: &dyn Embedder) -> Option<f32> {
    if embedder.kind() != ModelKind::Static {
        return None;
    }
    pieces_per_char(embedder, &probes().join(" "))
}

/// The fewest word pieces per character among `query`'s words and the
/// model's word floor, for a model that has one ([`word_floor`]).
pub fn word_standing(embedder: &dyn Embedder, query: &str) -> Option<(f32, f32)> {
    let floor = word_floor(embedder)?;
    Some((pieces_per_char(embedder, query)?, floor))
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

    #[test]
    fn the_bundled_model_knows_words_better_than_random_letters() {
        let model = crate::embed::static_model::StaticEmbedder::bundled();
        let floor = word_floor(model).unwrap();
        let pieces = |text| pieces_per_char(model, text).unwrap();
        assert!(pieces("mesquite") < floor && pieces("outage") < floor);
        assert!(pieces("xyzzyplugh") >= floor && pieces("qwxkjv blorptz") >= floor);
        // The best-known word counts.
        assert_eq!(pieces("xyzzyplugh, outage"), pieces("outage"));
        assert_eq!(pieces_per_char(model, "!?"), None);
    }
}
