//! Entities: the named things of a chunk or file, found without any model.
//!
//! An entity is an [`EntityKey`]: a [`EntityKind`] and a normalized name. Two
//! mentions are the same entity when kind and name are equal, so
//! `max_connections` in one runbook and `MAX_CONNECTIONS` in another meet.
//!
//! What is taken, from where:
//!
//! | kind | from | name |
//! | --- | --- | --- |
//! | [`EntityKind::Identifier`] | chunk text: what the tokenizer keeps whole (`pg_ctl`, `INC-2023-Q4-011`, `getUserById`, `pool.rs`) | its lowercase whole form |
//! | [`EntityKind::Code`] | chunk text: a plain word called like a function (`malloc(`) or alone in backticks | the word, lowercase |
//! | [`EntityKind::ErrorCode`] | chunk text: `C4996`, `E1234`, `0x80070005`, `HTTP 504` | lowercase, one space inside |
//! | [`EntityKind::Name`] | chunk text: a capitalized word inside a sentence (`Patroni`, `Redis`) | lowercase |
//! | [`EntityKind::Heading`] | the chunk's heading path, each heading | lowercase, blanks collapsed |
//! | [`EntityKind::Metadata`] | the file's front matter, any key but `path` and `title` | `key: value` |
//! | [`EntityKind::Document`] | the file itself (links point at it) | its path |
//!
//! Identifiers with no part of two letters or more (`v1.2.3`, `e.g`,
//! `2023-10-05`) and front-matter values that are free text (over
//! [`MAX_METADATA_VALUE_WORDS`] words) or carry no letter (dates, numbers)
//! are not entities.
//!
//! Links between files are found here too, from the markdown's own links
//! ([`crate::corpus::links`], none inside code): links to another markdown
//! file (`[x](../db/failover.md)`) and wiki links (`[[Failover]]`); the
//! builder resolves them to [`EntityKind::Document`] entities.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::corpus::Metadata;
use crate::corpus::links::{Link, links};
use crate::corpus::walk::is_markdown;
use crate::store::generation::HeadingPath;
use crate::text::tokenize::{Analyzer, Token};

/// Front-matter values with more words than this are free text, not names.
pub const MAX_METADATA_VALUE_WORDS: usize = 6;

/// Headings with more words than this are sentences, not names.
const MAX_HEADING_WORDS: usize = 10;

/// No entity name is longer than this many bytes.
const MAX_NAME_BYTES: usize = 96;

/// Front-matter keys that are not entities: the file's own path and title
/// are its [`EntityKind::Document`] entity.
const SKIPPED_METADATA_KEYS: [&str; 2] = ["path", "title"];

/// Words that, followed by a 3-digit number, make an error code (`HTTP 504`).
const STATUS_WORDS: [&str; 5] = ["code", "error", "exit", "http", "status"];

/// What an entity is; stored as one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum EntityKind {
    /// A word the tokenizer keeps whole: joined (`max_connections`,
    /// `INC-2023-Q4-011`, `pool.rs`) or with a case change (`getUserById`).
    Identifier = 0,
    /// A plain word used as code: called (`malloc(`) or alone in backticks.
    Code = 1,
    /// An error or status code: `C4996`, `E1234`, `0x80070005`, `HTTP 504`.
    ErrorCode = 2,
    /// One heading of a chunk's heading path.
    Heading = 3,
    /// A front-matter value, named `key: value`.
    Metadata = 4,
    /// A file, named by its path.
    Document = 5,
    /// A capitalized word inside a sentence (`Patroni`, `Redis`): a product
    /// or proper name.
    Name = 6,
}

impl EntityKind {
    /// Every kind, in byte order.
    pub const ALL: [Self; 7] = [
        Self::Identifier,
        Self::Code,
        Self::ErrorCode,
        Self::Heading,
        Self::Metadata,
        Self::Document,
        Self::Name,
    ];

