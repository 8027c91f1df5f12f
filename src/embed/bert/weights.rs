//! A BERT checkpoint's settings (`config.json`) and tensors
//! (`model.safetensors`, memory-mapped), decoded to `f32` as they are read.
//!
//! `safetensors` (the format's reference crate, already read for the
//! bundled model) parses the file and checks its layout; `half` converts
//! f16 and bf16 checkpoints. Each tensor is found by its dotted name under
//! a prefix and must have exactly the shape the settings give it. Small
//! tensors are decoded whole ([`Weights::get`]); a product's weight is
//! decoded a row at a time straight into its packed layout
//! ([`Weights::rows`]), or, in a process that embeds a query and exits,
//! left in the mapped file and multiplied by in place
//! ([`Weights::in_place`]); the word embeddings, the largest table of a small
//! model, can stay in the mapped file and be decoded per token
//! ([`RowTable`]), so a process that embeds one query reads only the rows
//! of its tokens.

use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::embed::Residency;

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
    /// The mapped file `tensors` was parsed from.
    file: &'a Arc<Mmap>,
    prefix: String,
}

impl<'a> Weights<'a> {
    /// All tensors of `tensors` (parsed from `file`), with no prefix.
    pub(super) fn new(tensors: &'a SafeTensors<'a>, file: &'a Arc<Mmap>) -> Self {
        Self {
            tensors,
            file,
            prefix: String::new(),
        }
    }

    /// The tensors under `part` (`encoder` then `layer.0`, say).
    pub(super) fn pp(&self, part: impl AsRef<str>) -> Self {
        Self {
            tensors: self.tensors,
            file: self.file,
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
        Ok(self.rows(shape, name)?.all())
    }

    /// The tensor `name` under this prefix, which must have `shape`, as
    /// rows of its last dimension, decoded when read.
    pub(super) fn rows(&self, shape: &[usize], name: &str) -> Result<Rows<'a>> {
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
        if value_bytes(view.dtype()).is_none() {
            bail!(
                "tensor {full} is {:?}; f32, f16 or bf16 is needed",
                view.dtype()
            );
        }
        Ok(Rows {
            dtype: view.dtype(),
            bytes: view.data(),
            width: shape.last().copied().unwrap_or(1),
        })
    }

    /// The tensor `name` under this prefix, which must have `shape`, left
    /// in the mapped file to be read in place, or `None` when it cannot
    /// be: stored as another dtype than f32, or not aligned to a float.
    pub(super) fn in_place(&self, shape: &[usize], name: &str) -> Result<Option<MappedF32>> {
        let rows = self.rows(shape, name)?;
        if rows.dtype != Dtype::F32
            || cfg!(target_endian = "big")
            || bytemuck::try_cast_slice::<u8, f32>(rows.bytes).is_err()
        {
            return Ok(None);
        }
        Ok(Some(MappedF32 {
            file: Arc::clone(self.file),
            start: self.offset(rows.bytes),
            len: rows.bytes.len(),
        }))
    }

    /// Where `bytes`, a slice of the mapped file, starts in it.
    fn offset(&self, bytes: &[u8]) -> usize {
        bytes.as_ptr() as usize - self.file.as_ptr() as usize
    }

    /// The tensor `name` under this prefix, which must have `shape`, read
    /// a row at a time: left in the mapped file or decoded into memory now,
    /// as `residency` says.
    pub(super) fn row_table(
        &self,
        shape: &[usize],
        name: &str,
        residency: Residency,
    ) -> Result<RowTable> {
        let rows = self.rows(shape, name)?;
        Ok(match residency {
            Residency::Mapped => RowTable::Mapped {
                file: Arc::clone(self.file),
                start: self.offset(rows.bytes),
                len: rows.bytes.len(),
                dtype: rows.dtype,
                width: rows.width,
            },
            Residency::Copied => RowTable::Copied {
                values: rows.all(),
                width: rows.width,
            },
        })
    }
}

/// An f32 tensor read in place from the mapped checkpoint
/// ([`Weights::in_place`]).
pub(super) struct MappedF32 {
    file: Arc<Mmap>,
    start: usize,
    len: usize,
}

impl MappedF32 {
    /// Maps the tensor's pages now (`MADV_POPULATE_READ`), so that the
    /// product that first reads it takes no page faults; a load does it
    /// while the tokenizer is being read. Best effort: a kernel without
    /// it (before Linux 5.14) faults the pages in when they are read.
    pub(super) fn populate(&self) {
        #[cfg(target_os = "linux")]
        let _ = self
            .file
            .advise_range(memmap2::Advice::PopulateRead, self.start, self.len);
    }

