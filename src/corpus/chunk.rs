//! Packing a document's sections into chunks that fit a token budget.
//!
//! A chunk is what gets indexed and returned as a search hit, so it should be
//! big enough to carry context and small enough to be specific (and to fit an
//! embedding model's window). The rules, applied per section of
//! [`super::sections::sections`]:
//!
//! - A section's heading and body blocks are packed in order into chunks of at
//!   most `budget_tokens`, cut only between blocks; when a section needs several
//!   chunks their sizes are balanced (500 tokens → about 250 + 250, not 400 + 100).
//!   A heading stays in the chunk of the block that follows it (unless that
//!   block is cut and its first piece leaves no room for the heading).
//! - A block is never split unless it alone exceeds `hard_limit_tokens`; then it
//!   is cut at line boundaries, an over-long line at whitespace, and an
//!   over-long word at character boundaries, into pieces within the hard limit.
//! - A heading without body is a section of its own, so its words are found,
//!   unless the next section lies under it: then its text lives on in that
//!   section's heading path (unless it was cut to fit one, see
//!   [`super::sections::Heading::text`]). A file of only headings, or one that
//!   ends in a heading, loses no word.
//! - A tiny section (under `min_tokens`) is merged into the next chunk if that
//!   one shares its parent heading, else into the previous chunk if that one
//!   does, as long as the result stays within the budget. A merged chunk starts
//!   at the first line of its first section, its text contains every merged
//!   section's heading and body, and it is labelled with every section it
//!   holds (see [`ChunkDraft::heading_path`]): a reader takes the label as the
//!   chunk's topic, so naming only the first section would mislabel the rest.
//!
//! A chunk's text is its blocks' source text, headings included as written,
//! joined with blank lines; its line range is 1-based and inclusive, in the
//! original file. The output depends only on the input, and no input panics.
//!
//! Parsing (pulldown-cmark, serde-saphyr) happens in [`super::front_matter`]
//! and [`super::sections`]; this module only uses serde's derives, for
//! [`ChunkOptions`].

use std::borrow::Cow;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::front_matter::{self, FrontMatter};
use super::sections::{self, Block, Section};

/// Characters of a letter/digit run that make one estimated token: subword
/// tokenizers keep short words whole and split long ones.
const WORD_CHARS_PER_TOKEN: usize = 6;

/// Characters of a punctuation/symbol run that make one estimated token.
const SYMBOL_CHARS_PER_TOKEN: usize = 4;

/// First code point (CJK radicals) of the scripts written without spaces; each
/// letter from here on counts as one token.
const IDEOGRAPHIC_START: char = '\u{2E80}';

/// How chunks are sized, in estimated tokens (see [`estimate_tokens`]).
/// Serializable so an index can record the options it was built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkOptions {
    /// Target size in tokens (default 200): a chunk goes over it only when one
    /// block (with its section heading) is bigger.
    pub budget_tokens: usize,
    /// Sections below this many tokens merge into a neighbour (default 40).
    pub min_tokens: usize,
    /// A single block over this many tokens is cut at line/word boundaries
    /// (default 1,600); a value below the budget counts as the budget.
    pub hard_limit_tokens: usize,
}

impl Default for ChunkOptions {
    /// 200 tokens is a paragraph or two: specific enough to rank, enough
    /// context to read, and within a small transformer's window (256 word
    /// pieces for all-MiniLM-L6-v2, which sees nothing past it). Measured
    /// against 400 on every dev collection, it raised mean nDCG@10 with both
    /// models (bundled 0.4168 → 0.4236, MiniLM 0.4403 → 0.4460, no
    /// collection lower by more than 0.0011), the sparse list's too. 40
    /// tokens is about two sentences, below which a chunk ranks on its
    /// heading alone. 1,600 keeps ordinary code blocks and tables whole.
    fn default() -> Self {
        Self {
            budget_tokens: 200,
            min_tokens: 40,
            hard_limit_tokens: 1_600,
        }
    }
}

impl ChunkOptions {
    /// The options made usable: a budget of at least 1 and a hard limit of at least the budget.
    fn sanitized(&self) -> Self {
        let budget_tokens = self.budget_tokens.max(1);
        Self {
            budget_tokens,
            min_tokens: self.min_tokens,
            hard_limit_tokens: self.hard_limit_tokens.max(budget_tokens),
        }
    }
}

/// A chunk before the caller gives it an id (`{path}#{n}`, n from its position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkDraft {
    /// Heading path of the section the chunk comes from; empty for content
    /// before the first heading. A chunk merged from several sections is
    /// labelled by the headings they share, then what each adds, joined by
    /// [`SECTIONS_SEPARATOR`]: `Postgres > Lag` and `Postgres > Vacuum` give
    /// `["Postgres", "Lag · Vacuum"]`. A section whose path is the shared one
    /// adds nothing after it (`Postgres` then `Postgres > Lag` give `Postgres
    /// > Lag`), as its subsections lie inside it.
    pub heading_path: Vec<String>,
    /// 1-based inclusive line range in the original file.
    pub lines: (usize, usize),
    /// Markdown source of the chunk's blocks, joined with blank lines.
    pub text: String,
}

/// Joins the sections a merged chunk's label names (see [`ChunkDraft::heading_path`]).
pub const SECTIONS_SEPARATOR: &str = " · ";

