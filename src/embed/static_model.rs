//! The bundled embedder: a static (model2vec) model distilled from
//! all-MiniLM-L6-v2 and trained against its sentence embeddings, 256
//! dimensions, int8 weights, compiled into the binary.
//! Any other model2vec folder (`config.json` with `"model_type":
//! "model2vec"`, `tokenizer.json`, `model.safetensors`) runs the same way
//! with `--model DIR`.
//!
//! A static model looks up one vector per subword token and mean-pools
//! them — no transformer at run time, so embedding is fast on any CPU and
//! nothing is ever downloaded. The files under `assets/model/` are made by
//! `scripts/train_model.py` from `scripts/distill_model.py`'s distillation
//! (see `assets/model/NOTICE` and `training.json` for provenance, recipe
//! and licenses).
//!
//! The bundled model starts in no time: its vocabulary was digested by
//! `build.rs` into tries searched in place ([`super::wordpiece`]), and its
//! int8 matrix is read where it lies in the binary (`safetensors` views it
//! without copying), so a search touches only the rows of its query's
//! tokens. Parsing the tokenizer and copying the matrix at every start used
//! to cost a search more than its dense scan. Folders run with the
//! `model2vec-rs` crate (the model2vec authors' Rust implementation,
//! pure-Rust features), which is also the reference the bundled runtime is
//! tested against: same tokens, same vectors.

use std::path::Path;
use std::sync::LazyLock;

use anyhow::{Context, Result, bail, ensure};
use model2vec_rs::model::StaticModel;
use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};

use super::fingerprint::fingerprint;
use super::wordpiece::WordPiece;
use super::{Embedder, EmbedderInfo, ModelKind};

static WEIGHTS: &[u8] = include_bytes!("../../assets/model/model.safetensors");

/// Longest input, in model tokens, that is embedded (the rest is cut, as the
/// Python model2vec does by default).
const MAX_TOKENS: usize = 512;

/// A static (model2vec) embedder: the bundled model, or a folder's.
pub struct StaticEmbedder {
    runtime: Runtime,
    info: EmbedderInfo,
}

/// How a static model runs.
enum Runtime {
    /// The bundled model, digested at build time.
    Bundled(BundledModel),
    /// A model2vec folder.
    Folder(StaticModel),
}

/// The bundled model: its tokenizer and its int8 embedding matrix, in place.
struct BundledModel {
    vocab: WordPiece,
    /// `rows × dim`, one row per token id.
    weights: &'static [i8],
    dim: usize,
}

impl BundledModel {
    /// Views the compiled-in matrix (no copy).
    fn new() -> Result<Self> {
        let tensors = SafeTensors::deserialize(WEIGHTS)?;
        let embeddings = tensors.tensor("embeddings")?;
        ensure!(
            embeddings.dtype() == Dtype::I8,
            "the bundled matrix is not int8"
        );
        let &[rows, dim] = embeddings.shape() else {
            bail!("the bundled matrix is not 2-D");
        };
        let data: &'static [u8] = embeddings.data();
        ensure!(data.len() == rows * dim, "the bundled matrix is truncated");
        Ok(Self {
            vocab: WordPiece::bundled(),
            weights: bytemuck::cast_slice(data),
            dim,
        })
    }

    /// Token `id`'s row (`None` for an id past the matrix).
    fn row(&self, id: u32) -> Option<&[i8]> {
        (self.weights).get(id as usize * self.dim..(id as usize + 1) * self.dim)
    }

    /// The length of token `id`'s row (`None` for an id past the matrix).
    fn row_length(&self, id: u32) -> Option<f32> {
        let squares: f32 = self.row(id)?.iter().map(|&v| f32::from(v).powi(2)).sum();
        Some(squares.sqrt())
    }

    /// Embeds one text into `out` (`dim` zeros): model2vec's steps — cut
    /// the text to a character budget, tokenize, keep [`MAX_TOKENS`] ids,
    /// average the rows of the known ones, scale to unit length. The rows
    /// are integers, so the sum is exact in any order. Returns whether the
    /// text was cut.
    fn embed_into(&self, text: &str, out: &mut [f32]) -> bool {
        let budget = self.vocab.truncation_chars(MAX_TOKENS);
        let kept = text
            .char_indices()
            .nth(budget)
            .map_or(text, |(at, _)| &text[..at]);
        let mut ids = Vec::new();
        self.vocab.encode(kept, &mut ids);
        let cut = kept.len() < text.len() || ids.len() > MAX_TOKENS;
        ids.truncate(MAX_TOKENS);
        let mut count = 0usize;
        for &id in ids.iter().filter(|&&id| id != self.vocab.unk_id()) {
            let Some(row) = self.row(id) else {
                continue;
            };
            for (sum, value) in out.iter_mut().zip(row) {
                *sum += f32::from(*value);
            }
            count += 1;
        }
        let denominator = count.max(1) as f32;
        let mut squares = 0.0f32;
        for x in out.iter_mut() {
            *x /= denominator;
            squares += *x * *x;
        }
        let norm = squares.sqrt().max(1e-12);
        for x in out.iter_mut() {
            *x /= norm;
        }
        cut
    }
}

