//! Each embedder reproduces the vectors of the Python library that defines
//! it: the bundled static model against model2vec (reference written by
//! `scripts/distill_model.py`), all-MiniLM-L6-v2 against sentence-transformers
//! (`scripts/minilm_reference.py`).

use crate::common;

use common::assert_matches_reference;
use memidx::embed::static_model::StaticEmbedder;

#[test]
fn the_bundled_model_matches_model2vec() {
    let compared = assert_matches_reference(StaticEmbedder::bundled(), "reference.json");
    assert!(compared >= 8);
}

#[cfg(feature = "bert")]
#[test]
fn minilm_matches_sentence_transformers() {
    let Some(dir) = common::minilm_dir() else {
        return;
    };
    let embedder = memidx::embed::load(Some(&dir)).unwrap();
    assert!(embedder.info().fingerprint.starts_with("xxh3:"));
    assert!(assert_matches_reference(embedder, "minilm-reference.json") >= 6);
}

#[cfg(feature = "bert")]
#[test]
fn minilm_embeds_the_same_with_its_word_embeddings_mapped_or_copied() {
    use memidx::embed::bert::BertEmbedder;
    use memidx::embed::{Embedder, Residency};
    let Some(dir) = common::minilm_dir() else {
        return;
    };
    let mapped = BertEmbedder::load(&dir, Residency::Mapped, None).unwrap();
    let copied = BertEmbedder::load(&dir, Residency::Copied, None).unwrap();
    assert!(assert_matches_reference(&mapped, "minilm-reference.json") >= 6);
    let texts = [
        "disk full error on the build agent",
        "INC-2023-Q4-011 billing month-end timeouts",
        "",
    ]
    .map(String::from);
    let (a, b) = (mapped.embed(&texts).unwrap(), copied.embed(&texts).unwrap());
    assert_eq!(a.len(), 3 * 384);
    // Bit for bit: the two hold the same decoded floats.
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_eq!(mapped.info(), copied.info());
}
