//! The human printer: compact, aligned text for a terminal or a pager.

use std::io::Write;

use anstyle::{AnsiColor, Color, Style};
use anyhow::Result;

use super::explain::ExplainReport;
use super::get::GetResponse;
use super::here::Here;
use super::remember::RememberReport;
use super::{BY_MEANING_ALONE, SearchResponse, escape_controls, folded_note, weak_note};
use crate::corpus::Skipped;
use crate::eval::{EvalReport, FusionSetting};
use crate::fusion::{FusionMethod, FusionSource};
use crate::index::status::{MetadataKey, StatusReport};
use crate::indexer::IndexReport;
use crate::lists::ListKind;
use crate::lists::dense::codes::DenseIndexSetting;
use crate::retriever::StaleFiles;

/// Longest snippet shown under a result, in characters.
const SNIPPET_CHARS: usize = 200;

/// Styles of the human output (rendered only when colour is on).
const RANK: Style = Style::new().bold();
const SCORE: Style = Style::new().dimmed();
const PATH: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Magenta)));
const LINE: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Green)));
const HEADING: Style = Style::new().fg_color(Some(Color::Ansi(AnsiColor::Cyan)));
const MATCH: Style = Style::new()
    .bold()
    .fg_color(Some(Color::Ansi(AnsiColor::Red)));
const NOTE: Style = Style::new().dimmed();

/// Prints search results: rank, fused score, `path:first-last` (the form
/// editors and terminals open), each list's rank, the heading path, then a
/// one-line snippet with the query's words highlighted, cut to `width`
/// columns when known. Paths, headings and text are printed with their
/// control characters escaped ([`escape_controls`]). `dates_decide` (a
/// time filter or the recency list) shows modification-time dates too,
/// marked as such. Paths show from `here`.
pub fn print_search(
    out: &mut dyn Write,
    response: &SearchResponse,
    query: &str,
    width: Option<usize>,
    dates_decide: bool,
    here: &Here,
) -> Result<()> {
    let digits = response.results.len().to_string().len();
    let indent = " ".repeat(digits + 2);
    let snippet_chars = width.map_or(SNIPPET_CHARS, |w| {
        w.saturating_sub(indent.len() + 1).clamp(20, SNIPPET_CHARS)
    });
    let words = query_words(query);
    if response.by_meaning_alone {
        writeln!(out, "{NOTE}{BY_MEANING_ALONE}{NOTE:#}\n")?;
    }
    if let Some(note) = weak_note(response) {
        writeln!(out, "{NOTE}{note}{NOTE:#}\n")?;
    }
    for (i, hit) in response.results.iter().enumerate() {
        let ranks: Vec<String> = hit
            .ranks
            .iter()
            .map(|(list, r)| match r {
                Some(r) => format!("{list} #{}", r.rank),
                None => format!("{list} -"),
            })
            .collect();
        // A date the document states (front matter, path) is shown; a
        // modification time says little about the note, so it is shown
        // only where it decides (what --since lets through, what --recent
        // favours), and marked.
        let date = match (hit.date.from, dates_decide) {
            ("mtime", false) => String::new(),
            ("mtime", true) => format!("  {} (mtime)", day(&hit.date.value)),
            _ => format!("  {}", day(&hit.date.value)),
        };
        writeln!(
            out,
            "{RANK}{rank:>digits$}.{RANK:#} {SCORE}{score:.5}{SCORE:#}  {PATH}{source}{PATH:#}:{LINE}{first}{LINE:#}-{last}{date}  {NOTE}[{ranks}]{NOTE:#}",
            rank = i + 1,
            score = hit.rrf_score,
            source = escape_controls(&here.show(&hit.source)),
            first = hit.lines[0],
            last = hit.lines[1],
            ranks = ranks.join(", "),
        )?;
        if !hit.heading.is_empty() {
            writeln!(
                out,
                "{indent}{HEADING}{}{HEADING:#}",
                escape_controls(&hit.heading)
            )?;
        }
        if let Some(text) = &hit.text {
            writeln!(
                out,
                "{indent}{}",
                highlight(&escape_controls(&snippet(text, snippet_chars)), &words)
            )?;
        }
        print_folded(out, &indent, hit.more_in_file)?;
        writeln!(out)?;
    }
    if response.truncated {
        let cut = match response.omitted {
            0 => "the first result's text cut".to_string(),
            1 => "1 more result left out".to_string(),
            n => format!("{n} more results left out"),
        };
        writeln!(
            out,
            "{NOTE}[{cut} by --max-chars; raise it, or 'memidx get ID' a result]{NOTE:#}"
        )?;
    }
    Ok(())
}