    /// The lowercase name shown to people and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Identifier => "identifier",
            Self::Code => "code",
            Self::ErrorCode => "error-code",
            Self::Heading => "heading",
            Self::Metadata => "metadata",
            Self::Document => "document",
            Self::Name => "name",
        }
    }

    /// The kind stored as `byte`, if any.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.get(usize::from(byte)).copied()
    }

    /// Whether the entity belongs to a whole file (every chunk of the file
    /// mentions it) rather than to single chunks.
    pub fn is_file_level(self) -> bool {
        matches!(self, Self::Metadata | Self::Document)
    }
}

impl fmt::Display for EntityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The identity of an entity: its kind and normalized name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EntityKey {
    /// What it is.
    pub kind: EntityKind,
    /// Its normalized name (see the module table).
    pub name: String,
}

impl EntityKey {
    /// A key of `kind` named `name` (already normalized).
    pub fn new(kind: EntityKind, name: impl Into<String>) -> Self {
        Self {
            kind,
            name: name.into(),
        }
    }
}

/// Where a link in a chunk points, before it is resolved to a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LinkTarget {
    /// A markdown link's target, as a `/`-separated path relative to the
    /// indexed root (`../db/failover.md` from `svc/a.md` is `db/failover.md`).
    Path(String),
    /// A wiki link's target name, lowercase (`[[Failover]]` is `failover`),
    /// matched against file stems and titles.
    WikiName(String),
}

/// Entities and links of one file, as extracted; what the builder takes.
///
/// It depends on the file's content alone, so an incremental index keeps it
/// for unchanged files ([`super::cache`]) and extracts only the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntities {
    /// The file's path relative to the root, `/`-separated.
    pub path: String,
    /// Lowercase names a wiki link may use for this file: its file stem and title.
    pub wiki_names: Vec<String>,
    /// The file's own entities: its [`EntityKind::Metadata`] values.
    pub metadata: Vec<EntityKey>,
    /// Links from the file's chunks to other files, deduplicated, sorted.
    pub links: Vec<LinkTarget>,
    /// Per chunk, in file order: its entities with their mention counts,
    /// sorted by key.
    pub chunks: Vec<Vec<(EntityKey, u32)>>,
}

/// One chunk as the extractor sees it.
#[derive(Debug, Clone, Copy)]
pub struct ChunkText<'a> {
    /// Headings above the chunk, outermost first.
    pub heading_path: &'a HeadingPath,
    /// The chunk's markdown text.
    pub text: &'a str,
}

/// Finds entities and links; holds the analyzer it tokenizes with (the
/// entity cache records it, and reuses entries only of an equal extractor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityExtractor {
    analyzer: Analyzer,
}

impl Default for EntityExtractor {
    fn default() -> Self {
        Self::new()
    }
}

impl EntityExtractor {
    /// An extractor. It tokenizes without stemming (entity names are never
    /// stemmed, and plain words matter only through their raw text).
    pub fn new() -> Self {
        Self {
            // The Unicode rules stay off: entity names are the text as
            // written, and the graph was built and tuned without them.
            analyzer: Analyzer {
                stem: false,
                stop_words: true,
                normalize: false,
                fold: false,
                elisions: false,
            },
        }
    }

    /// Everything the graph needs from one file: `path` relative to the root,
    /// its front-matter `metadata`, its `title` if known, and its chunks in order.
    pub fn file(
        &self,
        path: &str,
        metadata: &Metadata,
        title: Option<&str>,
        chunks: &[ChunkText<'_>],
    ) -> FileEntities {
        let mut links: Vec<LinkTarget> = chunks
            .iter()
            .flat_map(|chunk| links_in(path, chunk.text))
            .collect();
        links.sort();
        links.dedup();
        let mut wiki_names = vec![normalize_name(file_stem(path))];
        if let Some(title) = title.map(normalize_name).filter(|t| !t.is_empty()) {
            wiki_names.push(title);
        }
        wiki_names.sort();
        wiki_names.dedup();
        FileEntities {
            path: path.to_owned(),
            wiki_names,
            metadata: metadata_entities(metadata),
            links,
            chunks: chunks.iter().map(|c| self.chunk(*c)).collect(),
        }
    }

    /// The entities of one chunk with their mention counts, sorted by key.
    pub fn chunk(&self, chunk: ChunkText<'_>) -> Vec<(EntityKey, u32)> {
        let mut counts: BTreeMap<EntityKey, u32> = BTreeMap::new();
        for heading in chunk.heading_path.iter() {
            if let Some(name) = heading_name(heading) {
                *counts
                    .entry(EntityKey::new(EntityKind::Heading, name))
                    .or_default() += 1;
            }
        }
        let tokens = self.analyzer.tokenize(chunk.text);
        for key in text_entities(chunk.text, &tokens) {
            *counts.entry(key).or_default() += 1;
        }
        counts.into_iter().collect()
    }
}

/// The identifier, code and error-code entities of `text`, one per mention.
fn text_entities(text: &str, tokens: &[Token]) -> Vec<EntityKey> {
    let mut found = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        let position = tokens[index].position;
        let group_end = tokens[index..]
            .iter()
            .position(|t| t.position != position)
            .map_or(tokens.len(), |offset| index + offset);
        let group = &tokens[index..group_end];
        let next = tokens.get(group_end);
        index = group_end;
        if let Some(key) = group_entity(text, group, next) {
            found.push(key);
        }
    }
    found
}

