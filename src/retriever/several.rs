//! Several indexes opened as one retriever ([`Retriever::open_several`]):
//! one sparse list over all their tantivy segments, BM25 statistics summed
//! ([`SparseList::merge`]), one dense list over all their rows
//! ([`DenseList::merge`]) and one recency list, so each list ranks across
//! the indexes as it would over one index built from all their files, and
//! the fusion runs once.
//!
//! The first index is the reference: its fusion defaults hold, and a list
//! runs only over the indexes it can rank alike — the sparse list over
//! those that analyze and score words as the first does, the dense list
//! over those embedded with its model (cosines of two models do not
//! compare). Each one left out, and an index cut into chunks of another
//! size, is named in a notice ([`Retriever::notices`]) rather than mixed
//! in silently. The graph list, one graph per index, is not run.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Result, bail};
use rayon::prelude::*;

use super::backend::{Local, local_dense, local_files, local_sparse};
use super::{
    GraphUse, ListSelection, Retriever, WeightedList, dense_options, dense_weight, file_weight,
    recency, sparse_weight,
};
use crate::embed::Embedder;
use crate::index::Index;
use crate::index::manifest::Manifest;
use crate::index::set::IndexSet;
use crate::lists::dense::DenseList;
use crate::lists::files::FileList;
use crate::lists::sparse::SparseList;
use crate::store::generation::ChunkOrd;
use crate::store::parts::Parts;

/// One index opened with its parts of the merged lists.
struct Opened {
    index: Index,
    sparse: Option<SparseList>,
    files: Option<FileList>,
    dense: Option<DenseList>,
    /// The model its dense part embeds queries with.
    embedder: Option<&'static dyn Embedder>,
}

/// What the first index fixes for the others.
struct Reference {
    manifest: Manifest,
    embedder: Option<&'static dyn Embedder>,
}

/// Opens the indexes `named` as one retriever (see the module doc).
pub(super) fn open(
    named: &[(Option<String>, PathBuf)],
    selection: &ListSelection,
    set: impl FnOnce(Vec<(Option<String>, Index)>) -> Result<IndexSet>,
) -> Result<Retriever> {
    if selection.graph == GraphUse::Required {
        bail!(
            "the graph list searches one index at a time; name one index for mode graph (--index, or the MCP tools' indexes)"
        );
    }
    let Some(((_, first_dir), others)) = named.split_first() else {
        bail!("no index to search");
    };
    let first = Index::open_with(first_dir, |index| open_parts(index, selection, None))?;
    let reference = Reference {
        manifest: first.index.manifest().clone(),
        embedder: first.embedder,
    };
    // The others at once: opening is mostly system calls (open, stat,
    // map) that overlap.
    let others: Vec<Opened> = (others.par_iter())
        .map(|(_, dir)| {
            Index::open_with(dir, |index| open_parts(index, selection, Some(&reference)))
        })
        .collect::<Result<_>>()?;
    let mut sparse = Vec::new();
    let mut files = Vec::new();
    let mut dense = Vec::new();
    let mut members = Vec::with_capacity(named.len());
    let opened = std::iter::once(first).chain(others);
    for (at, ((name, _), member)) in named.iter().zip(opened).enumerate() {
        sparse.extend(member.sparse.map(|list| (list, at)));
        files.extend(member.files.map(|list| (list, at)));
        dense.extend(member.dense.map(|list| (list, at)));
        members.push((name.clone(), member.index));
    }
    let indexes = set(members)?;
    let first = &reference.manifest;
    let mut lists = Vec::new();
    if selection.sparse {
        lists.push(WeightedList {
            index: Box::new(SparseList::merge(based(sparse, &indexes))?),
            weight: sparse_weight(selection, first),
        });
    }
    if selection.dense {
        lists.push(WeightedList {
            index: Box::new(DenseList::merge(based(dense, &indexes))?),
            weight: dense_weight(selection, first),
        });
    }
    let file_weight = file_weight(selection, first).filter(|_| !files.is_empty());
    if let Some(weight) = file_weight {
        lists.push(WeightedList {
            index: Box::new(FileList::merge(based(files, &indexes))?),
            weight,
        });
    }
    if selection.recency {
        let parts: Vec<&Parts> = (indexes.members().iter())
            .map(|m| m.index().parts())
            .collect();
        lists.push(recency(&parts, selection)?);
    }
    let notices = notices(&indexes, selection);
    Retriever::assemble(indexes, lists, selection, Arc::new(Local), notices)
}

