//! Compact plain text for agents (the text content of MCP tool results):
//! what the human printer shows, without colour or alignment, and with
//! whole texts instead of one-line snippets. Nothing is escaped: the
//! reader is a program, not a terminal.

use std::fmt::Write;

use super::get::GetResponse;
use super::{BY_MEANING_ALONE, SearchResponse, folded_note, weak_note};

/// One block per result: rank, chunk id, lines and score; the heading
/// path; the text (when the response has it). Then a line saying what the
/// budget left out, if anything.
pub fn search(response: &SearchResponse) -> String {
    let mut out = String::new();
    if response.results.is_empty() {
        out.push_str("no results\n");
    }
    if let Some(note) = &response.nothing_matched {
        let _ = writeln!(out, "[{note}]");
    }
    if response.by_meaning_alone {
        let _ = writeln!(out, "{BY_MEANING_ALONE}\n");
    }
    if let Some(note) = weak_note(response) {
        let _ = writeln!(out, "{note}\n");
    }
    for (i, hit) in response.results.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. {}  lines {}-{}  score {:.5}",
            i + 1,
            hit.chunk_id,
            hit.lines[0],
            hit.lines[1],
            hit.rrf_score
        );
        if !hit.heading.is_empty() {
            let _ = writeln!(out, "{}", hit.heading);
        }
        if let Some(text) = &hit.text {
            let _ = writeln!(out, "{}", text.trim_end());
        }
        if hit.more_in_file > 0 {
            let _ = writeln!(out, "{}", folded_note(hit.more_in_file, "per_file"));
        }
        out.push('\n');
    }
    if response.truncated {
        let _ = writeln!(
            out,
            "[max_chars reached: {} more result(s) left out{}; get a chunk_id for its full text]",
            response.omitted,
            if response.omitted == 0 {
                ", the first text cut"
            } else {
                ""
            }
        );
    }
    out
}

/// The source and lines (and chunk id), the heading path, the text, and a
/// line when it was cut or its file changed since indexing.
pub fn get(got: &GetResponse) -> String {
    let mut out = format!("{}:{}-{}", got.source, got.lines[0], got.lines[1]);
    if let Some(id) = &got.chunk_id {
        let _ = write!(out, "  {id}");
    }
    out.push('\n');
    if let Some(heading) = got.heading.as_deref().filter(|h| !h.is_empty()) {
        let _ = writeln!(out, "{heading}");
    }
    let _ = writeln!(out, "{}", got.text.trim_end());
    if got.truncated {
        let _ = writeln!(
            out,
            "[cut to {} of {} characters by max_chars]",
            got.text.chars().count(),
            got.chars
        );
    }
    if got.changed {
        out.push_str("[the file changed since indexing; this is the indexed text]\n");
    }
    out
}