/// The entity a group of tokens sharing one position stands for, if any:
/// an identifier (its whole form spans all its parts), or a plain word used
/// as code or as an error code (`next` is the token after the group).
fn group_entity(text: &str, group: &[Token], next: Option<&Token>) -> Option<EntityKey> {
    let first = group.first()?;
    if let [_, .., last] = group {
        let is_whole = first.offset_from <= last.offset_from && first.offset_to >= last.offset_to;
        return (is_whole && is_named_identifier(&group[1..]))
            .then(|| EntityKey::new(EntityKind::Identifier, first.text.clone()))
            .filter(|key| key.name.len() <= MAX_NAME_BYTES);
    }
    let raw = &text[first.offset_from..first.offset_to];
    if is_error_code(raw) {
        return Some(EntityKey::new(EntityKind::ErrorCode, first.text.clone()));
    }
    if let Some(number) = next.filter(|n| n.position == first.position + 1)
        && STATUS_WORDS.contains(&first.text.as_str())
        && number.text.len() == 3
        && number.text.bytes().all(|b| b.is_ascii_digit())
        && text[first.offset_to..number.offset_from].trim().is_empty()
    {
        return Some(EntityKey::new(
            EntityKind::ErrorCode,
            format!("{} {}", first.text, number.text),
        ));
    }
    if is_capitalized(raw) && is_inside_sentence(&text[..first.offset_from]) {
        return Some(EntityKey::new(EntityKind::Name, first.text.clone()));
    }
    let before = text[..first.offset_from].chars().next_back();
    let after = text[first.offset_to..].chars().next();
    let is_code = after == Some('(') || (before == Some('`') && after == Some('`'));
    (is_code && first.text.chars().filter(|c| c.is_alphabetic()).count() >= 3)
        .then(|| EntityKey::new(EntityKind::Code, first.text.clone()))
}

/// Whether a raw word is capitalized: an uppercase letter, then at least
/// three lowercase letters and nothing else but a possessive (`Patroni`,
/// `Debezium's`, not `The` or `HTTP`).
fn is_capitalized(raw: &str) -> bool {
    let word = raw
        .strip_suffix("'s")
        .or_else(|| raw.strip_suffix("\u{2019}s"))
        .unwrap_or(raw);
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase) && {
        let rest = chars.as_str();
        rest.chars().count() >= 3 && rest.chars().all(char::is_lowercase)
    }
}

/// Whether a word preceded by `before` sits inside a sentence: on the same
/// line, after a word and a blank (so not the first word of a sentence, a
/// line, a heading or a list item).
fn is_inside_sentence(before: &str) -> bool {
    let mut reversed = before.chars().rev();
    reversed.next() == Some(' ')
        && reversed
            .find(|c| *c != ' ')
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, ',' | '\'' | '’' | ')'))
}

/// Whether an identifier with these parts names something: one part at
/// least has two letters (so `v1.2.3`, `e.g` and dates are not entities).
fn is_named_identifier(parts: &[Token]) -> bool {
    parts
        .iter()
        .any(|part| part.text.chars().filter(|c| c.is_alphabetic()).count() >= 2)
}

