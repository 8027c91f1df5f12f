//! Lines and lengths of source text, shared by the front matter and section readers.

use std::ops::Range;

/// One line of a text: its content range (without the line ending) and the
/// offset where the next line starts.
pub(super) struct LineSpan {
    /// Byte range of the line's content.
    pub(super) content: Range<usize>,
    /// Byte offset just past the line ending.
    pub(super) next: usize,
}

/// The lines of `text` from byte offset `from`, split at `\n`, `\r\n` or a lone
/// `\r` (CommonMark's line endings). A final line ending starts no extra line.
pub(super) fn line_spans(text: &str, from: usize) -> impl Iterator<Item = LineSpan> + '_ {
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

/// `text` cut to at most `max` characters, with `…` appended when cut.
pub(super) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
