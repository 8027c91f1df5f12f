//! The retriever: opens an index, runs its lists in parallel over the
//! filtered chunks, and fuses their rankings.

mod backend;
mod confidence;
mod decode;
mod explain;
mod fold;
mod params;
mod search;
mod several;

pub use backend::{Backend, Local, local_sparse};

pub use confidence::{Confidence, strong_coverage};
pub use decode::{Decoded, DecodedChunk, StaleFiles};
pub use explain::{Absence, ExplainedChunk, Explanation, Standing};
pub use fold::{DEFAULT_PER_FILE, Folded, fold};
pub use params::{GraphUse, ListSelection, MIN_DEFAULT_WINDOW, SearchParams, default_window};
pub use search::{FirstPass, ListRun, MAX_QUERY_BYTES, SearchOutcome, check_query};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, ensure};

use crate::fusion::Fusion;
use crate::index::Index;
use crate::index::manifest::Manifest;
use crate::index::set::IndexSet;
use crate::lists::dense::DenseOptions;
use crate::lists::graph::{self, QueryOptions, no_graph};
use crate::lists::recency::{RECENT_WEIGHT, RecencyList};
use crate::lists::{List, ListKind};
use crate::store::parts::Parts;

/// A list taking part in the fusion, with its weight.
pub struct WeightedList {
    /// The list.
    pub index: Box<dyn List>,
    /// Its RRF weight.
    pub weight: f64,
}

/// The opened indexes (one, or several searched as one) and the lists a
/// search runs over them.
pub struct Retriever {
    indexes: IndexSet,
    lists: Vec<WeightedList>,
    dense_feedback: Option<usize>,
    weights_given: bool,
    backend: Arc<dyn Backend>,
    notices: Vec<String>,
    /// Chunks a later part of their index buried: excluded from every
    /// search, but by no filter (see [`Retriever::run_lists`]).
    buried: usize,
}

impl Retriever {
    /// Opens the index in `index_dir` (a `.memidx` folder) with the lists
    /// `selection` asks for, weighted by its overrides or the index defaults.
    pub fn open(index_dir: &Path, selection: &ListSelection) -> Result<Self> {
        Self::open_on(index_dir, selection, Arc::new(Local))
    }

    /// Opens the index in `index_dir` as [`Retriever::open`] does, with its
    /// sparse and dense lists run by `backend` (the index itself, or a
    /// remote engine holding a pushed copy of it).
    pub fn open_on(
        index_dir: &Path,
        selection: &ListSelection,
        backend: Arc<dyn Backend>,
    ) -> Result<Self> {
        Index::open_with(index_dir, |index| {
            Self::open_lists(index, selection, Arc::clone(&backend), None)
        })
    }

    /// Opens the indexes `named` (each a `.memidx` folder, with the name
    /// its chunk ids carry, `None` for its folder's name) as one: every
    /// list ranks across all of them ([`several`]). One index opens as
    /// [`Retriever::open`] does, unnamed.
    pub fn open_several(
        named: &[(Option<String>, PathBuf)],
        selection: &ListSelection,
    ) -> Result<Self> {
        match named {
            [(_, dir)] => Self::open(dir, selection),
            _ => several::open(named, selection, IndexSet::new),
        }
    }

    /// Opens the indexes `named` as [`Retriever::open_several`] does, chunk
    /// ids carrying the names even for one index: what a server of several
    /// indexes answers a call searching some of them with.
    pub fn open_named(
        named: &[(Option<String>, PathBuf)],
        selection: &ListSelection,
    ) -> Result<Self> {
        match named {
            // One index opens whole (its graph list too), only named.
            [(name, dir)] => Index::open_with(dir, |index| {
                Self::open_lists(index, selection, Arc::new(Local), Some(name.clone()))
            }),
            _ => several::open(named, selection, IndexSet::named),
        }
    }

