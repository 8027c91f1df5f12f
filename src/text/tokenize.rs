//! The identifier-aware tokenizer behind the BM25 list.
//!
//! One [`Analyzer`] turns both documents (at index time) and queries (at
//! search time) into terms, so the two sides always agree on what a term is.
//! Notes about code are full of identifiers (`max_connections`,
//! `getUserById`, `src/lists/sparse.rs`, `INC-2023-Q4-011`), and a user may
//! search for either the exact identifier or one of its words. So each
//! identifier is emitted twice over: once whole, for exact matches, and once
//! per part, for partial ones.
//!
//! # Rules in brief
//!
//! - Text is cut into words by the Unicode word boundaries of UAX #29 and
//!   lowercased with full Unicode lowercasing.
//! - An **identifier** is a run of alphanumeric words joined by one of
//!   `- _ . / : @`, where each joiner sits directly between two alphanumeric
//!   characters (so `--max-retries` gives `max-retries`, and a sentence-final
//!   `.` joins nothing), or a single word with an internal case change
//!   (`getUserById`, `HTTPServer`; a letter next to a digit is not a change,
//!   so `ipv6` and `q4` stay whole). It yields its whole lowercase form, never
//!   stemmed, then its parts, each treated like a plain word except that a
//!   part is never dropped as a stop word. All of them share one position.
//! - A **plain word** is lowercased, loses a trailing possessive `'s`
//!   (whether or not stemming is on, so `user's` finds `user`) and, with
//!   [`Analyzer::elisions`], a leading French, Italian or Catalan elided
//!   article or pronoun (`l'utilisateur` is `utilisateur`, `dell'utente` is
//!   `utente`, as Lucene's elision filter does), is dropped
//!   when it is an English stop word (if enabled), and is stemmed with
//!   Snowball English (if enabled) when it has no digit and no apostrophe.
//!   Contractions stay whole (`don't`), and the typographic apostrophe `’` is
//!   written as `'`.
//! - **CJK** runs (Han, Hiragana, Katakana, Hangul) become overlapping
//!   character bigrams (`東京都` gives `東京` and `京都`); a lone CJK character
//!   is a term of its own.
//! - Punctuation, symbols, emoji (keycaps like `1️⃣` included) and
//!   whitespace emit nothing.
//! - Other scripts written without spaces (Thai, Lao, Khmer, Myanmar) get no
//!   dictionary segmentation: UAX #29 breaks them between letters, and each
//!   letter is a word.
//! - **Unicode forms** (with [`Analyzer::normalize`]): a word is brought to
//!   NFKC before lowercasing, so a word typed in NFC finds the same word
//!   stored decomposed (NFD, as macOS writes names), and ligatures and
//!   fullwidth forms read as their letters (`ﬁle` is `file`, `ｆｕｌｌ` is
//!   `full`); default-ignorable code points (the soft hyphen, zero-width
//!   space, joiners, the BOM) are dropped, and inside a word they no longer
//!   split it (`exam\u{AD}ple` is `example`).
//! - **Accent folding** (with [`Analyzer::fold`]): a word or part with Latin
//!   diacritics or letters such as `ß`, `æ`, `ø` also emits its folded form at
//!   the same position (`Zürich` gives `zürich` and `zurich`, `Straße` gives
//!   `straße` and `strasse`), like Lucene's ASCII folding filter with
//!   `preserve_original`. The query is folded the same way, so `zurich` finds
//!   `Zürich`, while `Zürich` matches a stored `Zürich` on both forms and so
//!   ranks it above a stored `Zurich`. Other scripts are not folded.
//! - **Long terms**: with [`Analyzer::normalize`], a term longer than
//!   [`LONG_TERM_BYTES`] (128) bytes is cut to that length at a character
//!   boundary (a SHA-512 in hex fits whole; a longer identifier, base64 run
//!   or path is found by itself, and by anything sharing its first 128
//!   bytes). Without it (indexes built before these rules) no term is longer
//!   than 64 bytes: a longer whole identifier emits only its parts, a longer
//!   word or part is dropped. The work is linear in the size of the input,
//!   so hostile input stays cheap.
//!
//! Every source word, identifier and CJK unit takes one position, whether or
//! not it emits a term, so a dropped stop word leaves a gap the way Lucene's
//! stop filter does.
//!
//! # Crates
//!
//! - `unicode-segmentation` provides the UAX #29 word boundaries (the same
//!   rules Lucene's standard tokenizer follows) and grapheme clusters, which
//!   keep combining accents attached to their letters.
//! - `unicode-normalization` provides NFKC, and the NFD and combining-mark
//!   test that accent folding strips diacritics with.
//! - `rust-stemmers` provides the Snowball English stemmer, so `connections`
//!   and `connection` meet at `connect`. Words repeat (a few thousand
//!   make up most of any text), so each thread keeps the stems it has
//!   found, in a bounded `rustc-hash` map, and stems a word once rather
//!   than at every occurrence.

use std::cell::RefCell;
use std::ops::Range;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_segmentation::UnicodeSegmentation;

/// The longest term, in bytes, of an analyzer without [`Analyzer::normalize`]:
/// longer terms are dropped.
const MAX_TERM_BYTES: usize = 64;

/// The longest term, in bytes, of an analyzer with [`Analyzer::normalize`]:
/// longer terms are cut to it.
pub const LONG_TERM_BYTES: usize = 128;

/// Characters that join two alphanumeric words into one identifier.
const JOINERS: [char; 6] = ['-', '_', '.', '/', ':', '@'];

/// How many words a thread's stem cache holds before it starts afresh.
const STEM_CACHE_WORDS: usize = 1 << 14;

thread_local! {
    /// This thread's stems, by the lowercase word they were found for.
    static STEMS: RefCell<FxHashMap<Box<str>, Box<str>>> = RefCell::default();
}

/// The Snowball English stem of `word`, from this thread's cache when it
/// has stemmed `word` before.
fn stem(stemmer: &Stemmer, word: &str) -> String {
    STEMS.with_borrow_mut(|stems| {
        if let Some(stem) = stems.get(word) {
            return stem.to_string();
        }
        let stem = stemmer.stem(word).into_owned();
        if stems.len() >= STEM_CACHE_WORDS {
            stems.clear();
        }
        stems.insert(word.into(), stem.as_str().into());
        stem
    })
}

/// Lucene's English stop set, sorted for binary search.
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// One emitted term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The normalized term (lowercase; stemmed where the rules say).
    pub text: String,
    /// Start of the byte range in the input this term came from (a part of an
    /// identifier points at its own sub-range).
    pub offset_from: usize,
    /// End (exclusive) of the byte range in the input this term came from.
    pub offset_to: usize,
    /// Word position (0-based, one per source word/identifier; an
    /// identifier's whole form and its parts share the position).
    pub position: usize,
    /// Whether this is the accent-folded form of the term before it (see
    /// [`Analyzer::fold`]): same position, same source range.
    pub folded: bool,
}

/// Settings; `Default` = every rule on.
///
/// An index records the settings it was built with (they are serialized into
/// its manifest), because queries must be tokenized the same way. The Unicode
/// rules came later: a manifest without them reads as both off, so an older
/// index is searched exactly the way it was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Analyzer {
    /// Reduce purely alphabetic words and parts to their Snowball English stem.
    pub stem: bool,
    /// Drop plain words that are in Lucene's English stop set.
    pub stop_words: bool,
    /// Bring words to NFKC, drop default-ignorable code points, and cut
    /// terms over [`LONG_TERM_BYTES`] instead of dropping those over 64.
    #[serde(default)]
    pub normalize: bool,
    /// Also emit the accent-folded form of Latin words and parts.
    #[serde(default)]
    pub fold: bool,
    /// Split a French, Italian or Catalan elided article or pronoun off the
    /// word it is joined to (`l'utilisateur` is `utilisateur`).
    #[serde(default)]
    pub elisions: bool,
}

