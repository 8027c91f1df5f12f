//! Reading one markdown file: YAML front matter, then heading-delimited sections.
//!
//! The indexer needs two things from a file before it can chunk it (see
//! [`super::chunk`]): the metadata in its front matter, and its body cut into
//! sections, each under its heading path (`Runbook > Postgres > Connection
//! pool`) and made of whole top-level blocks that carry the 1-based line range
//! they occupy in the original file.
//!
//! Crates:
//! - `pulldown-cmark` finds block boundaries the way CommonMark defines them (a
//!   `#` inside a code fence is not a heading, a table ends where GFM says it
//!   does), and its offset iterator gives each block's byte range in the source,
//!   so blocks are kept verbatim and mapped to line numbers.
//! - `serde-saphyr` parses the YAML front matter. `serde_yaml` is unmaintained;
//!   serde-saphyr is maintained and enforces budgets (events, nodes, depth, alias
//!   replay), which are tightened here so an alias bomb or deeply nested YAML
//!   fails fast instead of exhausting memory.
//!
//! Nothing here panics on any input, and the output depends on the input alone.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::options::{DuplicateKeyPolicy, NonFiniteFloatPolicy};

/// Metadata: key → list of string values (a scalar becomes a one-element list), keys sorted.
pub type Metadata = BTreeMap<String, Vec<String>>;

/// Heading text longer than this many characters is truncated (with `…`) in
/// heading paths: a path is repeated on every chunk of its section, so an
/// absurd heading must not be copied thousands of times.
const MAX_HEADING_CHARS: usize = 200;

/// Error messages from the YAML parser are cut to this many characters.
const MAX_ERROR_CHARS: usize = 200;

/// UTF-8 byte-order mark, skipped at the start of a file.
const BOM: char = '\u{FEFF}';

/// What front matter parsing produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// Top-level keys whose value is a scalar or a list of scalars; empty when
    /// there is no front matter or it could not be used.
    pub metadata: Metadata,
    /// Byte offset where the markdown body starts: just past the closing fence
    /// line, or 0 if there is no usable fence pair (3 when the file starts with a
    /// UTF-8 byte-order mark, which is skipped).
    pub body_start: usize,
    /// 1-based line number of the body's first line.
    pub body_first_line: usize,
    /// Set when a front matter block existed but could not be used (the file is
    /// then indexed without metadata).
    pub error: Option<String>,
}

/// Parses the YAML front matter at the very start of `source`.
///
/// Front matter is a first line `---` (trailing blanks allowed) closed by a
/// later `---` or `...` line. Its YAML must be a mapping (or empty); each
/// top-level key whose value is a scalar (string, number, bool → its string
/// form) or a list of scalars becomes a metadata entry. Nested maps, lists that
/// contain maps or lists, null values and empty lists are skipped, as are
/// non-scalar keys. Duplicate keys: the last one wins. Booleans are YAML 1.2's
/// `true`/`false` only (`yes` stays `yes`); numbers take their parsed form
/// (`0x1F` → `31`, `1e3` → `1000.0`) except those with leading zeros or
/// underscores, which stay as written (`01234`); `.inf`/`.nan` stay text.
///
/// Invalid YAML, a non-mapping top level or an exhausted parsing budget set
/// `error`, leave the metadata empty, and the body still starts after the
/// closing fence. An opening fence that is never closed sets `error` and the
/// whole file is body.
pub fn parse_front_matter(source: &str) -> FrontMatter {
    let start = if source.starts_with(BOM) {
        BOM.len_utf8()
    } else {
        0
    };
    let no_front_matter = FrontMatter {
        metadata: Metadata::new(),
        body_start: start,
        body_first_line: 1,
        error: None,
    };
    let yaml_start = match line_spans(source, start).next() {
        Some(line) if is_fence(&source[line.content.clone()], "---") => line.next,
        _ => return no_front_matter,
    };
    // `index` 0 is line 2, the line after the opening fence.
    let closing = line_spans(source, yaml_start)
        .enumerate()
        .find(|(_, line)| {
            let text = &source[line.content.clone()];
            is_fence(text, "---") || is_fence(text, "...")
        });
    let Some((index, closing)) = closing else {
        return FrontMatter {
            error: Some("front matter opened with `---` is never closed".to_owned()),
            ..no_front_matter
        };
    };
    let (metadata, error) = match parse_yaml(&source[yaml_start..closing.content.start]) {
        Ok(metadata) => (metadata, None),
        Err(error) => (Metadata::new(), Some(error)),
    };
    FrontMatter {
        metadata,
        body_start: closing.next,
        body_first_line: index + 3,
        error,
    }
}