/// Each of a list's `parts` (by the position of its index in `indexes`)
/// with the index's base: a list numbers an index's chunks as the set does,
/// so an index the list leaves out is a gap in it.
fn based<L>(parts: Vec<(L, usize)>, indexes: &IndexSet) -> Vec<(L, ChunkOrd)> {
    (parts.into_iter())
        .map(|(list, at)| (list, indexes.members()[at].base()))
        .collect()
}

/// Opens `index` and its parts of the sparse and dense lists `selection`
/// asks for: all of them for the first index (no `reference` yet), else
/// those that rank alike with the reference's.
fn open_parts(
    index: Index,
    selection: &ListSelection,
    reference: Option<&Reference>,
) -> Result<Opened> {
    let manifest = index.manifest();
    let alike = |same: fn(&Manifest, &Manifest) -> bool| {
        reference.is_none_or(|r| same(&r.manifest, manifest))
    };
    let sparse = match selection.sparse && alike(same_words) {
        true => Some(local_sparse(&index)?),
        false => None,
    };
    let reference_manifest = reference.map_or(manifest, |r| &r.manifest);
    // The file list runs where the first index has one (its sparse weight
    // shares the words' weight with it).
    let runs_files =
        reference_manifest.file_list && file_weight(selection, reference_manifest).is_some();
    let files = match runs_files && alike(same_words) {
        true => local_files(&index)?,
        false => None,
    };
    let embedder = match reference {
        None if selection.dense => Some(crate::index::built_embedder(manifest)?),
        Some(Reference {
            embedder: Some(embedder),
            manifest: first,
        }) if same_model(first, manifest) => Some(*embedder),
        _ => None,
    };
    let dense = match embedder {
        Some(embedder) => {
            let options = dense_options(selection, reference_manifest);
            Some(local_dense(&index, embedder, options)?)
        }
        None => None,
    };
    Ok(Opened {
        index,
        sparse,
        files,
        dense,
        embedder,
    })
}

/// Whether two indexes analyze and score words alike (the sparse list
/// ranks them as one).
fn same_words(first: &Manifest, other: &Manifest) -> bool {
    first.tokenizer == other.tokenizer && first.bm25 == other.bm25
}

/// Whether two indexes were embedded with the same model (the dense list
/// ranks them as one).
fn same_model(first: &Manifest, other: &Manifest) -> bool {
    first.embedder == other.embedder
}

/// The notices of a search over `indexes` running `selection`: each list
/// that leaves an index out, with why, and each index chunked unlike the
/// first.
fn notices(indexes: &IndexSet, selection: &ListSelection) -> Vec<String> {
    let members = indexes.members();
    let first = members[0].index().manifest();
    let names_where = |keep: &dyn Fn(&Manifest) -> bool| -> Vec<&str> {
        (members.iter())
            .filter(|m| !keep(m.index().manifest()))
            .map(|m| m.name())
            .collect()
    };
    let mut notices = Vec::new();
    let left_out = |list: &str, out: &[&str], why: String| {
        format!(
            "the {list} list leaves out {}: {why}; {} ranked by the other lists",
            out.join(", "),
            if out.len() == 1 {
                "its chunks are"
            } else {
                "their chunks are"
            }
        )
    };
    let first_name = members[0].name();
    let other_words = names_where(&|m| same_words(first, m));
    if selection.sparse && !other_words.is_empty() {
        let why = format!("tokenizer or BM25 settings unlike {first_name}'s");
        notices.push(left_out("sparse", &other_words, why));
    }
    let without_files = names_where(&|m| m.file_list || !same_words(first, m));
    if first.file_list && file_weight(selection, first).is_some() && !without_files.is_empty() {
        let why = "indexed before memidx wrote one; `memidx index` on it adds it".to_string();
        notices.push(left_out("file", &without_files, why));
    }
    let other_model = names_where(&|m| same_model(first, m));
    if selection.dense && !other_model.is_empty() {
        let why = format!(
            "embedded with another model than {first_name}'s '{}'",
            first.embedder.id
        );
        notices.push(left_out("dense", &other_model, why));
    }
    let other_chunks = names_where(&|m| m.chunker == first.chunker);
    if !other_chunks.is_empty() {
        notices.push(format!(
            "{} {} cut into chunks unlike {} ({} tokens a chunk); the ranking is not quite one index's",
            other_chunks.join(", "),
            if other_chunks.len() == 1 { "was" } else { "were" },
            members[0].name(),
            first.chunker.budget_tokens
        ));
    }
    let graphs = names_where(&|m| m.graph.is_none());
    if selection.graph == GraphUse::Default && !graphs.is_empty() {
        notices.push(format!(
            "the graph list searches one index at a time and was left out ({} {} one)",
            graphs.join(", "),
            if graphs.len() == 1 { "has" } else { "have" }
        ));
    }
    notices
}
