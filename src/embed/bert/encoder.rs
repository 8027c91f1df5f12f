//! The BERT encoder's forward pass over packed texts.

use anyhow::{Result, bail, ensure};
use rayon::prelude::*;
use tokenizers::Encoding;

use super::kernels::{self, Backend, Rhs};
use super::weights::{BertConfig, HiddenAct, MappedF32, RowTable, Weights};
use crate::embed::Residency;

/// A fully connected layer, `x · Wᵀ + b`, with `W` (`n × k`).
struct Linear {
    /// Output features.
    n: usize,
    /// Input features.
    k: usize,
    weight: Weight,
    bias: Vec<f32>,
}

/// How a [`Linear`]'s weight is held.
enum Weight {
    /// `Wᵀ` decoded and packed as [`Rhs`] panels of `width` columns.
    Packed { panels: Vec<f32>, width: usize },
    /// Left in the mapped checkpoint as it stores it, one tensor per
    /// fused part ([`Residency::Mapped`], on a backend that multiplies by
    /// it in place to the same bits): a process that embeds a query and
    /// exits reads each weight once, instead of decoding, packing and
    /// then reading it.
    AsStored(Vec<MappedF32>),
}

impl Linear {
    /// Loads `{prefix}.weight` and `{prefix}.bias` of the layers named
    /// in `parts`, concatenated along the output (one fused product): left
    /// in the map when `residency` allows it, else packed as they are
    /// decoded.
    fn load(
        vb: &Weights,
        parts: &[&str],
        (n, k): (usize, usize),
        backend: Backend,
        residency: Residency,
    ) -> Result<Self> {
        let mut bias = Vec::with_capacity(parts.len() * n);
        for part in parts {
            bias.extend(vb.pp(part).get(&[n], "bias")?);
        }
        let total = parts.len() * n;
        let as_stored = if residency == Residency::Mapped && backend.multiplies_weights_as_stored()
        {
            parts
                .iter()
                .map(|part| vb.pp(part).in_place(&[n, k], "weight"))
                .collect::<Result<Option<Vec<_>>>>()?
        } else {
            None
        };
        let weight = match as_stored {
            Some(parts) => {
                parts.iter().for_each(MappedF32::populate);
                Weight::AsStored(parts)
            }
            None => {
                let rows = parts
                    .iter()
                    .map(|part| vb.pp(part).rows(&[n, k], "weight"))
                    .collect::<Result<Vec<_>>>()?;
                let width = backend.panel_width(total);
                let panels = kernels::pack_transposed(total, k, width, |j, row| {
                    rows[j / n].row(j % n, row);
                });
                Weight::Packed { panels, width }
            }
        };
        Ok(Self {
            n: total,
            k,
            weight,
            bias,
        })
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
        match &self.weight {
            Weight::Packed { panels, width } => {
                let rhs = Rhs::panels(panels, k, *width);
                kernels::matmul(backend, (t, n, k), (x, k), rhs, (out, n), true, true);
            }
            Weight::AsStored(parts) => {
                let part_n = n / parts.len();
                for (i, part) in parts.iter().enumerate() {
                    let rhs = Rhs::transposed(part.values(), k);
                    let out = &mut out[i * part_n..];
                    kernels::matmul(backend, (t, part_n, k), (x, k), rhs, (out, n), true, true);
                }
            }
        }
    }
}

/// A layer normalisation's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

impl Norm {
    fn load(vb: &Weights, h: usize) -> Result<Self> {
        let vb = vb.pp("LayerNorm");
        Ok(Self {
            weight: vb.get(&[h], "weight")?,
            bias: vb.get(&[h], "bias")?,
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
    /// Read a token at a time.
    word: RowTable,
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

impl Encoder {
    /// Reads the weights from `vb` (a checkpoint with or without the
    /// `bert.` prefix), sized by `config`; the word embeddings are held as
    /// `residency` says.
    pub(super) fn load(vb: &Weights, config: &BertConfig, residency: Residency) -> Result<Self> {
        let h = config.hidden_size;
        let heads = config.num_attention_heads;
        ensure!(
            heads > 0 && h.is_multiple_of(heads),
            "hidden_size {h} is not a multiple of num_attention_heads {heads}"
        );
        let prefixes = ["", "bert"].into_iter().chain(config.model_type.as_deref());
        let Some(vb) = prefixes
            .map(|p| if p.is_empty() { vb.clone() } else { vb.pp(p) })
            .find(|vb| vb.contains("embeddings.word_embeddings.weight"))
        else {
            bail!("no tensor embeddings.word_embeddings.weight (nor bert.embeddings…)");
        };
        let backend = Backend::detect();
        let i = config.intermediate_size;
        let embeddings = vb.pp("embeddings");
        let layers = (0..config.num_hidden_layers)
            .into_par_iter()
            .map(|l| -> Result<Layer> {
                let vb = vb.pp(format!("encoder.layer.{l}"));
                let attention = vb.pp("attention");
                Ok(Layer {
                    qkv: Linear::load(
                        &attention.pp("self"),
                        &["query", "key", "value"],
                        (h, h),
                        backend,
                        residency,
                    )?,
                    attention_out: Linear::load(
                        &attention.pp("output"),
                        &["dense"],
                        (h, h),
                        backend,
                        residency,
                    )?,
                    attention_norm: Norm::load(&attention.pp("output"), h)?,
                    up: Linear::load(
                        &vb.pp("intermediate"),
                        &["dense"],
                        (i, h),
                        backend,
                        residency,
                    )?,
                    down: Linear::load(&vb.pp("output"), &["dense"], (h, i), backend, residency)?,
                    out_norm: Norm::load(&vb.pp("output"), h)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            backend,
            word: embeddings.row_table(
                &[config.vocab_size, h],
                "word_embeddings.weight",
                residency,
            )?,
            position: embeddings.get(
                &[config.max_position_embeddings, h],
                "position_embeddings.weight",
            )?,
            token_type: embeddings
                .get(&[config.type_vocab_size, h], "token_type_embeddings.weight")?,
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
        let mut word = vec![0f32; h];
        let tokens = enc.get_ids().iter().zip(enc.get_type_ids());
        for (position, (row, (&id, &ty))) in rows.chunks_exact_mut(h).zip(tokens).enumerate() {
            self.word.row(id as usize, &mut word);
            let pos = &self.position[position * h..][..h];
            let ty = &self.token_type[ty as usize * h..][..h];
            kernels::add(row, &word, pos);
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