/// Whether `line` is the fence `fence`, ignoring trailing spaces and tabs.
fn is_fence(line: &str, fence: &str) -> bool {
    line.trim_end_matches([' ', '\t']) == fence
}

/// Parses the YAML of a front matter block into metadata.
fn parse_yaml(yaml: &str) -> Result<Metadata, String> {
    let node: Yaml =
        serde_saphyr::from_str_with_options(yaml, yaml_options()).map_err(describe_yaml_error)?;
    match node {
        Yaml::Null => Ok(Metadata::new()),
        Yaml::Map(entries) => Ok(entries.into_iter().filter_map(metadata_entry).collect()),
        _ => Err("front matter is not a YAML mapping".to_owned()),
    }
}

/// serde-saphyr options for front matter: budgets far below the library
/// defaults (front matter is a handful of keys), so alias bombs and deep
/// nesting are rejected after a few thousand events, not millions.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_events: 20_000,
            max_aliases: 100,
            max_anchors: 100,
            max_nodes: 10_000,
            max_depth: 16,
            max_documents: 1,
            max_total_scalar_bytes: 1 << 20,
            max_recorded_anchor_events: 10_000,
            max_recorded_anchor_bytes: 1 << 20,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 10_000,
            max_replay_stack_depth: 16,
        },
        duplicate_keys: DuplicateKeyPolicy::LastWins,
        // YAML 1.2 booleans only: `status: yes` stays the string `yes`.
        strict_booleans: true,
        // Keep `zip: 01234` and `id: 1_000` as written instead of as numbers.
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        // `.inf` and `.nan` are kept as text rather than rejected.
        non_finite_float_policy: NonFiniteFloatPolicy::AsString,
    }
}

/// A one-line message for a YAML error: the parser's first line (its full
/// message can include a multi-line source snippet), cut to [`MAX_ERROR_CHARS`].
fn describe_yaml_error(error: serde_saphyr::Error) -> String {
    let message = error.to_string();
    let line = message.lines().next().unwrap_or_default().trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    format!(
        "invalid front matter YAML: {}",
        truncate_chars(line, MAX_ERROR_CHARS)
    )
}

/// One metadata entry from a top-level mapping entry, if it is kept.
fn metadata_entry((key, value): (Yaml, Yaml)) -> Option<(String, Vec<String>)> {
    let Yaml::Scalar(key) = key else {
        return None;
    };
    let values = match value {
        Yaml::Scalar(value) => vec![value],
        Yaml::Seq(items) => items
            .into_iter()
            .filter(|item| *item != Yaml::Null)
            .map(|item| match item {
                Yaml::Scalar(value) => Some(value),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?,
        _ => return None,
    };
    (!values.is_empty()).then_some((key, values))
}

/// A generic YAML value, as much of it as metadata needs.
#[derive(Debug, PartialEq)]
enum Yaml {
    /// `null`, `~` or an empty value.
    Null,
    /// A string, number or bool, in string form.
    Scalar(String),
    /// A sequence.
    Seq(Vec<Yaml>),
    /// A mapping, entries in document order.
    Map(Vec<(Yaml, Yaml)>),
    /// Anything else (binary data): never kept.
    Other,
}

impl<'de> Deserialize<'de> for Yaml {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(YamlVisitor)
    }
}

/// Builds a [`Yaml`] from whatever the deserializer found.
struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = Yaml;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_string()))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_string()))
    }

    fn visit_i128<E>(self, value: i128) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_string()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_string()))
    }

    fn visit_u128<E>(self, value: u128) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_string()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Yaml, E> {
        // `Debug` keeps `1.0` as `1.0` (`Display` would print `1`).
        Ok(Yaml::Scalar(format!("{value:?}")))
    }

    fn visit_char<E>(self, value: char) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_string()))
    }

    fn visit_str<E>(self, value: &str) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Yaml, E> {
        Ok(Yaml::Scalar(value))
    }

    fn visit_bytes<E>(self, _: &[u8]) -> Result<Yaml, E> {
        Ok(Yaml::Other)
    }

    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }

    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(deserializer)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Yaml, D::Error> {
        Yaml::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Yaml::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Yaml::Map(entries))
    }
}