impl Default for Analyzer {
    fn default() -> Self {
        Self {
            stem: true,
            stop_words: true,
            normalize: true,
            fold: true,
            elisions: true,
        }
    }
}

impl Analyzer {
    /// Tokenizes `text` into terms (order: source order; for an identifier,
    /// the whole form first, then its parts).
    #[must_use]
    pub fn tokenize(&self, text: &str) -> Vec<Token> {
        let mut builder = TokenBuilder::new(text, *self);
        if self.normalize {
            let mut joiner = IgnorableJoiner::default();
            let mut accept = |piece| builder.accept(piece);
            for_each_piece(text, |piece| joiner.accept(text, piece, &mut accept));
            joiner.finish(&mut accept);
        } else {
            for_each_piece(text, |piece| builder.accept(piece));
        }
        builder.finish()
    }

    /// Convenience: just the term strings.
    #[must_use]
    pub fn terms(&self, text: &str) -> Vec<String> {
        self.tokenize(text)
            .into_iter()
            .map(|token| token.text)
            .collect()
    }
}

/// A byte range of the input, classified. Consecutive pieces cover the input
/// with no gaps and no overlaps.
#[derive(Debug)]
enum Piece {
    /// A maximal run of alphanumeric (non-CJK) grapheme clusters inside one
    /// UAX #29 word, possibly with apostrophes between them (`don't`).
    Word(Range<usize>),
    /// One CJK grapheme cluster.
    Cjk(Range<usize>),
    /// Anything else: whitespace, punctuation, symbols, emoji.
    Gap(Range<usize>),
}

/// What a grapheme cluster is, judged by its first character; a cluster with
/// an emoji presentation mark (the keycap `1️⃣`) is an emoji, so `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GraphemeKind {
    Alphanumeric,
    Cjk,
    Apostrophe,
    Other,
}

impl GraphemeKind {
    fn of(grapheme: &str) -> Self {
        if grapheme.contains(['\u{FE0F}', '\u{20E3}']) {
            return Self::Other;
        }
        match grapheme.chars().next() {
            Some(c) if is_cjk(c) => Self::Cjk,
            Some(c) if c.is_alphanumeric() => Self::Alphanumeric,
            Some(c) if is_apostrophe(c) => Self::Apostrophe,
            _ => Self::Other,
        }
    }
}

/// Cuts `text` into pieces, in source order: UAX #29 words first, then each
/// word into grapheme clusters so that internal joiners (`max_connections`
/// is one UAX #29 word) and CJK characters become pieces of their own.
fn for_each_piece(text: &str, mut visit: impl FnMut(Piece)) {
    for (start, segment) in text.split_word_bound_indices() {
        if segment.chars().any(char::is_alphanumeric) {
            split_word_segment(start, segment, &mut visit);
        } else {
            visit(Piece::Gap(start..start + segment.len()));
        }
    }
}

/// Cuts one UAX #29 word (starting at byte `start` of the input) into pieces.
fn split_word_segment(start: usize, segment: &str, visit: &mut impl FnMut(Piece)) {
    if segment.is_ascii() {
        // Fast path: each ASCII character is a grapheme cluster of its own
        // (the one exception, CR LF, never occurs inside a word).
        let characters = (0..segment.len()).map(|offset| (offset, &segment[offset..=offset]));
        split_graphemes(start, characters, visit);
    } else {
        split_graphemes(start, segment.grapheme_indices(true), visit);
    }
}

/// Whether a query word as typed (`raw`) is shaped like an identifier: it
/// mixes letters and digits (`C2664`, `ERR-4471`), joins words with one of
/// the identifier joiners (`max_connections`, `stdafx.h`), changes case
/// inside (`getRandomValues`) or is capitals only, two letters or more
/// (`EADDRINUSE`). What fusion treats as an exact term (see
/// [`crate::fusion`]); a shape, never a list of words.
pub fn looks_like_identifier(raw: &str) -> bool {
    let letters = raw.chars().filter(|c| c.is_alphabetic()).count();
    let digits = raw.chars().any(char::is_numeric);
    let joined = raw
        .char_indices()
        .any(|(i, c)| JOINERS.contains(&c) && i > 0 && i + c.len_utf8() < raw.len());
    let mut classes = raw.chars().filter(|c| c.is_alphabetic()).map(CaseClass::of);
    let mut previous = classes.next();
    let case_change = classes.any(|class| {
        let change = previous == Some(CaseClass::Lower) && class == CaseClass::Upper;
        previous = Some(class);
        change
    });
    let capitals = letters >= 2
        && raw
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase);
    (letters > 0 && digits) || joined || case_change || capitals
}

/// Groups the grapheme clusters of one UAX #29 word, given with their byte
/// offsets in it, into pieces: runs of alphanumeric clusters (and the
/// apostrophes between them) become words, everything else a piece of its
/// own.
fn split_graphemes<'s>(
    start: usize,
    graphemes: impl Iterator<Item = (usize, &'s str)>,
    visit: &mut impl FnMut(Piece),
) {
    let mut word: Option<Range<usize>> = None;
    let mut graphemes = graphemes.peekable();
    while let Some((offset, grapheme)) = graphemes.next() {
        let range = start + offset..start + offset + grapheme.len();
        let kind = GraphemeKind::of(grapheme);
        let inside_word = match kind {
            GraphemeKind::Alphanumeric => true,
            GraphemeKind::Apostrophe => {
                word.is_some()
                    && graphemes.peek().is_some_and(|&(_, next)| {
                        GraphemeKind::of(next) == GraphemeKind::Alphanumeric
                    })
            }
            GraphemeKind::Cjk | GraphemeKind::Other => false,
        };
        if inside_word {
            word = Some(word.map_or(range.clone(), |w| w.start..range.end));
            continue;
        }
        if let Some(w) = word.take() {
            visit(Piece::Word(w));
        }
        visit(match kind {
            GraphemeKind::Cjk => Piece::Cjk(range),
            _ => Piece::Gap(range),
        });
    }
    if let Some(w) = word {
        visit(Piece::Word(w));
    }
}

/// Whether `c` is a Han, Hiragana, Katakana or Hangul letter or number
/// (the marks and punctuation of those blocks, like `・`, are not).
fn is_cjk(c: char) -> bool {
    let in_cjk_block = matches!(c,
        '\u{1100}'..='\u{11FF}'       // Hangul Jamo
        | '\u{3005}'..='\u{3007}'     // 々 〆 〇
        | '\u{3021}'..='\u{3029}'     // Hangzhou numerals
        | '\u{3031}'..='\u{3035}'     // kana repeat marks
        | '\u{3040}'..='\u{30FF}'     // Hiragana, Katakana
        | '\u{3130}'..='\u{318F}'     // Hangul Compatibility Jamo
        | '\u{31F0}'..='\u{31FF}'     // Katakana Phonetic Extensions
        | '\u{3400}'..='\u{4DBF}'     // CJK Unified Ideographs Extension A
        | '\u{4E00}'..='\u{9FFF}'     // CJK Unified Ideographs
        | '\u{A960}'..='\u{A97F}'     // Hangul Jamo Extended-A
        | '\u{AC00}'..='\u{D7FF}'     // Hangul Syllables, Hangul Jamo Extended-B
        | '\u{F900}'..='\u{FAFF}'     // CJK Compatibility Ideographs
        | '\u{FF66}'..='\u{FFDC}'     // halfwidth Katakana and Hangul
        | '\u{1B000}'..='\u{1B16F}'   // Kana Supplement and Extended-A
        | '\u{20000}'..='\u{3FFFF}'   // CJK Unified Ideographs Extensions B and later
    );
    in_cjk_block && c.is_alphanumeric()
}