/// Chunks a document's sections, in document order (see the module doc for the rules).
pub fn chunk_sections(sections: &[Section], opts: &ChunkOptions) -> Vec<ChunkDraft> {
    let opts = opts.sanitized();
    let pieces = sections
        .iter()
        .enumerate()
        .filter(|&(i, section)| {
            !section.blocks.is_empty() || stands_alone(section, sections.get(i + 1))
        })
        .flat_map(|(_, section)| section_pieces(section, &opts));
    merge_tiny(pieces, &opts)
        .into_iter()
        .map(Piece::into_draft)
        .collect()
}

/// Whether a section without body needs a chunk for its heading's words to
/// be found: its heading has text, and `next` does not carry that text in
/// its heading path (it does not lie under the heading, or the heading was
/// cut to fit a path, its text then ending in `…`).
fn stands_alone(section: &Section, next: Option<&Section>) -> bool {
    let Some(heading) = &section.heading else {
        return false;
    };
    let path = &section.heading_path;
    let carried = next.is_some_and(|next| {
        next.heading_path.len() > path.len() && next.heading_path.starts_with(path)
    });
    !heading.text.is_empty() && (!carried || heading.text.ends_with('…'))
}

/// The label of a chunk holding sections with these heading paths, in
/// order (see [`ChunkDraft::heading_path`]).
fn label(paths: &[Vec<String>]) -> Vec<String> {
    let mut distinct: Vec<&Vec<String>> = paths.iter().collect();
    distinct.dedup();
    let [first, rest @ ..] = distinct.as_slice() else {
        return Vec::new();
    };
    let shared = rest.iter().fold(first.len(), |shared, path| {
        let common = first.iter().zip(path.iter()).take_while(|(a, b)| a == b);
        common.count().min(shared)
    });
    // What each section adds to the shared headings; a section that is the
    // shared one adds nothing (its subsections, named after it, are in it).
    let tails: Vec<String> = distinct
        .iter()
        .map(|path| path[shared..].join(" > "))
        .filter(|tail| !tail.is_empty())
        .collect();
    let mut label = first[..shared].to_vec();
    if !tails.is_empty() {
        label.push(tails.join(SECTIONS_SEPARATOR));
    }
    label
}

/// Token estimate used for budgets.
///
/// Counts what a subword tokenizer roughly produces, in one pass, without a
/// vocabulary: each maximal run of letters, digits and `_` costs one token per
/// started 6 characters; each maximal run of other visible characters
/// (punctuation, symbols, emoji) one per started 4; each letter of a script
/// written without spaces (code points from U+2E80: CJK, kana, hangul) one.
/// Whitespace is free, so the estimate of texts joined by whitespace is the sum
/// of their estimates, and it never exceeds the number of characters.
pub fn estimate_tokens(text: &str) -> usize {
    let mut counter = TokenCounter::default();
    text.chars().for_each(|c| counter.push(c));
    counter.total()
}

/// Everything the indexer needs from one file's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedFile {
    /// The front matter, with its metadata and any error.
    pub front_matter: FrontMatter,
    /// The front matter's `title` if set and not blank, else the first level-1 heading.
    pub title: Option<String>,
    /// The chunks, in document order.
    pub chunks: Vec<ChunkDraft>,
}

/// Convenience: front matter + sections + chunks for one file's source.
pub fn parse_file(source: &str, opts: &ChunkOptions) -> ParsedFile {
    let front_matter = front_matter::parse_front_matter(source);
    let body = source.get(front_matter.body_start..).unwrap_or_default();
    let sections = sections::sections(body, front_matter.body_first_line);
    let title = front_matter
        .metadata
        .get("title")
        .and_then(|values| values.first())
        .filter(|title| !title.trim().is_empty())
        .cloned()
        .or_else(|| sections::title(&sections));
    let chunks = chunk_sections(&sections, opts);
    ParsedFile {
        front_matter,
        title,
        chunks,
    }
}

/// Incremental [`estimate_tokens`]: feed characters, read the running total.
/// Each character adds 0 or 1 to the total.
#[derive(Debug, Clone, Copy, Default)]
struct TokenCounter {
    /// Tokens of finished runs and ideographs.
    done: usize,
    /// Kind of the run in progress.
    run: Run,
    /// Characters in the run in progress.
    run_chars: usize,
}

/// A run of characters that are counted together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Run {
    /// No run in progress (start, or after whitespace or an ideograph).
    #[default]
    None,
    /// Letters, digits and `_`.
    Word,
    /// Other visible characters.
    Symbol,
}

impl TokenCounter {
    /// Counts one more character.
    fn push(&mut self, c: char) {
        let run = if c.is_whitespace() {
            Run::None
        } else if c >= IDEOGRAPHIC_START && c.is_alphanumeric() {
            self.end_run();
            self.done += 1;
            return;
        } else if c.is_alphanumeric() || c == '_' {
            Run::Word
        } else {
            Run::Symbol
        };
        if run != self.run {
            self.end_run();
            self.run = run;
        }
        if run != Run::None {
            self.run_chars += 1;
        }
    }

    /// Closes the run in progress.
    fn end_run(&mut self) {
        self.done = self.total();
        self.run = Run::None;
        self.run_chars = 0;
    }

