//! The retriever: opens an index, runs its lists in parallel over the
//! filtered chunks, and fuses their rankings.

mod backend;
mod confidence;
mod decode;
mod explain;
mod fold;
mod params;
mod search;

pub use backend::{Backend, Local, local_sparse};

pub use confidence::Confidence;
pub use decode::{Decoded, DecodedChunk, StaleFiles};
pub use explain::{Absence, ExplainedChunk, Explanation, Standing};
pub use fold::{DEFAULT_PER_FILE, Folded, fold};
pub use params::{GraphUse, ListSelection, MIN_DEFAULT_WINDOW, SearchParams, default_window};
pub use search::{FirstPass, ListRun, MAX_QUERY_BYTES, SearchOutcome, check_query};

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};

use crate::fusion::Fusion;
use crate::index::Index;
use crate::index::manifest::Manifest;
use crate::lists::dense::DenseOptions;
use crate::lists::graph::{self, GraphList, QueryOptions, no_graph};
use crate::lists::recency::{RECENT_WEIGHT, RecencyList};
use crate::lists::{List, ListKind};
use crate::store::generation::Generation;

/// A list taking part in the fusion, with its weight.
pub struct WeightedList {
    /// The list.
    pub index: Box<dyn List>,
    /// Its RRF weight.
    pub weight: f64,
}

/// An opened index and the lists a search runs over it.
pub struct Retriever {
    index: Index,
    lists: Vec<WeightedList>,
    dense_feedback: Option<usize>,
    weights_given: bool,
    backend: Arc<dyn Backend>,
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
            Self::open_lists(index, selection, Arc::clone(&backend))
        })
    }

    fn open_lists(
        index: Index,
        selection: &ListSelection,
        backend: Arc<dyn Backend>,
    ) -> Result<Self> {
        let manifest = index.manifest();
        let defaults = manifest.fusion;
        let mut lists = Vec::new();
        let mut dense_feedback = None;
        if selection.sparse {
            let weight = selection.sparse_weight.unwrap_or(defaults.sparse_weight);
            lists.push(WeightedList {
                index: backend.sparse(&index)?,
                weight,
            });
        }
        if selection.dense {
            let embedder = crate::index::built_embedder(manifest)?;
            let feedback = selection.dense_feedback.unwrap_or(defaults.dense_feedback);
            let options = DenseOptions {
                feedback,
                exact: selection.dense_exact,
                rescore: selection.dense_rescore,
            };
            let dense = backend.dense(&index, embedder, options)?;
            dense_feedback = Some(feedback);
            let weight = selection.dense_weight.unwrap_or(defaults.dense_weight);
            lists.push(WeightedList {
                index: dense,
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
        let generation = index.generation();
        let graph_weight = match (graph, &manifest.graph) {
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
        };
        if let Some(weight) = graph_weight {
            let graph =
                GraphList::open(generation.dir(), generation.len(), QueryOptions::default())?;
            lists.push(WeightedList {
                index: Box::new(graph),
                weight,
            });
        }
        if selection.recency {
            lists.push(WeightedList {
                index: Box::new(RecencyList::open(generation)?),
                weight: selection.recency_weight.unwrap_or(RECENT_WEIGHT),
            });
        }
        ensure!(
            !lists.is_empty(),
            "no list selected; choose hybrid, or a combination of sparse, dense, graph and recency"
        );
        ensure!(
            lists.iter().any(|l| l.weight > 0.0),
            "every selected list has weight 0; give at least one a positive weight"
        );
        Ok(Self {
            index,
            lists,
            dense_feedback,
            weights_given: selection.weights_given(),
            backend,
        })
    }

    /// Where the sparse and dense lists run: `local`, or the remote
    /// collection's address.
    pub fn ran_on(&self) -> String {
        self.backend.name()
    }

    /// The opened index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The manifest of the opened index.
    pub fn manifest(&self) -> &Manifest {
        self.index.manifest()
    }

    /// The opened generation (chunk table and texts).
    pub fn generation(&self) -> &Generation {
        self.index.generation()
    }

    /// The indexed root folder (as recorded when indexing).
    pub fn root(&self) -> &Path {
        self.index.root()
    }

    /// The folder `dir` relative to the indexed root (`/`-separated, empty
    /// for the root itself), for a filter to files under it; an error when
    /// `dir` is not inside the root.
    pub fn folder_of(&self, dir: &Path) -> Result<String> {
        let root = std::fs::canonicalize(self.root()).unwrap_or_else(|_| self.root().to_path_buf());
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let folder = dir
            .strip_prefix(&root)
            .with_context(|| format!("{} is not inside {}", dir.display(), root.display()))?;
        let parts: Vec<String> = folder
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        Ok(parts.join("/"))
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
