//! `tokenizer.json` read into a tokenizer that runs exactly as the
//! `tokenizers` crate runs it.
//!
//! `Tokenizer::from_bytes` reads the model through a tag-or-legacy helper
//! that buffers the whole vocabulary, copies it into a `serde_json::Value`,
//! converts that, then keeps it in two maps of owned strings: 15–20 ms of a
//! one-shot search for all-MiniLM-L6-v2, longer than its forward pass. A
//! WordPiece file (every BERT model's) is read here in one pass: the model
//! into [`WordPieces`], the normalizer, pre-tokenizer, post-processor and
//! decoder into the crate's own types, and the added tokens put back as
//! the crate's reader puts them. Any other file — another model, another
//! version — goes through `Tokenizer::from_bytes`, which also words the
//! errors.

use std::path::Path;

use anyhow::Result;
use serde::Deserialize;
use tokenizers::{
    AddedToken, DecoderWrapper, EncodeInput, Encoding, Model, NormalizerWrapper,
    PostProcessorWrapper, PreTokenizerWrapper, Tokenizer, TokenizerImpl, TruncationDirection,
    TruncationParams, TruncationStrategy,
};

use super::word_pieces::{StoredWordPiece, WordPieces};

/// The parts of a WordPiece `tokenizer.json` a tokenizer is built from
/// (its own padding and truncation are replaced anyway).
#[derive(Deserialize)]
struct WordPieceFile {
    version: String,
    model: StoredWordPiece,
    normalizer: Option<NormalizerWrapper>,
    pre_tokenizer: Option<PreTokenizerWrapper>,
    post_processor: Option<PostProcessorWrapper>,
    decoder: Option<DecoderWrapper>,
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
}

/// The `tokenizers` pipeline over a model `M`.
type Pipeline<M> =
    TokenizerImpl<M, NormalizerWrapper, PreTokenizerWrapper, PostProcessorWrapper, DecoderWrapper>;

/// A model folder's tokenizer, set to run texts unpadded and to truncate
/// them to the model's `max_seq_length`.
pub(super) enum BertTokenizer {
    /// A WordPiece file, read in one pass.
    WordPieces(Box<Pipeline<WordPieces>>),
    /// Any other, read by the crate.
    Crate(Box<Tokenizer>),
}

impl BertTokenizer {
    /// `dir/tokenizer.json` (`bytes`) parsed, truncating texts to
    /// `max_seq_length` tokens.
    pub(super) fn load(dir: &Path, bytes: &[u8], max_seq_length: usize) -> Result<Self> {
        Ok(match serde_json::from_slice::<WordPieceFile>(bytes) {
            Ok(file) if file.version == "1.0" => {
                let mut pipeline = Pipeline::new(WordPieces::from(file.model));
                pipeline
                    .with_normalizer(file.normalizer)
                    .with_pre_tokenizer(file.pre_tokenizer)
                    .with_post_processor(file.post_processor)
                    .with_decoder(file.decoder);
                pipeline.add_tokens(&file.added_tokens);
                configure(&mut pipeline, max_seq_length)?;
                Self::WordPieces(Box::new(pipeline))
            }
            _ => {
                let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| {
                    anyhow::anyhow!("parsing {}: {e}", dir.join("tokenizer.json").display())
                })?;
                configure(&mut tokenizer, max_seq_length)?;
                Self::Crate(Box::new(tokenizer))
            }
        })
    }

    /// Tokenizes `texts` (with the special tokens), on all cores.
    pub(super) fn encode_batch(&self, texts: Vec<String>) -> Result<Vec<Encoding>> {
        match self {
            Self::WordPieces(pipeline) => pipeline.encode_batch_fast(texts, true),
            Self::Crate(tokenizer) => tokenizer.encode_batch_fast(texts, true),
        }
        .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))
    }

    /// Tokenizes one text (with the special tokens).
    pub(super) fn encode<'s>(&self, text: impl Into<EncodeInput<'s>>) -> Result<Encoding> {
        match self {
            Self::WordPieces(pipeline) => pipeline.encode_fast(text, true),
            Self::Crate(tokenizer) => tokenizer.encode_fast(text, true),
        }
        .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))
    }
}