    /// The tensor's values, row-major.
    pub(super) fn values(&self) -> &[f32] {
        // `in_place` checked the dtype, the byte order and the alignment.
        bytemuck::cast_slice(&self.file[self.start..][..self.len])
    }
}

/// A tensor's bytes as rows of `width` values of one dtype.
pub(super) struct Rows<'a> {
    dtype: Dtype,
    bytes: &'a [u8],
    width: usize,
}

impl Rows<'_> {
    /// Every row, decoded, end to end.
    fn all(&self) -> Vec<f32> {
        let size = value_bytes(self.dtype).expect("a checked dtype");
        let mut values = vec![0f32; self.bytes.len() / size];
        decode(self.dtype, self.bytes, &mut values);
        values
    }

    /// Decodes row `i` into `out` (`width` floats).
    ///
    /// # Panics
    /// When `i` is past the last row or `out` is not `width` long.
    pub(super) fn row(&self, i: usize, out: &mut [f32]) {
        let row_bytes = self.width * value_bytes(self.dtype).expect("a checked dtype");
        decode(self.dtype, &self.bytes[i * row_bytes..][..row_bytes], out);
    }
}

/// A tensor read a row at a time ([`Weights::row_table`]).
pub(super) enum RowTable {
    /// Left in the mapped checkpoint: rows are decoded when read, and only
    /// the rows read are ever paged in.
    Mapped {
        file: Arc<Mmap>,
        start: usize,
        len: usize,
        dtype: Dtype,
        width: usize,
    },
    /// Decoded into memory at load.
    Copied { values: Vec<f32>, width: usize },
}

impl RowTable {
    /// Row `i` into `out` (`width` floats).
    ///
    /// # Panics
    /// When `i` is past the last row or `out` is not `width` long.
    pub(super) fn row(&self, i: usize, out: &mut [f32]) {
        match self {
            Self::Mapped {
                file,
                start,
                len,
                dtype,
                width,
            } => Rows {
                dtype: *dtype,
                bytes: &file[*start..][..*len],
                width: *width,
            }
            .row(i, out),
            Self::Copied { values, width } => out.copy_from_slice(&values[i * width..][..*width]),
        }
    }
}

/// Bytes per value of the dtypes the encoder reads (`None` for others).
fn value_bytes(dtype: Dtype) -> Option<usize> {
    match dtype {
        Dtype::F32 => Some(4),
        Dtype::F16 | Dtype::BF16 => Some(2),
        _ => None,
    }
}

/// Decodes little-endian `dtype` values (f32, f16 or bf16) from `bytes`
/// into `out`, one per value.
///
/// # Panics
/// When `out` does not hold exactly one float per value, or for another
/// dtype ([`Weights::rows`] admits only these three).
fn decode(dtype: Dtype, bytes: &[u8], out: &mut [f32]) {
    let size = value_bytes(dtype).expect("a checked dtype");
    assert_eq!(bytes.len(), out.len() * size, "one float per value");
    let values = bytes.chunks_exact(size).zip(out);
    match dtype {
        Dtype::F32 => values.for_each(|(b, o)| *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Dtype::F16 => {
            values.for_each(|(b, o)| *o = half::f16::from_le_bytes([b[0], b[1]]).to_f32())
        }
        Dtype::BF16 => {
            values.for_each(|(b, o)| *o = half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
        }
        other => unreachable!("{other:?} is refused by Weights::rows"),
    }
}

/// Parses `model.safetensors`, naming `what` in the error.
pub(super) fn parse<'a>(bytes: &'a [u8], what: &str) -> Result<SafeTensors<'a>> {
    SafeTensors::deserialize(bytes).with_context(|| format!("{what} is not a safetensors file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_decode_f32_f16_and_bf16_alike() {
        // Values every one of the three dtypes holds exactly.
        let values = [1.0f32, -2.5, 0.0, 1024.0, 0.125, -0.75];
        let encodings: [(Dtype, Vec<u8>); 3] = [
            (
                Dtype::F32,
                values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (
                Dtype::F16,
                values
                    .iter()
                    .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                    .collect(),
            ),
            (
                Dtype::BF16,
                values
                    .iter()
                    .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                    .collect(),
            ),
        ];
        for (dtype, bytes) in encodings {
            let rows = Rows {
                dtype,
                bytes: &bytes,
                width: 3,
            };
            let mut row = [0f32; 3];
            rows.row(1, &mut row);
            assert_eq!(row, [1024.0, 0.125, -0.75], "{dtype:?}");
            let mut all = [0f32; 6];
            decode(dtype, &bytes, &mut all);
            assert_eq!(all, values, "{dtype:?}");
        }
    }

    #[test]
    fn other_dtypes_have_no_decoder() {
        assert_eq!(value_bytes(Dtype::I64), None);
        assert_eq!(value_bytes(Dtype::F16), Some(2));
    }
}
