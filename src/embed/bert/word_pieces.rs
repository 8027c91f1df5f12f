//! A WordPiece model for the `tokenizers` pipeline that reads its
//! vocabulary in one pass, with no allocation per entry.
//!
//! `tokenizers`' own `WordPiece` keeps its vocabulary as two hash maps of
//! owned strings (token → id and id → token): reading all-MiniLM-L6-v2's
//! 30,522 entries allocates 61,000 strings and took 15–20 ms of a
//! one-shot search, longer than the forward pass. Here every entry's text
//! lies end to end in one `String`, found through an open-addressing
//! table of entry numbers; the entries that continue a word (`##…`) are
//! found without their prefix in a second table, so a lookup never builds
//! a string. Tokenizing is greedy longest-match-first, as BERT's WordPiece
//! is defined and as the crate runs it: a word of more characters than
//! `max_input_chars_per_word`, or one with a part no entry matches, is one
//! unknown token. The normalizer, pre-tokenizer, post-processor and added
//! tokens stay the crate's; a test holds the result to the crate's
//! `WordPiece`, id for id.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use tokenizers::models::wordpiece::WordPieceTrainer;
use tokenizers::{Model, Token};

/// A WordPiece vocabulary and its settings.
pub(super) struct WordPieces {
    /// Every entry's text, end to end.
    text: String,
    /// Per entry: where its text lies in `text`, and its id.
    entries: Vec<Entry>,
    /// Entry numbers by their text's hash.
    whole: Table,
    /// Entry numbers of the entries that start with `prefix`, by the hash
    /// of their text after it.
    continuing: Table,
    unk_token: String,
    prefix: String,
    max_input_chars_per_word: usize,
}

#[derive(Clone, Copy)]
struct Entry {
    start: u32,
    end: u32,
    id: u32,
}

impl Entry {
    /// Where its text lies.
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// An open-addressing table (linear probing) of entry numbers.
struct Table {
    slots: Vec<u32>,
}

/// An empty slot.
const EMPTY: u32 = u32::MAX;

impl Table {
    /// A table for up to `entries` entries, at most half full.
    fn with_room_for(entries: usize) -> Self {
        Self {
            slots: vec![EMPTY; (entries * 2).next_power_of_two().max(2)],
        }
    }

    /// The entry whose key (`key_of`) is `key`, or the empty slot where
    /// it would go.
    fn slot<'k>(&self, key: &str, key_of: impl Fn(u32) -> &'k str) -> usize {
        let mask = self.slots.len() - 1;
        let mut slot = xxhash_rust::xxh3::xxh3_64(key.as_bytes()) as usize & mask;
        loop {
            let entry = self.slots[slot];
            if entry == EMPTY || key_of(entry) == key {
                return slot;
            }
            slot = (slot + 1) & mask;
        }
    }
}

impl WordPieces {
    /// The text of entry `e`.
    fn text_of(&self, e: u32) -> &str {
        &self.text[self.entries[e as usize].range()]
    }

    /// The id of the entry whose whole text is `token`.
    fn whole_id(&self, token: &str) -> Option<u32> {
        let e = self.whole.slots[self.whole.slot(token, |e| self.text_of(e))];
        (e != EMPTY).then(|| self.entries[e as usize].id)
    }

    /// The id of the entry `prefix` + `rest`.
    fn continuing_id(&self, rest: &str) -> Option<u32> {
        let after_prefix = |e| &self.text_of(e)[self.prefix.len()..];
        let e = self.continuing.slots[self.continuing.slot(rest, after_prefix)];
        (e != EMPTY).then(|| self.entries[e as usize].id)
    }

    /// The one unknown token standing for all of `word`.
    fn unknown(&self, word: &str) -> tokenizers::Result<Vec<Token>> {
        let id = self.whole_id(&self.unk_token).ok_or_else(|| {
            format!(
                "the unknown token {:?} is not in the vocabulary",
                self.unk_token
            )
        })?;
        Ok(vec![Token::new(
            id,
            self.unk_token.clone(),
            (0, word.len()),
        )])
    }
}

impl Model for WordPieces {
    type Trainer = WordPieceTrainer;