/// The case class of one alphanumeric character, for finding case changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CaseClass {
    Upper,
    Lower,
    Digit,
    /// A letter without case (Arabic, Hebrew, ...).
    Uncased,
}

impl CaseClass {
    fn of(c: char) -> Self {
        if c.is_uppercase() {
            Self::Upper
        } else if c.is_lowercase() {
            Self::Lower
        } else if c.is_numeric() {
            Self::Digit
        } else {
            Self::Uncased
        }
    }
}

/// Whether a new camelCase part starts at an uppercase character `current`,
/// given the alphanumeric characters around it: after a lowercase letter
/// (`getUser`), or after an uppercase letter or a digit when at least two
/// lowercase letters follow (`HTTPServer`, `JSON2Text`). Requiring two keeps
/// plural acronyms and version tags whole: `URLs`, `IDs`, `IPv6`.
fn starts_case_part(previous: CaseClass, current: CaseClass, next: [Option<CaseClass>; 2]) -> bool {
    const LOWER: Option<CaseClass> = Some(CaseClass::Lower);
    current == CaseClass::Upper
        && (previous == CaseClass::Lower
            || (matches!(previous, CaseClass::Upper | CaseClass::Digit) && next == [LOWER, LOWER]))
}

/// Appends to `parts` the byte ranges of the camelCase parts of the word at
/// `range` of `text` (the whole range when it has no case change). Marks
/// stay with the letter before them; no part starts or is looked ahead
/// across an apostrophe (`O'Neil` is one part).
fn split_case(text: &str, range: Range<usize>, parts: &mut Vec<Range<usize>>) {
    let word = &text[range.clone()];
    // Each alphanumeric character with its case class; `None` for an apostrophe.
    let mut classes = word.char_indices().filter_map(|(offset, c)| {
        if c.is_alphanumeric() {
            Some((offset, Some(CaseClass::of(c))))
        } else if is_apostrophe(c) {
            Some((offset, None))
        } else {
            None
        }
    });
    let mut part_start = 0;
    let mut previous: Option<CaseClass> = None;
    while let Some((offset, class)) = classes.next() {
        let Some(current) = class else {
            previous = None;
            continue;
        };
        let mut ahead = classes.clone().map(|(_, class)| class);
        let next = ahead.next().flatten();
        let after_next = next.and_then(|_| ahead.next().flatten());
        if previous.is_some_and(|p| starts_case_part(p, current, [next, after_next])) {
            parts.push(range.start + part_start..range.start + offset);
            part_start = offset;
        }
        previous = Some(current);
    }
    parts.push(range.start + part_start..range.end);
}

/// The ASCII apostrophe or the typographic one (`’`).
fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}')
}

/// Whether `gap` is exactly one joiner character.
fn is_joiner(gap: &str) -> bool {
    let mut chars = gap.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if JOINERS.contains(&c))
}

/// Lowercases with full Unicode rules and writes the typographic apostrophe
/// `’` as `'`, so `don’t` and `don't` are the same term; with `normalize`,
/// first drops default-ignorable code points and brings the text to NFKC.
fn normalize_case(raw: &str, normalize: bool) -> String {
    let lower = if normalize && !raw.is_ascii() {
        let visible = raw.chars().filter(|&c| !is_default_ignorable(c));
        visible.nfkc().collect::<String>().to_lowercase()
    } else {
        raw.to_lowercase()
    };
    if lower.contains('\u{2019}') {
        lower.replace('\u{2019}', "'")
    } else {
        lower
    }
}

/// Whether `c` is a default-ignorable code point (Unicode's
/// `Default_Ignorable_Code_Point`): invisible, so it must not change or
/// split a word. The soft hyphen, zero-width space and joiners, bidi
/// marks, the word joiner, variation selectors and the BOM among them.
fn is_default_ignorable(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// The accent-folded form of a lowercase word, when it differs: Latin
/// letters lose their diacritics (`é` → `e`, `ṩ` → `s`), and the Latin
/// letters that are not a base letter plus marks are spelled out (`ß` →
/// `ss`, `æ` → `ae`, `œ` → `oe`, `ø` → `o`, `đ`/`ð` → `d`, `ł` → `l`, `þ` →
/// `th`, `ı` → `i`, `ħ` → `h`, `ŧ` → `t`). Marks on letters of other scripts
/// are kept: they often make a different letter there (Cyrillic `й`).
fn fold_latin(word: &str) -> Option<String> {
    if word.is_ascii() {
        return None;
    }
    let mut folded = String::with_capacity(word.len());
    let mut after_latin = false;
    for c in word.nfd() {
        if is_combining_mark(c) {
            if !after_latin {
                folded.push(c);
            }
            continue;
        }
        after_latin = is_latin(c);
        match c {
            'ß' => folded.push_str("ss"),
            'æ' => folded.push_str("ae"),
            'œ' => folded.push_str("oe"),
            'þ' => folded.push_str("th"),
            'ø' => folded.push('o'),
            'đ' | 'ð' => folded.push('d'),
            'ł' => folded.push('l'),
            'ı' => folded.push('i'),
            'ħ' => folded.push('h'),
            'ŧ' => folded.push('t'),
            _ => folded.push(c),
        }
    }
    let folded: String = folded.nfc().collect();
    (folded != word).then_some(folded)
}

/// Whether `c` is a letter of the Latin script's blocks (ASCII, Latin-1,
/// Extended-A and -B, IPA, Extended Additional, -C, -D).
fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c,
            '\u{00C0}'..='\u{02AF}' | '\u{1E00}'..='\u{1EFF}' | '\u{2C60}'..='\u{2C7F}'
            | '\u{A720}'..='\u{A7FF}')
}

/// `term` cut to its first `max` bytes, at a character boundary.
fn cut_to(mut term: String, max: usize) -> String {
    if term.len() > max {
        let end = (0..=max)
            .rev()
            .find(|&i| term.is_char_boundary(i))
            .unwrap_or(0);
        term.truncate(end);
    }
    term
}

/// `user's` becomes `user`; anything else is unchanged.
fn strip_possessive(word: &str) -> &str {
    match word.strip_suffix("'s") {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => word,
    }
}

/// The elided articles and pronouns of French, Italian and Catalan (the
/// sets of Lucene's `ElisionFilter` for those languages), lowercase.
const ELIDED: &[&str] = &[
    "c", "d", "j", "l", "m", "n", "s", "t", "v", "qu", "jusqu", "quoiqu", "lorsqu", "puisqu",
    "all", "dall", "dell", "nell", "sull", "coll", "pell", "gl", "agl", "dagl", "degl", "negl",
    "sugl", "un",
];

/// The length in bytes of the elided article or pronoun a lowercase word
/// opens with, apostrophe included (`l'` of `l'utilisateur`, `dell'` of
/// `dell'applicazione`), or 0: the split Lucene's `ElisionFilter` makes, so
/// the word after it is found by itself.
fn elision_len(word: &str) -> usize {
    match word.split_once('\'') {
        Some((article, rest)) if !rest.is_empty() && ELIDED.contains(&article) => article.len() + 1,
        _ => 0,
    }
}

/// Whether a normalized word may be stemmed: it has no digit and no
/// apostrophe, so it is letters (with their combining marks) only.
fn is_alphabetic_word(word: &str) -> bool {
    !word.chars().any(|c| c.is_numeric() || c == '\'')
}

