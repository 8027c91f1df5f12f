//! The file list: BM25 over whole files, so that a page is not ranked by
//! one chunk's share of its evidence alone.
//!
//! The sparse list scores chunks; a page cut into sections has its words
//! spread over them, and a question whose words fall in two sections
//! finds each holding half (a chunk is ranked by what it holds). This
//! list scores each file as one document — its chunks' sparse documents
//! joined, with the file's title and name fields once — and a hit stands
//! for every chunk of its file at the file's score, so the fusion adds
//! the page's evidence to whichever of its chunks the other lists prefer
//! (the dense list's best section of a page the keywords found).
//!
//! It is a [`SparseList`] over its own tantivy index (`sparse-files/` in a
//! generation), each document keyed by the uid of its file's first chunk
//! and mapped to that chunk's ordinal: the filters, the parts' burying and
//! the merging of several indexes then work as they do for chunks. Its
//! statistics are counted from its segments when it opens
//! ([`SparseList::count_live`]). A hit's chunk is its file's first; the
//! retriever, which knows the files, stands it for all of them.
//!
//! It says nothing exact ([`RankedList::exact`] is false): a chunk is not
//! let past an identifier gate by its file's words. It is part of the
//! index's own fusion only; a search that spells out its formula gets that
//! formula (see [`crate::fusion::Fusion::own`]).

use anyhow::Result;

use super::sparse::SparseList;
use super::{AllowSet, List, ListKind, RankedList};
use crate::store::generation::ChunkOrd;

/// The file list over one index, or several searched as one.
pub struct FileList(SparseList);

impl FileList {
    /// The list over `files`, the BM25 list of an index's file documents
    /// (its parts merged and buried), counting its live documents.
    pub fn new(mut files: SparseList) -> Result<Self> {
        files.count_live()?;
        Ok(Self(files))
    }

    /// One list over the file lists of several indexes, each one's chunks
    /// numbered from its base ([`SparseList::merge`]).
    pub fn merge(lists: Vec<(Self, ChunkOrd)>) -> Result<Self> {
        let lists = lists.into_iter().map(|(list, base)| (list.0, base));
        Ok(Self(SparseList::merge(lists.collect())?))
    }
}

impl List for FileList {
    fn kind(&self) -> ListKind {
        ListKind::Files
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let mut ranked = self.0.search(query, window, allow)?;
        ranked.kind = ListKind::Files;
        ranked.exact = false;
        Ok(ranked)
    }
}