/// Whether a raw word is an error code: capitals and digits, both, at least
/// four characters (`C4996`, `E1234`), or hexadecimal `0x` with six or more.
fn is_error_code(raw: &str) -> bool {
    let hex = raw
        .strip_prefix("0x")
        .is_some_and(|digits| digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_hexdigit()));
    let capitals_and_digits = raw.len() >= 4
        && raw
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && raw.bytes().any(|b| b.is_ascii_digit())
        && raw.bytes().any(|b| b.is_ascii_uppercase());
    hex || capitals_and_digits
}

/// A heading's entity name: inline markup dropped, lowercase, blanks
/// collapsed; `None` when it has no letter, is too long, or is a sentence.
pub fn heading_name(heading: &str) -> Option<String> {
    let plain: String = heading
        .chars()
        .map(|c| if matches!(c, '`' | '*' | '#') { ' ' } else { c })
        .collect();
    let name = normalize_name(&plain);
    let words = name.split(' ').count();
    (name.chars().any(char::is_alphabetic)
        && words <= MAX_HEADING_WORDS
        && name.len() <= MAX_NAME_BYTES)
        .then_some(name)
}

/// Lowercase, blanks collapsed to one space, trimmed, and stripped of
/// trailing sentence punctuation (`:`, `.`, `?`, `!`, `,`).
pub fn normalize_name(raw: &str) -> String {
    let lower = raw.to_lowercase();
    let mut name = String::with_capacity(lower.len());
    for word in lower.split_whitespace() {
        if !name.is_empty() {
            name.push(' ');
        }
        name.push_str(word);
    }
    name.trim_end_matches([':', '.', '?', '!', ',']).to_owned()
}

