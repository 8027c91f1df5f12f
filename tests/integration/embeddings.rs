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
