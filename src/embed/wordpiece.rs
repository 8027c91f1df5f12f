//! The bundled model's tokenizer, run from a vocabulary digested at build
//! time: text → WordPiece token ids with no start-up cost.
//!
//! `build.rs` turns the bundled `tokenizer.json` into two double-array
//! tries (the `yada` crate: darts-clone's layout, searched in place from
//! the bytes compiled into the binary) and checks that its pipeline is the
//! one reproduced here — HuggingFace's `BertNormalizer` (clean text, spaces
//! around CJK ideographs, accents stripped, lowercase), `BertPreTokenizer`
//! (split on whitespace, each punctuation character its own word) and
//! `WordPiece` (greedy longest match, `##` continuations, an unknown word
//! as one `[UNK]`). The same steps as the `tokenizers` crate, character
//! class for character class (`unicode_categories`, NFD from
//! `unicode-normalization`); a test compares the resulting vectors with
//! `model2vec-rs`, which runs the model from `tokenizer.json`.

use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;
use yada::DoubleArray;

include!(concat!(env!("OUT_DIR"), "/wordpiece_settings.rs"));

/// Trie of every vocabulary entry (a word's first piece).
static INITIAL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vocab_initial.da"));
/// Trie of the `##` entries without their prefix (a word's later pieces).
static CONTINUATION: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/vocab_continuation.da"));

/// The bundled model's WordPiece tokenizer.
pub(super) struct WordPiece {
    initial: DoubleArray<&'static [u8]>,
    continuation: DoubleArray<&'static [u8]>,
}

impl WordPiece {
    /// The bundled vocabulary (nothing is parsed or built).
    pub(super) fn bundled() -> Self {
        Self {
            initial: DoubleArray::new(INITIAL),
            continuation: DoubleArray::new(CONTINUATION),
        }
    }

    /// The id of the unknown-word token.
    pub(super) fn unk_id(&self) -> u32 {
        UNK_ID
    }

    /// How many characters of a text model2vec keeps before tokenizing
    /// text meant to give at most `max_tokens` tokens.
    pub(super) fn truncation_chars(&self, max_tokens: usize) -> usize {
        max_tokens.saturating_mul(MEDIAN_TOKEN_LENGTH)
    }

    /// Appends the token ids of `text` to `ids` (no special tokens added).
    pub(super) fn encode(&self, text: &str, ids: &mut Vec<u32>) {
        let mut rest = text;
        while let Some((at, content, id)) = first_added_token(rest) {
            self.encode_plain(&rest[..at], ids);
            ids.push(id);
            rest = &rest[at + content.len()..];
        }
        self.encode_plain(rest, ids);
    }

    /// Normalizes, splits and tokenizes text holding no special token.
    fn encode_plain(&self, text: &str, ids: &mut Vec<u32>) {
        let normalized = normalize(text);
        for word in pre_tokenize(&normalized) {
            self.encode_word(word, ids);
        }
    }

    /// Greedy longest-match WordPiece of one word.
    fn encode_word(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > MAX_INPUT_CHARS_PER_WORD {
            ids.push(UNK_ID);
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        while start < word.len() {
            let trie = if start == 0 {
                &self.initial
            } else {
                &self.continuation
            };
            // Matches come shortest first; the last is the longest.
            match trie.common_prefix_search(&word.as_bytes()[start..]).last() {
                Some((id, len)) => {
                    ids.push(id);
                    start += len;
                }
                None => {
                    ids.truncate(mark);
                    ids.push(UNK_ID);
                    return;
                }
            }
        }
    }
}

/// The leftmost special token in `text`: its byte offset, text and id.
fn first_added_token(text: &str) -> Option<(usize, &'static str, u32)> {
    ADDED_TOKENS
        .iter()
        .filter_map(|(content, id)| text.find(content).map(|at| (at, *content, *id)))
        .min_by_key(|(at, content, _)| (*at, std::cmp::Reverse(content.len())))
}

/// `BertNormalizer` with clean text, CJK spacing, accent stripping and
/// lowercasing.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            cleaned.push(' ');
        } else if is_chinese_char(c) {
            cleaned.extend([' ', c, ' ']);
        } else {
            cleaned.push(c);
        }
    }
    if cleaned.is_ascii() {
        cleaned.make_ascii_lowercase();
        return cleaned;
    }
    cleaned
        .nfd()
        .filter(|c| !c.is_mark_nonspacing())
        .flat_map(char::to_lowercase)
        .collect()
}

