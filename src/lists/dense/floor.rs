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
//! model says of a query is whether it knows a word of it: how much of a
//! word's weight its first piece carries (the lengths of the pieces'
//! vectors, which the model made small for frequent pieces: `outage`
//! carries 0.87 of `outages`, `clip` 0.64 of `clipum`, and a word the model
//! holds whole carries all of itself). The **word floor** is the share
//! that one made-up word in a hundred rises above (a thousand fixed ones,
//! random letters and pronounceable syllables); a query none of whose
//! words carries more is noise to the model, stop words aside.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock, PoisonError};

use anyhow::Result;

use crate::embed::{Embedder, ModelKind};
use crate::text::tokenize::is_stop_word;

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
    let mut draws = Draws::new(index);
    let words = 1 + draws.below(3);
    (0..words)
        .map(|_| random_word(&mut draws))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word of five to eleven random lowercase letters.
fn random_word(draws: &mut Draws) -> String {
    let letters = 5 + draws.below(7);
    (0..letters)
        .map(|_| char::from(b'a' + draws.below(26) as u8))
        .collect()
}

/// A fixed sequence of draws from a hash chain (the same on every machine
/// and in every release), one per probe.
struct Draws {
    state: u64,
    seed: u64,
}

impl Draws {
    fn new(seed: u64) -> Self {
        Self { state: seed, seed }
    }

    /// The next draw, below `bound`.
    fn below(&mut self, bound: usize) -> usize {
        self.state = xxhash_rust::xxh3::xxh3_64_with_seed(&self.state.to_le_bytes(), self.seed);
        (self.state % bound as u64) as usize
    }
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

/// A pronounceable made-up word: two or three syllables of English
/// spelling (an onset, a vowel, a coda that may be empty).
fn pronounceable_word(draws: &mut Draws) -> String {
    const ONSETS: [&str; 37] = [
        "b", "bl", "br", "c", "ch", "cl", "cr", "d", "dr", "f", "fl", "fr", "g", "gl", "gr", "h",
        "j", "k", "l", "m", "n", "p", "pl", "pr", "r", "s", "sh", "sk", "sl", "sp", "st", "t",
        "th", "tr", "v", "w", "z",
    ];
    const VOWELS: [&str; 11] = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oo", "ou", "y"];
    const CODAS: [&str; 10] = ["", "n", "r", "l", "s", "m", "t", "nd", "st", "ck"];
    let syllables = 2 + draws.below(2);
    (0..syllables)
        .map(|_| {
            let onset = ONSETS[draws.below(ONSETS.len())];
            let vowel = VOWELS[draws.below(VOWELS.len())];
            [onset, vowel, CODAS[draws.below(CODAS.len())]].concat()
        })
        .collect()
}

/// Made-up words the word floor is measured on: enough that its
/// percentile is the same for any draw, few enough to split in a
/// millisecond.
const MADE_UP_WORDS: usize = 1000;

/// The share of made-up words the word floor lies above: one in a
/// hundred gets past it.
const WORD_FLOOR_QUANTILE: f64 = 0.99;

/// The [`MADE_UP_WORDS`] made-up words, pronounceable (random letters
/// look less like words: the probes' reach a lower floor), drawn from a
/// fixed hash sequence as the probes are.
fn made_up_words() -> Vec<String> {
    (0..MADE_UP_WORDS as u64)
        .map(|index| pronounceable_word(&mut Draws::new(!index)))
        .collect()
}

/// The share of `word`'s piece weight its first piece carries under
/// `embedder` (1 for a word it holds whole, 0 for one it knows none of),
/// or `None` when the model cannot tell ([`Embedder::piece_weights`]).
pub fn first_piece_share(embedder: &dyn Embedder, word: &str) -> Option<f32> {
    let weights = embedder.piece_weights(word)?;
    let total: f32 = weights.iter().sum();
    Some(match weights.first() {
        Some(first) if total > 0.0 => first / total,
        _ => 0.0,
    })
}

/// The largest [`first_piece_share`] among `text`'s words (split at
/// anything but letters and digits, stop words left out: 0 when none is
/// left), or `None` when the model cannot tell.
pub fn best_word_share(embedder: &dyn Embedder, text: &str) -> Option<f32> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty() && !is_stop_word(&word.to_lowercase()))
        .try_fold(0.0f32, |best, word| {
            Some(best.max(first_piece_share(embedder, word)?))
        })
}