/// Whether a normalized (lowercase) word is in Lucene's English stop set:
/// a word the sparse list drops, and one that says nothing of what a query
/// is about.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// How a piece of text becomes a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A plain word: possessive stripped, stop words dropped (when enabled), stemmed.
    Word,
    /// An identifier part: like a word, but never dropped as a stop word.
    Part,
    /// An identifier's whole form: lowercase only.
    Whole,
}

/// The terms of one piece of text: its own and, when accent folding changes
/// it, the folded one (at most two, at one position).
type Terms = [Option<String>; 2];

/// Normalizes words and identifier parts under one [`Analyzer`]'s settings.
struct Normalizer {
    analyzer: Analyzer,
    stemmer: Stemmer,
}

impl Normalizer {
    /// The terms for `raw` taken as `form`, with its folded term when
    /// folding is on and changes it.
    fn terms(&self, raw: &str, form: Form) -> Terms {
        let lower = normalize_case(raw, self.analyzer.normalize);
        let folded = self.analyzer.fold.then(|| fold_latin(&lower)).flatten();
        let exact = self.term(lower, form);
        let folded = folded
            .and_then(|folded| self.term(folded, form))
            .filter(|folded| exact.as_ref() != Some(folded));
        [exact, folded]
    }

    /// The term for a lowercase `word` taken as `form`, or `None` when it is
    /// a stop word (or, without [`Analyzer::normalize`], too long).
    fn term(&self, mut lower: String, form: Form) -> Option<String> {
        if form == Form::Whole {
            return self.bounded(lower);
        }
        let elided = match self.analyzer.elisions {
            true => elision_len(&lower),
            false => 0,
        };
        let word = strip_possessive(&lower[elided..]);
        let drop_stop_words = form == Form::Word && self.analyzer.stop_words;
        if (!self.analyzer.normalize && word.len() > MAX_TERM_BYTES)
            || (drop_stop_words && is_stop_word(word))
        {
            return None;
        }
        if self.analyzer.stem && is_alphabetic_word(word) {
            return self.bounded(stem(&self.stemmer, word));
        }
        // The elision is a prefix and the possessive a suffix of `lower`.
        lower.truncate(elided + word.len());
        lower.drain(..elided);
        self.bounded(lower)
    }

    /// The term for a CJK unit (one character or a bigram).
    fn cjk(&self, raw: &str) -> Option<String> {
        if self.analyzer.normalize {
            let visible = raw.chars().filter(|&c| !is_default_ignorable(c));
            self.bounded(visible.nfkc().collect())
        } else {
            self.bounded(raw.to_owned())
        }
    }

    /// `term` within the length bound: cut to [`LONG_TERM_BYTES`] with
    /// [`Analyzer::normalize`], else dropped when over [`MAX_TERM_BYTES`]
    /// (e.g. a CJK bigram of graphemes carrying long joiner sequences).
    fn bounded(&self, term: String) -> Option<String> {
        if self.analyzer.normalize {
            Some(cut_to(term, LONG_TERM_BYTES)).filter(|term| !term.is_empty())
        } else {
            (term.len() <= MAX_TERM_BYTES).then_some(term)
        }
    }
}

/// Drops the gaps made only of default-ignorable code points, and joins a
/// word and the word right after such a gap into one word piece, so an
/// invisible character never splits a word: `exam\u{AD}ple` (a soft hyphen,
/// its own grapheme) and `exam\u{200B}ple` (a zero-width space, where UAX #29
/// cuts) are `example`, and `max\u{AD}_conn` is still an identifier.
#[derive(Debug, Default)]
struct IgnorableJoiner {
    /// A word piece not passed on yet.
    word: Option<Range<usize>>,
    /// Whether an ignorable gap came right after `word`.
    after_ignorable: bool,
}

impl IgnorableJoiner {
    /// Takes the next piece of `text`, passing on to `out` what is settled.
    fn accept(&mut self, text: &str, piece: Piece, out: &mut impl FnMut(Piece)) {
        match piece {
            Piece::Word(range) => {
                let joined = match self.word.take() {
                    Some(word) if self.after_ignorable => word.start..range.end,
                    pending => {
                        pending.into_iter().for_each(|word| out(Piece::Word(word)));
                        range
                    }
                };
                self.word = Some(joined);
                self.after_ignorable = false;
            }
            Piece::Gap(range) if text[range.clone()].chars().all(is_default_ignorable) => {
                self.after_ignorable = self.word.is_some();
            }
            other => {
                self.finish(out);
                out(other);
            }
        }
    }

    /// Passes on what is still pending.
    fn finish(&mut self, out: &mut impl FnMut(Piece)) {
        self.word
            .take()
            .into_iter()
            .for_each(|word| out(Piece::Word(word)));
        self.after_ignorable = false;
    }
}

/// Turns the stream of pieces into tokens: groups word pieces into
/// identifiers and CJK pieces into bigrams.
struct TokenBuilder<'a> {
    text: &'a str,
    normalizer: Normalizer,
    tokens: Vec<Token>,
    /// Position of the next source word, identifier or CJK unit.
    position: usize,
    /// Word pieces of the identifier being assembled, in order.
    group: Vec<Range<usize>>,
    /// Whether a joiner directly follows the last piece of `group`, so the
    /// next piece, if it is a word, continues the identifier.
    joiner_pending: bool,
    /// Case parts of `group`, rebuilt at each flush (kept to reuse its buffer).
    parts: Vec<Range<usize>>,
    /// The last character of the current CJK run.
    cjk_last: Option<Range<usize>>,
    /// Whether the current CJK run has emitted a bigram yet.
    cjk_emitted_bigram: bool,
}

impl<'a> TokenBuilder<'a> {
    fn new(text: &'a str, analyzer: Analyzer) -> Self {
        Self {
            text,
            normalizer: Normalizer {
                analyzer,
                stemmer: Stemmer::create(Algorithm::English),
            },
            tokens: Vec::new(),
            position: 0,
            group: Vec::new(),
            joiner_pending: false,
            parts: Vec::new(),
            cjk_last: None,
            cjk_emitted_bigram: false,
        }
    }

    /// Takes the next piece of the input.
    fn accept(&mut self, piece: Piece) {
        match piece {
            Piece::Word(range) => {
                self.flush_cjk();
                if self.joiner_pending {
                    // `a-b`: the joiner sits between two words, the identifier goes on.
                    self.joiner_pending = false;
                } else {
                    self.flush_group();
                }
                self.group.push(range);
            }
            Piece::Gap(range) => {
                self.flush_cjk();
                // One joiner right after a word may continue the identifier;
                // anything else (including a second joiner) ends it.
                if !self.group.is_empty() && !self.joiner_pending && is_joiner(&self.text[range]) {
                    self.joiner_pending = true;
                } else {
                    self.flush_group();
                }
            }
            Piece::Cjk(range) => {
                self.flush_group();
                if let Some(last) = self.cjk_last.take() {
                    let bigram = last.start..range.end;
                    let term = self.normalizer.cjk(&self.text[bigram.clone()]);
                    self.push([term, None], &bigram);
                    self.position += 1;
                    self.cjk_emitted_bigram = true;
                }
                self.cjk_last = Some(range);
            }
        }
    }

    /// Emits whatever is still pending and returns all the tokens.
    fn finish(mut self) -> Vec<Token> {
        self.flush_cjk();
        self.flush_group();
        self.tokens
    }

