//! A chunk as a row of the collection, and the terms of memidx's tokenizer
//! as opaque tokens for Milvus's BM25.
//!
//! Milvus's analyzers cut and normalize text their own way (no identifier
//! splitting, no Snowball stemmer in milvus-lite, no CJK bigrams), so the
//! `terms` field never holds the chunk's words: it holds each term of
//! memidx's own [`Analyzer`], in order and with its repeats, written as one
//! token of 14 lowercase letters (xxh3-64 of the term in base 26). The
//! `standard` analyzer keeps such a token whole and as it is, so Milvus's
//! BM25 counts exactly memidx's term frequencies and document lengths, and
//! a query encoded the same way matches the same terms.

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use xxhash_rust::xxh3::xxh3_64;

use crate::lists::dense::StoredVectors;
use crate::lists::sparse::fields::Fields;
use crate::store::generation::ChunkOrd;
use crate::store::parts::Parts;
use crate::text::tokenize::Analyzer;

/// Letters of one encoded term: 26^14 > 2^64.
const TOKEN_LETTERS: usize = 14;

/// Longest text Milvus keeps in a `VARCHAR` field, in bytes.
pub const MAX_VARCHAR: usize = 65_535;

/// Field names of the collection.
pub mod field {
    /// The chunk id, `path#n` (primary key).
    pub const ID: &str = "id";
    /// The source file, relative to the indexed root.
    pub const SOURCE: &str = "source";
    /// The heading path, joined by ` > `.
    pub const HEADING: &str = "heading";
    /// First source line.
    pub const LINE_FROM: &str = "line_from";
    /// Last source line.
    pub const LINE_TO: &str = "line_to";
    /// The chunk's text (cut at [`super::MAX_VARCHAR`] bytes).
    pub const TEXT: &str = "text";
    /// The file's metadata, key → list of values.
    pub const METADATA: &str = "metadata";
    /// The file's document date, seconds since the epoch (for `--since`
    /// and `--until`).
    pub const DATE: &str = "date";
    /// Every folder above the file, each ending in `/` (for `--here`).
    pub const FOLDERS: &str = "folders";
    /// The encoded terms, the input of the BM25 function.
    pub const TERMS: &str = "terms";
    /// BM25's sparse vector (the function's output).
    pub const SPARSE: &str = "sparse";
    /// The chunk's vector, dequantized.
    pub const DENSE: &str = "dense";
    /// xxh3 of every other field: what an incremental push compares.
    pub const KEY: &str = "key";
}

/// One term as an opaque word token.
pub fn encode_term(term: &str) -> String {
    let mut hash = xxh3_64(term.as_bytes());
    let mut token = String::with_capacity(TOKEN_LETTERS);
    for _ in 0..TOKEN_LETTERS {
        token.push(char::from(b'a' + (hash % 26) as u8));
        hash /= 26;
    }
    token
}

/// The terms `analyzer` finds in `text`, encoded and joined by spaces.
pub fn encode_text(analyzer: Analyzer, text: &str) -> String {
    analyzer
        .terms(text)
        .iter()
        .map(|t| encode_term(t))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every folder above `path`, outermost first, each ending in `/`.
pub fn folders(path: &str) -> Vec<String> {
    path.match_indices('/')
        .map(|(at, _)| path[..=at].to_string())
        .collect()
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A chunk's row without its vector, and the row's key.
pub struct Row {
    /// The chunk id.
    pub id: String,
    /// Every field but the vector.
    pub fields: serde_json::Map<String, Value>,
    /// xxh3 of `fields`, as 16 hex digits.
    pub key: String,
}

impl Row {
    /// The row of chunk `ord` of `parts`, its terms by `analyzer` from its
    /// sparse document of `fields`.
    pub fn of(parts: &Parts, analyzer: Analyzer, fields: Fields, ord: ChunkOrd) -> Result<Self> {
        let view = parts.chunk(ord)?;
        let id = view.id();
        let terms = encode_text(analyzer, &fields.of_view(&analyzer, &view));
        ensure!(
            terms.len() <= MAX_VARCHAR,
            "chunk {id} has {} terms, more than a Milvus text field holds ({} bytes of encoded terms); index with a smaller --chunk-tokens",
            terms.len() / (TOKEN_LETTERS + 1),
            MAX_VARCHAR
        );
        let folders = folders(&view.file.path);
        let fields = json!({
            field::ID: id,
            field::SOURCE: view.file.path,
            field::HEADING: cut(&view.heading(), MAX_VARCHAR),
            field::LINE_FROM: view.record.lines.0,
            field::LINE_TO: view.record.lines.1,
            field::TEXT: cut(&view.text, MAX_VARCHAR),
            field::METADATA: view.file.metadata,
            field::DATE: view.file.date().seconds,
            field::FOLDERS: folders,
            field::TERMS: terms,
        });
        let Value::Object(fields) = fields else {
            unreachable!("json! of an object is an object")
        };
        let key = format!(
            "{:016x}",
            xxh3_64(Value::Object(fields.clone()).to_string().as_bytes())
        );
        Ok(Self { id, fields, key })
    }

    /// The whole row to send: the fields, the key and the vector.
    pub fn with_vector(mut self, vectors: &StoredVectors, ord: ChunkOrd) -> Result<Value> {
        self.fields
            .insert(field::KEY.into(), Value::String(self.key));
        self.fields
            .insert(field::DENSE.into(), json!(vectors.row(ord)?));
        Ok(Value::Object(self.fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_is_fourteen_letters_and_repeats_stay() {
        let token = encode_term("inc-2023-q4-011");
        assert_eq!(token.len(), TOKEN_LETTERS);
        assert!(token.bytes().all(|b| b.is_ascii_lowercase()));
        assert_ne!(token, encode_term("inc"));
        let analyzer = Analyzer::default();
        let encoded = encode_text(analyzer, "pool pool INC-2023-Q4-011");
        let terms = analyzer.terms("pool pool INC-2023-Q4-011");
        assert_eq!(encoded.split(' ').count(), terms.len());
        let tokens: Vec<&str> = encoded.split(' ').collect();
        assert_eq!(tokens[0], tokens[1]);
    }

    #[test]
    fn folders_are_every_ancestor_with_a_slash() {
        assert_eq!(folders("a/b/c.md"), ["a/", "a/b/"]);
        assert!(folders("top.md").is_empty());
        assert_eq!(cut("héllo", 2), "h");
    }
}
