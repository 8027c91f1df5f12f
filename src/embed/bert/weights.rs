//! A BERT checkpoint's settings (`config.json`) and tensors
//! (`model.safetensors`), read into plain `f32` buffers.
//!
//! `safetensors` (the format's reference crate, already read for the
//! bundled model) parses the file and checks its layout; `half` converts
//! f16 and bf16 checkpoints. Each tensor is found by its dotted name under
//! a prefix and must have exactly the shape the settings give it.

use anyhow::{Context, Result, bail, ensure};
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

/// The activation between a layer's two feed-forward products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(super) enum HiddenAct {
    /// GELU with the exact error function (`gelu` in `config.json`).
    #[serde(rename = "gelu")]
    Gelu,
    /// GELU's tanh approximation.
    #[serde(
        rename = "gelu_new",
        alias = "geluapproximate",
        alias = "gelu_pytorch_tanh"
    )]
    GeluApproximate,
    /// `max(0, x)`.
    #[serde(rename = "relu")]
    Relu,
}

/// The sizes and constants of `config.json` the forward pass uses; other
/// keys are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct BertConfig {
    /// Rows of the word embedding table.
    pub(super) vocab_size: usize,
    /// Width of every hidden state.
    pub(super) hidden_size: usize,
    /// Transformer layers.
    pub(super) num_hidden_layers: usize,
    /// Attention heads per layer.
    pub(super) num_attention_heads: usize,
    /// Width of the feed-forward step.
    pub(super) intermediate_size: usize,
    /// The feed-forward activation.
    pub(super) hidden_act: HiddenAct,
    /// Rows of the position embedding table.
    pub(super) max_position_embeddings: usize,
    /// Rows of the token type embedding table.
    #[serde(default = "two")]
    pub(super) type_vocab_size: usize,
    /// Layer normalisation's epsilon.
    #[serde(default = "bert_epsilon")]
    pub(super) layer_norm_eps: f64,
    /// The checkpoint's model type (its tensors may sit under that name).
    #[serde(default)]
    pub(super) model_type: Option<String>,
}

fn two() -> usize {
    2
}

/// BERT's own default.
fn bert_epsilon() -> f64 {
    1e-12
}

/// The tensors of a checkpoint under one name prefix.
#[derive(Clone)]
pub(super) struct Weights<'a> {
    tensors: &'a SafeTensors<'a>,
    prefix: String,
}

impl<'a> Weights<'a> {
    /// All tensors of `tensors`, with no prefix.
    pub(super) fn new(tensors: &'a SafeTensors<'a>) -> Self {
        Self {
            tensors,
            prefix: String::new(),
        }
    }

    /// The tensors under `part` (`encoder` then `layer.0`, say).
    pub(super) fn pp(&self, part: impl AsRef<str>) -> Self {
        Self {
            tensors: self.tensors,
            prefix: self.name(part.as_ref()),
        }
    }

    fn name(&self, name: &str) -> String {
        match self.prefix.is_empty() {
            true => name.to_string(),
            false => format!("{}.{name}", self.prefix),
        }
    }

    /// True when the checkpoint has the tensor `name` under this prefix.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.tensors.tensor(&self.name(name)).is_ok()
    }

    /// The tensor `name` under this prefix, which must have `shape`, as
    /// row-major f32s.
    pub(super) fn get(&self, shape: &[usize], name: &str) -> Result<Vec<f32>> {
        let full = self.name(name);
        let view = self
            .tensors
            .tensor(&full)
            .map_err(|_| anyhow::anyhow!("no tensor {full}"))?;
        ensure!(
            view.shape() == shape,
            "tensor {full} has shape {:?}, expected {shape:?}",
            view.shape()
        );
        let bytes = view.data();
        let values = match view.dtype() {
            Dtype::F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect(),
            Dtype::F16 => bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => bytes
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => bail!("tensor {full} is {other:?}; f32, f16 or bf16 is needed"),
        };
        Ok(values)
    }
}

/// Parses `model.safetensors`, naming `what` in the error.
pub(super) fn parse<'a>(bytes: &'a [u8], what: &str) -> Result<SafeTensors<'a>> {
    SafeTensors::deserialize(bytes).with_context(|| format!("{what} is not a safetensors file"))
}