    /// Tokens counted so far.
    fn total(&self) -> usize {
        let per_token = match self.run {
            Run::None => return self.done,
            Run::Word => WORD_CHARS_PER_TOKEN,
            Run::Symbol => SYMBOL_CHARS_PER_TOKEN,
        };
        self.done + self.run_chars.div_ceil(per_token)
    }
}

/// A chunk in the making, with what tiny-section merging needs.
struct Piece {
    /// The chunk itself, with the heading path of its first section (merging
    /// goes by it; the label is made by [`Piece::into_draft`]).
    draft: ChunkDraft,
    /// The heading paths of the sections it holds, in order.
    sections: Vec<Vec<String>>,
    /// Its estimated tokens.
    tokens: usize,
    /// Whether it is a whole section under `min_tokens` (or a merge of such).
    tiny: bool,
}

impl Piece {
    /// Whether `other`'s heading path lies under this piece's parent heading.
    fn shares_parent_with(&self, other: &Piece) -> bool {
        let path = &self.draft.heading_path;
        let parent = &path[..path.len().saturating_sub(1)];
        other.draft.heading_path.starts_with(parent)
    }

    /// Whether this piece and `other` fit one chunk together.
    fn fits_with(&self, other: &Piece, opts: &ChunkOptions) -> bool {
        self.tokens + other.tokens <= opts.budget_tokens
    }

    /// This piece followed by `next`, keeping this piece's heading path.
    fn absorb(mut self, next: Piece, opts: &ChunkOptions) -> Piece {
        self.draft.text.push_str("\n\n");
        self.draft.text.push_str(&next.draft.text);
        self.draft.lines.1 = next.draft.lines.1;
        self.sections.extend(next.sections);
        self.tokens += next.tokens;
        self.tiny = self.tokens < opts.min_tokens;
        self
    }

    /// The finished chunk, labelled with every section it holds.
    fn into_draft(self) -> ChunkDraft {
        ChunkDraft {
            heading_path: label(&self.sections),
            ..self.draft
        }
    }
}

/// Merges tiny pieces into the next piece, or failing that the previous one.
fn merge_tiny(pieces: impl IntoIterator<Item = Piece>, opts: &ChunkOptions) -> Vec<Piece> {
    let mut merged = Vec::new();
    let mut carried: Option<Piece> = None;
    for piece in pieces {
        let piece = match carried.take() {
            Some(tiny) if tiny.fits_with(&piece, opts) && tiny.shares_parent_with(&piece) => {
                tiny.absorb(piece, opts)
            }
            Some(tiny) => {
                append_to_last(&mut merged, tiny, opts);
                piece
            }
            None => piece,
        };
        if piece.tiny {
            carried = Some(piece);
        } else {
            merged.push(piece);
        }
    }
    if let Some(tiny) = carried {
        append_to_last(&mut merged, tiny, opts);
    }
    merged
}

/// Appends a tiny piece to the last piece if allowed, else adds it on its own.
fn append_to_last(pieces: &mut Vec<Piece>, tiny: Piece, opts: &ChunkOptions) {
    match pieces.pop() {
        Some(last) if last.fits_with(&tiny, opts) && tiny.shares_parent_with(&last) => {
            pieces.push(last.absorb(tiny, opts));
        }
        last => {
            pieces.extend(last);
            pieces.push(tiny);
        }
    }
}

/// A section's chunks before merging.
fn section_pieces(section: &Section, opts: &ChunkOptions) -> Vec<Piece> {
    let units = section_units(section, opts.hard_limit_tokens);
    let groups = pack(&units, opts.budget_tokens);
    let total: usize = units.iter().map(|unit| unit.tokens).sum();
    let tiny = groups.len() == 1 && total < opts.min_tokens;
    groups
        .into_iter()
        .map(|group| piece(&section.heading_path, &units[group], tiny))
        .collect()
}

/// One chunk from consecutive units.
fn piece(heading_path: &[String], units: &[Unit], tiny: bool) -> Piece {
    let texts: Vec<&str> = units.iter().map(|unit| unit.text.as_ref()).collect();
    let first = units.first().map_or(0, |unit| unit.lines.0);
    let last = units.last().map_or(0, |unit| unit.lines.1);
    Piece {
        draft: ChunkDraft {
            heading_path: heading_path.to_vec(),
            lines: (first, last),
            text: texts.join("\n\n"),
        },
        sections: vec![heading_path.to_vec()],
        tokens: units.iter().map(|unit| unit.tokens).sum(),
        tiny,
    }
}

/// An uncuttable piece of a section: a heading, a block, or part of a block
/// over the hard limit.
#[derive(Debug)]
struct Unit<'a> {
    /// Source text.
    text: Cow<'a, str>,
    /// 1-based inclusive line range.
    lines: (usize, usize),
    /// Estimated tokens.
    tokens: usize,
    /// Set on a heading: no chunk may end right after it.
    glue: bool,
}

/// A section's heading and blocks as units, blocks over `hard_limit` cut.
fn section_units(section: &Section, hard_limit: usize) -> Vec<Unit<'_>> {
    let mut units = Vec::new();
    if let Some(heading) = &section.heading {
        let mut heading_units = block_units(&heading.source, hard_limit, None);
        if let [unit] = heading_units.as_mut_slice() {
            unit.glue = true;
        }
        units.extend(heading_units);
    }
    for block in &section.blocks {
        let heading = units.pop_if(|unit| unit.glue);
        units.extend(block_units(block, hard_limit, heading));
    }
    units
}