/// The word floor of a static model (see the module doc): the
/// [`WORD_FLOOR_QUANTILE`] of the made-up words' shares; `None` for a model
/// that cannot tell (transformers have a noise floor instead). A property
/// of the model alone, so it is measured once per model a process loads
/// (splitting the made-up words takes about 1.4 ms) and kept by its
/// fingerprint.
pub fn word_floor(embedder: &dyn Embedder) -> Option<f32> {
    static MEASURED: LazyLock<Mutex<HashMap<String, Option<f32>>>> = LazyLock::new(Mutex::default);
    if embedder.kind() != ModelKind::Static {
        return None;
    }
    let fingerprint = &embedder.info().fingerprint;
    let measured = || MEASURED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&floor) = measured().get(fingerprint) {
        return floor;
    }
    let floor = measure_word_floor(embedder);
    measured().insert(fingerprint.clone(), floor);
    floor
}

/// [`word_floor`], measured.
fn measure_word_floor(embedder: &dyn Embedder) -> Option<f32> {
    let mut shares = made_up_words()
        .iter()
        .map(|word| first_piece_share(embedder, word))
        .collect::<Option<Vec<f32>>>()?;
    shares.sort_by(f32::total_cmp);
    let at = (shares.len() as f64 * WORD_FLOOR_QUANTILE).ceil() as usize;
    shares.get(at.saturating_sub(1)).copied()
}

/// The largest share a word of `query` carries under `embedder`, and its
/// word floor, when the model has one: the floor kept in `known` (as an
/// index recorded it), else [`word_floor`], kept there.
pub fn word_standing(
    embedder: &dyn Embedder,
    query: &str,
    known: &OnceLock<Option<f32>>,
) -> Option<(f32, f32)> {
    let floor = (*known.get_or_init(|| word_floor(embedder)))?;
    Some((best_word_share(embedder, query)?, floor))
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
    fn made_up_words_are_fixed_random_and_pronounceable_words() {
        let words = made_up_words();
        assert_eq!(words.len(), MADE_UP_WORDS);
        assert_eq!(words, made_up_words(), "the same every time");
        for word in &words {
            assert!((3..=18).contains(&word.len()), "{word}");
            assert!(word.bytes().all(|b| b.is_ascii_lowercase()), "{word}");
        }
        // Pronounceable ones have a vowel in every syllable.
        let vowel = |c: char| "aeiouy".contains(c);
        for word in words.iter().skip(1).step_by(2) {
            assert!(
                !word.chars().any(|c| !vowel(c)) || word.chars().any(vowel),
                "{word}"
            );
            assert!(word.chars().filter(|&c| vowel(c)).count() >= 2, "{word}");
        }
    }

    #[test]
    fn the_bundled_model_knows_words_better_than_made_up_ones() {
        let model = crate::embed::static_model::StaticEmbedder::bundled();
        let floor = word_floor(model).unwrap();
        let share = |text| best_word_share(model, text).unwrap();
        // Held whole, or carried by a whole word with an inflection.
        for known in ["mesquite", "outage", "outages", "deploying", "sharding"] {
            assert!(share(known) > floor, "{known}: {} ≤ {floor}", share(known));
        }
        // Random letters, pronounceable nonsense, a word the model knows only
        // in fragments.
        for noise in [
            "xyzzyplugh",
            "qwxkjv blorptz",
            "clipum",
            "feastcet",
            "myelopathy",
        ] {
            assert!(share(noise) <= floor, "{noise}: {} > {floor}", share(noise));
        }
        // The best-known word counts; stop words do not.
        assert_eq!(share("xyzzyplugh, outage"), share("outage"));
        assert_eq!(share("the clipum"), share("clipum"));
        assert_eq!(share("!?"), 0.0);
        assert_eq!(first_piece_share(model, "mesquite"), Some(1.0));
    }
}
