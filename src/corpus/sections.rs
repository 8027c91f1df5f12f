//! A markdown body cut into heading-delimited sections of whole top-level blocks.
//!
//! Each section sits under its heading path (`Runbook > Postgres > Connection
//! pool`) and is made of whole top-level blocks that carry the 1-based line
//! range they occupy in the original file; [`super::chunk`] packs them.
//! `pulldown-cmark` finds block boundaries the way CommonMark defines them (a
//! `#` inside a code fence is not a heading, a table ends where GFM says it
//! does), and its offset iterator gives each block's byte range in the source,
//! so blocks are kept verbatim and mapped to line numbers. Nothing here panics
//! on any input, and the output depends on the input alone.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

use super::lines::{line_spans, truncate_chars};

/// Heading text longer than this many characters is truncated (with `…`) in
/// heading paths: a path is repeated on every chunk of its section, so an
/// absurd heading must not be copied thousands of times.
const MAX_HEADING_CHARS: usize = 200;

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
    let mut events = parser(body, Options::empty()).into_offset_iter();
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

/// The pulldown-cmark parser of `text` with the extensions every reader of
/// a body uses (GFM tables, strikethrough, task lists) and `extra`.
pub(super) fn parser(text: &str, extra: Options) -> Parser<'_> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS | extra;
    Parser::new_ext(text, options)
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
    use crate::corpus::front_matter::parse_front_matter;
    use std::time::{Duration, Instant};

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