/// A block as one unit, or cut if over `hard_limit`; `heading`, if any, is
/// kept in front of it (in the first piece when cutting).
fn block_units<'a>(
    block: &'a Block,
    hard_limit: usize,
    heading: Option<Unit<'a>>,
) -> Vec<Unit<'a>> {
    let tokens = estimate_tokens(&block.text);
    if tokens > hard_limit {
        return cut(block, hard_limit, heading);
    }
    let unit = Unit {
        text: Cow::Borrowed(&block.text),
        lines: block.lines,
        tokens,
        glue: false,
    };
    heading.into_iter().chain([unit]).collect()
}

/// Groups consecutive units into chunks of at most `budget` tokens (a unit
/// over the budget gets a chunk of its own; a glued heading stays with the
/// next unit). When several chunks are needed, each break is placed where the
/// running size is closest to an even share of the total.
fn pack(units: &[Unit], budget: usize) -> Vec<Range<usize>> {
    let total: usize = units.iter().map(|unit| unit.tokens).sum();
    let target = total.div_ceil(total.div_ceil(budget).max(1));
    let mut groups = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, unit) in units.iter().enumerate() {
        let may_break = i > start && !units[i - 1].glue;
        if may_break && (tokens + unit.tokens > budget || tokens + unit.tokens / 2 > target) {
            groups.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += unit.tokens;
    }
    if start < units.len() {
        groups.push(start..units.len());
    }
    groups
}

/// Cuts a block over `limit` tokens into units of at most `limit` tokens, at
/// line boundaries, then whitespace, then character boundaries. `heading` is
/// put in front of the first unit if both fit the limit, else before it alone
/// (then unglued, as the unit after it is full).
fn cut<'a>(block: &'a Block, limit: usize, heading: Option<Unit<'a>>) -> Vec<Unit<'a>> {
    let mut cutter = Cutter {
        text: &block.text,
        limit,
        heading: heading.map(|heading| Unit {
            glue: false,
            ..heading
        }),
        current: None,
        done: Vec::new(),
    };
    let mut offset = 0;
    for (i, line) in block.text.split('\n').enumerate() {
        let range = offset..offset + line.len();
        offset = range.end + 1;
        let number = block.lines.0 + i;
        match estimate_tokens(line) {
            0 => {}
            tokens if tokens <= limit => cutter.add(Span {
                range,
                tokens,
                lines: (number, number),
            }),
            _ => cutter.add_words(range, number),
        }
    }
    cutter.finish()
}

/// A byte range of a block's text with its tokens and lines.
struct Span {
    /// Byte range in the block text.
    range: Range<usize>,
    /// Estimated tokens (for joined spans, an upper bound).
    tokens: usize,
    /// 1-based inclusive line range.
    lines: (usize, usize),
}

/// State of [`cut`]: spans are added in order and grouped greedily.
struct Cutter<'a> {
    /// The block text being cut.
    text: &'a str,
    /// Maximum tokens of a unit.
    limit: usize,
    /// Heading still to be put in front of the first unit.
    heading: Option<Unit<'a>>,
    /// The unit being grown.
    current: Option<Span>,
    /// Finished units.
    done: Vec<Unit<'a>>,
}

impl<'a> Cutter<'a> {
    /// Adds a span of at most `limit` tokens to the current unit, or starts a new one.
    fn add(&mut self, span: Span) {
        let heading_tokens = self.heading.as_ref().map_or(0, |heading| heading.tokens);
        match &mut self.current {
            Some(current) if current.tokens + heading_tokens + span.tokens <= self.limit => {
                current.range.end = span.range.end;
                current.tokens += span.tokens;
                current.lines.1 = span.lines.1;
                return;
            }
            Some(_) => self.flush(),
            // The pending heading cannot share a unit with this span: it goes alone.
            None if heading_tokens + span.tokens > self.limit => {
                self.done.extend(self.heading.take());
            }
            None => {}
        }
        self.current = Some(span);
    }

    /// Adds an over-long line word by word.
    fn add_words(&mut self, line: Range<usize>, number: usize) {
        for word in word_ranges(&self.text[line.clone()]) {
            let range = line.start + word.start..line.start + word.end;
            let tokens = estimate_tokens(&self.text[range.clone()]);
            if tokens <= self.limit {
                self.add(Span {
                    range,
                    tokens,
                    lines: (number, number),
                });
            } else {
                self.add_chars(range, number);
            }
        }
    }

    /// Adds an over-long word in pieces of at most `limit` tokens, cut between characters.
    fn add_chars(&mut self, word: Range<usize>, number: usize) {
        let mut counter = TokenCounter::default();
        let mut start = word.start;
        for (i, c) in self.text[word.clone()].char_indices() {
            let mut next = counter;
            next.push(c);
            if next.total() > self.limit {
                let end = word.start + i;
                self.add(Span {
                    range: start..end,
                    tokens: counter.total(),
                    lines: (number, number),
                });
                start = end;
                next = TokenCounter::default();
                next.push(c);
            }
            counter = next;
        }
        self.add(Span {
            range: start..word.end,
            tokens: counter.total(),
            lines: (number, number),
        });
    }

