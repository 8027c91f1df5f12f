//! `memidx remember`: write a new note into the indexed folder, then index
//! it incrementally (only the new file is read and embedded) and report its
//! chunk ids. The MCP server's `remember` tool runs the same steps.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

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

/// How long `remember` waits for another run's lock before it reports the
/// note written and not yet indexed.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How often it tries the lock (and looks whether the run holding it
/// indexed the note) meanwhile.
const LOCK_POLL: Duration = Duration::from_millis(50);

/// Writes `note` into `folder` of the index's root (refused before
/// anything is written when the index would not read it there) and indexes
/// it with the notes written beside it meanwhile ([`note::written_beside`]), under
/// `writer` when the caller holds the index's writer lock (a watching MCP
/// server), else under a lock taken for this run. When another run holds
/// the lock, it waits up to [`LOCK_WAIT`] for it, or for that run (a
/// watcher) to index the note; past that the note is reported written and
/// not yet indexed (`indexed: false`): it is safe on disk, and an agent
/// that retried would write it twice.
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
    let to = note::Destination {
        root: &options.root,
        index_dir,
        walk: &options.walk,
        max_bytes: max_file_size,
    };
    let path = note::write(to, folder, note, now)?;
    let written = options.root.join(&path);
    // The run looks at the note, not at the whole folder, and at the notes
    // other calls wrote beside it meanwhile: calls at once share a run
    // instead of each waiting for the lock in turn.
    options.told = Some(note::written_beside(&written, FRESH));
    let embedder = memidx::indexer::load_model(&options)?;
    let (generation, embedded) = match writer {
        Some(writer) => {
            let report = writer
                .run(&options, embedder, &Silent)
                .map_err(|err| not_indexed(err, &written))?;
            (report.generation, report.embedded)
        }
        None => match index_waiting(index_dir, &options, embedder, &path) {
            Ok(Some(indexed)) => indexed,
            Ok(None) => {
                return Ok(RememberReport {
                    date: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    path,
                    chunk_ids: Vec::new(),
                    indexed: false,
                    generation: Index::open(index_dir)?.manifest().latest_generation(),
                    embedded: 0,
                    elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
                });
            }
            Err(err) => return Err(not_indexed(err, &written)),
        },
    };
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
        indexed: true,
        generation,
        embedded,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// Indexes the note at `path` under a lock of its own, waiting for a lock
/// another run holds: `(generation, chunks embedded)` once a run (this
/// one, or the lock holder) has indexed it, `None` when the lock is still
/// held after [`LOCK_WAIT`] and the note not indexed.
fn index_waiting(
    index_dir: &Path,
    options: &IndexOptions,
    embedder: &'static dyn memidx::embed::Embedder,
    path: &str,
) -> Result<Option<(u64, usize)>> {
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match indexer::run(options, embedder, &Silent) {
            Ok(report) => return Ok(Some((report.generation, report.embedded))),
            Err(err) if matches!(IndexError::find(&err), Some(IndexError::Locked { .. })) => {}
            Err(err) => return Err(err),
        }
        let index = Index::open(index_dir)?;
        if index.file_chunks(path)?.is_some() {
            return Ok(Some((index.manifest().latest_generation(), 0)));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(LOCK_POLL);
    }
}

/// How recent a note in the same folder must be for a run to index it
/// with its own ([`note::written_beside`]): longer than any call waits.
const FRESH: Duration = Duration::from_secs(60);

/// The error of an index run that failed after the note was written: it
/// names the note, which stays, and says `memidx index` indexes it once
/// the cause is fixed.
fn not_indexed(err: anyhow::Error, written: &Path) -> anyhow::Error {
    anyhow!(
        "wrote {} but could not index it: {err:#}; it stays, and 'memidx index' indexes it once that is fixed",
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