    fn tokenize(&self, word: &str) -> tokenizers::Result<Vec<Token>> {
        if word.chars().count() > self.max_input_chars_per_word {
            return self.unknown(word);
        }
        let mut tokens = Vec::new();
        let mut start = 0;
        while start < word.len() {
            // The longest piece from `start` the vocabulary holds.
            let mut end = word.len();
            let found = loop {
                let piece = &word[start..end];
                let id = match start {
                    0 => self.whole_id(piece),
                    _ => self.continuing_id(piece),
                };
                if let Some(id) = id {
                    break Some(id);
                }
                match piece.char_indices().next_back() {
                    Some((last, _)) if last > 0 => end = start + last,
                    _ => break None,
                }
            };
            let Some(id) = found else {
                return self.unknown(word);
            };
            let value = match start {
                0 => word[..end].to_string(),
                _ => format!("{}{}", self.prefix, &word[start..end]),
            };
            tokens.push(Token::new(id, value, (start, end)));
            start = end;
        }
        Ok(tokens)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.whole_id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        let e = self.entries.iter().position(|entry| entry.id == id)?;
        Some(self.text_of(e as u32).to_string())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        let ids = self.entries.iter().map(|entry| entry.id);
        (0..self.entries.len() as u32)
            .map(|e| self.text_of(e).to_string())
            .zip(ids)
            .collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.entries.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("memidx's WordPiece vocabulary is read-only".into())
    }

    fn get_trainer(&self) -> WordPieceTrainer {
        WordPieceTrainer::builder().build()
    }
}

/// A `tokenizer.json` WordPiece model as it is stored. `type` is optional
/// (files before it was written have none) and must be `WordPiece`; every
/// other field is required.
#[derive(Deserialize)]
pub(super) struct StoredWordPiece {
    #[serde(rename = "type", default)]
    _kind: Option<WordPieceTag>,
    unk_token: String,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    vocab: StoredVocab,
}

/// The only `type` read here.
#[derive(Deserialize)]
enum WordPieceTag {
    WordPiece,
}

impl From<StoredWordPiece> for WordPieces {
    fn from(stored: StoredWordPiece) -> Self {
        let StoredVocab {
            text,
            entries: listed,
        } = stored.vocab;
        let prefix = stored.continuing_subword_prefix;
        let text_of = |entries: &[Entry], e: u32| &text[entries[e as usize].range()];
        // A text listed twice keeps its last id, as a map read from JSON does.
        let mut whole = Table::with_room_for(listed.len());
        let mut entries: Vec<Entry> = Vec::with_capacity(listed.len());
        for entry in listed {
            let slot = whole.slot(&text[entry.range()], |e| text_of(&entries, e));
            match whole.slots[slot] {
                EMPTY => {
                    whole.slots[slot] = entries.len() as u32;
                    entries.push(entry);
                }
                kept => entries[kept as usize].id = entry.id,
            }
        }
        let mut continuing = Table::with_room_for(entries.len());
        for e in 0..entries.len() as u32 {
            if let Some(rest) = text_of(&entries, e).strip_prefix(prefix.as_str()) {
                let slot = continuing.slot(rest, |other| &text_of(&entries, other)[prefix.len()..]);
                continuing.slots[slot] = e;
            }
        }
        Self {
            text,
            entries,
            whole,
            continuing,
            unk_token: stored.unk_token,
            prefix,
            max_input_chars_per_word: stored.max_input_chars_per_word,
        }
    }
}

/// A vocabulary read from its JSON object: the texts end to end, each
/// entry's place and id.
struct StoredVocab {
    text: String,
    entries: Vec<Entry>,
}

impl<'de> Deserialize<'de> for StoredVocab {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(VocabVisitor)
    }
}

struct VocabVisitor;

impl<'de> Visitor<'de> for VocabVisitor {
    type Value = StoredVocab;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of tokens to ids")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StoredVocab, A::Error> {
        let mut vocab = StoredVocab {
            text: String::new(),
            entries: Vec::with_capacity(map.size_hint().unwrap_or(0)),
        };
        while let Some(()) = map.next_key_seed(AppendTo(&mut vocab.text))? {
            let id: u32 = map.next_value()?;
            let end = u32::try_from(vocab.text.len())
                .map_err(|_| de::Error::custom("a vocabulary over 4 GiB"))?;
            let start = vocab.entries.last().map_or(0, |e| e.end);
            vocab.entries.push(Entry { start, end, id });
        }
        Ok(vocab)
    }
}

/// Reads a string by appending it to a `String`.
struct AppendTo<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendTo<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for AppendTo<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a token")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.0.push_str(s);
        Ok(())
    }
}
