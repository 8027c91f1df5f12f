//! How a search is asked for: its parameters and which lists it runs.

use std::path::PathBuf;

use crate::filter::Filter;
use crate::fusion::FusionMethod;

/// Smallest default window (candidates per list). A chunk outside a list's
/// window adds nothing from that list, so a note only BM25 can find is lost
/// when the dense list's window does not reach it: 200 instead of 50 costs
/// no search time on corpus-big and keeps such notes (measured:
/// docs/eval.md).
pub const MIN_DEFAULT_WINDOW: usize = 200;

/// The window when neither the search nor the index sets one: max(200, 2 × top_k).
pub fn default_window(top_k: usize) -> usize {
    MIN_DEFAULT_WINDOW.max(2 * top_k)
}

/// How one search is run.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchParams {
    /// Number of fused results to return.
    pub top_k: usize,
    /// Candidates each list contributes before fusion; `None` uses the
    /// index's default, else max(200, 2 × top_k).
    pub window: Option<usize>,
    /// The RRF constant `k`; `None` uses the index's default. Given without
    /// a method, it asks for RRF.
    pub rrf_k: Option<f64>,
    /// The fusion method; `None` uses the index's default.
    pub fusion: Option<FusionMethod>,
    /// Metadata conditions, applied before each list's window is taken.
    pub filter: Filter,
    /// At most this many results from one file, the rest folded into a
    /// count (0: no limit; see [`super::fold`]).
    pub per_file: usize,
    /// Keep the results when no list matches the query with confidence
    /// (see [`super::confidence`]); by default they are dropped.
    pub keep_all: bool,
    /// Only files in this folder (absolute) and below (`--here`): in each
    /// index, those under it; an index whose folder lies apart from it
    /// gives none.
    pub here: Option<PathBuf>,
}

/// Whether a search runs the graph list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphUse {
    /// Not run.
    Off,
    /// As one of the default lists: run when the index has a graph and its
    /// weight (the search's, else the index's) is positive.
    Default,
    /// Run when the index has a graph (`eval` measures it with and without).
    Available,
    /// Asked for by name: run, and an index without a graph is an error
    /// saying how to add one.
    Required,
}

/// Which lists a search runs, and weights that override the index defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListSelection {
    /// Run the sparse (BM25) list.
    pub sparse: bool,
    /// Run the dense (embedding) list.
    pub dense: bool,
    /// Whether to run the graph list.
    pub graph: GraphUse,
    /// Weight of the sparse list; `None` uses the index's default.
    pub sparse_weight: Option<f64>,
    /// Weight of the dense list; `None` uses the index's default.
    pub dense_weight: Option<f64>,
    /// Weight of the graph list; `None` uses the index's default.
    pub graph_weight: Option<f64>,
    /// How many of its best chunks move the dense list's query; `None`
    /// uses the index's default.
    pub dense_feedback: Option<usize>,
    /// Rank the dense list by an exact scan of every vector, even where the
    /// index has an approximate one (`--exact`).
    pub dense_exact: bool,
    /// Rows the dense list's sign codes choose for exact rescoring
    /// (`--dense-rescore`); `None` uses the default.
    pub dense_rescore: Option<usize>,
    /// The share of the rows whose cells the dense list probes
    /// (`--dense-probe`); `None` uses the default.
    pub dense_probe: Option<f64>,
    /// Run the recency list.
    pub recency: bool,
    /// Weight of the recency list; `None` uses
    /// [`crate::lists::recency::RECENT_WEIGHT`].
    pub recency_weight: Option<f64>,
    /// Whether the search names its fusion method or RRF constant: the
    /// formula it spells out is fused over the lists it names, without the
    /// file list of the index's own fusion ([`crate::fusion::Fusion::own`]).
    pub fusion_given: bool,
}

impl ListSelection {
    /// Whether the search gives any list's weight itself, which keeps the
    /// weights as given (see [`crate::fusion::FusionDefaults::resolve`]).
    pub fn weights_given(&self) -> bool {
        self.sparse_weight.is_some() || self.dense_weight.is_some() || self.graph_weight.is_some()
    }

    /// Whether the search runs under the index's own fusion: it gives no
    /// method, RRF constant or weight of its own.
    pub fn own_fusion(&self) -> bool {
        !self.fusion_given && !self.weights_given()
    }
}

impl Default for ListSelection {
    /// The default lists (`--mode hybrid`) at the index's weights.
    fn default() -> Self {
        Self {
            sparse: true,
            dense: true,
            graph: GraphUse::Default,
            sparse_weight: None,
            dense_weight: None,
            graph_weight: None,
            dense_feedback: None,
            dense_exact: false,
            dense_rescore: None,
            dense_probe: None,
            recency: false,
            recency_weight: None,
            fusion_given: false,
        }
    }
}
