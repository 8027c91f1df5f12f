//! The streaming pass: the walked files go through in batches, read and
//! chunked in parallel, then tokenized by the sparse list while the model
//! embeds them; only one batch's texts are in memory at a time.

use std::borrow::Cow;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rayon::prelude::*;

use super::Run;
use super::examine::{FileOutcome, examine};
use super::previous::{FileState, Previous};
use super::table::Built;
use super::vectors::embed_batch;
use crate::corpus::Skipped;
use crate::corpus::walk::Walk;
use crate::lists::dense::VectorWriter;
use crate::lists::sparse::AnalyzedPart;
use crate::lists::sparse::SparseWriter;
use crate::store::generation::{FILES_DIR, SPARSE_DIR};
use crate::store::texts::TextWriter;

/// Files read and chunked per batch of the streaming pass (bounds the
/// texts held at once).
const FILE_BATCH: usize = 1024;

/// What the streaming pass leaves: the table, the sparse list still to
/// commit, and what was skipped, warned about and embedded on the way.
pub(super) struct Streamed {
    /// The new generation's table (its texts and vectors are written).
    pub(super) built: Built,
    /// The sparse list with every document added, not yet committed.
    pub(super) sparse: SparseWriter,
    /// The file list likewise, when the run writes one.
    pub(super) files: Option<SparseWriter>,
    /// The walk's skips, then the files skipped when read.
    pub(super) skipped: Vec<Skipped>,
    /// Problems in indexed files (e.g. broken front matter).
    pub(super) warnings: Vec<String>,
    /// Chunks embedded (the rest reused their vectors).
    pub(super) embedded: usize,
    /// How many of them the model read only up to its window, if it says.
    pub(super) cut: Option<usize>,
    /// Time spent embedding.
    pub(super) embed_time: Duration,
}