    /// The lists `selection` asks for over `index`, run by `backend`; its
    /// chunk ids carry its name when `named` gives one.
    fn open_lists(
        index: Index,
        selection: &ListSelection,
        backend: Arc<dyn Backend>,
        named: Option<Option<String>>,
    ) -> Result<Self> {
        let manifest = index.manifest();
        let mut lists = Vec::new();
        if selection.sparse {
            lists.push(WeightedList {
                index: backend.sparse(&index)?,
                weight: sparse_weight(selection, manifest),
            });
        }
        if selection.dense {
            let embedder = crate::index::built_embedder(manifest)?;
            let options = dense_options(selection, manifest);
            let dense = backend.dense(&index, embedder, options)?;
            lists.push(WeightedList {
                index: dense,
                weight: dense_weight(selection, manifest),
            });
        }
        if let Some(weight) = file_weight(selection, manifest)
            && let Some(files) = backend.files(&index)?
        {
            lists.push(WeightedList {
                index: files,
                weight,
            });
        }
        let graph = match backend.graph_refusal() {
            None => selection.graph,
            Some(refusal) if selection.graph == GraphUse::Required => {
                return Err(anyhow::anyhow!(refusal));
            }
            Some(_) => GraphUse::Off,
        };
        if let Some(weight) = graph_weight(graph, selection, manifest)? {
            let graph = index.open_graph(QueryOptions::default())?;
            lists.push(WeightedList {
                index: Box::new(graph),
                weight,
            });
        }
        if selection.recency {
            lists.push(recency(&[index.parts()], selection)?);
        }
        let indexes = match named {
            Some(name) => IndexSet::named(vec![(name, index)])?,
            None => IndexSet::single(index),
        };
        Self::assemble(indexes, lists, selection, backend, Vec::new())
    }

    /// A retriever over `indexes` running `lists`, checked: at least one
    /// list, and one of positive weight.
    fn assemble(
        indexes: IndexSet,
        lists: Vec<WeightedList>,
        selection: &ListSelection,
        backend: Arc<dyn Backend>,
        notices: Vec<String>,
    ) -> Result<Self> {
        ensure!(
            !lists.is_empty(),
            "no list selected; choose hybrid, or a combination of sparse, dense, graph and recency"
        );
        ensure!(
            lists.iter().any(|l| l.weight > 0.0),
            "every selected list has weight 0; give at least one a positive weight"
        );
        let dense_feedback = (lists.iter())
            .find(|l| l.index.kind() == ListKind::Dense)
            .map(|l| l.index.feedback_seeds());
        let buried = (indexes.members().iter())
            .map(|m| m.index().parts())
            .map(|parts| parts.len() - parts.live_len())
            .sum();
        Ok(Self {
            indexes,
            lists,
            dense_feedback,
            weights_given: selection.weights_given(),
            backend,
            notices,
            buried,
        })
    }

    /// Where the sparse and dense lists run: `local`, or the remote
    /// collection's address.
    pub fn ran_on(&self) -> String {
        self.backend.name()
    }

    /// The opened indexes.
    pub fn indexes(&self) -> &IndexSet {
        &self.indexes
    }

    /// The manifest of the (first) opened index: the model, settings and
    /// defaults a search uses.
    pub fn manifest(&self) -> &Manifest {
        self.indexes.first().manifest()
    }

    /// The indexed root folder (as recorded when indexing) when one index
    /// is searched; `None` with several.
    pub fn single_root(&self) -> Option<&Path> {
        (!self.indexes.shows_names()).then(|| self.indexes.first().root())
    }

    /// What a search over several indexes leaves out, one sentence each
    /// (an index whose model differs is not in the dense list, say); empty
    /// for one index.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// Where a list that fails while reading its files (a panic, caught at
    /// the list boundary) names the damage: the generation's folder. A list
    /// over several indexes cannot tell whose files failed, and names the
    /// first's; `status --verify` on each tells which.
    fn damage_site(&self) -> PathBuf {
        self.indexes.first().parts().base().dir().to_path_buf()
    }

    /// The window a search with `params` uses.
    pub fn window(&self, params: &SearchParams) -> usize {
        params
            .window
            .or(self.manifest().fusion.window)
            .unwrap_or_else(|| default_window(params.top_k))
    }