/// One heading-delimited section of a document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    /// Texts of the enclosing headings and this section's own, outermost first
    /// (empty for content before the first heading). A heading of level L
    /// replaces the entries of level ≥ L, so skipped levels leave no gaps, and a
    /// heading with empty text adds no entry.
    pub heading_path: Vec<String>,
    /// This section's own heading; `None` for content before the first heading.
    pub heading: Option<Heading>,
    /// Blocks of the section body, in order, each with its 1-based inclusive line range and its source text.
    pub blocks: Vec<Block>,
}

/// A section's heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// Heading level, 1 to 6.
    pub level: u8,
    /// Plain inline text: emphasis, code and link markup stripped, whitespace
    /// collapsed, cut to 200 characters (then ending in `…`).
    pub text: String,
    /// The heading as written (an ATX line, or a setext text + underline).
    pub source: Block,
}

/// One top-level markdown block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What kind of block this is.
    pub kind: BlockKind,
    /// The block's source text, verbatim except that line endings become `\n`,
    /// NUL becomes U+FFFD and trailing whitespace is trimmed.
    pub text: String,
    /// 1-based inclusive line range in the original file.
    pub lines: (usize, usize),
}

/// The kind of a top-level block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A paragraph.
    Paragraph,
    /// An ATX or setext heading.
    Heading,
    /// A fenced or indented code block.
    Code,
    /// A GFM table.
    Table,
    /// An ordered or bullet list.
    List,
    /// A block quote.
    Quote,
    /// An HTML block (including HTML comments).
    Html,
    /// Anything else (footnote definitions, …).
    Other,
}

/// Splits a markdown body into sections at its headings (ATX and setext, any level).
///
/// `first_line` is the 1-based line number of the body's first line in the
/// original file, so line ranges count front matter lines. Content before the
/// first heading becomes a section with an empty heading path. A heading with
/// no body still yields a section (with no blocks), so callers see the whole
/// outline; thematic breaks (`---`) separate nothing and are dropped, as are
/// link reference definitions (they are not blocks).
pub fn sections(body: &str, first_line: usize) -> Vec<Section> {
    let index = LineIndex::new(body, first_line);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut events = Parser::new_ext(body, options).into_offset_iter();
    let mut builder = SectionBuilder::default();
    while let Some((event, range)) = events.next() {
        let kind = match event {
            Event::Start(Tag::Heading { level, .. }) => {
                let text = heading_text(&mut events);
                if let Some(source) = block(body, range, &index, BlockKind::Heading) {
                    builder.heading(level as u8, text, source);
                }
                continue;
            }
            Event::Start(tag) => {
                skip_to_end(&mut events);
                block_kind(&tag)
            }
            Event::Rule | Event::End(_) => continue,
            _ => BlockKind::Other,
        };
        if let Some(block) = block(body, range, &index, kind) {
            builder.block(block);
        }
    }
    builder.finish()
}

/// The document title: the first level-1 heading's text, if any.
pub fn title(sections: &[Section]) -> Option<String> {
    sections
        .iter()
        .filter_map(|section| section.heading.as_ref())
        .find(|heading| heading.level == 1 && !heading.text.is_empty())
        .map(|heading| heading.text.clone())
}