/// `BertPreTokenizer`: words split on whitespace, each punctuation
/// character a word of its own.
fn pre_tokenize(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace).flat_map(|chunk| {
        chunk
            .split_inclusive(is_punctuation)
            .flat_map(|piece| match piece.char_indices().last() {
                Some((at, c)) if is_punctuation(c) => [&piece[..at], &piece[at..]],
                _ => [piece, ""],
            })
            .filter(|word| !word.is_empty())
    })
}

// ASCII takes a fast path in the character classes below (the Unicode
// tables are binary searches, and these run for every character embedded):
// an ASCII character is Unicode punctuation or "other" exactly when it is
// ASCII punctuation or an ASCII control character.

fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_punctuation()
    } else {
        c.is_punctuation()
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r') || c.is_whitespace()
}

fn is_control(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_control() && !matches!(c, '\t' | '\n' | '\r')
    } else {
        c.is_other()
    }
}

/// The CJK ideograph blocks BERT spaces out.
fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Texts that exercise every step: case, accents, CJK, punctuation,
    /// control and format characters, special tokens, unknown and long words.
    pub(crate) const TRICKY: &[&str] = &[
        "Hello, world! The QUICK brown fox.",
        "café résumé naïve fiancé Straße ÅNGSTRÖM",
        "你好世界 mixed 测试 text ＡＢＣ",
        "a\tb\nc\r\nd\u{0007}e\u{0000}f\u{200b}g\u{feff}h\u{fffd}i",
        "INC-2023-Q4-011 max_connections getUserById std::vector<int> C4996 0x1F",
        "[UNK] and [PAD] inline, [UNK][PAD]x, [unk]",
        "email@example.com https://x.co/y?z=1 $5.00 <html> C++ #hashtag ½ ⅓ ™",
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "ﬁ ﬂ ǅ İstanbul ΣΊΣΥΦΟΣ",
        "😀🚀 emoji only 🇩🇪",
        "\u{0301}leading combining mark and Ω≈ç√∫˜µ≤≥÷",
        "",
        "   ",
    ];

    #[test]
    fn the_ascii_fast_paths_agree_with_the_unicode_tables() {
        for c in (0u8..=127).map(char::from) {
            assert_eq!(
                is_punctuation(c),
                c.is_ascii_punctuation() || c.is_punctuation(),
                "{c:?}"
            );
            assert_eq!(
                is_control(c),
                !matches!(c, '\t' | '\n' | '\r') && c.is_other(),
                "{c:?}"
            );
        }
    }

    #[test]
    fn splits_words_and_punctuation_like_bert() {
        let words: Vec<&str> = pre_tokenize("a.b, (c)  d-e").collect();
        assert_eq!(words, ["a", ".", "b", ",", "(", "c", ")", "d", "-", "e"]);
        assert_eq!(normalize("Ça\u{0301}Va 中文"), "cava  中  文 ");
    }

    #[test]
    fn matches_the_tokenizers_crate_on_tricky_text() {
        let reference =
            tokenizers::Tokenizer::from_bytes(include_bytes!("../../assets/model/tokenizer.json"))
                .unwrap();
        let ours = WordPiece::bundled();
        let long_word = "x".repeat(MAX_INPUT_CHARS_PER_WORD + 1);
        for text in TRICKY.iter().copied().chain([long_word.as_str()]) {
            let expected = reference.encode(text, false).unwrap().get_ids().to_vec();
            let mut ids = Vec::new();
            ours.encode(text, &mut ids);
            assert_eq!(ids, expected, "{text:?}");
        }
    }
}
