//! The bundled embedder: a static (model2vec) model distilled from
//! all-MiniLM-L6-v2, 256 dimensions, int8 weights, compiled into the binary.
//! Any other model2vec folder (`config.json` with `"model_type":
//! "model2vec"`, `tokenizer.json`, `model.safetensors`) runs the same way
//! with `--model DIR`.
//!
//! A static model looks up one vector per subword token and mean-pools
//! them — no transformer at run time, so embedding is fast on any CPU and
//! nothing is ever downloaded. The files under `assets/model/` are made by
//! `scripts/distill_model.py` (see `assets/model/NOTICE` for provenance and
//! license). Inference uses the `model2vec-rs` crate, the reference Rust
//! implementation by the model2vec authors, built with pure-Rust features.

use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context, Result};
use model2vec_rs::model::StaticModel;

use super::{Embedder, EmbedderInfo, FusionDefaults};
use crate::fusion::DEFAULT_RRF_K;

static TOKENIZER: &[u8] = include_bytes!("../../assets/model/tokenizer.json");
static WEIGHTS: &[u8] = include_bytes!("../../assets/model/model.safetensors");
static CONFIG: &[u8] = include_bytes!("../../assets/model/config.json");

/// Longest input, in model tokens, that is embedded (the rest is cut, as the
/// Python model2vec does by default).
const MAX_TOKENS: usize = 512;

/// A static (model2vec) embedder: the bundled model, or a folder's.
pub struct StaticEmbedder {
    model: StaticModel,
    info: EmbedderInfo,
}

/// The id recorded for the bundled model.
const BUNDLED_ID: &str = "memidx-static-minilm-l6-v2-256d-int8";

static BUNDLED: LazyLock<StaticEmbedder> = LazyLock::new(|| {
    // The assets are compiled in and tested; failing to load them is a build defect.
    StaticEmbedder::from_parts(BUNDLED_ID, TOKENIZER, WEIGHTS, CONFIG)
        .expect("the bundled embedding model is valid")
});

/// The files of a model2vec folder.
const FOLDER_FILES: [&str; 3] = ["tokenizer.json", "model.safetensors", "config.json"];

impl StaticEmbedder {
    /// The bundled model, loaded on first use.
    pub fn bundled() -> &'static StaticEmbedder {
        &BUNDLED
    }

    /// Loads the model2vec model in `dir`; its id is the folder's name.
    pub fn load(dir: &Path) -> Result<Self> {
        let [tokenizer, weights, config] = FOLDER_FILES.map(|name| {
            let path = dir.join(name);
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))
        });
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let id = canonical
            .file_name()
            .map_or("model2vec".into(), |n| n.to_string_lossy().into_owned());
        Self::from_parts(&id, &tokenizer?, &weights?, &config?)
            .with_context(|| format!("cannot load the model2vec model in {}", dir.display()))
    }

    /// Builds the model from its three files' bytes; the fingerprint hashes all three.
    fn from_parts(id: &str, tokenizer: &[u8], weights: &[u8], config: &[u8]) -> Result<Self> {
        let model = StaticModel::from_bytes(tokenizer, weights, config, None)?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for part in [tokenizer, weights, config] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let info = EmbedderInfo {
            id: id.to_string(),
            dim: model.dim(),
            fingerprint: format!("xxh3:{:016x}", hasher.digest()),
        };
        Ok(Self { model, info })
    }
}

/// True when `config` (a `config.json`) describes a model2vec model.
pub fn is_model2vec_config(config: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(config)
        .ok()
        .and_then(|c| c.get("model_type")?.as_str().map(|t| t == "model2vec"))
        .unwrap_or(false)
}

impl Embedder for StaticEmbedder {
    fn info(&self) -> &EmbedderInfo {
        &self.info
    }

    /// Measured with `memidx eval` on shared/eval/cranfield (BM25 k1 1.5):
    /// this weak dense list (nDCG@10 0.278 alone, BM25 0.368) pulls plain
    /// 1:1 RRF below BM25 (0.357 at the default window of 50); at dense
    /// weight 0.3 hybrid reaches 0.374 (window 50) and 0.379 (window 200).
    /// `eval --sweep` (150 settings, tuned on half the queries) found
    /// k 30 / dense 0.4, only +0.0003 over these defaults on the held-out half.
    /// Other model2vec folders get the same defaults (static models share
    /// the bundled one's character); `memidx eval --sweep --save` tunes them.
    fn fusion_defaults(&self) -> FusionDefaults {
        FusionDefaults {
            sparse_weight: 1.0,
            dense_weight: 0.3,
            rrf_k: DEFAULT_RRF_K,
            window: None,
        }
    }

    fn embed(&self, texts: &[String]) -> anyhow::Result<Vec<f32>> {
        Ok(self.model.encode_flat_with_args(texts, Some(MAX_TOKENS)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_unit_length_or_zero_and_the_fingerprint_is_stable() {
        let embedder = StaticEmbedder::bundled();
        let flat = embedder
            .embed(&["postgres connection pool".to_string(), String::new()])
            .unwrap();
        let dim = embedder.info().dim;
        let norm = |row: &[f32]| row.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm(&flat[..dim]) - 1.0).abs() < 1e-5);
        assert_eq!(norm(&flat[dim..]), 0.0);
        assert_eq!(
            embedder.info().fingerprint,
            StaticEmbedder::bundled().info().fingerprint
        );
        assert!(embedder.info().fingerprint.starts_with("xxh3:"));
    }

    #[test]
    fn the_bundled_assets_load_as_a_folder_with_the_same_vectors() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/model");
        assert!(is_model2vec_config(CONFIG));
        assert!(!is_model2vec_config(br#"{"model_type": "bert"}"#));
        let folder = StaticEmbedder::load(&dir).unwrap();
        let bundled = StaticEmbedder::bundled();
        assert_eq!(folder.info().fingerprint, bundled.info().fingerprint);
        assert_eq!(folder.info().id, "model");
        let text = ["max_connections exhausted".to_string()];
        assert_eq!(folder.embed(&text).unwrap(), bundled.embed(&text).unwrap());
        let err = StaticEmbedder::load(&dir.join("missing")).err().unwrap();
        assert!(format!("{err:#}").contains("tokenizer.json"), "{err:#}");
    }
}
