//! Embedders: text → unit-length vectors for the dense list.
//!
//! An [`Embedder`] names itself ([`EmbedderInfo`]: id, dimension and a
//! fingerprint of its weights) so an index can record which model built it
//! and a search can refuse to mix models. The bundled model is
//! [`static_model::StaticEmbedder`]; a sentence-transformers folder runs
//! with `bert::BertEmbedder` (cargo feature `bert`, on by default); other
//! models plug in by implementing the trait.

#[cfg(feature = "bert")]
pub mod bert;
mod fingerprint;
pub mod static_model;
mod wordpiece;

use std::path::Path;

use anyhow::Result;

use serde::{Deserialize, Serialize};

/// Identity of an embedding model, recorded in the index manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderInfo {
    /// Human-readable model id.
    pub id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Hash of the model's weights, tokenizer and configuration: two models
    /// with the same fingerprint embed identically.
    pub fingerprint: String,
}

/// What kind of model an embedder runs: the fusion picks its defaults by
/// it (a static model's dense list is weaker than a transformer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// A static (model2vec) model: one vector per token, averaged.
    Static,
    /// A transformer (sentence-transformers BERT family).
    Transformer,
}

/// A text embedding model.
pub trait Embedder: Send + Sync {
    /// The model's identity.
    fn info(&self) -> &EmbedderInfo;

    /// What kind of model this is.
    fn kind(&self) -> ModelKind;

    /// Embeds `texts` into one row-major buffer of `texts.len() × dim`
    /// floats; each row has unit length, or is all zeros when the text has
    /// nothing the model knows. Fails only when the model itself does
    /// (e.g. a transformer's inference error).
    fn embed(&self, texts: &[String]) -> Result<Vec<f32>>;
}

/// The embedder for a model folder (`--model DIR`: a model2vec folder, or
/// a sentence-transformers BERT folder), or the bundled model.
///
/// A loaded transformer lives as long as the process, like the bundled
/// model, so every list can hold a plain `&'static` reference to it.
pub fn load(model_dir: Option<&Path>) -> Result<&'static dyn Embedder> {
    match model_dir {
        None => Ok(static_model::StaticEmbedder::bundled()),
        Some(dir) if is_model2vec_folder(dir) => Ok(Box::leak(Box::new(
            static_model::StaticEmbedder::load(dir)?,
        ))),
        Some(dir) => load_folder(dir),
    }
}

/// True when `dir/config.json` names a model2vec model.
fn is_model2vec_folder(dir: &Path) -> bool {
    std::fs::read(dir.join("config.json"))
        .is_ok_and(|config| static_model::is_model2vec_config(&config))
}

#[cfg(feature = "bert")]
fn load_folder(dir: &Path) -> Result<&'static dyn Embedder> {
    Ok(Box::leak(Box::new(bert::BertEmbedder::load(dir)?)))
}

#[cfg(not(feature = "bert"))]
fn load_folder(dir: &Path) -> Result<&'static dyn Embedder> {
    anyhow::bail!(
        "this memidx was built without the 'bert' feature, so it cannot run the model in {}",
        dir.display()
    )
}

/// Scales `v` to unit length (left as is when all zeros), accumulating in
/// f64. Shared by the transformer's pooling and the dense list's feedback.
pub fn normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in v {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}