/// The block kind for a top-level start tag.
fn block_kind(tag: &Tag) -> BlockKind {
    match tag {
        Tag::Paragraph => BlockKind::Paragraph,
        Tag::CodeBlock(_) => BlockKind::Code,
        Tag::Table(_) => BlockKind::Table,
        Tag::List(_) => BlockKind::List,
        Tag::BlockQuote(_) => BlockKind::Quote,
        Tag::HtmlBlock => BlockKind::Html,
        _ => BlockKind::Other,
    }
}

/// Consumes events up to the end tag matching the start tag just read.
fn skip_to_end<'a>(events: &mut impl Iterator<Item = (Event<'a>, Range<usize>)>) {
    let mut depth = 1usize;
    for (event, _) in events {
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return;
        }
    }
}

/// Consumes a heading's events and returns its plain text: text, inline code
/// and inline math are kept, markup and inline HTML dropped, whitespace
/// collapsed, and the result cut to [`MAX_HEADING_CHARS`].
fn heading_text<'a>(events: &mut impl Iterator<Item = (Event<'a>, Range<usize>)>) -> String {
    let mut text = String::new();
    let mut depth = 1usize;
    for (event, _) in events {
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Text(part) | Event::Code(part) | Event::InlineMath(part) => text.push_str(&part),
            Event::SoftBreak | Event::HardBreak => text.push(' '),
            _ => {}
        }
        if depth == 0 {
            break;
        }
    }
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&collapsed, MAX_HEADING_CHARS)
}

/// `text` cut to at most `max` characters, with `…` appended when cut.
fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Builds a block from an event's byte range: widened to the start of its line
/// (keeping indentation), trailing whitespace trimmed; `None` if nothing is left.
fn block(body: &str, range: Range<usize>, index: &LineIndex, kind: BlockKind) -> Option<Block> {
    let line_start = index.line_start(range.start);
    let indent = body.get(line_start..range.start)?;
    let start = if indent.trim().is_empty() {
        line_start
    } else {
        range.start
    };
    let text = body.get(start..range.end)?.trim_end();
    if text.is_empty() {
        return None;
    }
    let end = start + text.len();
    Some(Block {
        kind,
        text: normalize(text).into_owned(),
        lines: (index.line(start), index.line(end - 1)),
    })
}

/// `text` with `\r\n` and lone `\r` turned into `\n`, and NUL into U+FFFD (as
/// CommonMark does), borrowing when there is nothing to change.
fn normalize(text: &str) -> Cow<'_, str> {
    if !text.contains(['\r', '\0']) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\0', "\u{FFFD}"),
    )
}

/// Accumulates sections while walking the body's top-level events.
#[derive(Default)]
struct SectionBuilder {
    /// Open headings as (level, text), levels strictly increasing.
    path: Vec<(u8, String)>,
    /// The section blocks are currently added to.
    current: Section,
    /// Finished sections.
    done: Vec<Section>,
}

impl SectionBuilder {
    /// Closes the current section and opens one for a heading.
    fn heading(&mut self, level: u8, text: String, source: Block) {
        self.close_current();
        self.path.retain(|(open, _)| *open < level);
        if !text.is_empty() {
            self.path.push((level, text.clone()));
        }
        self.current = Section {
            heading_path: self.path.iter().map(|(_, text)| text.clone()).collect(),
            heading: Some(Heading {
                level,
                text,
                source,
            }),
            blocks: Vec::new(),
        };
    }

    /// Adds a body block to the current section.
    fn block(&mut self, block: Block) {
        self.current.blocks.push(block);
    }

    /// Moves the current section to `done` unless it is an empty preamble.
    fn close_current(&mut self) {
        let section = std::mem::take(&mut self.current);
        if section.heading.is_some() || !section.blocks.is_empty() {
            self.done.push(section);
        }
    }

    /// All sections, in document order.
    fn finish(mut self) -> Vec<Section> {
        self.close_current();
        self.done
    }
}

