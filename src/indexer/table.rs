//! Assembling the new generation's chunk table, batch by batch: carried
//! chunks keep their texts and uids, new ones are written and numbered.

use anyhow::{Context, Result};

use super::examine::FileOutcome;
use super::previous::{Carried, Previous};
use crate::corpus::Skipped;
use crate::lists::sparse;
use crate::store::generation::{ChunkOrd, ChunkRecord, ChunkTable, HeadingPath, searchable_text};
use crate::store::texts::TextWriter;

/// The new generation's table, assembled batch by batch in walk (path)
/// order; the texts go straight to a [`TextWriter`].
pub(super) struct Built {
    pub(super) table: ChunkTable,
    /// Per file, its index in the previous generation when it is unchanged.
    pub(super) reused_from: Vec<Option<u32>>,
    /// Per uid, the ordinal of its chunk, or [`sparse::DEAD`] (the sparse
    /// list's uid map; its length is the number of uids given out).
    pub(super) ords: Vec<u32>,
}

/// Where one chunk of a batch comes from.
pub(super) struct ChunkOrigin {
    /// Its ordinal in the previous generation, when it was there.
    pub(super) previous: Option<ChunkOrd>,
    /// Its searchable text when the sparse list must (re)index it: a new
    /// chunk, or any chunk when nothing is carried.
    pub(super) searchable: Option<String>,
}

/// A chunk whose text is written anew.
struct NewChunk {
    file: u32,
    heading_path: HeadingPath,
    lines: (u32, u32),
    /// Its ordinal in the previous generation, if it was there (its vector
    /// key is known).
    previous: Option<ChunkOrd>,
}

impl Built {
    /// An empty table; carried chunks keep their uids, whose dead ones stay
    /// given out.
    pub(super) fn new(carried: Option<&Carried>) -> Self {
        Self {
            table: ChunkTable::default(),
            reused_from: Vec::new(),
            ords: vec![sparse::DEAD; carried.map_or(0, |c| c.uid_count as usize)],
        }
    }

    /// How many of the table's files have chunks: the file list's live
    /// documents.
    pub(super) fn files_with_chunks(&self) -> u64 {
        let files = self.table.chunks.chunk_by(|a, b| a.file == b.file);
        files.count() as u64
    }

    /// Appends one batch of files. With `carry`, unchanged files keep their
    /// chunks' texts, uids and sparse documents; without, every chunk is
    /// written anew (uid = ordinal). Returns the sources of the chunks added.
    pub(super) fn assemble(
        &mut self,
        outcomes: Vec<FileOutcome>,
        previous: &mut Previous,
        carry: bool,
        texts: &mut TextWriter,
        skipped: &mut Vec<Skipped>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<ChunkOrigin>> {
        let mut sources = Vec::new();
        for outcome in outcomes {
            let file = self.table.files.len() as u32;
            match outcome {
                FileOutcome::Skipped(s) => skipped.push(s),
                FileOutcome::Reused {
                    stamp,
                    previous_file,
                } => {
                    let mut entry = previous.take_entry(previous_file)?;
                    // The base's chunks are carried; the delta's written anew.
                    let carried = carry && previous.in_base(previous_file);
                    let old = previous
                        .parts
                        .as_ref()
                        .context("reused a file without a previous index")?;
                    // Same content: keep its hash, record the current size and mtime.
                    entry.stamp.size = stamp.size;
                    entry.stamp.mtime_ns = stamp.mtime_ns;
                    self.table.files.push(entry);
                    self.reused_from.push(Some(previous_file as u32));
                    for old_ord in old.chunks_of_file(previous_file as u32)? {
                        let mut record = old.record(old_ord)?;
                        record.file = file;
                        let source = if carried {
                            self.push_carried(record, old_ord)
                        } else {
                            let text = old.text(old_ord)?;
                            let chunk = NewChunk {
                                file,
                                heading_path: record.heading_path,
                                lines: record.lines,
                                previous: Some(old_ord),
                            };
                            self.push_new(chunk, &text, texts)?
                        };
                        sources.push(source);
                    }
                }
                FileOutcome::Fresh {
                    entry,
                    chunks,
                    warnings: file_warnings,
                } => {
                    warnings.extend(file_warnings);
                    self.table.files.push(entry);
                    self.reused_from.push(None);
                    for draft in chunks {
                        let chunk = NewChunk {
                            file,
                            heading_path: HeadingPath::new(&draft.heading_path),
                            lines: (draft.lines.0 as u32, draft.lines.1 as u32),
                            previous: None,
                        };
                        sources.push(self.push_new(chunk, &draft.text, texts)?);
                    }
                }
            }
        }
        Ok(sources)
    }

    /// Appends a chunk carried over from the previous generation as it was
    /// (its text stays where it is in the carried store).
    fn push_carried(&mut self, record: ChunkRecord, old_ord: ChunkOrd) -> ChunkOrigin {
        self.ords[record.uid as usize] = self.table.chunks.len() as ChunkOrd;
        self.table.chunks.push(record);
        ChunkOrigin {
            previous: Some(old_ord),
            searchable: None,
        }
    }

    /// Appends a chunk whose text is written anew, numbering it within its
    /// file and giving it the next uid.
    fn push_new(
        &mut self,
        chunk: NewChunk,
        text: &str,
        texts: &mut TextWriter,
    ) -> Result<ChunkOrigin> {
        let n = match self.table.chunks.last() {
            Some(last) if last.file == chunk.file => last.n + 1,
            _ => 1,
        };
        let searchable = searchable_text(&chunk.heading_path, text);
        let uid = self.ords.len() as u32;
        self.ords.push(self.table.chunks.len() as ChunkOrd);
        self.table.chunks.push(ChunkRecord {
            file: chunk.file,
            n,
            heading_path: chunk.heading_path,
            lines: chunk.lines,
            text_start: texts.push(text)?,
            text_len: text.len() as u32,
            text_crc: crc32fast::hash(text.as_bytes()),
            has_vector: false,
            uid,
        });
        Ok(ChunkOrigin {
            previous: chunk.previous,
            searchable: Some(searchable),
        })
    }
}