    /// Ends the current CJK run; a run of one character emits that character.
    fn flush_cjk(&mut self) {
        if let Some(last) = self.cjk_last.take() {
            if !self.cjk_emitted_bigram {
                let term = self.normalizer.cjk(&self.text[last.clone()]);
                self.push([term, None], &last);
                self.position += 1;
            }
            self.cjk_emitted_bigram = false;
        }
    }

    /// Emits the word or identifier assembled in `group`, if any.
    fn flush_group(&mut self) {
        self.joiner_pending = false;
        let (Some(first), Some(last)) = (self.group.first(), self.group.last()) else {
            return;
        };
        let span = first.start..last.end;
        self.parts.clear();
        for piece in &self.group {
            split_case(self.text, piece.clone(), &mut self.parts);
        }
        if self.parts.len() == 1 {
            let terms = self.normalizer.terms(&self.text[span.clone()], Form::Word);
            self.push(terms, &span);
        } else {
            self.push_identifier(span);
        }
        self.group.clear();
        self.position += 1;
    }

    /// Emits the whole form of the identifier at `span`, then each of its `parts`.
    fn push_identifier(&mut self, span: Range<usize>) {
        let whole = self.normalizer.terms(&self.text[span.clone()], Form::Whole);
        self.push(whole, &span);
        let parts = std::mem::take(&mut self.parts);
        for part in &parts {
            let terms = self.normalizer.terms(&self.text[part.clone()], Form::Part);
            self.push(terms, part);
        }
        self.parts = parts;
    }