/// One line of a text: its content range (without the line ending) and the
/// offset where the next line starts.
struct LineSpan {
    /// Byte range of the line's content.
    content: Range<usize>,
    /// Byte offset just past the line ending.
    next: usize,
}

/// The lines of `text` from byte offset `from`, split at `\n`, `\r\n` or a lone
/// `\r` (CommonMark's line endings). A final line ending starts no extra line.
fn line_spans(text: &str, from: usize) -> impl Iterator<Item = LineSpan> + '_ {
    let bytes = text.as_bytes();
    let mut pos = from;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(bytes.len(), |i| start + i);
        let ending = match bytes.get(end..end + 2) {
            Some(b"\r\n") => 2,
            _ if end < bytes.len() => 1,
            _ => 0,
        };
        pos = end + ending;
        Some(LineSpan {
            content: start..end,
            next: pos,
        })
    })
}

/// Maps byte offsets of the body to 1-based line numbers of the original file.
struct LineIndex {
    /// Byte offset of each line's start; the first is 0.
    starts: Vec<usize>,
    /// Line number of the body's first line.
    first_line: usize,
}

impl LineIndex {
    /// Indexes the lines of `body`, whose first line is `first_line`.
    fn new(body: &str, first_line: usize) -> Self {
        let mut starts = vec![0];
        starts.extend(line_spans(body, 0).map(|line| line.next));
        Self { starts, first_line }
    }

