//! `memidx remember`: write a new note into the indexed folder, then index
//! it incrementally (only the new file is read and embedded) and report its
//! chunk ids. The MCP server's `remember` tool runs the same steps.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Result, anyhow, bail};

use super::Status;
use crate::cli::RememberArgs;
use crate::config;
use memidx::corpus::note::{self, Note};
use memidx::error::IndexError;
use memidx::index::Index;
use memidx::indexer::{self, IndexOptions, Writer};
use memidx::output::remember::RememberReport;
use memidx::output::{human, json};
use memidx::progress::Silent;
use memidx::store::bounded::{self, ReadError};

/// Runs `memidx remember` per `args`, reading the text from `stdin` for `-`.
pub fn run(
    args: &RememberArgs,
    cwd: &Path,
    stdin: impl Read,
    out: &mut dyn Write,
) -> Result<Status> {
    let index_dir = config::resolve_index_dir(&args.location, cwd)?;
    let text = match args.text.as_str() {
        "-" => read_text(stdin, args.max_file_size)?,
        text => text.to_string(),
    };
    let meta = args
        .meta
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok((key.trim().to_string(), value.to_string())),
            None => bail!("--meta expects KEY=VALUE (e.g. service=billing), got '{pair}'"),
        })
        .collect::<Result<_>>()?;
    let note = Note {
        text,
        title: args.title.clone(),
        meta,
    };
    let report = remember(&index_dir, &args.dir, &note, args.max_file_size, None)?;
    if args.json {
        json::print(out, &report)?;
    } else {
        human::print_remembered(out, &report)?;
    }
    Ok(Status::Success)
}

/// Writes `note` into `folder` of the index's root and indexes it, under
/// `writer` when the caller holds the index's writer lock (a watching MCP
/// server), else under a lock taken for this run. When the lock is held
/// elsewhere, the note stays written and the error says the next run will
/// index it.
pub fn remember(
    index_dir: &Path,
    folder: &Path,
    note: &Note,
    max_file_size: u64,
    writer: Option<&mut Writer>,
) -> Result<RememberReport> {
    let started = Instant::now();
    let mut options = IndexOptions::updating(&Index::open(index_dir)?);
    options.max_file_size = max_file_size;
    let now = jiff::Timestamp::now();
    let path = note::write(&options.root, folder, note, now, max_file_size)?;
    let written = options.root.join(&path);
    let embedder = memidx::embed::load(options.model_dir.as_deref())?;
    let indexed = match writer {
        Some(writer) => writer.run(&options, embedder, &Silent),
        None => indexer::run(&options, embedder, &Silent),
    };
    let report = indexed.map_err(|err| not_indexed(err, &written))?;
    let Some((file, chunk_ids)) = Index::open(index_dir)?.file_chunks(&path)? else {
        bail!(
            "wrote {}, but the index leaves it out (an --exclude or ignore rule matches it, or it was skipped); \
             choose another --dir",
            written.display()
        );
    };
    Ok(RememberReport {
        date: file.date().rfc3339(),
        path,
        chunk_ids,
        generation: report.generation,
        embedded: report.embedded,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The error of an index run that failed after the note was written: it
/// names the note, which stays, and for a held lock says it will be indexed
/// by the next run.
fn not_indexed(err: anyhow::Error, written: &Path) -> anyhow::Error {
    let locked = matches!(IndexError::find(&err), Some(IndexError::Locked { .. }));
    let next = if locked {
        "; it stays, and the next 'memidx index' picks it up"
    } else {
        "; it stays, and 'memidx index' indexes it once that is fixed"
    };
    anyhow!(
        "wrote {} but could not index it: {err:#}{next}",
        written.display()
    )
}

/// The text on stdin, at most `max_bytes`, which must be UTF-8.
fn read_text(stdin: impl Read, max_bytes: u64) -> Result<String> {
    let bytes = bounded::read_limited(stdin, max_bytes).map_err(|err| match err {
        ReadError::TooLarge(_) => anyhow!(
            "the note on stdin is over the {max_bytes}-byte limit (raise it with --max-file-size)"
        ),
        err => anyhow!("the note on stdin {err}"),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "the note on stdin is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        )
    })
}
