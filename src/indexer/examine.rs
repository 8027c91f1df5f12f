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

/// Reads and chunks a file the first pass found new or changed, or keeps
/// an unchanged one's chunks.
pub(super) fn examine(file: &SourceFile, options: &IndexOptions, state: FileState) -> FileOutcome {
    let skip = |reason: String| {
        FileOutcome::Skipped(Skipped {
            path: file.rel_path.clone(),
            reason,
        })
    };
    if let FileState::Unchanged {
        stamp,
        previous_file,
        ..
    } = state
    {
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
    let source = match read_markdown(file, options.max_file_size) {
        Ok(source) => source,
        Err(reason) => return skip(reason),
    };
    let stamp = stamp_of(file, source.as_bytes());
    let parsed = parse_file(&source, &options.chunker);
    let mut warnings: Vec<String> = (parsed.front_matter.error.as_ref())
        .map(|e| format!("{}: front matter ignored: {e}", file.rel_path))
        .into_iter()
        .collect();
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