/// Streams `walked`'s files (with their `states`) into the generation
/// folder `gen_dir`: texts and vectors written, sparse documents added.
/// With `carry`, unchanged files' chunks are carried over from `previous`
/// rather than written anew.
pub(super) fn stream(
    run: &Run,
    gen_dir: &Path,
    walked: &Walk,
    states: &[FileState],
    previous: &mut Previous,
    carry: bool,
) -> Result<Streamed> {
    let (options, progress) = (run.options, run.progress);
    let mut skipped = walked.skipped.clone();
    let mut warnings = Vec::new();
    let base_dir = previous
        .parts
        .as_ref()
        .map(|parts| parts.base().dir())
        .filter(|_| carry);
    let mut built = Built::new(previous.carried.as_ref().filter(|_| carry));
    let mut texts = TextWriter::create(gen_dir, base_dir)?;
    let mut sparse = SparseWriter::create(
        &gen_dir.join(SPARSE_DIR),
        options.analyzer,
        base_dir.map(|d| d.join(SPARSE_DIR)).as_deref(),
    )?;
    let mut file_list = options
        .file_list
        .then(|| {
            SparseWriter::create(
                &gen_dir.join(FILES_DIR),
                options.analyzer,
                base_dir.map(|d| d.join(FILES_DIR)).as_deref(),
            )
        })
        .transpose()?;
    let mut vectors = VectorWriter::create(gen_dir)?;
    let (mut embedded, mut embed_time) = (0, Duration::ZERO);
    let mut cut = Some(0);

    progress.stage("indexing", walked.files.len(), "files");
    for (files, states) in walked
        .files
        .chunks(FILE_BATCH)
        .zip(states.chunks(FILE_BATCH))
    {
        let outcomes: Vec<FileOutcome> = files
            .par_iter()
            .zip(states)
            .map(|(file, state)| examine(file, options, state.clone()))
            .collect();
        let first = built.table.chunks.len();
        let sources = built.assemble(
            outcomes,
            previous,
            carry,
            &mut texts,
            &mut skipped,
            &mut warnings,
        )?;
        let chunks = &built.table.chunks[first..];
        let fields = options.sparse_fields;
        // Chunks come file by file: each file's part of their documents is
        // made and analyzed once.
        let mut parts: Vec<(u32, AnalyzedPart)> = Vec::new();
        let texts: Vec<(u32, Cow<'_, str>, usize)> = chunks
            .iter()
            .zip(&sources)
            .filter_map(|(chunk, source)| {
                let searchable = source.searchable.as_deref()?;
                if parts.last().is_none_or(|(file, _)| *file != chunk.file) {
                    let file = &built.table.files[chunk.file as usize];
                    let part = fields.file_part(&options.analyzer, file);
                    parts.push((chunk.file, sparse.analyze(part.text())));
                }
                let text = fields.chunk_text(&chunk.heading_path, searchable);
                Some((chunk.uid, text, parts.len() - 1))
            })
            .collect();
        let (added, batch) = std::thread::scope(|scope| {
            let added =
                scope.spawn(|| add_documents(&mut sparse, file_list.as_mut(), &texts, &parts));
            let embed_started = Instant::now();
            let so_far = |n| progress.note(&format!("{} chunks embedded", embedded + n));
            let batch = embed_batch(chunks, &sources, previous, run.embedder, &so_far)
                .map(|b| (b, embed_started.elapsed()));
            let added = added
                .join()
                .unwrap_or_else(|_| bail!("the sparse index builder panicked"));
            (added, batch)
        });
        added?;
        let (batch, elapsed) = batch?;
        embed_time += elapsed;
        embedded += batch.embedded;
        cut = cut.zip(batch.cut).map(|(a, b)| a + b);
        vectors.append(batch.rows(), &batch.keys)?;
        for (chunk, (_, scale)) in built.table.chunks[first..].iter_mut().zip(batch.rows()) {
            chunk.has_vector = scale != 0.0;
        }
        progress.advance(files.len());
        progress.note(&format!("{embedded} chunks embedded"));
    }
    progress.finish();
    texts.finish()?;
    vectors.finish()?;
    Ok(Streamed {
        built,
        sparse,
        files: file_list,
        skipped,
        warnings,
        embedded,
        cut,
        embed_time,
    })
}

/// Chunks analyzed at once when adding documents (whole files, so a
/// little more): bounds the analyzed terms held in memory.
const ANALYZE_CHUNKS: usize = 4096;

/// Analyzes a batch's new chunks, `texts` (uid, searchable text, its
/// file's place in `parts`; a file's chunks one after another), once, and
/// adds each chunk's document to `sparse` and, when given, each file's to
/// `files`: its chunks' terms joined, its part once, under its first
/// chunk's uid ([`crate::lists::files`]).
fn add_documents(
    sparse: &mut SparseWriter,
    mut files: Option<&mut SparseWriter>,
    texts: &[(u32, Cow<'_, str>, usize)],
    parts: &[(u32, AnalyzedPart)],
) -> Result<()> {
    let mut start = 0;
    while start < texts.len() {
        // Whole files: the end moves past the last file's other chunks.
        let mut end = (start + ANALYZE_CHUNKS).min(texts.len());
        while end < texts.len() && texts[end].2 == texts[end - 1].2 {
            end += 1;
        }
        let batch = &texts[start..end];
        start = end;
        let bare: Vec<&str> = batch.iter().map(|(_, text, _)| text.as_ref()).collect();
        let analyzed = sparse.analyze_texts(&bare);
        if let Some(writer) = files.as_deref_mut() {
            let mut at = 0;
            let file_docs = batch.chunk_by(|a, b| a.2 == b.2).map(|file| {
                let chunks = &analyzed[at..at + file.len()];
                at += file.len();
                (file[0].0, AnalyzedPart::join(chunks, &parts[file[0].2].1))
            });
            writer.add_analyzed(file_docs.collect::<Vec<_>>())?;
        }
        let chunk_docs = (batch.iter().zip(analyzed))
            .map(|((uid, _, part), text)| (*uid, AnalyzedPart::join([&text], &parts[*part].1)));
        sparse.add_analyzed(chunk_docs)?;
    }
    Ok(())
}
