//! Pre-digests the bundled embedding model (`assets/model/`) at build time,
//! so that a search does not spend its budget parsing it.
//!
//! Parsing `tokenizer.json` and building a vocabulary trie at every start
//! cost a search about as much as the whole dense scan. Here the WordPiece
//! vocabulary becomes two double-array tries (the `yada` crate, a
//! darts-clone layout that is searched in place, straight from the bytes
//! compiled into the binary): one for word-initial pieces and one for
//! `##` continuations. The tokenizer settings the runtime reproduces are
//! checked here, so a model with another pipeline fails the build instead
//! of embedding differently. The model's fingerprint
//! (`src/embed/fingerprint.rs`, shared with the crate) is computed here too.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

#[path = "src/embed/fingerprint.rs"]
mod fingerprint;
use yada::builder::DoubleArrayBuilder;

const MODEL_DIR: &str = "assets/model";
const MODEL_FILES: [&str; 3] = ["tokenizer.json", "model.safetensors", "config.json"];

fn main() {
    for name in MODEL_FILES {
        println!("cargo::rerun-if-changed={MODEL_DIR}/{name}");
    }
    println!("cargo::rerun-if-changed=src/embed/fingerprint.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let files = MODEL_FILES.map(|name| {
        fs::read(Path::new(MODEL_DIR).join(name))
            .unwrap_or_else(|e| panic!("cannot read {MODEL_DIR}/{name}: {e}"))
    });
    let tokenizer: Value =
        serde_json::from_slice(&files[0]).expect("the bundled tokenizer.json parses");
    let settings = check_pipeline(&tokenizer);
    let vocab = tokenizer["model"]["vocab"]
        .as_object()
        .expect("a WordPiece vocabulary");
    let prefix = tokenizer["model"]["continuing_subword_prefix"]
        .as_str()
        .expect("a continuing_subword_prefix");

    let mut initial: Vec<(&str, u32)> = Vec::new();
    let mut continuation: Vec<(&str, u32)> = Vec::new();
    for (token, id) in vocab {
        let id = u32::try_from(id.as_u64().expect("integer ids")).expect("ids fit u32");
        assert!(id < 1 << 31, "yada stores 31-bit values");
        assert!(!token.contains('\0'), "a token holds NUL");
        initial.push((token, id));
        if let Some(rest) = token.strip_prefix(prefix).filter(|r| !r.is_empty()) {
            continuation.push((rest, id));
        }
    }
    for (name, mut keys) in [("initial", initial), ("continuation", continuation)] {
        keys.sort_unstable();
        let keyset: Vec<(&[u8], u32)> = keys.iter().map(|(k, v)| (k.as_bytes(), *v)).collect();
        let trie = DoubleArrayBuilder::build(&keyset).expect("the vocabulary trie builds");
        fs::write(out.join(format!("vocab_{name}.da")), trie).expect("OUT_DIR is writable");
    }

    let mut lengths: Vec<usize> = vocab.keys().map(String::len).collect();
    lengths.sort_unstable();
    let median = lengths.get(lengths.len() / 2).copied().unwrap_or(1);
    let added: Vec<String> = settings
        .added
        .iter()
        .map(|(content, id)| format!("({content:?}, {id})"))
        .collect();
    let tokenizer_settings = format!(
        "/// Id of the unknown-token piece.\n\
         const UNK_ID: u32 = {unk};\n\
         /// Longer words become one unknown token.\n\
         const MAX_INPUT_CHARS_PER_WORD: usize = {max_chars};\n\
         /// Special tokens matched literally before normalization.\n\
         const ADDED_TOKENS: &[(&str, u32)] = &[{added}];\n\
         /// Median byte length of the vocabulary (for model2vec's pre-truncation).\n\
         const MEDIAN_TOKEN_LENGTH: usize = {median};\n",
        unk = settings.unk_id,
        max_chars = settings.max_input_chars_per_word,
        added = added.join(", "),
    );
    fs::write(out.join("wordpiece_settings.rs"), tokenizer_settings).expect("OUT_DIR is writable");
    let parts: Vec<Option<&[u8]>> = files.iter().map(|f| Some(f.as_slice())).collect();
    let constant = format!(
        "/// The model's fingerprint (src/embed/fingerprint.rs).\n\
         const FINGERPRINT: &str = {:?};\n",
        fingerprint::fingerprint(&parts)
    );
    fs::write(out.join("bundled_fingerprint.rs"), constant).expect("OUT_DIR is writable");
}

/// What the runtime needs besides the vocabulary.
struct Settings {
    unk_id: u64,
    max_input_chars_per_word: u64,
    added: Vec<(String, u64)>,
}

/// Checks that the tokenizer is the pipeline `src/embed/wordpiece.rs`
/// reproduces: BertNormalizer (clean text, CJK spacing, accents stripped,
/// lowercase), BertPreTokenizer, WordPiece with `##` continuations, and
/// special tokens matched verbatim.
fn check_pipeline(tokenizer: &Value) -> Settings {
    let normalizer = &tokenizer["normalizer"];
    assert_eq!(normalizer["type"], "BertNormalizer");
    assert_eq!(normalizer["clean_text"], true);
    assert_eq!(normalizer["handle_chinese_chars"], true);
    assert_eq!(normalizer["lowercase"], true);
    assert!(
        normalizer["strip_accents"].is_null() || normalizer["strip_accents"] == true,
        "accents must be stripped (null follows lowercase)"
    );
    assert_eq!(tokenizer["pre_tokenizer"]["type"], "BertPreTokenizer");
    let model = &tokenizer["model"];
    assert_eq!(model["type"], "WordPiece");
    assert_eq!(model["continuing_subword_prefix"], "##");
    let vocab = model["vocab"].as_object().expect("a vocabulary");
    let unk = model["unk_token"].as_str().expect("an unk_token");
    let added = tokenizer["added_tokens"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|token| {
            for flag in ["single_word", "lstrip", "rstrip", "normalized"] {
                assert_eq!(token[flag], false, "added tokens must match verbatim");
            }
            let content = token["content"].as_str().expect("added token content");
            let id = vocab[content]
                .as_u64()
                .expect("added tokens are in the vocabulary");
            (content.to_string(), id)
        })
        .collect();
    Settings {
        unk_id: vocab[unk]
            .as_u64()
            .expect("the unk token is in the vocabulary"),
        max_input_chars_per_word: model["max_input_chars_per_word"]
            .as_u64()
            .expect("max_input_chars_per_word"),
        added,
    }
}