    /// Position in `starts` of the line containing `offset`.
    fn slot(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// The line number of the byte at `offset`.
    fn line(&self, offset: usize) -> usize {
        self.first_line + self.slot(offset)
    }

    /// The byte offset where the line containing `offset` starts.
    fn line_start(&self, offset: usize) -> usize {
        self.starts[self.slot(offset)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn meta(entries: &[(&str, &[&str])]) -> Metadata {
        entries
            .iter()
            .map(|(key, values)| {
                let values = values.iter().map(|value| value.to_string()).collect();
                (key.to_string(), values)
            })
            .collect()
    }

    fn paths(sections: &[Section]) -> Vec<Vec<&str>> {
        sections
            .iter()
            .map(|section| section.heading_path.iter().map(String::as_str).collect())
            .collect()
    }

    fn block_lines(section: &Section) -> Vec<(usize, usize)> {
        section.blocks.iter().map(|block| block.lines).collect()
    }

    #[test]
    fn front_matter_scalars_and_lists() {
        let source = "---\ntitle: Runbook\ntags: [db, ops]\ncount: 3\nratio: 1.0\ndraft: false\n\
                      zip: 01234\n---\n# Body\n";
        let fm = parse_front_matter(source);
        assert_eq!(fm.error, None);
        assert_eq!(
            fm.metadata,
            meta(&[
                ("count", &["3"]),
                ("draft", &["false"]),
                ("ratio", &["1.0"]),
                ("tags", &["db", "ops"]),
                ("title", &["Runbook"]),
                ("zip", &["01234"]),
            ])
        );
        assert_eq!(&source[fm.body_start..], "# Body\n");
        assert_eq!(fm.body_first_line, 9);
    }

    #[test]
    fn front_matter_skips_nested_null_and_empty_values() {
        let source = "---\nowner:\n  name: x\nmatrix: [[1, 2]]\nmixed: [a, {b: c}]\n\
                      empty:\nnone: []\nlist_with_null: [a, null, b]\nkept: yes\n---\n";
        let fm = parse_front_matter(source);
        assert_eq!(fm.error, None);
        assert_eq!(
            fm.metadata,
            meta(&[("kept", &["yes"]), ("list_with_null", &["a", "b"])])
        );
        assert_eq!(fm.body_start, source.len());
        assert_eq!(fm.body_first_line, 11);
    }

    #[test]
    fn front_matter_block_list_and_dot_closing_fence() {
        let source = "---  \nauthors:\n  - Ann\n  - Bo\n...\ntext\n";
        let fm = parse_front_matter(source);
        assert_eq!(fm.error, None);
        assert_eq!(fm.metadata, meta(&[("authors", &["Ann", "Bo"])]));
        assert_eq!(&source[fm.body_start..], "text\n");
        assert_eq!(fm.body_first_line, 6);
    }

    #[test]
    fn front_matter_value_forms() {
        let source = "---\nk: 1\nk: 2\nyes_no: yes\nhex: 0x1F\nexp: 1e3\ninf: .inf\n\
                      under: 1_000\nday: 2024-01-05\n? [complex, key]\n: dropped\n---\n";
        let fm = parse_front_matter(source);
        assert_eq!(fm.error, None);
        assert_eq!(
            fm.metadata,
            meta(&[
                ("day", &["2024-01-05"]),
                ("exp", &["1000.0"]),
                ("hex", &["31"]),
                ("inf", &[".inf"]),
                ("k", &["2"]),
                ("under", &["1_000"]),
                ("yes_no", &["yes"]),
            ])
        );
    }

    #[test]
    fn no_front_matter() {
        for source in [
            "",
            "# Title\n---\na: b\n---\n",
            "--- \u{0}\n",
            "----\na: b\n----\n",
        ] {
            let fm = parse_front_matter(source);
            assert_eq!(fm.metadata, Metadata::new(), "{source:?}");
            assert_eq!((fm.body_start, fm.body_first_line), (0, 1), "{source:?}");
            assert_eq!(fm.error, None, "{source:?}");
        }
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let fm = parse_front_matter("\u{FEFF}---\na: b\n---\nx");
        assert_eq!(fm.metadata, meta(&[("a", &["b"])]));
        assert_eq!(fm.body_first_line, 4);
        let fm = parse_front_matter("\u{FEFF}# T");
        assert_eq!((fm.body_start, fm.body_first_line), (3, 1));
    }

    #[test]
    fn empty_front_matter_is_not_an_error() {
        let fm = parse_front_matter("---\n---\nbody");
        assert_eq!(fm.error, None);
        assert_eq!(fm.metadata, Metadata::new());
        assert_eq!((fm.body_start, fm.body_first_line), (8, 3));
        let fm = parse_front_matter("---\n# just a comment\n---\n");
        assert_eq!(fm.error, None);
        assert_eq!(fm.body_first_line, 4);
    }

    #[test]
    fn unclosed_front_matter_makes_the_whole_file_body() {
        for source in ["---\ntitle: x\n# Heading\n", "---"] {
            let fm = parse_front_matter(source);
            assert!(fm.error.is_some(), "{source:?}");
            assert_eq!(fm.metadata, Metadata::new());
            assert_eq!((fm.body_start, fm.body_first_line), (0, 1));
        }
    }

    #[test]
    fn invalid_yaml_is_an_error_and_body_follows_the_fence() {
        let source = "---\ntitle: [unclosed\n---\nbody\n";
        let fm = parse_front_matter(source);
        let error = fm.error.expect("error");
        assert!(error.starts_with("invalid front matter YAML"), "{error}");
        assert!(!error.contains('\n'));
        assert_eq!(fm.metadata, Metadata::new());
        assert_eq!(&source[fm.body_start..], "body\n");
        assert_eq!(fm.body_first_line, 4);
    }

    #[test]
    fn non_mapping_front_matter_is_an_error() {
        for yaml in ["just text", "- a\n- b", "42"] {
            let fm = parse_front_matter(&format!("---\n{yaml}\n---\n"));
            assert_eq!(
                fm.error.as_deref(),
                Some("front matter is not a YAML mapping"),
                "{yaml}"
            );
            assert_eq!(fm.metadata, Metadata::new());
        }
    }

    #[test]
    fn crlf_front_matter() {
        let source = "---\r\ntitle: Hi\r\ntags:\r\n  - a\r\n---\r\n# H\r\n";
        let fm = parse_front_matter(source);
        assert_eq!(fm.error, None);
        assert_eq!(fm.metadata, meta(&[("tags", &["a"]), ("title", &["Hi"])]));
        assert_eq!(&source[fm.body_start..], "# H\r\n");
        assert_eq!(fm.body_first_line, 6);
    }

    #[test]
    fn billion_laughs_fails_fast() {
        let mut yaml = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (name, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let refs = vec![format!("*{prev}"); 9].join(",");
            yaml.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let source = format!("---\n{yaml}---\n# After\n");
        let started = Instant::now();
        let fm = parse_front_matter(&source);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(fm.error.is_some());
        assert_eq!(fm.metadata, Metadata::new());
        assert_eq!(&source[fm.body_start..], "# After\n");
    }

    #[test]
    fn deep_yaml_nesting_fails_fast() {
        let depth = 5_000;
        let yaml = format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
        let started = Instant::now();
        let fm = parse_front_matter(&format!("---\n{yaml}---\n"));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(fm.error.is_some());
        let block = (0..100)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect::<String>();
        let fm = parse_front_matter(&format!("---\n{block}---\n"));
        assert!(fm.error.is_some());
    }

    #[test]
    fn heading_paths_follow_levels() {
        let body = "# A\n\na\n\n### C\n\nc\n\n## D\n\nd\n\n#### E\n\ne\n\n# F\n\nf\n";
        let sections = sections(body, 1);
        assert_eq!(
            paths(&sections),
            vec![
                vec!["A"],
                vec!["A", "C"],
                vec!["A", "D"],
                vec!["A", "D", "E"],
                vec!["F"]
            ]
        );
        let levels: Vec<u8> = sections
            .iter()
            .map(|s| s.heading.as_ref().map_or(0, |h| h.level))
            .collect();
        assert_eq!(levels, vec![1, 3, 2, 4, 1]);
    }

    #[test]
    fn setext_headings_and_plain_heading_text() {
        let body =
            "Runbook *ops*\n=======\n\nintro\n\nThe `pg` [pool](http://x) ~~old~~\n---\n\nbody\n";
        let sections = sections(body, 1);
        assert_eq!(
            paths(&sections),
            vec![vec!["Runbook ops"], vec!["Runbook ops", "The pg pool old"]]
        );
        let heading = sections[1].heading.as_ref().expect("heading");
        assert_eq!(heading.level, 2);
        assert_eq!(
            heading.source.text,
            "The `pg` [pool](http://x) ~~old~~\n---"
        );
        assert_eq!(heading.source.lines, (6, 7));
        assert_eq!(heading.source.kind, BlockKind::Heading);
        assert_eq!(block_lines(&sections[1]), vec![(9, 9)]);
    }

    #[test]
    fn content_before_first_heading_is_kept() {
        let sections = sections("intro line\n\n# Title\n\nbody\n", 1);
        assert_eq!(paths(&sections), vec![vec![], vec!["Title"]]);
        assert_eq!(sections[0].heading, None);
        assert_eq!(sections[0].blocks[0].text, "intro line");
        assert_eq!(sections[0].blocks[0].lines, (1, 1));
    }

    #[test]
    fn headings_without_body_are_sections_without_blocks() {
        let sections = sections("# A\n## B\n### C\ntext\n## D\n", 1);
        assert_eq!(
            paths(&sections),
            vec![
                vec!["A"],
                vec!["A", "B"],
                vec!["A", "B", "C"],
                vec!["A", "D"]
            ]
        );
        let counts: Vec<usize> = sections.iter().map(|s| s.blocks.len()).collect();
        assert_eq!(counts, vec![0, 0, 1, 0]);
    }

    #[test]
    fn empty_heading_adds_no_path_entry() {
        let sections = sections("# A\n\n## B\n\n##\n\nx\n", 1);
        assert_eq!(paths(&sections), vec![vec!["A"], vec!["A", "B"], vec!["A"]]);
        assert_eq!(
            sections[2].heading.as_ref().map(|h| h.text.as_str()),
            Some("")
        );
    }

    #[test]
    fn block_kinds_lines_and_verbatim_text() {
        let body = "# T\n\npara\nline two\n\n```rust\n# not a heading\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n\
                    - x\n- y\n\n  more y\n\n> quote\n\n<div>\nhi\n</div>\n\n    indented\n\n---\n\n[ref]: http://x\n";
        let sections = sections(body, 10);
        assert_eq!(sections.len(), 1);
        let kinds: Vec<BlockKind> = sections[0].blocks.iter().map(|b| b.kind).collect();
        use BlockKind::*;
        assert_eq!(kinds, vec![Paragraph, Code, Table, List, Quote, Html, Code]);
        assert_eq!(
            block_lines(&sections[0]),
            vec![
                (12, 13),
                (15, 17),
                (19, 21),
                (23, 26),
                (28, 28),
                (30, 32),
                (34, 34)
            ]
        );
        assert_eq!(sections[0].blocks[1].text, "```rust\n# not a heading\n```");
        assert_eq!(sections[0].blocks[3].text, "- x\n- y\n\n  more y");
        assert_eq!(sections[0].blocks[6].text, "    indented");
        assert_eq!(
            sections[0].heading.as_ref().map(|h| h.source.lines),
            Some((10, 10))
        );
    }

    #[test]
    fn crlf_and_lone_cr_line_numbers() {
        let sections = sections("# A\r\n\r\none\r\ntwo\r\n\r\n## B\rthree\r", 1);
        assert_eq!(paths(&sections), vec![vec!["A"], vec!["A", "B"]]);
        assert_eq!(sections[0].blocks[0].text, "one\ntwo");
        assert_eq!(sections[0].blocks[0].lines, (3, 4));
        assert_eq!(sections[1].blocks[0].lines, (7, 7));
    }

    #[test]
    fn title_is_first_level_one_heading() {
        assert_eq!(
            title(&sections("## Sub\n\n# Main\n\n# Other\n", 1)),
            Some("Main".to_owned())
        );
        assert_eq!(title(&sections("## Only sub\n", 1)), None);
        assert_eq!(
            title(&sections("#\n\n# Real\n", 1)),
            Some("Real".to_owned())
        );
    }

    #[test]
    fn long_heading_is_truncated_in_path() {
        let body = format!("# {}\n\nbody\n", "word ".repeat(200_000));
        let sections = sections(&body, 1);
        let text = &sections[0].heading_path[0];
        assert_eq!(text.chars().count(), MAX_HEADING_CHARS + 1);
        assert!(text.ends_with('…'));
        assert_eq!(
            sections[0].heading.as_ref().map(|h| h.source.text.len()),
            Some(1_000_001)
        );
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let inputs = [
            "",
            "\n\n",
            "---",
            "---\n",
            "# only\n## headings\n",
            "```\nunclosed fence\n# still code\n",
            "\0\0# nul\0\n\tx\0",
            "<!-- comment -->\n",
            "é\r\r\r",
            "***\n___\n- - -\n",
            "[^1]: footnote\n",
        ];
        for input in inputs {
            let _ = sections(input, 1);
            let _ = parse_front_matter(input);
        }
        let unclosed = sections("```\nunclosed fence\n# still code\n", 1);
        assert_eq!(unclosed.len(), 1);
        assert_eq!(unclosed[0].blocks[0].lines, (1, 3));
        let nul = sections("para\0x\n", 1);
        assert_eq!(nul[0].blocks[0].text, "para\u{FFFD}x");
    }

    #[test]
    fn deep_nesting_is_fast() {
        for unit in ["> ", "- ", "1. "] {
            let body = format!("{}deep\n", unit.repeat(10_000));
            let started = Instant::now();
            let sections = sections(&body, 1);
            assert!(started.elapsed() < Duration::from_secs(2), "{unit:?}");
            assert_eq!(sections.len(), 1);
            assert_eq!(sections[0].blocks.len(), 1);
            assert_eq!(sections[0].blocks[0].lines, (1, 1));
        }
        let lines: String = (0..10_000).map(|_| ">").collect::<Vec<_>>().join("\n");
        let started = Instant::now();
        let sections = sections(&lines, 1);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(sections[0].blocks[0].lines, (1, 10_000));
    }
}
