//! Where a search's sparse and dense lists run: on the index's own files
//! ([`Local`]), or on a remote engine that holds a pushed copy of the index
//! (`crate::remote`, behind the `milvus` feature). Everything around the
//! lists — the filter, the first pass and its feedback seeds, the fusion,
//! explain and decoding — is the retriever's either way, so a remote search
//! is fused, tied and explained by the same code as a local one.

use anyhow::Result;

use crate::embed::Embedder;
use crate::filter::Filter;
use crate::index::Index;
use crate::lists::dense::{DenseList, DenseOptions};
use crate::lists::files::FileList;
use crate::lists::sparse::{SparseList, SparseStats};
use crate::lists::{List, ListKind, guard};
use crate::store::generation::{FILES_DIR, SPARSE_DIR};

/// Opens the lists a search runs over an opened index.
pub trait Backend: Send + Sync {
    /// The sparse (BM25) list over `index`.
    fn sparse(&self, index: &Index) -> Result<Box<dyn List>>;

    /// The file list over `index` (`None`: the index has none). It runs on
    /// the index's own files whatever the backend: a remote engine holds
    /// the chunks' lists only.
    fn files(&self, index: &Index) -> Result<Option<Box<dyn List>>> {
        Ok(local_files(index)?.map(|list| Box::new(list) as Box<dyn List>))
    }

    /// The dense list over `index`, embedding queries with `embedder` (the
    /// model the index was built with) and moving each query toward
    /// `options.feedback` seeds before it ranks.
    fn dense(
        &self,
        index: &Index,
        embedder: &'static dyn Embedder,
        options: DenseOptions,
    ) -> Result<Box<dyn List>>;

    /// Where the lists run, as `explain` names it: `local`, or an address.
    fn name(&self) -> String;

    /// Why this backend cannot run the graph list (`None`: it can). A
    /// search that names the graph list gets this as its error; one that
    /// would only take it by default runs without it.
    fn graph_refusal(&self) -> Option<String> {
        None
    }

    /// Takes the filter of the search about to run: a backend that filters
    /// on its own side applies it inside each list (the retriever still
    /// evaluates it into the allowed set every list is checked against).
    fn restrict(&self, filter: &Filter) {
        let _ = filter;
    }
}

/// The index's own files: tantivy postings and the int8 vector matrix.
pub struct Local;

/// The index's own sparse list: what a local search ranks by, and what a
/// remote one weighs its query's terms by. Each part's list is opened and
/// merged (the base's counting the live documents of all parts), and the
/// documents of chunks a later part buried are counted as dead.
pub fn local_sparse(index: &Index) -> Result<SparseList> {
    let manifest = index.manifest();
    sparse_over_parts(index, SPARSE_DIR, manifest.sparse)
}

/// The index's own file list ([`crate::lists::files`]), its parts merged
/// and buried as the sparse list's are; `None` for an index built without
/// one.
pub(super) fn local_files(index: &Index) -> Result<Option<FileList>> {
    if !index.manifest().file_list {
        return Ok(None);
    }
    let files = sparse_over_parts(index, FILES_DIR, SparseStats::default())?;
    Ok(Some(FileList::new(files)?))
}

/// The BM25 list in each part's folder `folder`, merged, the base counting
/// `stats` as its live documents, and the documents of chunks a later part
/// buried counted as dead.
fn sparse_over_parts(index: &Index, folder: &str, stats: SparseStats) -> Result<SparseList> {
    let manifest = index.manifest();
    let parts = index.parts();
    let mut lists = Vec::with_capacity(parts.parts().len());
    for (at, (part, (_, checks))) in parts.parts().iter().zip(manifest.parts()).enumerate() {
        let dir = part.generation().dir().join(folder);
        // The manifest's checks of the folder's files, by name in it.
        let prefix = format!("{folder}/");
        let checksums = (checks.iter())
            .filter_map(|(name, check)| Some((name.strip_prefix(&prefix)?.to_string(), *check)))
            .collect();
        let stats = match at {
            0 => stats,
            _ => SparseStats::default(),
        };
        let list = guard::catch(ListKind::Sparse.name(), &dir, || {
            SparseList::open(
                &dir,
                manifest.tokenizer,
                manifest.bm25,
                stats,
                part.generation().len() as u64,
                checksums,
            )
        })?;
        lists.push((list, parts.order_of(at)));
    }
    let mut list = SparseList::of_parts(lists)?;
    let dead = parts.dead_chunks();
    if dead.iter().any(|ranges| !ranges.is_empty()) {
        list.bury(&dead)?;
    }
    Ok(list)
}

/// The index's own dense list, its parts' rows merged, embedding queries
/// with `embedder` under `options`.
pub(super) fn local_dense(
    index: &Index,
    embedder: &'static dyn Embedder,
    options: DenseOptions,
) -> Result<DenseList> {
    let manifest = index.manifest();
    let parts = index.parts().parts().iter().zip(manifest.parts());
    let lists = (parts.enumerate())
        .map(|(at, (part, (_, checksums)))| {
            let generation = part.generation();
            let list = DenseList::open(
                generation.dir(),
                checksums,
                generation.vector_flags(),
                embedder,
                manifest.dense_index.setting,
                options,
            )?;
            Ok((list, index.parts().order_of(at)))
        })
        .collect::<Result<Vec<_>>>()?;
    let list = DenseList::of_parts(lists)?;
    if let Some(floor) = manifest.noise_floor {
        list.know_noise_floor(Some(floor));
    }
    if let Some(floor) = manifest.word_floor {
        list.know_word_floor(floor);
    }
    Ok(list)
}

impl Backend for Local {
    fn sparse(&self, index: &Index) -> Result<Box<dyn List>> {
        Ok(Box::new(local_sparse(index)?))
    }

    fn dense(
        &self,
        index: &Index,
        embedder: &'static dyn Embedder,
        options: DenseOptions,
    ) -> Result<Box<dyn List>> {
        Ok(Box::new(local_dense(index, embedder, options)?))
    }

    fn name(&self) -> String {
        "local".to_string()
    }
}
