//! Reading and chunking one walked file that the check found new or
//! changed, or keeping an unchanged one's chunks.

use super::IndexOptions;
use super::previous::{FileState, stamp_of};
use crate::corpus::Skipped;
use crate::corpus::chunk::{ChunkDraft, parse_file};
use crate::corpus::read::{add_builtin_metadata, read_markdown};
use crate::corpus::walk::SourceFile;
use crate::store::generation::{FileEntry, FileStamp};

/// What happened to one walked file.
pub(super) enum FileOutcome {
    /// Same content as in the previous index: keep its chunks.
    Reused {
        stamp: FileStamp,
        previous_file: usize,
    },
    /// Read and chunked anew.
    Fresh {
        entry: FileEntry,
        chunks: Vec<ChunkDraft>,
        warnings: Vec<String>,
    },
    /// Left out, with the reason.
    Skipped(Skipped),
}

/// A line cut into this many chunks or more is named in a warning: it
/// is a log or data dump, whose pieces all carry the same line number
/// and rank for anything they mention.
const SPLIT_LINE_WARNING: usize = 4;

/// The line cut into the most chunks, if into [`SPLIT_LINE_WARNING`] or
/// more: (its number, how many).
fn longest_split_line(chunks: &[ChunkDraft]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for run in chunks.chunk_by(|a, b| a.lines == b.lines) {
        let (first, last) = run[0].lines;
        if first == last
            && run.len() >= SPLIT_LINE_WARNING
            && best.is_none_or(|(_, n)| run.len() > n)
        {
            best = Some((first, run.len()));
        }
    }
    best
}

/// Reads and chunks a file the first pass found new or changed, or keeps
/// an unchanged one's chunks.
pub(super) fn examine(file: &SourceFile, options: &IndexOptions, state: FileState) -> FileOutcome {
    let skip = |reason: String| {
        FileOutcome::Skipped(Skipped {
            path: file.rel_path.clone(),
            reason,
        })
    };
    if let FileState::Unchanged { previous_file, .. } = state {
        // (A touched file read since its walk keeps the walked stamp: were
        // it changed again since, the next run finds it so and hashes it.)
        let stamp = FileStamp {
            size: file.size,
            mtime_ns: file.mtime_ns,
            hash: String::new(),
        };
        return FileOutcome::Reused {
            stamp,
            previous_file,
        };
    }
    if file.size > options.max_file_size {
        return skip(format!(
            "{} bytes is over the {}-byte limit (raise it with --max-file-size)",
            file.size, options.max_file_size
        ));
    }
    let source = match read_markdown(&options.root, file, options.max_file_size) {
        Ok(source) => source,
        Err(reason) => return skip(reason),
    };
    let stamp = stamp_of(file, source.as_bytes());
    let parsed = parse_file(&source, &options.chunker);
    let mut warnings: Vec<String> = (parsed.front_matter.error.as_ref())
        .map(|e| format!("{}: front matter ignored: {e}", file.rel_path))
        .into_iter()
        .collect();
    if let Some((line, pieces)) = longest_split_line(&parsed.chunks) {
        warnings.push(format!(
            "{}: line {line} alone is cut into {pieces} chunks (a log or data pasted as one line?); a search shows at most a few of them",
            file.rel_path
        ));
    }
    if parsed.chunks.is_empty() {
        warnings.push(format!(
            "{}: no text to index (the file is empty, or holds only front matter, rules or empty headings)",
            file.rel_path
        ));
    }
    let mut metadata = parsed.front_matter.metadata;
    add_builtin_metadata(&mut metadata, &file.rel_path, parsed.title.as_deref());
    FileOutcome::Fresh {
        entry: FileEntry {
            path: file.rel_path.clone(),
            metadata,
            stamp,
        },
        chunks: parsed.chunks,
        warnings,
    }
}