    /// Records terms at the current position, all from the input's `range`.
    fn push(&mut self, [exact, folded]: Terms, range: &Range<usize>) {
        let terms = [(exact, false), (folded, true)];
        for (text, folded) in terms.into_iter().filter_map(|(t, f)| Some((t?, f))) {
            self.tokens.push(Token {
                text,
                offset_from: range.start,
                offset_to: range.end,
                position: self.position,
                folded,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&str; 0] = [];

    /// The analyzer of indexes built before the Unicode rules.
    const LEGACY: Analyzer = Analyzer {
        stem: true,
        stop_words: true,
        normalize: false,
        fold: false,
        elisions: false,
    };

    /// Terms under the default analyzer (stemming and stop words on).
    fn terms(text: &str) -> Vec<String> {
        Analyzer::default().terms(text)
    }

    /// Terms with stemming and stop words both off.
    fn raw_terms(text: &str) -> Vec<String> {
        Analyzer {
            stem: false,
            stop_words: false,
            ..Analyzer::default()
        }
        .terms(text)
    }

    /// `(term, source substring, position)` for every token.
    fn spans(text: &str) -> Vec<(String, &str, usize)> {
        Analyzer::default()
            .tokenize(text)
            .into_iter()
            .map(|t| (t.text, &text[t.offset_from..t.offset_to], t.position))
            .collect()
    }

    // --- The public API ---

    #[test]
    fn default_turns_every_rule_on() {
        assert_eq!(
            Analyzer::default(),
            Analyzer {
                stem: true,
                stop_words: true,
                normalize: true,
                fold: true,
                elisions: true,
            }
        );
    }

    #[test]
    fn settings_round_trip_through_json() {
        let analyzer = Analyzer {
            stem: false,
            stop_words: true,
            normalize: true,
            fold: false,
            elisions: false,
        };
        let json = serde_json::to_string(&analyzer).expect("serializes");
        assert_eq!(
            json,
            r#"{"stem":false,"stop_words":true,"normalize":true,"fold":false,"elisions":false}"#
        );
        assert_eq!(serde_json::from_str::<Analyzer>(&json).ok(), Some(analyzer));
    }

    #[test]
    fn settings_from_before_the_unicode_rules_read_as_without_them() {
        let old: Analyzer = serde_json::from_str(r#"{"stem":true,"stop_words":true}"#).unwrap();
        assert_eq!(old, LEGACY);
    }

    #[test]
    fn terms_are_the_texts_of_the_tokens() {
        let text = "getUserById returns the connections";
        let analyzer = Analyzer::default();
        let texts: Vec<String> = analyzer
            .tokenize(text)
            .into_iter()
            .map(|t| t.text)
            .collect();
        assert_eq!(analyzer.terms(text), texts);
    }

    #[test]
    fn tokenizing_is_deterministic() {
        let text = "INC-2023-Q4-011 東京都 getUserById naïve café";
        let analyzer = Analyzer::default();
        assert_eq!(analyzer.tokenize(text), analyzer.tokenize(text));
    }

    // --- Nothing to emit ---

    #[test]
    fn cjk_bigrams_with_long_joiner_runs_stay_bounded() {
        let text = format!("東京都{}", "\u{200d}".repeat(20));
        let terms = Analyzer::default().terms(&text);
        assert_eq!(terms[0], "東京");
        assert!(terms.iter().all(|t| t.len() <= MAX_TERM_BYTES), "{terms:?}");
    }

    #[test]
    fn empty_whitespace_and_punctuation_emit_nothing() {
        assert_eq!(terms(""), NONE);
        assert_eq!(terms(" \t\r\n  \n"), NONE);
        assert_eq!(terms("... -- !? (); [] {} \"' ` ~ * # |"), NONE);
    }

    #[test]
    fn symbols_and_emoji_emit_nothing() {
        assert_eq!(terms("🚀 👍🏽 👨‍👩‍👧 © ™ → ≠ € $ % ^ & ❤️"), NONE);
        assert_eq!(terms("1\u{FE0F}\u{20E3} #\u{FE0F}\u{20E3}"), NONE);
    }

    #[test]
    fn underscore_and_dash_runs_emit_nothing() {
        assert_eq!(terms("___ --- _-_ -_- - _ . / : @"), NONE);
    }

    // --- Plain words ---

    #[test]
    fn plain_words_are_lowercased_and_stemmed() {
        assert_eq!(
            terms("Running QUICKLY through Connections"),
            ["run", "quick", "through", "connect"]
        );
    }

    #[test]
    fn cached_stems_equal_fresh_ones_before_and_after_the_cache_starts_afresh() {
        let stemmer = Stemmer::create(Algorithm::English);
        let words = [
            "connections",
            "running",
            "quickly",
            "databases",
            "généralement",
        ];
        let fresh: Vec<String> = words.iter().map(|w| stemmer.stem(w).into_owned()).collect();
        // The second round is served from the cache.
        for _ in 0..2 {
            let cached: Vec<String> = words.iter().map(|w| stem(&stemmer, w)).collect();
            assert_eq!(cached, fresh);
        }
        // Filling the cache past its bound clears it; stems stay the same.
        for i in 0..=STEM_CACHE_WORDS {
            stem(&stemmer, &format!("word{i}s"));
        }
        STEMS.with_borrow(|stems| assert!(stems.len() <= STEM_CACHE_WORDS));
        let cached: Vec<String> = words.iter().map(|w| stem(&stemmer, w)).collect();
        assert_eq!(cached, fresh);
    }

    #[test]
    fn stemming_off_keeps_the_lowercase_word() {
        let analyzer = Analyzer {
            stem: false,
            ..Analyzer::default()
        };
        assert_eq!(
            analyzer.terms("Running QUICKLY through the Connections"),
            ["running", "quickly", "through", "connections"]
        );
    }

    #[test]
    fn stop_words_are_dropped_when_on() {
        assert_eq!(terms("The cat is on the mat"), ["cat", "mat"]);
        assert_eq!(
            terms("a an and are as at be but by for if in into is it no not of on or"),
            NONE
        );
        assert_eq!(
            terms("such that the their then there these they this to was will with"),
            NONE
        );
    }

    #[test]
    fn stop_words_are_kept_when_off() {
        let analyzer = Analyzer {
            stop_words: false,
            ..Analyzer::default()
        };
        assert_eq!(
            analyzer.terms("The cat is on the mat"),
            ["the", "cat", "is", "on", "the", "mat"]
        );
    }

    #[test]
    fn stop_words_match_case_insensitively() {
        assert_eq!(terms("THE And Of"), NONE);
    }

    #[test]
    fn words_with_digits_are_never_stemmed() {
        assert_eq!(
            terms("504 errors in q4 for 2fa users"),
            ["504", "error", "q4", "2fa", "user"]
        );
    }

    #[test]
    fn letter_digit_mixes_stay_whole() {
        assert_eq!(
            terms("ipv6 utf8 v1 sha256 x86"),
            ["ipv6", "utf8", "v1", "sha256", "x86"]
        );
    }

    #[test]
    fn http_504_is_two_plain_words() {
        assert_eq!(terms("HTTP 504"), ["http", "504"]);
    }

    #[test]
    fn a_capitalized_or_all_caps_word_is_a_plain_word() {
        assert_eq!(terms("Hello HELLO hello"), ["hello", "hello", "hello"]);
        assert_eq!(terms("URLs IDs APIs"), ["url", "id", "api"]);
    }

    // --- Apostrophes ---

    #[test]
    fn contractions_stay_one_unstemmed_word() {
        assert_eq!(
            terms("don't won't rock'n'roll"),
            ["don't", "won't", "rock'n'roll"]
        );
    }

    #[test]
    fn a_possessive_s_is_stripped_before_stemming() {
        assert_eq!(terms("the user's settings"), ["user", "set"]);
        assert_eq!(
            raw_terms("the user's settings"),
            ["the", "user", "settings"]
        );
        assert_eq!(terms("NASA'S budget"), ["nasa", "budget"]);
    }

    #[test]
    fn a_possessive_stop_word_is_still_a_stop_word() {
        assert_eq!(terms("it's here"), ["here"]);
    }

    #[test]
    fn the_typographic_apostrophe_is_the_ascii_one() {
        assert_eq!(terms("don\u{2019}t user\u{2019}s"), ["don't", "user"]);
    }

    #[test]
    fn elided_articles_split_off_before_stemming() {
        assert_eq!(
            terms("l'utilisateur d’accès qu'il dell'applicazione L'API"),
            ["utilisateur", "accè", "acc", "il", "applicazion", "api"]
        );
        // An apostrophe after any other start is a contraction or a name.
        assert_eq!(terms("don't O'Neil s'"), ["don't", "o'neil", "s"]);
        let before = Analyzer {
            elisions: false,
            ..Analyzer::default()
        };
        assert_eq!(before.terms("l'utilisateur"), ["l'utilisateur"]);
    }

    #[test]
    fn apostrophes_outside_words_are_punctuation() {
        assert_eq!(terms("'quoted' users' o'"), ["quot", "user", "o"]);
    }

    #[test]
    fn an_apostrophe_never_starts_a_case_part() {
        assert_eq!(terms("O'Neil"), ["o'neil"]);
    }

    // --- Identifiers joined by punctuation ---

    #[test]
    fn incident_id_is_whole_then_parts() {
        assert_eq!(
            terms("INC-2023-Q4-011"),
            ["inc-2023-q4-011", "inc", "2023", "q4", "011"]
        );
    }

    #[test]
    fn snake_case_parts_follow_the_word_rules() {
        assert_eq!(
            terms("max_connections"),
            ["max_connections", "max", "connect"]
        );
        assert_eq!(
            raw_terms("max_connections"),
            ["max_connections", "max", "connections"]
        );
    }

    #[test]
    fn kebab_case() {
        assert_eq!(
            terms("retry-after-seconds"),
            ["retry-after-seconds", "retri", "after", "second"]
        );
    }

    #[test]
    fn screaming_snake_case() {
        assert_eq!(
            terms("MAX_POOL_SIZE"),
            ["max_pool_size", "max", "pool", "size"]
        );
    }

    #[test]
    fn file_names_and_paths() {
        assert_eq!(terms("pool.rs"), ["pool.rs", "pool", "rs"]);
        assert_eq!(
            terms("src/lists/sparse.rs"),
            ["src/lists/sparse.rs", "src", "list", "spars", "rs"]
        );
        assert_eq!(
            raw_terms("src/lists/sparse.rs"),
            ["src/lists/sparse.rs", "src", "lists", "sparse", "rs"]
        );
    }

    #[test]
    fn versions_and_decimals() {
        assert_eq!(terms("v1.2.3"), ["v1.2.3", "v1", "2", "3"]);
        assert_eq!(terms("3.14"), ["3.14", "3", "14"]);
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(
            terms("2023-10-05 10:30"),
            ["2023-10-05", "2023", "10", "05", "10:30", "10", "30"]
        );
    }

    #[test]
    fn email_address() {
        assert_eq!(
            terms("user@example.com"),
            ["user@example.com", "user", "exampl", "com"]
        );
        assert_eq!(
            raw_terms("user@example.com"),
            ["user@example.com", "user", "example", "com"]
        );
    }

    #[test]
    fn url_scheme_separator_does_not_join() {
        assert_eq!(
            terms("https://github.com/foo/bar?x=1#frag"),
            [
                "https",
                "github.com/foo/bar",
                "github",
                "com",
                "foo",
                "bar",
                "x",
                "1",
                "frag"
            ]
        );
    }

    #[test]
    fn comma_and_hash_are_not_joiners() {
        assert_eq!(raw_terms("1,000 foo#bar"), ["1", "000", "foo", "bar"]);
    }

    #[test]
    fn joiners_only_join_between_alphanumerics() {
        assert_eq!(terms("It is done."), ["done"]);
        assert_eq!(terms("\"word.\""), ["word"]);
        assert_eq!(terms("trailing- -leading"), ["trail", "lead"]);
        assert_eq!(terms(".hidden end_"), ["hidden", "end"]);
        assert_eq!(terms("_private __init__"), ["privat", "init"]);
    }

    #[test]
    fn leading_dashes_of_a_flag_are_dropped() {
        assert_eq!(terms("--max-retries"), ["max-retries", "max", "retri"]);
        assert_eq!(terms("-v"), ["v"]);
    }

    #[test]
    fn doubled_joiners_do_not_join() {
        assert_eq!(raw_terms("a--b x__y p..q"), ["a", "b", "x", "y", "p", "q"]);
    }

    #[test]
    fn spaces_around_a_joiner_do_not_join() {
        assert_eq!(
            raw_terms("foo - bar foo -bar foo- bar"),
            ["foo", "bar", "foo", "bar", "foo", "bar"]
        );
    }

    #[test]
    fn the_whole_form_is_never_stemmed() {
        assert_eq!(
            terms("running_connections"),
            ["running_connections", "run", "connect"]
        );
    }

    #[test]
    fn parts_are_never_dropped_as_stop_words() {
        assert_eq!(terms("the_end"), ["the_end", "the", "end"]);
        assert_eq!(terms("isValid"), ["isvalid", "is", "valid"]);
        assert_eq!(terms("a-b-c"), ["a-b-c", "a", "b", "c"]);
    }

    #[test]
    fn identical_parts_are_all_emitted() {
        assert_eq!(terms("foo_foo"), ["foo_foo", "foo", "foo"]);
    }

    #[test]
    fn an_apostrophe_inside_an_identifier_part() {
        assert_eq!(raw_terms("user's_name"), ["user's_name", "user", "name"]);
    }

    // --- Identifiers by case change ---

    #[test]
    fn camel_case() {
        assert_eq!(
            terms("getUserById"),
            ["getuserbyid", "get", "user", "by", "id"]
        );
    }

    #[test]
    fn pascal_case() {
        assert_eq!(
            terms("UserAccountService"),
            ["useraccountservice", "user", "account", "servic"]
        );
        assert_eq!(
            raw_terms("UserAccountService"),
            ["useraccountservice", "user", "account", "service"]
        );
    }

    #[test]
    fn acronyms_split_before_the_next_capitalized_word() {
        assert_eq!(terms("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(
            terms("XMLHttpRequest"),
            ["xmlhttprequest", "xml", "http", "request"]
        );
        assert_eq!(terms("getHTTP"), ["gethttp", "get", "http"]);
        assert_eq!(terms("getURLs"), ["geturls", "get", "url"]);
    }

    #[test]
    fn letter_digit_transitions_do_not_split() {
        assert_eq!(
            raw_terms("parseJSON2Text"),
            ["parsejson2text", "parse", "json2", "text"]
        );
        assert_eq!(terms("IPv6Address"), ["ipv6address", "ipv6", "address"]);
        assert_eq!(terms("utf8Decode"), ["utf8decode", "utf8", "decod"]);
    }

    #[test]
    fn a_lowercase_prefix_before_capitals() {
        assert_eq!(terms("iOS"), ["ios", "i", "os"]);
    }

    #[test]
    fn camel_case_parts_split_further() {
        assert_eq!(terms("my_getUser"), ["my_getuser", "my", "get", "user"]);
        assert_eq!(
            terms("HttpClient.sendRequest"),
            [
                "httpclient.sendrequest",
                "http",
                "client",
                "send",
                "request"
            ]
        );
    }

    // --- Unicode ---

    #[test]
    fn accented_latin_emits_its_folded_form_too() {
        assert_eq!(
            terms("Café naïve résumé Zürich"),
            [
                "café", "cafe", "naïv", "naiv", "résumé", "resum", "zürich", "zurich"
            ]
        );
        assert_eq!(
            LEGACY.terms("Café naïve résumé"),
            ["café", "naïv", "résumé"]
        );
        // Folded before stemming: `résumés` meets the query `resumes` at `resum`.
        assert_eq!(terms("résumés")[1], terms("resumes")[0]);
    }

    #[test]
    fn folded_forms_share_the_position_and_source_of_their_word() {
        assert_eq!(
            spans("Zürich now"),
            [
                ("zürich".to_owned(), "Zürich", 0),
                ("zurich".to_owned(), "Zürich", 0),
                ("now".to_owned(), "now", 1),
            ]
        );
    }

    #[test]
    fn decomposed_accents_are_composed() {
        let text = "Cafe\u{301} e\u{301}cole";
        assert_eq!(raw_terms(text), ["café", "cafe", "école", "ecole"]);
        assert_eq!(terms("café")[0], terms("cafe\u{301}")[0]);
        assert_eq!(LEGACY.terms("Cafe\u{301}"), ["cafe\u{301}"]);
    }

    #[test]
    fn accented_camel_case() {
        assert_eq!(
            raw_terms("ÉcoleNormale"),
            ["écolenormale", "ecolenormale", "école", "ecole", "normale"]
        );
    }

    #[test]
    fn latin_letters_without_a_base_letter_are_spelled_out() {
        assert_eq!(
            raw_terms("Straße STRASSE"),
            ["straße", "strasse", "strasse"]
        );
        assert_eq!(
            raw_terms("Æther Œuvre Søren Łódź Þing Đà"),
            [
                "æther", "aether", "œuvre", "oeuvre", "søren", "soren", "łódź", "lodz", "þing",
                "thing", "đà", "da"
            ]
        );
        assert_eq!(raw_terms("Việt"), ["việt", "viet"]);
    }

    #[test]
    fn other_scripts_keep_their_marks() {
        assert_eq!(raw_terms("йод Λόγος"), ["йод", "λόγος"]);
        assert_eq!(raw_terms("हिन्दी"), ["हिन्दी"]);
    }

    #[test]
    fn ligatures_and_fullwidth_forms_read_as_their_letters() {
        assert_eq!(terms("ﬁle ｆｕｌｌ ＩＤ"), ["file", "full", "id"]);
        assert_eq!(LEGACY.terms("ﬁle"), ["ﬁle"]);
    }

    #[test]
    fn invisible_characters_neither_change_nor_split_a_word() {
        for text in [
            "exam\u{AD}ple",
            "exam\u{200B}ple",
            "exam\u{200C}ple",
            "exam\u{200D}ple",
            "exam\u{2060}ple",
            "exam\u{FEFF}ple",
            "exam\u{AD}\u{200B}ple",
        ] {
            assert_eq!(terms(text), ["exampl"], "{text:?}");
            assert_eq!(spans(text)[0].1, text, "{text:?}");
        }
        assert_eq!(terms("\u{200B}start end\u{AD}"), ["start", "end"]);
        assert_eq!(terms("max\u{AD}_conn"), ["max_conn", "max", "conn"]);
        assert_eq!(terms("a-\u{200B}b"), ["a-b", "a", "b"]);
        assert_eq!(LEGACY.terms("exam\u{AD}ple"), ["exam", "ple"]);
    }

    #[test]
    fn halfwidth_kana_meet_their_fullwidth_forms() {
        assert_eq!(terms("ｶﾀｶﾅ"), terms("カタカナ"));
    }

    #[test]
    fn greek_lowercases_with_final_sigma() {
        assert_eq!(raw_terms("ΟΔΟΣ Λόγος"), ["οδος", "λόγος"]);
        assert_eq!(raw_terms("ΟΔΟΣ")[0].chars().last(), Some('ς'));
    }

    #[test]
    fn cyrillic() {
        assert_eq!(terms("Привет, МИР!"), ["привет", "мир"]);
    }

    #[test]
    fn cyrillic_identifier() {
        assert_eq!(
            raw_terms("поиск_документов"),
            ["поиск_документов", "поиск", "документов"]
        );
    }

    #[test]
    fn uncased_scripts() {
        assert_eq!(terms("שלום עולם مرحبا"), ["שלום", "עולם", "مرحبا"]);
    }

    #[test]
    fn scripts_without_spaces_outside_cjk_break_between_letters() {
        assert_eq!(terms("ไทย"), ["ไ", "ท", "ย"]);
    }

    #[test]
    fn non_latin_digits_are_digits() {
        assert_eq!(terms("٣٤ ४२"), ["٣٤", "४२"]);
    }

    // --- CJK ---

    #[test]
    fn cjk_runs_become_overlapping_bigrams() {
        assert_eq!(terms("東京都"), ["東京", "京都"]);
        assert_eq!(terms("検索"), ["検索"]);
    }

    #[test]
    fn a_lone_cjk_character_is_itself() {
        assert_eq!(terms("東"), ["東"]);
        assert_eq!(terms("東 京"), ["東", "京"]);
    }

    #[test]
    fn japanese_mixes_kanji_hiragana_and_katakana() {
        assert_eq!(
            terms("日本語のテキスト"),
            ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]
        );
    }

    #[test]
    fn katakana_punctuation_breaks_a_run() {
        assert_eq!(terms("データ・ベース"), ["デー", "ータ", "ベー", "ース"]);
    }

    #[test]
    fn korean_hangul() {
        assert_eq!(terms("한국어 검색"), ["한국", "국어", "검색"]);
    }

    #[test]
    fn cjk_punctuation_breaks_a_run() {
        assert_eq!(terms("東京、大阪。"), ["東京", "大阪"]);
    }

    #[test]
    fn latin_then_cjk_without_a_space() {
        assert_eq!(
            terms("memidx検索ツール"),
            ["memidx", "検索", "索ツ", "ツー", "ール"]
        );
        assert_eq!(terms("abc한국 2023년"), ["abc", "한국", "2023", "년"]);
    }

    #[test]
    fn cjk_then_latin_without_a_space() {
        assert_eq!(terms("東京Tower"), ["東京", "tower"]);
    }

    #[test]
    fn cjk_never_joins_an_identifier() {
        assert_eq!(terms("foo-東京"), ["foo", "東京"]);
        assert_eq!(terms("東京-foo"), ["東京", "foo"]);
    }

    #[test]
    fn mixed_scripts_in_one_sentence() {
        assert_eq!(
            terms("Das Straßen-Netz и поиск: 東京 getUser!"),
            [
                "das",
                "straßen-netz",
                "strassen-netz",
                "straßen",
                "strassen",
                "netz",
                "и",
                "поиск",
                "東京",
                "getuser",
                "get",
                "user"
            ]
        );
    }

    // --- Offsets and positions ---

    #[test]
    fn offsets_point_at_the_source_text() {
        let text = "See max_connections, then 東京都 & user's.";
        assert_eq!(
            spans(text),
            [
                ("see".to_owned(), "See", 0),
                ("max_connections".to_owned(), "max_connections", 1),
                ("max".to_owned(), "max", 1),
                ("connect".to_owned(), "connections", 1),
                ("東京".to_owned(), "東京", 3),
                ("京都".to_owned(), "京都", 4),
                ("user".to_owned(), "user's", 5),
            ]
        );
    }

    #[test]
    fn case_part_offsets() {
        let text = "  parseJSON2Text";
        let tokens = Analyzer::default().tokenize(text);
        let ranges: Vec<(usize, usize)> = tokens
            .iter()
            .map(|t| (t.offset_from, t.offset_to))
            .collect();
        assert_eq!(ranges, [(2, 16), (2, 7), (7, 12), (12, 16)]);
    }

    #[test]
    fn multibyte_offsets() {
        let text = "ÀB_ça 東京";
        assert_eq!(
            spans(text),
            [
                ("àb_ça".to_owned(), "ÀB_ça", 0),
                ("ab_ca".to_owned(), "ÀB_ça", 0),
                ("àb".to_owned(), "ÀB", 0),
                ("ab".to_owned(), "ÀB", 0),
                ("ça".to_owned(), "ça", 0),
                ("ca".to_owned(), "ça", 0),
                ("東京".to_owned(), "東京", 1),
            ]
        );
    }

    #[test]
    fn whole_and_parts_share_a_position() {
        let positions: Vec<usize> = Analyzer::default()
            .tokenize("first getUserById last-one")
            .iter()
            .map(|t| t.position)
            .collect();
        assert_eq!(positions, [0, 1, 1, 1, 1, 1, 2, 2, 2]);
    }

    #[test]
    fn dropped_stop_words_keep_their_positions() {
        let positions: Vec<(String, usize)> = Analyzer::default()
            .tokenize("the cat and the hat")
            .into_iter()
            .map(|t| (t.text, t.position))
            .collect();
        assert_eq!(positions, [("cat".to_owned(), 1), ("hat".to_owned(), 4)]);
    }

    #[test]
    fn each_cjk_unit_takes_a_position() {
        let positions: Vec<usize> = Analyzer::default()
            .tokenize("東京都 京 word")
            .iter()
            .map(|t| t.position)
            .collect();
        assert_eq!(positions, [0, 1, 2, 3]);
    }

    // --- Length bounds and hostile input ---

    #[test]
    fn a_long_term_is_cut_and_still_found_by_itself() {
        let sha512 = "ab".repeat(64);
        assert_eq!(terms(&sha512), [sha512.as_str()]);
        let long = format!("{}_{}", "a".repeat(100), "b".repeat(100));
        let cut = format!("{}_{}", "a".repeat(100), "b".repeat(27));
        assert_eq!(raw_terms(&long), [cut, "a".repeat(100), "b".repeat(100)]);
        let base64 = "qujd".repeat(1_000);
        let terms = terms(&base64);
        assert_eq!(terms, [&base64[..LONG_TERM_BYTES]]);
        assert_eq!(
            self::terms(&base64),
            self::terms(&base64[..LONG_TERM_BYTES])
        );
    }

    #[test]
    fn a_cut_falls_on_a_character_boundary() {
        let word = "é".repeat(100);
        assert_eq!(raw_terms(&word)[0], "é".repeat(64));
        assert_eq!(raw_terms(&word)[1], "e".repeat(100));
    }

    #[test]
    fn without_normalize_a_word_of_64_bytes_is_kept_and_of_65_dropped() {
        let kept = "x".repeat(64);
        let dropped = "x".repeat(65);
        assert_eq!(
            LEGACY.terms(&format!("{kept} {dropped} ok")),
            [kept.as_str(), "ok"]
        );
        // The bound counts bytes, not characters.
        let kept = "é".repeat(32);
        let dropped = "é".repeat(33);
        assert_eq!(LEGACY.terms(&format!("{kept} {dropped}")), [kept]);
    }

    #[test]
    fn without_normalize_an_identifier_over_64_bytes_emits_only_its_parts() {
        let at_bound = format!("{}_{}", "a".repeat(31), "b".repeat(32));
        assert_eq!(
            LEGACY.terms(&at_bound),
            [at_bound.clone(), "a".repeat(31), "b".repeat(32)]
        );
        let over = format!("{}_{}", "a".repeat(32), "b".repeat(32));
        assert_eq!(LEGACY.terms(&over), ["a".repeat(32), "b".repeat(32)]);
        let part_over = format!("{}_short", "a".repeat(65));
        assert_eq!(LEGACY.terms(&part_over), ["short"]);
    }

    #[test]
    fn megabytes_of_joined_parts_stay_bounded() {
        let text = "a-".repeat(1_500_000);
        let tokens = Analyzer::default().tokenize(&text);
        assert_eq!(tokens.len(), 1_500_001);
        assert_eq!(tokens[0].text, "a-".repeat(64));
        assert!(tokens[1..].iter().all(|t| t.text == "a" && t.position == 0));
        assert_eq!(LEGACY.tokenize(&text).len(), 1_500_000);
    }

    #[test]
    fn a_giant_word_is_cut() {
        let text = format!("{} after", "a".repeat(3_000_000));
        let spans = spans(&text);
        assert_eq!(spans[0].0, "a".repeat(LONG_TERM_BYTES));
        assert_eq!(spans[1], ("after".to_owned(), "after", 1));
        assert_eq!(LEGACY.terms(&text), ["after"]);
    }

    #[test]
    fn a_giant_camel_case_word_emits_bounded_parts() {
        let text = "aB".repeat(500_000);
        let tokens = Analyzer::default().tokenize(&text);
        assert_eq!(tokens.len(), 500_002);
        assert!(tokens.iter().all(|t| t.text.len() <= LONG_TERM_BYTES));
        assert_eq!(tokens[1].text, "a");
        assert_eq!(tokens.last().map(|t| t.text.as_str()), Some("b"));
    }

    // --- A realistic line of notes ---

    #[test]
    fn a_markdown_line() {
        assert_eq!(
            terms("- **Fixed** `max_connections` in [pool.rs](src/pool.rs) (see INC-2023-Q4-011)."),
            [
                "fix",
                "max_connections",
                "max",
                "connect",
                "pool.rs",
                "pool",
                "rs",
                "src/pool.rs",
                "src",
                "pool",
                "rs",
                "see",
                "inc-2023-q4-011",
                "inc",
                "2023",
                "q4",
                "011",
            ]
        );
    }
}