/// The line under a file's last result saying how many more of its chunks
/// were folded away, if any.
fn print_folded(out: &mut dyn Write, indent: &str, more: usize) -> Result<()> {
    if more > 0 {
        writeln!(
            out,
            "{indent}{NOTE}{}{NOTE:#}",
            folded_note(more, "--per-file")
        )?;
    }
    Ok(())
}

/// Warns once that some results come from files changed since indexing,
/// and once that some come from files deleted since, naming the first of
/// each (escaped).
pub fn print_stale_notice(err: &mut dyn Write, stale: &StaleFiles) -> Result<()> {
    for (files, what) in [(&stale.changed, "changed"), (&stale.deleted, "deleted")] {
        let Some(first) = files.first() else {
            continue;
        };
        let more = if files.len() > 1 {
            format!(" and {} more", files.len() - 1)
        } else {
            String::new()
        };
        writeln!(
            err,
            "memidx: warning: results come from files {what} since indexing ({}{more}); run 'memidx index' to update",
            escape_controls(first)
        )?;
    }
    Ok(())
}

/// The query's words, lowercased, for highlighting (two characters or more).
fn query_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// Marks the words of `text` that a query word matches: the same word, or
/// (for query words of four letters or more) a word it begins, so
/// `connection` also marks `connections`.
fn highlight(text: &str, words: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(char::is_alphanumeric) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let lower = word.to_lowercase();
        let hit = words
            .iter()
            .any(|w| lower == *w || (w.chars().count() >= 4 && lower.starts_with(w.as_str())));
        if hit {
            out.push_str(&format!("{MATCH}{word}{MATCH:#}"));
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Prints the explain table: per result, one line per list with rank, raw
/// score, weight and contribution (or why it is absent), then the sum; then
/// the lists' candidate counts and the timings. Paths (shown from `here`),
/// chunk ids, headings and reasons are printed with their control
/// characters escaped.
pub fn print_explain(out: &mut dyn Write, report: &ExplainReport, here: &Here) -> Result<()> {
    let filter = if report.filter.is_empty() {
        String::new()
    } else {
        format!(", filter {}", escape_controls(&report.filter.join(" ")))
    };
    let (fusion, contribution) = match report.fusion {
        "rrf" => (format!("rrf, k {}", report.rrf_k), "w/(k+rank)"),
        "adaptive" => (
            "relative scores, weights moved by each list's spread".to_string(),
            "w×raw/best",
        ),
        _ => ("relative scores".to_string(), "w×raw/best"),
    };
    writeln!(
        out,
        "query {:?} ({fusion}, window {}{filter})",
        report.query, report.window
    )?;
    writeln!(
        out,
        "{:>4}  {:<8} {:>6} {:>10} {:>7} {:>11}",
        "#", "list", "rank", "raw score", "weight", contribution
    )?;
    for result in &report.results {
        let rank = result.fused_rank.map_or("-".to_string(), |r| r.to_string());
        writeln!(
            out,
            "{rank:>4}  {}:{}-{}  {}",
            escape_controls(&here.show(&result.source)),
            result.lines[0],
            result.lines[1],
            escape_controls(&result.chunk_id)
        )?;
        if !result.heading.is_empty() {
            writeln!(out, "      {}", escape_controls(&result.heading))?;
        }
        for part in &result.lists {
            let rank = part.rank.map_or("-".to_string(), |r| r.to_string());
            let score = part.score.map_or("-".to_string(), |s| format!("{s:.4}"));
            match &part.absent {
                None => write!(
                    out,
                    "      {:<8} {rank:>6} {score:>10} {:>7.2} {:>11.6}",
                    part.list, part.weight, part.contribution
                )?,
                Some(why) => write!(
                    out,
                    "      {:<8} {rank:>6} {score:>10} {:>7.2} {:>11}  ({})",
                    part.list,
                    part.weight,
                    "-",
                    escape_controls(why)
                )?,
            }
            match &part.reason {
                Some(reason) => writeln!(out, "  [{}]", escape_controls(reason))?,
                None => writeln!(out)?,
            }
        }
        writeln!(out, "      {:<8} {:>36.6}", "sum", result.rrf_score)?;
        if result.gated {
            writeln!(
                out,
                "      (holds no exact term of the query: meaning alone counts 0)"
            )?;
        }
        print_folded(out, "      ", result.more_in_file)?;
    }
    let lists: Vec<String> = report
        .lists
        .iter()
        .map(|l| {
            let best = match (report.fusion, l.best_score) {
                ("rrf", _) | (_, None) => String::new(),
                (_, Some(best)) => format!(", best {best:.4}"),
            };
            let on = match l.ran_on.as_str() {
                "local" => String::new(),
                remote => format!(" on {}", escape_controls(remote)),
            };
            let postings = match (l.postings, l.approximate) {
                (Some(p), _) => format!(", {} of {} postings scored", p.scored, p.total),
                (None, Some(a)) => {
                    let cells = a.cells.map_or(String::new(), |c| {
                        format!(" in {} of {} cells", c.probed, c.of)
                    });
                    format!(
                        ", {} codes scanned{cells}, {} rescored",
                        a.scanned, a.rescored
                    )
                }
                (None, None) => String::new(),
            };
            // The file list counts files, each standing for its chunks.
            let unit = match l.name == ListKind::Files.name() {
                true => " files",
                false => "",
            };
            let embedding = match (l.embed_ms, l.network_ms) {
                (Some(embed), Some(network)) => {
                    format!(", embedding {embed:.2} ms, {network:.2} ms of it at the endpoint")
                }
                (Some(embed), None) => format!(", embedding {embed:.2} ms"),
                (None, _) => String::new(),
            };
            format!(
                "{}{on} {} of {}{unit} matched ({} filtered out{best}{postings}) in {:.2} ms (query {:.2} ms{embedding})",
                l.name, l.candidates, l.matched, l.filtered_out, l.total_ms, l.prepare_ms
            )
        })
        .collect();
    writeln!(out, "lists: {}", lists.join("; "))?;
    let moved: Vec<String> = report
        .lists
        .iter()
        .filter_map(|l| {
            let spread = l.spread?;
            Some(format!(
                "{} {:.2} → {:.2} (spread {spread:.2})",
                l.name, l.weight, l.query_weight
            ))
        })
        .collect();
    if !moved.is_empty() {
        writeln!(out, "weights for this query: {}", moved.join(", "))?;
    }
    print_confidence(out, report)?;
    for list in report.lists.iter().filter(|l| !l.feedback.is_empty()) {
        writeln!(
            out,
            "{} query moved toward the first pass's top {}: {}",
            list.name,
            list.feedback.len(),
            escape_controls(&list.feedback.join(", "))
        )?;
    }
    writeln!(
        out,
        "open {:.2} ms, filter {:.2} ms, fuse {:.2} ms, report {:.2} ms",
        report.open_ms, report.filter_ms, report.fuse_ms, report.report_ms
    )?;
    Ok(())
}

/// The metadata keys a filter can name, one line each: the key, its most
/// common values with their file counts, and how many more there are.
fn print_metadata_keys(out: &mut dyn Write, keys: &[MetadataKey]) -> Result<()> {
    let width = keys
        .iter()
        .map(|k| k.key.chars().count())
        .max()
        .unwrap_or(0);
    for (i, key) in keys.iter().enumerate() {
        let label = if i == 0 { "metadata" } else { "" };
        let values = match key.values.is_empty() {
            true => format!("{} values, each in one file", key.distinct),
            false => {
                let shown: Vec<String> = (key.values.iter())
                    .map(|v| format!("{} ({})", escape_controls(&v.value), v.files))
                    .collect();
                let more = key.distinct - key.values.len();
                match more {
                    0 => shown.join(", "),
                    more => format!("{}, … {more} more", shown.join(", ")),
                }
            }
        };
        writeln!(
            out,
            "{label:<10} {:<width$}  {values}",
            escape_controls(&key.key)
        )?;
    }
    Ok(())
}

/// The line saying how the lists' confidence was judged, when it took
/// more than a hit (a noise floor, a near miss) or nothing matched (see
/// `retriever::confidence`).
fn print_confidence(out: &mut dyn Write, report: &ExplainReport) -> Result<()> {
    let mut telling = report.nothing_matched;
    let judged: Vec<String> = report
        .lists
        .iter()
        .filter_map(|l| {
            let best = l.query_best.map_or(String::new(), |b| format!("{b:.3}"));
            telling |= l.near_miss.is_some() || l.noise_floor.is_some() || l.word_floor.is_some();
            if let (Some(confident), Some(share), Some(floor)) =
                (l.confident, l.word_share, l.word_floor)
            {
                let how = if confident { "more than" } else { "no more than" };
                return Some(format!(
                    "{}'s model: a query word's first piece carries {share:.2} of it, {how} made-up words' {floor:.2}",
                    l.name
                ));
            }
            Some(match (l.confident?, l.noise_floor, &l.near_miss) {
                (_, _, Some([word, held])) if word == held => format!(
                    "{} matched no chunk the search allows, but the index holds '{}'",
                    l.name,
                    escape_controls(word)
                ),
                (_, _, Some([word, held])) => format!(
                    "{} matched no chunk, but '{}' is one slip from its '{}'",
                    l.name,
                    escape_controls(word),
                    escape_controls(held)
                ),
                (true, Some(floor), None) => format!(
                    "{}'s best {best} before feedback reaches its noise floor {floor:.3}",
                    l.name
                ),
                (true, None, None) => format!("{} matched", l.name),
                (false, Some(floor), None) => format!(
                    "{}'s best {best} before feedback is below its noise floor {floor:.3}",
                    l.name
                ),
                (false, None, None) => format!("{} matched no chunk", l.name),
            })
        })
        .collect();
    if !telling {
        return Ok(());
    }
    let judged = judged.join("; ");
    match (report.nothing_matched, report.results.is_empty()) {
        (true, false) => writeln!(
            out,
            "nothing matches with confidence ({judged}): search returns none of these unless asked to keep them (--keep-all, keep_all)"
        )?,
        (true, true) => writeln!(out, "nothing matches with confidence ({judged})")?,
        (false, _) => writeln!(out, "confidence: {judged}")?,
    }
    Ok(())
}

/// Longest list of stale files shown per kind.
const STALE_LISTED: usize = 10;

/// Prints the status report as aligned `key  value` lines, paths and the
/// manifest's strings with their control characters escaped.
pub fn print_status(out: &mut dyn Write, r: &StatusReport) -> Result<()> {
    let window = r
        .fusion
        .window
        .map_or("max(200, 2 × top-k)".to_string(), |w| w.to_string());
    writeln!(
        out,
        "index      {} (generation {}, format {}, memidx {})",
        escape_controls(&r.index),
        r.generation,
        r.format_version,
        escape_controls(&r.tool_version)
    )?;
    writeln!(out, "root       {}", escape_controls(&r.root))?;
    writeln!(out, "built      {}", r.built)?;
    if let Some(delta) = &r.delta {
        writeln!(
            out,
            "delta      generation {} after base {}: {} files changed since, {} chunks; {} of the base's files buried ('memidx index --compact' folds it in)",
            delta.generation, delta.base_generation, delta.files, delta.chunks, delta.buried_files
        )?;
    }
    writeln!(
        out,
        "files      {} ({} skipped), {} chunks",
        r.counts.files, r.counts.skipped, r.counts.chunks
    )?;
    for skip in r.skipped.iter().take(STALE_LISTED) {
        writeln!(
            out,
            "  skipped  {}: {}",
            escape_controls(&skip.path),
            escape_controls(&skip.reason)
        )?;
    }
    if r.skipped.len() > STALE_LISTED {
        writeln!(
            out,
            "  skipped  … and {} more",
            r.skipped.len() - STALE_LISTED
        )?;
    }
    writeln!(
        out,
        "model      {} ({} dims, {}){}",
        escape_controls(&r.embedder.id),
        r.embedder.dim,
        escape_controls(&r.embedder.fingerprint),
        r.embedder_url
            .as_ref()
            .map_or(String::new(), |url| format!(" at {}", escape_controls(url)))
    )?;
    if let Some(embedding) = r.embedding {
        let cut = match embedding.chunks_cut {
            Some(cut) => format!(
                "; {cut} of {} chunks are longer (their vectors stand for their start)",
                r.counts.chunks
            ),
            None => String::new(),
        };
        writeln!(
            out,
            "embedded   the model reads a chunk's first {} word pieces{cut}",
            embedding.window
        )?;
    }
    writeln!(
        out,
        "fusion     {}, sparse {}, dense {}, window {}; dense feedback {} ({})",
        match r.fusion.method {
            FusionMethod::Rrf => format!("rrf k {}", r.fusion.rrf_k),
            FusionMethod::Relative => "relative scores".to_string(),
            FusionMethod::Adaptive => "adaptive relative scores".to_string(),
        },
        r.fusion.sparse_weight,
        r.fusion.dense_weight,
        window,
        describe_feedback(r.fusion.dense_feedback),
        match r.fusion_source {
            FusionSource::Builtin => "this build's defaults for the model",
            FusionSource::Saved => "saved by eval --save; kept by re-indexing",
        }
    )?;
    match &r.graph {
        Some(g) => writeln!(
            out,
            "graph      {} entities, {} communities; weight {}{}",
            g.entities,
            g.communities,
            g.weight,
            if g.weight > 0.0 {
                ""
            } else {
                " (off unless --mode names it or --graph-weight is given)"
            }
        )?,
        None => writeln!(out, "graph      none; 'memidx index --graph' builds one")?,
    }
    writeln!(
        out,
        "sparse     BM25 k1 {}, b {}; chunks of ~{} tokens",
        r.bm25.k1, r.bm25.b, r.chunk_tokens
    )?;
    let dense = &r.dense_index;
    let alone = (dense.rows).is_some_and(|rows| dense.setting.serves(rows as usize));
    match dense.rescore_at_least {
        Some(_) if !alone => writeln!(
            out,
            "dense      exact scan of every vector; its sign codes ({}) serve searches over {} chunks and more, with other indexes (--dense-index {})",
            bytes(dense.bytes),
            dense.auto_search_min_chunks,
            dense.setting.name()
        )?,
        Some(at_least) => writeln!(
            out,
            "dense      sign codes, 1 bit per dimension ({}{}): a search scores them, then its best max({} × window, {}) rows exactly (--dense-index {})",
            bytes(dense.bytes),
            dense
                .cells_bytes
                .map_or(String::new(), |size| format!(", in cells: {}", bytes(size))),
            dense.rescore_per_window,
            at_least,
            dense.setting.name()
        )?,
        None => writeln!(
            out,
            "dense      exact scan of every vector (--dense-index {}{})",
            dense.setting.name(),
            match dense.setting {
                DenseIndexSetting::Auto => {
                    format!(": sign codes from {} chunks", dense.auto_min_chunks)
                }
                _ => String::new(),
            }
        )?,
    }
    // A ratio to no markdown at all would be a meaningless number.
    let ratio = match r.markdown_bytes {
        0 => String::new(),
        markdown => format!(" ({:.2}x)", r.index_bytes as f64 / markdown as f64),
    };
    writeln!(
        out,
        "size       {} index for {} of markdown{ratio}",
        bytes(r.index_bytes),
        bytes(r.markdown_bytes),
    )?;
    if let (Some(oldest), Some(newest)) = (&r.dates.oldest, &r.dates.newest) {
        let sources: Vec<String> = r
            .dates
            .files_by_source
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(source, n)| format!("{n} from {source}"))
            .collect();
        writeln!(
            out,
            "dates      {} to {} ({})",
            day(&oldest.date),
            day(&newest.date),
            sources.join(", ")
        )?;
    }
    print_metadata_keys(out, &r.metadata)?;
    if let Some(damaged) = &r.damaged {
        writeln!(
            out,
            "verified   {} files intact",
            if damaged.is_empty() { "all" } else { "not all" }
        )?;
    }
    if r.stale.is_empty() {
        writeln!(out, "stale      none: the index matches the files on disk")?;
        return Ok(());
    }
    writeln!(
        out,
        "stale      {} changed, {} added, {} deleted since indexing; run 'memidx index' to update",
        r.stale.changed.len(),
        r.stale.added.len(),
        r.stale.deleted.len()
    )?;
    for (kind, paths) in [
        ("changed", &r.stale.changed),
        ("added", &r.stale.added),
        ("deleted", &r.stale.deleted),
    ] {
        for path in paths.iter().take(STALE_LISTED) {
            writeln!(out, "  {kind:<8} {}", escape_controls(path))?;
        }
        if paths.len() > STALE_LISTED {
            writeln!(out, "  {kind:<8} … and {} more", paths.len() - STALE_LISTED)?;
        }
    }
    Ok(())
}

/// A byte count for people: `532.9 MiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `n` and `noun`, plural unless `n` is 1: "1 chunk", "2 chunks".
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The day (`YYYY-MM-DD`) of an RFC 3339 timestamp, for a line that shows
/// dates, not times.
fn day(timestamp: &str) -> &str {
    timestamp.get(..10).unwrap_or(timestamp)
}

/// Prints what `remember` wrote: the file, then each new chunk id (one per
/// line, for scripts), then how long it took.
pub fn print_remembered(out: &mut dyn Write, report: &RememberReport) -> Result<()> {
    if !report.indexed {
        writeln!(
            out,
            "remembered {} (dated {}), not indexed yet: another run holds the index's lock; \
             that run or the next 'memidx index' indexes it",
            escape_controls(&report.path),
            report.date
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "remembered {} ({}, dated {})",
        escape_controls(&report.path),
        counted(report.chunk_ids.len(), "chunk"),
        report.date
    )?;
    for id in &report.chunk_ids {
        writeln!(out, "  {}", escape_controls(id))?;
    }
    writeln!(
        out,
        "indexed in {:.2} s (embedding {}) -> generation {}",
        report.elapsed_ms / 1000.0,
        counted(report.embedded, "chunk"),
        report.generation
    )?;
    Ok(())
}

/// Prints the one-line summary of an indexing run (the index folder's path
/// escaped).
pub fn print_index_summary(out: &mut dyn Write, report: &IndexReport) -> Result<()> {
    if report.up_to_date {
        let skipped = match report.skipped.len() {
            0 => String::new(),
            n => format!(" ({n} skipped as before: 'memidx status' lists them)"),
        };
        writeln!(
            out,
            "index is up to date: {}, {}{skipped} (checked in {:.2} s) -> {}",
            counted(report.files, "file"),
            counted(report.chunks, "chunk"),
            report.elapsed.as_secs_f64(),
            escape_controls(&report.index_dir.display().to_string())
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "indexed {} ({} unchanged), {}, {} skipped in {:.2} s (embedding {}: {:.2} s{}{}) -> {}",
        counted(report.files, "file"),
        report.reused,
        counted(report.chunks, "chunk"),
        report.skipped.len(),
        report.elapsed.as_secs_f64(),
        counted(report.embedded, "chunk"),
        report.embed_time.as_secs_f64(),
        match report.cut_at_window {
            Some((cut @ 1.., window)) => {
                format!("; {cut} read only up to the model's {window} word pieces")
            }
            _ => String::new(),
        },
        report.graph_time.map_or(String::new(), |t| format!(
            "; graph: {:.2} s",
            t.as_secs_f64()
        )) + &report.dense_index_time.map_or(String::new(), |t| format!(
            "; dense index: {:.2} s",
            t.as_secs_f64()
        )),
        escape_controls(&report.index_dir.display().to_string())
    )?;
    Ok(())
}

/// Prints warnings about skipped files and other non-fatal problems, one
/// line each (control characters in file names escaped).
pub fn print_index_warnings(
    err: &mut dyn Write,
    skipped: &[Skipped],
    warnings: &[String],
) -> Result<()> {
    for s in skipped {
        writeln!(err, "memidx: warning: {}", escape_controls(&s.to_string()))?;
    }
    for w in warnings {
        writeln!(err, "memidx: warning: {}", escape_controls(w))?;
    }
    Ok(())
}

/// Prints the eval table (one row per mode), the settings, and the sweep;
/// `save` is `None` without `--save`, else whether the best setting (rather
/// than the defaults it does not beat) was stored.
pub fn print_eval(out: &mut dyn Write, report: &EvalReport, save: Option<bool>) -> Result<()> {
    writeln!(
        out,
        "{:<12} {:>8} {:>10} {:>11} {:>8}",
        "mode", "nDCG@10", "Recall@10", "Recall@100", "MRR@10"
    )?;
    for mode in &report.modes {
        let m = &mode.metrics;
        writeln!(
            out,
            "{:<12} {:>8.4} {:>10.4} {:>11.4} {:>8.4}",
            mode.mode, m.ndcg_10, m.recall_10, m.recall_100, m.mrr_10
        )?;
    }
    writeln!(
        out,
        "{} queries ({} judged{}); {}, dense feedback {}; {:.2} s",
        report.queries,
        report.judged_queries,
        if report.ignore_identical {
            ", hits on a query's own document ignored"
        } else {
            ""
        },
        describe(&report.setting),
        describe_feedback(report.dense_feedback),
        report.elapsed.as_secs_f64()
    )?;
    if let Some(sweep) = &report.sweep {
        writeln!(
            out,
            "\nsweep: {} settings, tuned on one half of the queries, checked on the held-out half",
            sweep.settings_tried
        )?;
        writeln!(out, "{:<58} {:>10} {:>10}", "setting", "tune", "held-out")?;
        let row = |out: &mut dyn Write, label: &str, s: &crate::eval::SweepScore| {
            writeln!(
                out,
                "{:<58} {:>10.4} {:>10.4}",
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
            match save {
                Some(true) => "; saved as the index's defaults",
                Some(false) => "; not saved: it does not beat the defaults on the tuning half",
                None => " (--save stores it in the index)",
            }
        )?;
    }
    Ok(())
}

/// `k 60, sparse 1, dense 0.3, window 100`, then `, graph 0.2` when the
/// graph list takes part.
fn describe(s: &FusionSetting) -> String {
    let graph = if s.graph_weight > 0.0 {
        format!(", graph {}", s.graph_weight)
    } else {
        String::new()
    };
    let method = match s.method {
        FusionMethod::Rrf => format!("rrf k {}", s.rrf_k),
        FusionMethod::Relative => "relative".to_string(),
        FusionMethod::Adaptive => "adaptive".to_string(),
    };
    format!(
        "{method}, sparse {}, dense {}, window {}{graph}",
        s.sparse_weight, s.dense_weight, s.window
    )
}

/// The dense list's feedback count as words: `off`, `1 chunk`, `3 chunks`.
fn describe_feedback(chunks: usize) -> String {
    match chunks {
        0 => "off".to_string(),
        1 => "1 chunk".to_string(),
        n => format!("{n} chunks"),
    }
}

/// The text of a chunk as one line: heading lines (ATX and setext) and
/// code fences dropped, whitespace collapsed, cut at a character boundary
/// with an ellipsis after `max_chars` characters.
fn snippet(text: &str, max_chars: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let is_underline =
        |l: &str| l.len() >= 2 && (l.chars().all(|c| c == '=') || l.chars().all(|c| c == '-'));
    let mut body = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let setext_title = lines.get(i + 1).is_some_and(|next| is_underline(next));
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with("```")
            || setext_title
            || is_underline(line)
        {
            continue;
        }
        body.push(*line);
    }
    let collapsed: String = body
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match collapsed.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

/// Prints what `get` fetched: `path:first-last` (from `here`) and the
/// chunk id, the heading path, then the text, with a note when it was cut
/// or its file changed since indexing. Everything from the index or the file is
/// printed with its control characters escaped, line by line.
pub fn print_get(out: &mut dyn Write, got: &GetResponse, here: &Here) -> Result<()> {
    let id = got
        .chunk_id
        .as_deref()
        .map(|id| format!("  {NOTE}{}{NOTE:#}", escape_controls(id)))
        .unwrap_or_default();
    if got.total_lines == Some(0) {
        // An empty file has no line to name.
        writeln!(
            out,
            "{PATH}{}{PATH:#}  {NOTE}[an empty file]{NOTE:#}",
            escape_controls(&here.show(&got.source))
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{PATH}{}{PATH:#}:{LINE}{}{LINE:#}-{}{id}",
        escape_controls(&here.show(&got.source)),
        got.lines[0],
        got.lines[1]
    )?;
    if let Some(heading) = got.heading.as_deref().filter(|h| !h.is_empty()) {
        writeln!(out, "{HEADING}{}{HEADING:#}", escape_controls(heading))?;
    }
    for line in got.text.lines() {
        writeln!(out, "{}", escape_controls(line))?;
    }
    if got.truncated {
        writeln!(
            out,
            "{NOTE}[cut to {} of {} characters by --max-chars]{NOTE:#}",
            got.text.chars().count(),
            got.chars
        )?;
    }
    if got.changed {
        writeln!(
            out,
            "{NOTE}[the file changed since indexing; this is the indexed text]{NOTE:#}"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_the_plural_unless_one() {
        assert_eq!(counted(0, "chunk"), "0 chunks");
        assert_eq!(counted(1, "chunk"), "1 chunk");
        assert_eq!(counted(107, "file"), "107 files");
    }

    #[test]
    fn byte_counts_read_naturally() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(558 * 1024 * 1024), "558.0 MiB");
    }

    #[test]
    fn highlighting_marks_query_words_and_their_longer_forms() {
        let words = query_words("Connection pool, x");
        assert_eq!(words, ["connection", "pool"]);
        let marked = highlight("Connections: the pool's spool", &words);
        assert_eq!(
            marked,
            format!("{MATCH}Connections{MATCH:#}: the {MATCH}pool{MATCH:#}'s spool")
        );
    }

    #[test]
    fn snippet_skips_headings_and_fences_and_cuts_long_text() {
        assert_eq!(
            snippet("# Title\n\nsome   text\n```bash\nls\n```\n", 200),
            "some text ls"
        );
        assert_eq!(snippet("Status\n------\nAccepted.\n", 200), "Accepted.");
        assert_eq!(snippet("abcdef", 3), "abc…");
        let long = "é".repeat(300);
        let s = snippet(&long, SNIPPET_CHARS);
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 1);
        assert!(s.ends_with('…'));
    }
}