/// The file's front-matter values as [`EntityKind::Metadata`] entities, sorted.
pub fn metadata_entities(metadata: &Metadata) -> Vec<EntityKey> {
    let mut keys: Vec<EntityKey> = metadata
        .iter()
        .filter(|(key, _)| !SKIPPED_METADATA_KEYS.contains(&key.as_str()))
        .flat_map(|(key, values)| {
            let key = normalize_name(key);
            values.iter().filter_map(move |value| {
                let value = normalize_name(value);
                let named = value.chars().any(char::is_alphabetic)
                    && value.split(' ').count() <= MAX_METADATA_VALUE_WORDS;
                let name = format!("{key}: {value}");
                (named && name.len() <= MAX_NAME_BYTES)
                    .then(|| EntityKey::new(EntityKind::Metadata, name))
            })
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The `key` and `value` of a metadata entity name (`service: billing`).
pub fn split_metadata_name(name: &str) -> Option<(&str, &str)> {
    name.split_once(": ")
}

/// The terms a query must hold to name an entity, as the index `analyzer`
/// writes them (stemmed like the query) but with stop words kept (`cluster:
/// a` needs its `a`; queries are matched with stop words kept too),
/// distinct and sorted.
///
/// An identifier counts by its parts (`max_connections` by `max` and
/// `connect`), so `max connections` names it too; the whole form is matched
/// exactly elsewhere. A metadata entity counts by its value, and by its key
/// as well when the value is shorter than three characters (`cluster: b`
/// needs `cluster` and `b`). A document counts by its file stem.
pub fn name_terms(analyzer: &Analyzer, key: &EntityKey) -> Vec<String> {
    let analyzer = Analyzer {
        stop_words: false,
        ..*analyzer
    };
    let text = match key.kind {
        EntityKind::Metadata => match split_metadata_name(&key.name) {
            Some((name, value)) if value.chars().count() < 3 => format!("{name} {value}"),
            Some((_, value)) => value.to_owned(),
            None => key.name.clone(),
        },
        EntityKind::Document => file_stem(&key.name).to_owned(),
        _ => key.name.clone(),
    };
    let tokens = analyzer.tokenize(&text);
    let mut terms: Vec<String> = Vec::with_capacity(tokens.len());
    for (index, token) in tokens.iter().enumerate() {
        // An identifier's whole form comes first and reaches past its first part.
        let is_whole_of_identifier = tokens.get(index + 1).is_some_and(|next| {
            next.position == token.position && token.offset_to > next.offset_to
        });
        if !is_whole_of_identifier {
            terms.push(token.text.clone());
        }
    }
    terms.sort();
    terms.dedup();
    terms
}

/// The file name of `path` without its extension.
fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// The links of a chunk of the file at `path`, in document order: markdown
/// links to markdown files (resolved against the file's folder) and wiki
/// links, none inside code ([`links`]).
pub fn links_in(path: &str, text: &str) -> Vec<LinkTarget> {
    links(text)
        .into_iter()
        .filter_map(|link| match link {
            Link::Markdown(target) => markdown_link_target(path, &target).map(LinkTarget::Path),
            Link::Wiki(target) => {
                let name = normalize_name(target.split(['|', '#']).next().unwrap_or_default());
                (!name.is_empty() && !target.contains('\n')).then_some(LinkTarget::WikiName(name))
            }
        })
        .collect()
}

/// The root-relative path a markdown link target points at, when it is a
/// local markdown file; `None` for URLs, anchors and other files.
fn markdown_link_target(from: &str, target: &str) -> Option<String> {
    let target = target.trim_matches(['<', '>']);
    let target = target.split(['#', '?']).next().unwrap_or_default();
    let lower = target.to_ascii_lowercase();
    if target.is_empty() || target.contains("://") || lower.starts_with("mailto:") {
        return None;
    }
    let name = target.rsplit('/').next().unwrap_or_default();
    if !is_markdown(Path::new(name)) {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    if !target.starts_with('/') {
        parts.extend(from.split('/'));
        parts.pop(); // the file name of `from`
    }
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entities(text: &str) -> Vec<(EntityKind, String)> {
        EntityExtractor::new()
            .chunk(ChunkText {
                heading_path: &HeadingPath::default(),
                text,
            })
            .into_iter()
            .map(|(key, _)| (key.kind, key.name))
            .collect()
    }

    fn names(text: &str) -> Vec<String> {
        entities(text).into_iter().map(|(_, name)| name).collect()
    }

    #[test]
    fn identifiers_are_taken_whole_and_lowercase() {
        assert_eq!(
            names("Raise max_connections, see INC-2023-Q4-011 and getUserById in pool.rs."),
            [
                "getuserbyid",
                "inc-2023-q4-011",
                "max_connections",
                "pool.rs"
            ]
        );
    }

    #[test]
    fn identifiers_without_a_named_part_are_not_entities() {
        assert!(names("v1.2.3 on 2023-10-05 at 10:30, e.g. 3.14").is_empty());
    }

    #[test]
    fn plain_words_are_not_entities_unless_used_as_code() {
        assert_eq!(
            entities("The database called malloc() and `fsync` then stopped.\nThen it ended."),
            [
                (EntityKind::Code, "fsync".to_owned()),
                (EntityKind::Code, "malloc".to_owned())
            ]
        );
    }

    #[test]
    fn capitalized_words_inside_sentences_are_names() {
        assert_eq!(
            entities(
                "Patroni promotes a replica, Redis restarts, and Debezium's connector waits.\nPatroni again. The HTTP end."
            ),
            [
                (EntityKind::Name, "debezium".to_owned()),
                (EntityKind::Name, "redis".to_owned())
            ]
        );
    }

    #[test]
    fn error_codes() {
        assert_eq!(
            entities("Warning C4996, E1234, 0x80070005 and HTTP 504 but not Q4 or IPv6."),
            [
                (EntityKind::ErrorCode, "0x80070005".to_owned()),
                (EntityKind::ErrorCode, "c4996".to_owned()),
                (EntityKind::ErrorCode, "e1234".to_owned()),
                (EntityKind::ErrorCode, "http 504".to_owned()),
            ]
        );
    }

    #[test]
    fn mentions_are_counted() {
        let found = EntityExtractor::new().chunk(ChunkText {
            heading_path: &HeadingPath::new(&["Runbook", "The `pg_ctl` tool"]),
            text: "Run pg_ctl stop, then pg_ctl start.",
        });
        assert_eq!(
            found,
            [
                (EntityKey::new(EntityKind::Identifier, "pg_ctl"), 2),
                (EntityKey::new(EntityKind::Heading, "runbook"), 1),
                (EntityKey::new(EntityKind::Heading, "the pg_ctl tool"), 1),
            ]
        );
    }

    #[test]
    fn headings_are_normalized_and_sentences_skipped() {
        assert_eq!(
            heading_name("  Database   Failover: "),
            Some("database failover".into())
        );
        assert_eq!(heading_name("**2023**"), None);
        assert_eq!(
            heading_name("This heading is a whole long sentence that goes on and on"),
            None
        );
    }

    #[test]
    fn metadata_values_become_key_value_entities() {
        let metadata: Metadata = [
            ("service".to_owned(), vec!["Billing-API".to_owned()]),
            (
                "tags".to_owned(),
                vec!["database".to_owned(), "failover".to_owned()],
            ),
            ("date".to_owned(), vec!["2023-10-05".to_owned()]),
            ("title".to_owned(), vec!["Billing runbook".to_owned()]),
            (
                "description".to_owned(),
                vec!["a long free text value with many words in it".to_owned()],
            ),
        ]
        .into_iter()
        .collect();
        let names: Vec<String> = metadata_entities(&metadata)
            .into_iter()
            .map(|k| k.name)
            .collect();
        assert_eq!(
            names,
            ["service: billing-api", "tags: database", "tags: failover"]
        );
        assert_eq!(
            split_metadata_name("tags: database"),
            Some(("tags", "database"))
        );
    }

    #[test]
    fn markdown_links_resolve_against_the_file_folder() {
        let text = "See [failover](../db/failover.md#steps), [root](/ops/oncall.md), \
                    [web](https://x.org/a.md), [img](pic.png) and [[Shutdown Runbook|the runbook]].";
        assert_eq!(
            links_in("services/billing/runbook.md", text),
            [
                LinkTarget::Path("services/db/failover.md".into()),
                LinkTarget::Path("ops/oncall.md".into()),
                LinkTarget::WikiName("shutdown runbook".into()),
            ]
        );
        assert!(links_in("a.md", "[up](../../x.md)").is_empty());
    }

    #[test]
    fn a_file_gives_its_wiki_names_links_and_chunks() {
        let metadata: Metadata = [("owner".to_owned(), vec!["team-db".to_owned()])].into();
        let chunks = [
            ChunkText {
                heading_path: &HeadingPath::default(),
                text: "Uses [[Failover]] and pg_ctl.",
            },
            ChunkText {
                heading_path: &HeadingPath::default(),
                text: "Nothing named here.",
            },
        ];
        let file = EntityExtractor::new().file(
            "ops/Billing.md",
            &metadata,
            Some("Billing Runbook"),
            &chunks,
        );
        assert_eq!(file.wiki_names, ["billing", "billing runbook"]);
        assert_eq!(file.links, [LinkTarget::WikiName("failover".into())]);
        assert_eq!(
            file.metadata,
            [EntityKey::new(EntityKind::Metadata, "owner: team-db")]
        );
        assert_eq!(file.chunks.len(), 2);
        assert!(file.chunks[1].is_empty());
    }

    #[test]
    fn name_terms_count_identifiers_by_parts_and_short_values_with_their_key() {
        let analyzer = Analyzer::default();
        let terms = |kind, name: &str| name_terms(&analyzer, &EntityKey::new(kind, name));
        assert_eq!(
            terms(EntityKind::Identifier, "max_connections"),
            ["connect", "max"]
        );
        assert_eq!(
            terms(EntityKind::Heading, "database failover"),
            ["databas", "failov"]
        );
        assert_eq!(terms(EntityKind::Metadata, "cluster: b"), ["b", "cluster"]);
        assert_eq!(
            terms(EntityKind::Metadata, "service: billing-api"),
            ["api", "bill"]
        );
        assert_eq!(
            terms(EntityKind::Document, "ops/billing-runbook.md"),
            ["bill", "runbook"]
        );
    }

    #[test]
    fn kinds_round_trip_through_their_byte() {
        for kind in EntityKind::ALL {
            assert_eq!(EntityKind::from_byte(kind as u8), Some(kind));
        }
        assert_eq!(EntityKind::from_byte(7), None);
    }
}
