//! The human printer: compact, aligned text for a terminal or a pager.

use std::io::Write;

use anyhow::Result;

use super::SearchResponse;
use crate::corpus::Skipped;
use crate::eval::{EvalReport, FusionSetting};
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

/// Prints the eval table (one row per mode), the settings, and the sweep.
pub fn print_eval(out: &mut dyn Write, report: &EvalReport, saved: bool) -> Result<()> {
    writeln!(
        out,
        "{:<8} {:>8} {:>10} {:>11} {:>8}",
        "mode", "nDCG@10", "Recall@10", "Recall@100", "MRR@10"
    )?;
    for mode in &report.modes {
        let m = &mode.metrics;
        writeln!(
            out,
            "{:<8} {:>8.4} {:>10.4} {:>11.4} {:>8.4}",
            mode.mode, m.ndcg_10, m.recall_10, m.recall_100, m.mrr_10
        )?;
    }
    writeln!(
        out,
        "{} queries ({} judged); {}; {:.2} s",
        report.queries,
        report.judged_queries,
        describe(&report.setting),
        report.elapsed.as_secs_f64()
    )?;
    if let Some(sweep) = &report.sweep {
        writeln!(
            out,
            "\nsweep: {} settings, tuned on one half of the queries, checked on the held-out half",
            sweep.settings_tried
        )?;
        writeln!(out, "{:<48} {:>10} {:>10}", "setting", "tune", "held-out")?;
        let row = |out: &mut dyn Write, label: &str, s: &crate::eval::SweepScore| {
            writeln!(
                out,
                "{:<48} {:>10.4} {:>10.4}",
                format!("{label}{}", describe(&s.setting)),
                s.tune_ndcg_10,
                s.held_out_ndcg_10
            )
        };
        row(out, "default: ", &sweep.default)?;
        for (i, s) in sweep.top.iter().enumerate() {
            row(out, &format!("#{}: ", i + 1), s)?;
        }
        writeln!(
            out,
            "best beats the default by {:+.4} nDCG@10 on the held-out half{}",
            sweep.best.held_out_ndcg_10 - sweep.default.held_out_ndcg_10,
            if saved {
                "; saved as the index's defaults"
            } else {
                " (--save stores it in the index)"
            }
        )?;
    }
    Ok(())
}

/// `k 60, sparse 1, dense 0.3, window 100`.
fn describe(s: &FusionSetting) -> String {
    format!(
        "k {}, sparse {}, dense {}, window {}",
        s.rrf_k, s.sparse_weight, s.dense_weight, s.window
    )
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