/// The id recorded for the bundled model.
const BUNDLED_ID: &str = "memidx-static-minilm-l6-v2-256d-int8-trained";

include!(concat!(env!("OUT_DIR"), "/bundled_fingerprint.rs"));

static BUNDLED: LazyLock<StaticEmbedder> = LazyLock::new(|| {
    // The assets are compiled in and tested; failing to view them is a build defect.
    let model = BundledModel::new().expect("the bundled embedding model is valid");
    StaticEmbedder {
        info: EmbedderInfo {
            id: BUNDLED_ID.to_string(),
            dim: model.dim,
            fingerprint: FINGERPRINT.to_string(),
        },
        runtime: Runtime::Bundled(model),
    }
});

/// The files of a model2vec folder.
const FOLDER_FILES: [&str; 3] = ["tokenizer.json", "model.safetensors", "config.json"];

impl StaticEmbedder {
    /// The bundled model, loaded on first use.
    pub fn bundled() -> &'static StaticEmbedder {
        &BUNDLED
    }

    /// Loads the model2vec model in `dir`; its id is the folder's name.
    /// `known` is its fingerprint when the caller knows it (else the files
    /// are hashed).
    pub fn load(dir: &Path, known: Option<&str>) -> Result<Self> {
        let [tokenizer, weights, config] = FOLDER_FILES.map(|name| {
            let path = dir.join(name);
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))
        });
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let id = canonical
            .file_name()
            .map_or("model2vec".into(), |n| n.to_string_lossy().into_owned());
        let (tokenizer, weights, config) = (tokenizer?, weights?, config?);
        let model = StaticModel::from_bytes(&tokenizer, &weights, &config, None)
            .with_context(|| format!("cannot load the model2vec model in {}", dir.display()))?;
        Ok(Self {
            info: EmbedderInfo {
                id,
                dim: model.dim(),
                // As build.rs fingerprints the bundled model.
                fingerprint: known.map_or_else(
                    || fingerprint(&[Some(&tokenizer), Some(&weights), Some(&config)]),
                    str::to_string,
                ),
            },
            runtime: Runtime::Folder(model),
        })
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

    fn kind(&self) -> ModelKind {
        ModelKind::Static
    }

    fn embed_counting_cuts(&self, texts: &[String]) -> anyhow::Result<(Vec<f32>, Option<usize>)> {
        Ok(match &self.runtime {
            Runtime::Bundled(model) => {
                let mut out = vec![0.0f32; texts.len() * model.dim];
                let cut = out
                    .par_chunks_mut(model.dim.max(1))
                    .zip(texts)
                    .map(|(row, text)| model.embed_into(text, row))
                    .filter(|&cut| cut)
                    .count();
                (out, Some(cut))
            }
            // model2vec's runtime does not say what it cut.
            Runtime::Folder(model) => (model.encode_flat_with_args(texts, Some(MAX_TOKENS)), None),
        })
    }

    fn window(&self) -> Option<usize> {
        Some(MAX_TOKENS)
    }

    /// The bundled model's rows for `word`'s pieces; a model2vec folder's
    /// tokenizer is internal to its runtime, so its pieces cannot be seen.
    fn piece_weights(&self, word: &str) -> Option<Vec<f32>> {
        let Runtime::Bundled(model) = &self.runtime else {
            return None;
        };
        let mut ids = Vec::new();
        model.vocab.encode(word, &mut ids);
        if ids.contains(&model.vocab.unk_id()) {
            return Some(Vec::new());
        }
        Some(ids.iter().filter_map(|&id| model.row_length(id)).collect())
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
    fn texts_past_the_window_are_counted_as_cut() {
        let embedder = StaticEmbedder::bundled();
        let long = "replication ".repeat(MAX_TOKENS + 1);
        let texts = ["postgres connection pool".to_string(), long, String::new()];
        let (flat, cut) = embedder.embed_counting_cuts(&texts).unwrap();
        assert_eq!(cut, Some(1));
        assert_eq!(flat, embedder.embed(&texts).unwrap());
        assert_eq!(embedder.window(), Some(MAX_TOKENS));
    }

    #[test]
    fn the_bundled_assets_load_as_a_folder_with_the_same_vectors() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/model");
        assert!(is_model2vec_config(include_bytes!(
            "../../assets/model/config.json"
        )));
        assert!(!is_model2vec_config(br#"{"model_type": "bert"}"#));
        let folder = StaticEmbedder::load(&dir, None).unwrap();
        let bundled = StaticEmbedder::bundled();
        assert_eq!(folder.info().fingerprint, bundled.info().fingerprint);
        assert_eq!(folder.info().id, "model");
        // The digested runtime gives model2vec-rs's vectors, bit for bit,
        // on text that exercises every tokenizer step and the truncation.
        let long = "connection pool exhausted again; ".repeat(400);
        let texts: Vec<String> = super::super::wordpiece::tests::TRICKY
            .iter()
            .map(|t| t.to_string())
            .chain([long, "max_connections exhausted".to_string()])
            .collect();
        assert_eq!(
            folder.embed(&texts).unwrap(),
            bundled.embed(&texts).unwrap()
        );
        let err = StaticEmbedder::load(&dir.join("missing"), None)
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("tokenizer.json"), "{err:#}");
    }
}