/// Sets `pipeline` to run texts unpadded and to truncate them to
/// `max_seq_length` tokens: tokenizer.json may carry its own fixed padding
/// and truncation (all-MiniLM-L6-v2's pads and truncates to 128), and
/// truncation follows `max_seq_length`.
fn configure<M: Model>(pipeline: &mut Pipeline<M>, max_seq_length: usize) -> Result<()> {
    pipeline.with_padding(None);
    pipeline
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_seq_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| anyhow::anyhow!("setting truncation to {max_seq_length} tokens: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts that exercise the normalizer, the pre-tokenizer, word pieces,
    /// unknown words, added tokens and truncation.
    const TEXTS: [&str; 10] = [
        "INC-2023-Q4-011: billing month-end timeouts",
        "Café déjà vu — naïve résumé, 東京 and Ünïcödé",
        "[CLS] a [SEP] literal [MASK] token [UNK]",
        "kubectl argo rollouts undo payments-gateway -n payments",
        "",
        "   ",
        "supercalifragilisticexpialidocious pneumonoultramicroscopic",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z",
        "##ing ## #### unaffable 🦀 \u{0}\u{7f} zzzzzzzzzzzzzzzzqqqqqqqqqqqq",
        "x̧̀ ǅ ﬁ ½ Ⅻ ß İstanbul ΣΑΣ",
    ];

    /// The one-pass reader's tokenizer encodes as the crate's own reader's.
    fn assert_reads_alike(dir: &Path) {
        let bytes = std::fs::read(dir.join("tokenizer.json")).unwrap();
        let ours = BertTokenizer::load(dir, &bytes, 16).unwrap();
        assert!(
            matches!(ours, BertTokenizer::WordPieces(_)),
            "{dir:?} read in one pass"
        );
        let mut theirs = Tokenizer::from_bytes(&bytes).unwrap();
        configure(&mut theirs, 16).unwrap();
        let long = TEXTS.join(" ").repeat(20);
        let texts: Vec<String> = TEXTS.iter().map(|t| t.to_string()).chain([long]).collect();
        let (a, b) = (
            ours.encode_batch(texts.clone()).unwrap(),
            theirs.encode_batch_fast(texts.clone(), true).unwrap(),
        );
        for ((a, b), text) in a.iter().zip(&b).zip(&texts) {
            assert_eq!(a.get_ids(), b.get_ids(), "{text:?}");
            assert_eq!(a.get_tokens(), b.get_tokens(), "{text:?}");
            assert_eq!(a.get_offsets(), b.get_offsets(), "{text:?}");
            assert_eq!(a.get_type_ids(), b.get_type_ids());
            assert_eq!(a.get_special_tokens_mask(), b.get_special_tokens_mask());
            let overflow = |e: &Encoding| -> Vec<Vec<u32>> {
                e.get_overflowing()
                    .iter()
                    .map(|o| o.get_ids().to_vec())
                    .collect()
            };
            assert_eq!(overflow(a), overflow(b), "{text:?}");
        }
        let BertTokenizer::WordPieces(pipeline) = &ours else {
            unreachable!()
        };
        assert_eq!(pipeline.get_vocab(true), theirs.get_vocab(true));
        assert_eq!(pipeline.get_vocab_size(true), theirs.get_vocab_size(true));
        assert_eq!(
            pipeline.get_added_tokens_decoder(),
            theirs.get_added_tokens_decoder()
        );
        for id in [0, 1, 100, 101, 102, 1000, 29_999] {
            assert_eq!(pipeline.id_to_token(id), theirs.id_to_token(id));
        }
    }

    #[test]
    fn a_word_piece_file_reads_as_the_crate_reads_it() {
        assert_reads_alike(&Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/model"));
        if let Some(dir) = std::env::var_os("MEMIDX_MINILM_DIR") {
            assert_reads_alike(Path::new(&dir));
        }
    }

    #[test]
    fn a_word_listed_twice_keeps_its_last_id_and_continuations_need_their_prefix() {
        let json = r###"{"version": "1.0", "added_tokens": [], "normalizer": null,
            "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": null,
            "decoder": null,
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
              "continuing_subword_prefix": "##", "max_input_chars_per_word": 10,
              "vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "un": 4, "aff": 5,
                        "##ab\"le": 6}}}"###;
        let ours = BertTokenizer::load(Path::new("."), json.as_bytes(), 32).unwrap();
        assert!(matches!(ours, BertTokenizer::WordPieces(_)));
        let mut theirs = Tokenizer::from_bytes(json).unwrap();
        configure(&mut theirs, 32).unwrap();
        for text in [
            "unaffable",
            "affable",
            "unaffableun",
            "un un",
            "able",
            "unab\"le",
        ] {
            let (a, b) = (
                ours.encode(text).unwrap(),
                theirs.encode_fast(text, true).unwrap(),
            );
            assert_eq!(a.get_ids(), b.get_ids(), "{text:?}");
            assert_eq!(a.get_tokens(), b.get_tokens(), "{text:?}");
        }
        assert_eq!(ours.encode("unaffable").unwrap().get_ids(), [4, 2, 3]);
        assert_eq!(
            ours.encode("unaffableun").unwrap().get_ids(),
            [0],
            "over 10 characters"
        );
    }

    #[test]
    fn another_model_goes_through_the_crate_reader() {
        let json = r#"{"version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"}}"#;
        let tokenizer = BertTokenizer::load(Path::new("."), json.as_bytes(), 8).unwrap();
        assert!(matches!(tokenizer, BertTokenizer::Crate(_)));
        assert_eq!(tokenizer.encode("a").unwrap().get_ids(), [0]);
        let err = BertTokenizer::load(Path::new("m"), b"{}", 8)
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("parsing m/tokenizer.json"), "{err}");
    }
}