    /// Turns the current span into a unit (with the heading in front if still pending).
    fn flush(&mut self) {
        let Some(span) = self.current.take() else {
            return;
        };
        let text = &self.text[span.range];
        let unit = match self.heading.take() {
            Some(heading) => Unit {
                text: Cow::Owned(format!("{}\n\n{text}", heading.text)),
                lines: (heading.lines.0, span.lines.1),
                tokens: heading.tokens + span.tokens,
                glue: false,
            },
            None => Unit {
                text: Cow::Borrowed(text),
                lines: span.lines,
                tokens: span.tokens,
                glue: false,
            },
        };
        self.done.push(unit);
    }

    /// All units, in order.
    fn finish(mut self) -> Vec<Unit<'a>> {
        self.flush();
        self.done.extend(self.heading.take());
        self.done
    }
}

/// Byte ranges of the whitespace-separated words of `text`.
fn word_ranges(text: &str) -> Vec<Range<usize>> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(word_start)) => {
                words.push(word_start..i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    words.extend(start.map(|word_start| word_start..text.len()));
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A paragraph of `n` one-token words.
    fn words(n: usize) -> String {
        vec!["word"; n].join(" ")
    }

    fn opts(budget_tokens: usize, min_tokens: usize, hard_limit_tokens: usize) -> ChunkOptions {
        ChunkOptions {
            budget_tokens,
            min_tokens,
            hard_limit_tokens,
        }
    }

    fn chunks(source: &str, opts: &ChunkOptions) -> Vec<ChunkDraft> {
        parse_file(source, opts).chunks
    }

    fn paths(chunks: &[ChunkDraft]) -> Vec<String> {
        chunks
            .iter()
            .map(|chunk| chunk.heading_path.join(" > "))
            .collect()
    }

    fn lines(chunks: &[ChunkDraft]) -> Vec<(usize, usize)> {
        chunks.iter().map(|chunk| chunk.lines).collect()
    }

    fn tokens(chunks: &[ChunkDraft]) -> Vec<usize> {
        chunks
            .iter()
            .map(|chunk| estimate_tokens(&chunk.text))
            .collect()
    }

    #[test]
    fn estimate_counts_words_symbols_and_ideographs() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens(" \n\t "), 0);
        assert_eq!(estimate_tokens("hello world"), 2);
        assert_eq!(estimate_tokens("configuration"), 3);
        assert_eq!(estimate_tokens("snake_case_name"), 3);
        assert_eq!(estimate_tokens("a.b"), 3);
        assert_eq!(estimate_tokens("---"), 1);
        assert_eq!(estimate_tokens("|---|---|"), 3);
        assert_eq!(estimate_tokens("日本語"), 3);
        assert_eq!(estimate_tokens("don't"), 3);
        assert_eq!(estimate_tokens("## Connection pool"), 4);
        let (a, b) = ("fn main() { x.y(); }", "## Title\n- item");
        assert_eq!(
            estimate_tokens(&format!("{a}\n\n{b}")),
            estimate_tokens(a) + estimate_tokens(b)
        );
    }

    #[test]
    fn defaults() {
        assert_eq!(ChunkOptions::default(), opts(200, 40, 1_600));
    }

    #[test]
    fn section_chunk_has_heading_and_blocks_verbatim() {
        let body = words(50);
        let source =
            format!("# Runbook\n\n## Postgres\n\n{body}\n\n```sh\npsql -c 'select 1'\n```\n");
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["Runbook > Postgres"]);
        assert_eq!(lines(&chunks), vec![(3, 9)]);
        assert_eq!(
            chunks[0].text,
            format!("## Postgres\n\n{body}\n\n```sh\npsql -c 'select 1'\n```")
        );
    }

    #[test]
    fn preamble_is_kept_with_empty_path() {
        let source = format!("{}\n\n# Title\n\n{}\n", words(60), words(60));
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["", "Title"]);
        assert_eq!(lines(&chunks), vec![(1, 1), (3, 5)]);
    }

    #[test]
    fn heading_without_body_lives_on_in_a_path_or_joins_a_chunk() {
        // `# A` lives on in `A > B`; `# C`, with nothing under it, joins the chunk before.
        let source = format!("# A\n## B\n\n{}\n\n# C\n", words(60));
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["A > B · C"]);
        assert_eq!(lines(&chunks), vec![(2, 6)]);
        assert!(chunks[0].text.starts_with("## B\n\nword"));
        assert!(chunks[0].text.ends_with("\n\n# C"));
    }

    #[test]
    fn a_file_of_headings_keeps_every_word() {
        let opts = ChunkOptions::default();
        let only = chunks("# A\n## B\n### C\n", &opts);
        assert_eq!(paths(&only), vec!["A > B > C"]);
        assert_eq!(only[0].text, "### C");
        let one_line = chunks("# idea: foo bar", &opts);
        assert_eq!(one_line[0].text, "# idea: foo bar");
        let setext = chunks("Body.\n\nEnd\n---\n", &opts);
        assert_eq!(paths(&setext), vec!["End"]);
        assert_eq!(setext[0].text, "Body.\n\nEnd\n---");
        let crlf = chunks("# Top\r\n\r\nbody\r\n\r\n## Last words\r\n", &opts);
        assert_eq!(paths(&crlf), vec!["Top > Last words"]);
        assert_eq!(lines(&crlf), vec![(1, 5)]);
        // Siblings without body: each is a section of its own, merged as tiny ones are.
        let siblings = chunks("# A\n## B\n## C\n", &opts);
        assert_eq!(paths(&siblings), vec!["A > B · C"]);
        // A heading cut to fit a path is kept whole in a chunk of its own.
        let long = format!("# {}\n## B\n\nbody\n", "word ".repeat(100).trim_end());
        let cut = chunks(&long, &opts);
        assert!(cut[0].text.starts_with("# word word"), "{cut:?}");
        assert!(cut.iter().all(|c| !c.heading_path.is_empty()));
    }

    #[test]
    fn nothing_rules_or_empty_headings_make_no_chunks() {
        let opts = ChunkOptions::default();
        for source in [
            "",
            "\n",
            "#\n##\n",
            "***\n",
            "---\ntitle: x\n---\n",
            "---\n---\n",
            "---\n",
        ] {
            assert_eq!(chunks(source, &opts), vec![], "{source:?}");
        }
    }

    #[test]
    fn blocks_are_packed_within_budget_and_balanced() {
        // Ten 50-token paragraphs (500 tokens) with a 400 budget: two chunks of 250, not 400 + 100.
        let paragraphs = vec![words(50); 10].join("\n\n");
        let chunks = chunks(&paragraphs, &opts(400, 0, 1_600));
        assert_eq!(tokens(&chunks), vec![250, 250]);
        assert_eq!(lines(&chunks), vec![(1, 9), (11, 19)]);
        assert_eq!(paths(&chunks), vec!["", ""]);
    }

    #[test]
    fn packing_never_exceeds_the_budget() {
        let sizes = [120, 80, 200, 30, 150, 90, 60, 199, 10, 77];
        let body = sizes
            .iter()
            .map(|n| words(*n))
            .collect::<Vec<_>>()
            .join("\n\n");
        let chunks = chunks(&format!("# S\n\n{body}\n"), &opts(300, 0, 1_000));
        let sizes = tokens(&chunks);
        assert!(sizes.iter().all(|n| *n <= 300), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 2 + 1016);
        assert!(chunks.iter().all(|c| c.heading_path == ["S"]));
        // Every block is whole: rejoining the chunks gives back the section.
        let joined: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined.join("\n\n"), format!("# S\n\n{body}"));
    }

    #[test]
    fn big_code_block_under_hard_limit_stays_whole() {
        let code = (0..60).map(|_| words(10)).collect::<Vec<_>>().join("\n");
        let source = format!(
            "# H\n\n{}\n\n```\n{code}\n```\n\n{}\n",
            words(30),
            words(30)
        );
        let chunks = chunks(&source, &opts(400, 0, 1_600));
        assert_eq!(lines(&chunks), vec![(1, 3), (5, 66), (68, 68)]);
        assert_eq!(chunks[1].text, format!("```\n{code}\n```"));
        assert_eq!(tokens(&chunks), vec![32, 602, 30]);
    }

    #[test]
    fn heading_stays_with_its_first_block() {
        let source = format!("## H\n\n{}\n\n{}\n", words(390), words(100));
        let chunks = chunks(&source, &opts(400, 0, 1_600));
        assert_eq!(lines(&chunks), vec![(1, 3), (5, 5)]);
        assert_eq!(tokens(&chunks), vec![392, 100]);
    }

    #[test]
    fn block_over_hard_limit_is_cut_at_lines() {
        // 30 lines of 10 tokens: 300 tokens, hard limit 100.
        let code = (0..30).map(|_| words(10)).collect::<Vec<_>>().join("\n");
        let source = format!("# H\n\n```\n{code}\n```\n");
        let chunks = chunks(&source, &opts(50, 0, 100));
        assert_eq!(tokens(&chunks), vec![93, 100, 100, 11]);
        assert_eq!(lines(&chunks), vec![(1, 12), (13, 22), (23, 32), (33, 34)]);
        assert!(chunks[0].text.starts_with("# H\n\n```\nword"));
        assert_eq!(chunks[1].text, vec![words(10); 10].join("\n"));
        assert_eq!(chunks[3].text, format!("{}\n```", words(10)));
        assert!(chunks.iter().all(|c| c.heading_path == ["H"]));
    }

    #[test]
    fn heading_that_cannot_share_the_first_cut_piece_stands_alone() {
        let source = format!("# H\n\n{}\n{}\n", words(99), words(10));
        let chunks = chunks(&source, &opts(50, 0, 100));
        assert_eq!(tokens(&chunks), vec![2, 99, 10]);
        assert_eq!(lines(&chunks), vec![(1, 1), (3, 3), (4, 4)]);
    }

    #[test]
    fn over_long_line_is_cut_at_whitespace() {
        let source = format!("intro\n\n{}\n", words(250));
        let chunks = chunks(&source, &opts(50, 0, 100));
        assert_eq!(tokens(&chunks), vec![1, 100, 100, 50]);
        assert_eq!(lines(&chunks), vec![(1, 1), (3, 3), (3, 3), (3, 3)]);
        assert!(
            chunks[1..]
                .iter()
                .all(|c| c.text.starts_with("word") && c.text.ends_with("word"))
        );
    }

    #[test]
    fn over_long_word_is_cut_between_characters() {
        // 900 two-byte characters in one word: 150 tokens, cut into pieces of 60 words-chars * 6.
        let word = "é".repeat(900);
        let chunks = chunks(&word, &opts(50, 0, 60));
        assert_eq!(tokens(&chunks), vec![60, 60, 30]);
        assert_eq!(
            chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
            word
        );
        let ideographs = "字".repeat(250);
        let chunks = self::chunks(&ideographs, &opts(50, 0, 100));
        assert_eq!(tokens(&chunks), vec![100, 100, 50]);
    }

    #[test]
    fn tiny_section_merges_into_next_sibling() {
        let source = format!("# A\n\n## B\n\nshort\n\n## C\n\n{}\n", words(100));
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["A > B · C"]);
        assert_eq!(lines(&chunks), vec![(3, 9)]);
        assert_eq!(
            chunks[0].text,
            format!("## B\n\nshort\n\n## C\n\n{}", words(100))
        );
    }

    #[test]
    fn tiny_parent_intro_merges_into_its_child() {
        let source = format!("# Runbook\n\nOps notes.\n\n## Postgres\n\n{}\n", words(100));
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["Runbook > Postgres"]);
        assert_eq!(lines(&chunks), vec![(1, 7)]);
        assert!(chunks[0].text.contains("## Postgres"));
    }

    #[test]
    fn tiny_section_merges_into_previous_when_next_is_elsewhere() {
        let source = format!(
            "# A\n\n{}\n\n## B\n\nshort\n\n# Z\n\n{}\n",
            words(100),
            words(100)
        );
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["A > B", "Z"]);
        assert_eq!(lines(&chunks), vec![(1, 7), (9, 11)]);
        assert!(chunks[0].text.ends_with("## B\n\nshort"));
    }

    #[test]
    fn tiny_section_stays_alone_when_neighbours_are_full() {
        let source = format!(
            "# A\n\n{}\n\n## B\n\nshort\n\n## C\n\n{}\n",
            words(398),
            words(398)
        );
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["A", "A > B", "A > C"]);
        assert_eq!(lines(&chunks)[1], (5, 7));
    }

    #[test]
    fn tiny_section_with_unrelated_neighbours_stays_alone() {
        let source = format!(
            "# A\n\n{}\n\n# B\n\n## C\n\nshort\n\n# D\n\n{}\n",
            words(100),
            words(100)
        );
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["A", "B > C", "D"]);
    }

    #[test]
    fn consecutive_tiny_sections_chain_together() {
        let source = "# A\n\none\n\n# B\n\ntwo\n\n# C\n\nthree\n";
        let chunks = chunks(source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["A · B · C"]);
        assert_eq!(lines(&chunks), vec![(1, 11)]);
        assert_eq!(chunks[0].text, "# A\n\none\n\n# B\n\ntwo\n\n# C\n\nthree");
    }

    #[test]
    fn tiny_preamble_merges_into_first_section() {
        let source = format!("Draft.\n\n# T\n\n{}\n", words(100));
        let chunks = chunks(&source, &ChunkOptions::default());
        assert_eq!(paths(&chunks), vec!["T"]);
        assert_eq!(lines(&chunks), vec![(1, 5)]);
    }

    #[test]
    fn parse_file_counts_front_matter_lines_and_picks_title() {
        let source = format!(
            "---\ntitle: From YAML\ntags: [a]\n---\n# Heading\n\n{}\n",
            words(50)
        );
        let parsed = parse_file(&source, &ChunkOptions::default());
        assert_eq!(parsed.title.as_deref(), Some("From YAML"));
        assert_eq!(
            parsed.front_matter.metadata.get("tags"),
            Some(&vec!["a".to_owned()])
        );
        assert_eq!(lines(&parsed.chunks), vec![(5, 7)]);
        let parsed = parse_file("# Heading\n\ntext\n", &ChunkOptions::default());
        assert_eq!(parsed.title.as_deref(), Some("Heading"));
    }

    #[test]
    fn broken_front_matter_still_chunks_the_body() {
        let parsed = parse_file("---\na: [\n---\n# T\n\nbody\n", &ChunkOptions::default());
        assert!(parsed.front_matter.error.is_some());
        assert!(parsed.front_matter.metadata.is_empty());
        assert_eq!(paths(&parsed.chunks), vec!["T"]);
        assert_eq!(lines(&parsed.chunks), vec![(4, 6)]);
        // Unclosed: the whole file is markdown (a thematic break, then a paragraph).
        let parsed = parse_file("---\ntitle: x\n# T\n\nbody\n", &ChunkOptions::default());
        assert!(parsed.front_matter.error.is_some());
        assert_eq!(lines(&parsed.chunks), vec![(2, 5)]);
        assert_eq!(parsed.chunks[0].text, "title: x\n\n# T\n\nbody");
    }

    #[test]
    fn crlf_file() {
        let source = "---\r\nk: v\r\n---\r\n# T\r\n\r\nline one\r\nline two\r\n";
        let parsed = parse_file(source, &ChunkOptions::default());
        assert_eq!(lines(&parsed.chunks), vec![(4, 7)]);
        assert_eq!(parsed.chunks[0].text, "# T\n\nline one\nline two");
    }

    #[test]
    fn deterministic() {
        let source = format!(
            "intro\n\n# A\n\n{}\n\n## B\n\nx\n\n```\n{}\n```\n",
            words(500),
            words(3000)
        );
        let opts = ChunkOptions::default();
        assert_eq!(parse_file(&source, &opts), parse_file(&source, &opts));
    }

    #[test]
    fn degenerate_options_do_not_panic() {
        let source = format!("# A\n\n{}\n\nshort\n", words(30));
        for opts in [opts(0, 0, 0), opts(1, 1_000, 0), opts(5, 5, 1)] {
            let chunks = chunks(&source, &opts);
            assert!(!chunks.is_empty());
            let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
            assert_eq!(joined.matches("word").count(), 30);
        }
    }

    /// A document of `parts` random fragments; each body fragment carries a
    /// unique marker `zq{n}zq`. Returns the source and the marker count.
    fn generated_document(seed: u64, parts: usize) -> (String, usize) {
        let mut state = seed;
        let mut next = move |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % bound
        };
        let mut fragments = Vec::new();
        let mut markers = 0;
        for _ in 0..parts {
            let marker = format!("zq{markers}zq");
            let fragment = match next(6) {
                0 => format!("{} H{}", "#".repeat(1 + next(4)), next(100)),
                1 => format!("{marker} {}", words(next(200))),
                2 => format!(
                    "```\n{marker}\n{}\n```",
                    vec![words(next(12)); next(30)].join("\n")
                ),
                3 => format!("- {marker}\n- {}\n  - {}", words(next(30)), words(next(30))),
                4 => format!("| {marker} | b |\n|---|---|\n| {} | 2 |", words(next(50))),
                _ => format!("> {marker} {}", words(next(80))),
            };
            markers += usize::from(!fragment.starts_with('#'));
            fragments.push(fragment);
        }
        let separator = if next(2) == 0 { "\n\n" } else { "\r\n\r\n" };
        (fragments.join(separator), markers)
    }

    #[test]
    fn generated_documents_keep_invariants() {
        let opts = opts(60, 10, 120);
        for seed in 0..200 {
            let (source, markers) = generated_document(seed, 1 + seed as usize % 40);
            let line_count = source.split('\n').count();
            let chunks = chunks(&source, &opts);
            let mut previous_end = 0;
            for chunk in &chunks {
                let (start, end) = chunk.lines;
                // Pieces of one over-long line share that line.
                assert!(
                    previous_end <= start && 0 < start && start <= end && end <= line_count,
                    "{seed}: {:?}",
                    lines(&chunks)
                );
                previous_end = end;
                // Over the hard limit only by a glued heading (at most 3 tokens here).
                assert!(estimate_tokens(&chunk.text) <= 123, "{seed}");
                assert!(!chunk.text.contains('\r'), "{seed}");
            }
            for marker in 0..markers {
                let marker = format!("zq{marker}zq");
                let found: usize = chunks.iter().map(|c| c.text.matches(&marker).count()).sum();
                assert_eq!(found, 1, "seed {seed}, {marker}");
            }
            assert_eq!(chunks, self::chunks(&source, &opts), "{seed}");
        }
    }

    #[test]
    fn huge_single_line_paragraph() {
        let source = words(1_000_000);
        assert_eq!(source.len(), 4_999_999);
        let started = Instant::now();
        let chunks = chunks(&source, &ChunkOptions::default());
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(chunks.len(), 625);
        assert!(tokens(&chunks).iter().all(|n| *n == 1_600));
        assert!(chunks.iter().all(|c| c.lines == (1, 1)));
    }

    #[test]
    fn huge_heading() {
        let source = format!("# {}\n\nbody\n", words(200_000));
        let chunks = chunks(&source, &ChunkOptions::default());
        assert!(tokens(&chunks).iter().all(|n| *n <= 1_600));
        assert_eq!(chunks.last().map(|c| c.lines), Some((1, 3)));
        assert!(
            chunks
                .iter()
                .all(|c| c.heading_path[0].chars().count() == 201)
        );
        let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(joined.matches("word").count(), 200_000);
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let opts = ChunkOptions::default();
        let nested_lists = format!("{}x\n", "- ".repeat(10_000));
        let nested_quotes = format!("{}x\n", "> ".repeat(10_000));
        let inputs = [
            "\0",
            "\t# T\n\tcode\n",
            "```\nunclosed\n",
            "<div>\n\n</div>\n",
            "---\n\n---\n\ntext\n---\n",
            "para\n\n---\n\n# H\n---\n",
            "\r\r\r# T\r\rbody\r",
            nested_lists.as_str(),
            nested_quotes.as_str(),
        ];
        for input in inputs {
            let started = Instant::now();
            let _ = parse_file(input, &opts);
            assert!(started.elapsed() < Duration::from_secs(2), "{input:?}");
        }
        assert_eq!(lines(&chunks("\r\r\r# T\r\rbody\r", &opts)), vec![(4, 6)]);
        let after_rule = chunks("intro\n\n---\n\nmore\n", &opts);
        assert_eq!(after_rule[0].text, "intro\n\nmore");
    }
}
