//! The human printer: compact, aligned text for a terminal or a pager.

use std::io::Write;

use anyhow::Result;

use super::SearchResponse;
use crate::corpus::Skipped;
use crate::indexer::IndexReport;

/// Longest snippet shown under a result, in characters.
const SNIPPET_CHARS: usize = 200;

/// Prints search results: rank, fused score, `path:first-last`, heading path,
/// each list's rank, then a one-paragraph snippet.
pub fn print_search(out: &mut dyn Write, response: &SearchResponse) -> Result<()> {
    let width = response.results.len().to_string().len();
    for (i, hit) in response.results.iter().enumerate() {
        let ranks: Vec<String> = hit
            .ranks
            .iter()
            .map(|(list, r)| match r {
                Some(r) => format!("{list} #{}", r.rank),
                None => format!("{list} -"),
            })
            .collect();
        writeln!(
            out,
            "{rank:>width$}. {score:.5}  {source}:{first}-{last}  [{ranks}]",
            rank = i + 1,
            score = hit.rrf_score,
            source = hit.source,
            first = hit.lines[0],
            last = hit.lines[1],
            ranks = ranks.join(", "),
        )?;
        let indent = " ".repeat(width + 2);
        if !hit.heading.is_empty() {
            writeln!(out, "{indent}{}", hit.heading)?;
        }
        writeln!(out, "{indent}{}", snippet(&hit.text))?;
        writeln!(out)?;
    }
    Ok(())
}

/// Prints the one-line summary of an indexing run.
pub fn print_index_summary(out: &mut dyn Write, report: &IndexReport) -> Result<()> {
    writeln!(
        out,
        "indexed {} files ({} unchanged), {} chunks, {} skipped in {:.2} s -> {}",
        report.files,
        report.reused,
        report.chunks,
        report.skipped.len(),
        report.elapsed.as_secs_f64(),
        report.index_dir.display()
    )?;
    Ok(())
}

/// Prints warnings about skipped files and other non-fatal problems.
pub fn print_index_warnings(
    err: &mut dyn Write,
    skipped: &[Skipped],
    warnings: &[String],
) -> Result<()> {
    for s in skipped {
        writeln!(err, "memidx: warning: {s}")?;
    }
    for w in warnings {
        writeln!(err, "memidx: warning: {w}")?;
    }
    Ok(())
}

/// The text of a chunk as one line: heading lines and markup noise dropped,
/// whitespace collapsed, cut at a character boundary with an ellipsis.
fn snippet(text: &str) -> String {
    let body: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("```"))
        .collect();
    let joined = body.join(" ");
    let collapsed: String = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_skips_headings_and_fences_and_cuts_long_text() {
        assert_eq!(
            snippet("# Title\n\nsome   text\n```bash\nls\n```\n"),
            "some text ls"
        );
        let long = "é".repeat(300);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 1);
        assert!(s.ends_with('…'));
    }
}
