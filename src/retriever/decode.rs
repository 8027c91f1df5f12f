//! What a printer needs of a search's chunks, decoded once, with whether
//! each one's file changed on disk since indexing, or was deleted.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::confidence::strong_coverage;
use super::{Retriever, SearchOutcome};
use crate::corpus::walk::mtime_ns;
use crate::lists::ListKind;
use crate::store::generation::{ChunkOrd, ChunkView, FileEntry};

/// Chunks decoded for the printers, by ordinal (see [`Retriever::decode`]).
#[derive(Debug, Default)]
pub struct Decoded {
    chunks: BTreeMap<ChunkOrd, DecodedChunk>,
    /// For a search's results, the least share of the query the best one
    /// holds for them to be a strong match
    /// ([`super::confidence::strong_coverage`]); `None` when no list
    /// measured coverage.
    pub strong_coverage: Option<f32>,
}

/// One decoded chunk.
#[derive(Debug)]
pub struct DecodedChunk {
    /// Its record, file entry and text.
    pub view: ChunkView,
    /// True when its file changed on disk since indexing (or is gone).
    pub changed: bool,
    /// True when its file is gone from disk since indexing.
    pub deleted: bool,
    /// The document the sparse list indexed it under
    /// ([`crate::index::set::IndexSet::sparse_document`]).
    pub sparse_document: String,
    /// For a search's result, the share of the query the chunk holds
    /// ([`crate::lists::List::coverage`], set by
    /// [`Retriever::decode_outcome`]); `None` when no list can say.
    pub coverage: Option<f32>,
}

/// The files of some chunks that are no longer as indexed, each once, in
/// the chunks' order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StaleFiles {
    /// Files changed on disk since indexing.
    pub changed: Vec<String>,
    /// Files deleted since indexing.
    pub deleted: Vec<String>,
}

impl Decoded {
    /// The decoded chunk `ord` (an error if it was not decoded).
    pub fn get(&self, ord: ChunkOrd) -> Result<&DecodedChunk> {
        self.chunks
            .get(&ord)
            .with_context(|| format!("chunk {ord} was not decoded"))
    }

    /// The files of `chunks` that changed on disk or were deleted since
    /// indexing.
    pub fn stale_files(&self, chunks: impl IntoIterator<Item = ChunkOrd>) -> StaleFiles {
        let mut stale = StaleFiles::default();
        for ord in chunks {
            let Some(chunk) = self.chunks.get(&ord).filter(|c| c.changed) else {
                continue;
            };
            let list = match chunk.deleted {
                true => &mut stale.deleted,
                false => &mut stale.changed,
            };
            if !list.contains(&chunk.view.file.path) {
                list.push(chunk.view.file.path.clone());
            }
        }
        stale
    }
}

/// Whether `file` under `root` has another size or modification time than
/// when it was indexed (or is gone), and whether it is gone.
fn changed_on_disk(root: &Path, file: &FileEntry) -> (bool, bool) {
    match std::fs::symlink_metadata(root.join(&file.path)) {
        Ok(now) => (!file.stamp.matches(now.len(), mtime_ns(&now)), false),
        Err(err) => (true, err.kind() == std::io::ErrorKind::NotFound),
    }
}

impl Retriever {
    /// Decodes `chunks` for printing, each once (a chunk named twice is
    /// read once), and checks each one's file on disk: a file whose size or
    /// modification time differs from when it was indexed is changed.
    ///
    /// The chunks decode on rayon's pool: each one decompresses a whole
    /// text block, the most of a one-shot search's work after its lists.
    ///
    /// With several indexes, a chunk's file is named `name:path`
    /// ([`crate::index::set::IndexSet::shown_path`]), so its id and source say which index
    /// holds it.
    pub fn decode(&self, chunks: impl IntoIterator<Item = ChunkOrd>) -> Result<Decoded> {
        let indexes = &self.indexes;
        let mut ords: Vec<ChunkOrd> = chunks.into_iter().collect();
        ords.sort_unstable();
        ords.dedup();
        let views = ords
            .into_par_iter()
            .map(|ord| {
                let (member, local) = indexes.locate(ord)?;
                let parts = indexes.members()[member].index().parts();
                Ok((ord, member, parts.chunk(local)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut decoded = Decoded::default();
        let mut file_changed: BTreeMap<(usize, u32), (bool, bool)> = BTreeMap::new();
        for (ord, member, mut view) in views {
            let file = view.record.file;
            let (changed, deleted) = *file_changed.entry((member, file)).or_insert_with(|| {
                let root = indexes.members()[member].index().root();
                changed_on_disk(root, &view.file)
            });
            let sparse_document = indexes.sparse_document_of(member, &view);
            view.file.path = indexes.shown_path(member, &view.file.path);
            decoded.chunks.insert(
                ord,
                DecodedChunk {
                    view,
                    changed,
                    deleted,
                    sparse_document,
                    coverage: None,
                },
            );
        }
        Ok(decoded)
    }

    /// Decodes what a printer shows of `outcome`, the search of `query`
    /// ([`Retriever::decode`]), and checks each result against the lists
    /// that ranked it ([`crate::lists::List::check_hits`]): a result whose
    /// text does not give the score a list gave it is damage, named, not an
    /// answer. The texts are the ones decoded for printing (the sparse
    /// list's, the sparse documents), so the check costs a tokenizing of
    /// the results. Each result also gets what share of the query it holds
    /// ([`DecodedChunk::coverage`]), from the first list that can say.
    pub fn decode_outcome(&self, query: &str, outcome: &SearchOutcome) -> Result<Decoded> {
        let mut decoded = self.decode(outcome.shown_chunks())?;
        self.cover(query, outcome, &mut decoded)?;
        let texts = (outcome.results.iter())
            .map(|fused| {
                let chunk = decoded.get(fused.chunk)?;
                Ok((chunk.view.searchable_text(), chunk.sparse_document.as_str()))
            })
            .collect::<Result<Vec<(String, &str)>>>()?;
        for (i, list) in self.lists.iter().enumerate() {
            let sparse = list.index.kind() == ListKind::Sparse;
            let hits: Vec<(&str, f32)> = (outcome.results.iter().zip(&texts))
                .filter_map(|(fused, (searchable, document))| {
                    let contribution = fused.contributions.get(i)?.as_ref()?;
                    let text = if sparse {
                        document
                    } else {
                        searchable.as_str()
                    };
                    Some((text, contribution.raw_score))
                })
                .collect();
            list.index.check_hits(query, &hits)?;
        }
        Ok(decoded)
    }

    /// Sets each result's [`DecodedChunk::coverage`] and the share a strong
    /// match holds ([`Decoded::strong_coverage`]) from the first list that
    /// measures coverage.
    fn cover(&self, query: &str, outcome: &SearchOutcome, decoded: &mut Decoded) -> Result<()> {
        let chunks: Vec<ChunkOrd> = outcome.shown_chunks().collect();
        let documents = (chunks.iter())
            .map(|&ord| Ok(decoded.get(ord)?.sparse_document.as_str()))
            .collect::<Result<Vec<&str>>>()?;
        for list in &self.lists {
            let Some(covered) = list.index.coverage(query, &documents)? else {
                continue;
            };
            for (ord, share) in chunks.iter().zip(covered.shares) {
                if let Some(chunk) = decoded.chunks.get_mut(ord) {
                    chunk.coverage = Some(share);
                }
            }
            decoded.strong_coverage = Some(strong_coverage(covered.terms));
            break;
        }
        Ok(())
    }
}