    /// The fusion (method and RRF constant) a search with `params` uses:
    /// an RRF constant given without a method asks for RRF, weights given
    /// without one keep adaptive defaults from moving them.
    pub fn fusion(&self, params: &SearchParams) -> Fusion {
        self.manifest()
            .fusion
            .resolve(params.fusion, params.rrf_k, self.weights_given)
    }

    /// How many chunks move the dense list's query (`None` without a dense
    /// list).
    pub fn dense_feedback(&self) -> Option<usize> {
        self.dense_feedback
    }

    /// Per list, in fusion order: whether it refines its ranking with the
    /// first pass's best chunks (the dense list, with feedback on).
    pub fn refining(&self) -> Vec<bool> {
        self.lists
            .iter()
            .map(|l| l.index.feedback_seeds() > 0)
            .collect()
    }

    /// The lists' names and weights, in fusion order.
    pub fn list_weights(&self) -> Vec<(ListKind, f64)> {
        self.lists
            .iter()
            .map(|l| (l.index.kind(), l.weight))
            .collect()
    }
}

/// The sparse list's weight: the search's, else the index's default, which
/// shares the words' weight with the file list where it runs and holds all
/// of it where it does not.
fn sparse_weight(selection: &ListSelection, manifest: &Manifest) -> f64 {
    let fusion = &manifest.fusion;
    let shared = manifest.file_list && file_weight(selection, manifest).is_some();
    selection.sparse_weight.unwrap_or(match shared {
        true => fusion.sparse_weight,
        false => fusion.sparse_weight + fusion.file_weight,
    })
}

/// The dense list's weight: the search's, else the index's default.
fn dense_weight(selection: &ListSelection, manifest: &Manifest) -> f64 {
    selection
        .dense_weight
        .unwrap_or(manifest.fusion.dense_weight)
}

/// The file list's weight when a search with `selection` runs it over the
/// index `manifest` describes: in hybrid searches (the sparse and dense
/// lists both) under the index's own fusion, at the index's default;
/// `None` otherwise, or when that weight is 0.
pub(super) fn file_weight(selection: &ListSelection, manifest: &Manifest) -> Option<f64> {
    let hybrid = selection.sparse && selection.dense && selection.own_fusion();
    let weight = manifest.fusion.file_weight;
    (hybrid && weight > 0.0).then_some(weight)
}

/// How the dense list searches: the search's feedback, else the index's.
fn dense_options(selection: &ListSelection, manifest: &Manifest) -> DenseOptions {
    DenseOptions {
        feedback: (selection.dense_feedback).unwrap_or(manifest.fusion.dense_feedback),
        exact: selection.dense_exact,
        rescore: selection.dense_rescore,
        probe: selection.dense_probe,
    }
}

/// The graph list's weight when `graph` runs it over the index `manifest`
/// describes (`None`: it does not run); an error when it was asked for by
/// name and the index has no graph.
fn graph_weight(
    graph: GraphUse,
    selection: &ListSelection,
    manifest: &Manifest,
) -> Result<Option<f64>> {
    Ok(match (graph, &manifest.graph) {
        (GraphUse::Off, _) | (GraphUse::Default | GraphUse::Available, None) => None,
        (GraphUse::Default, Some(graph)) => {
            Some(selection.graph_weight.unwrap_or(graph.weight)).filter(|&w| w > 0.0)
        }
        (GraphUse::Available | GraphUse::Required, Some(graph)) => Some(
            selection
                .graph_weight
                .unwrap_or_else(|| graph::named_weight(graph.weight)),
        ),
        (GraphUse::Required, None) => return Err(no_graph(&manifest.root)),
    })
}

/// The recency list over `indexes`, weighted.
fn recency(indexes: &[&Parts], selection: &ListSelection) -> Result<WeightedList> {
    Ok(WeightedList {
        index: Box::new(RecencyList::open(indexes)?),
        weight: selection.recency_weight.unwrap_or(RECENT_WEIGHT),
    })
}
