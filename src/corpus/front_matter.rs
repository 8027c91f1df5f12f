//! YAML front matter at the top of a markdown file, read into [`Metadata`].
//!
//! `serde-saphyr` parses it: `serde_yaml` is unmaintained; serde-saphyr is
//! maintained and enforces budgets (events, nodes, depth, alias replay), which
//! are tightened here so an alias bomb or deeply nested YAML fails fast
//! instead of exhausting memory. Nothing here panics on any input.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::options::{DuplicateKeyPolicy, NonFiniteFloatPolicy};

use super::Metadata;
use super::lines::{line_spans, truncate_chars};

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

/// `text` as a YAML double-quoted scalar that every YAML reader reads back
/// as `text`: `"` and `\` escaped, and every character YAML does not allow
/// as is (C0 controls, DEL, C1 controls, U+FEFF, U+FFFE, U+FFFF) or that
/// a YAML 1.1 reader takes for a line break (U+0085, U+2028, U+2029)
/// written as an escape. The front matter `memidx remember` writes uses it
/// for keys, the title and values.
pub(crate) fn double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => {
                out.push_str(&format!("\\x{:02X}", u32::from(c)));
            }
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => {
                out.push_str(&format!("\\u{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
/// message can include a multi-line source snippet), cut to [`MAX_ERROR_CHARS`],
/// its position given as a line of the file: the parser counts from the
/// YAML's first line, the file's second (after the opening `---`).
fn describe_yaml_error(error: serde_saphyr::Error) -> String {
    let message = error.to_string();
    let first = message.lines().next().unwrap_or_default().trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let text = match error.location().filter(|at| at.line() > 0) {
        Some(at) => {
            let parser_position = format!("line {} column {}: ", at.line(), at.column());
            let detail = first.strip_prefix(&parser_position).unwrap_or(first);
            format!("line {} column {}: {detail}", at.line() + 1, at.column())
        }
        None => first.to_string(),
    };
    format!(
        "invalid front matter YAML: {}",
        truncate_chars(&text, MAX_ERROR_CHARS)
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
    fn a_double_quoted_scalar_reads_back_as_its_text() {
        let chars = ('\0'..='\u{3000}')
            .chain('\u{fe00}'..='\u{10100}')
            .chain(['\u{10ffff}']);
        for c in chars {
            let text = format!("a{c}b");
            let fm = parse_front_matter(&format!("---\nk: {}\n---\n", double_quoted(&text)));
            assert_eq!(fm.error, None, "U+{:04X}", u32::from(c));
            assert_eq!(
                fm.metadata,
                meta(&[("k", &[&text])]),
                "U+{:04X}",
                u32::from(c)
            );
        }
        assert_eq!(double_quoted("\u{7f}\u{85}\"\\"), r#""\x7F\x85\"\\""#);
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
    fn a_yaml_error_names_the_line_of_the_file() {
        // `title: Design review: search` is the file's line 3.
        let source = "---\ndate: 2024-01-02\ntitle: Design review: search\n---\nbody\n";
        let error = parse_front_matter(source).error.expect("error");
        assert!(
            error.starts_with("invalid front matter YAML: line 3 column "),
            "{error}"
        );
        assert_eq!(error.matches("line").count(), 1, "{error}");
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
}
