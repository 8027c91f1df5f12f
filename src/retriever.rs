//! The retriever: opens an index, runs its lists in parallel over the
//! filtered chunks, and fuses their rankings.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use rayon::prelude::*;

use crate::embed::Embedder;
use crate::filter::Filter;
use crate::fusion::{self, Contribution, Fused, Ranking};
use crate::index::Index;
use crate::index::manifest::Manifest;
use crate::lists::dense::DenseList;
use crate::lists::graph::{self, QueryOptions};
use crate::lists::graph::{GraphList, no_graph};
use crate::lists::sparse::SparseList;
use crate::lists::{AllowSet, List, ListKind, RankedList, guard};
use crate::store::generation::{ChunkOrd, ChunkView, FileEntry, Generation, SPARSE_DIR};

/// Smallest default window (candidates per list).
pub const MIN_DEFAULT_WINDOW: usize = 50;

/// The window when neither the search nor the index sets one: max(50, 2 × top_k).
pub fn default_window(top_k: usize) -> usize {
    MIN_DEFAULT_WINDOW.max(2 * top_k)
}

/// How one search is run.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchParams {
    /// Number of fused results to return.
    pub top_k: usize,
    /// Candidates each list contributes before fusion; `None` uses the
    /// index's default, else max(50, 2 × top_k).
    pub window: Option<usize>,
    /// The RRF constant `k`; `None` uses the index's default.
    pub rrf_k: Option<f64>,
    /// Metadata conditions, applied before each list's window is taken.
    pub filter: Filter,
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
        }
    }
}

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
}

/// One list's part in a search, for `explain` and the JSON `ranks`.
#[derive(Debug, Clone)]
pub struct ListRun {
    /// The ranking the list returned.
    pub ranked: RankedList,
    /// The weight it was fused with.
    pub weight: f64,
}

/// Why a list did not contribute to a chunk's score.
#[derive(Debug, Clone, PartialEq)]
pub enum Absence {
    /// The list ranks it, but below the window.
    OutsideWindow {
        /// Its rank in the list.
        rank: usize,
        /// Its raw score there.
        score: f32,
    },
    /// The list does not match it at all.
    NoMatch {
        /// What that means in this list ("no query term matched").
        reason: &'static str,
    },
    /// A metadata filter removed it before the lists ran.
    Filtered {
        /// The condition it fails, `key=value`.
        condition: String,
    },
}

/// A chunk's standing in one list.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Among the list's candidates, contributing to the fused score.
    Ranked(Contribution),
    /// Not contributing, and why.
    Absent(Absence),
}

/// One explained chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedChunk {
    /// The chunk.
    pub chunk: ChunkOrd,
    /// Its position among all fused candidates, if it is one.
    pub fused_rank: Option<usize>,
    /// Its fused score: the sum of the ranked standings' contributions, in list order.
    pub score: f64,
    /// One standing per list, in fusion order.
    pub standings: Vec<Standing>,
    /// Per list, in fusion order: why it ranks the chunk, for a list that
    /// says (the graph list), when it ranks it at all.
    pub reasons: Vec<Option<String>>,
}

/// What `explain` reports: the search itself and the explained chunks.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The search (results truncated to top_k, lists, timings).
    pub outcome: SearchOutcome,
    /// The window each list used.
    pub window: usize,
    /// The explained chunks.
    pub chunks: Vec<ExplainedChunk>,
}

/// Everything a search produced.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Fused results, best first, at most `top_k`.
    pub results: Vec<Fused>,
    /// Each list's run, in fusion order (the order of `Fused::contributions`).
    pub lists: Vec<ListRun>,
    /// The RRF constant the fusion used.
    pub rrf_k: f64,
    /// Time spent evaluating filters.
    pub filter_time: Duration,
    /// Time spent fusing.
    pub fuse_time: Duration,
}

impl SearchOutcome {
    /// The chunks a printer shows: the results, in order.
    pub fn shown_chunks(&self) -> impl Iterator<Item = ChunkOrd> + '_ {
        self.results.iter().map(|f| f.chunk)
    }
}

impl Explanation {
    /// The chunks a printer shows: the explained ones, then each list's
    /// feedback chunks.
    pub fn shown_chunks(&self) -> impl Iterator<Item = ChunkOrd> + '_ {
        self.chunks.iter().map(|c| c.chunk).chain(
            self.outcome
                .lists
                .iter()
                .flat_map(|run| run.ranked.feedback_chunks.iter().copied()),
        )
    }
}

impl Retriever {
    /// Opens the index in `index_dir` (a `.memidx` folder) with the lists
    /// `selection` asks for, weighted by its overrides or the index defaults.
    pub fn open(index_dir: &Path, selection: &ListSelection) -> Result<Self> {
        Index::open_with(index_dir, |index| Self::open_lists(index, selection))
    }

    fn open_lists(index: Index, selection: &ListSelection) -> Result<Self> {
        let (manifest, generation) = (index.manifest(), index.generation());
        let defaults = manifest.fusion;
        let mut lists = Vec::new();
        let mut dense_feedback = None;
        if selection.sparse {
            let dir = generation.dir().join(SPARSE_DIR);
            let sparse = guard::catch("sparse", &dir, || {
                SparseList::open(&dir, manifest.tokenizer, manifest.bm25, manifest.sparse)
            })?;
            let weight = selection.sparse_weight.unwrap_or(defaults.sparse_weight);
            lists.push(WeightedList {
                index: Box::new(sparse),
                weight,
            });
        }
        if selection.dense {
            let embedder = query_embedder(manifest)?;
            let feedback = selection.dense_feedback.unwrap_or(defaults.dense_feedback);
            let dense = DenseList::open(
                generation.dir(),
                generation.vector_flags(),
                embedder,
                feedback,
            )?;
            dense_feedback = Some(feedback);
            let weight = selection.dense_weight.unwrap_or(defaults.dense_weight);
            lists.push(WeightedList {
                index: Box::new(dense),
                weight,
            });
        }
        let graph_weight = match (selection.graph, &manifest.graph) {
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
        ensure!(
            !lists.is_empty(),
            "no list selected; choose --mode hybrid, or a combination of sparse, dense and graph"
        );
        ensure!(
            lists.iter().any(|l| l.weight > 0.0),
            "every selected list has weight 0; give at least one a positive weight"
        );
        Ok(Self {
            index,
            lists,
            dense_feedback,
        })
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

    /// Runs `query` through every list in parallel and fuses the rankings.
    pub fn search(&self, query: &str, params: &SearchParams) -> Result<SearchOutcome> {
        let (mut outcome, _) = self.search_untruncated(query, params)?;
        outcome.results.truncate(params.top_k);
        Ok(outcome)
    }

    /// Like [`search`](Self::search) but keeps every fused candidate, and
    /// also returns the filter's allow set.
    fn search_untruncated(
        &self,
        query: &str,
        params: &SearchParams,
    ) -> Result<(SearchOutcome, AllowSet)> {
        if query.trim().is_empty() {
            bail!("the query is empty; give words to search for");
        }
        if !query.chars().any(char::is_alphanumeric) {
            bail!("the query '{query}' has no letters or digits to search for");
        }
        let started = Instant::now();
        let allow = params.filter.evaluate(self.generation())?;
        let filter_time = started.elapsed();
        let ranked = self.run_lists(query, self.window(params), &allow)?;
        let started = Instant::now();
        let inputs: Vec<Ranking<'_>> = ranked
            .iter()
            .zip(&self.lists)
            .map(|(r, l)| Ranking {
                hits: &r.hits,
                weight: l.weight,
            })
            .collect();
        let rrf_k = self.rrf_k(params);
        let results = fusion::fuse(&inputs, rrf_k);
        let fuse_time = started.elapsed();
        let lists = ranked
            .into_iter()
            .zip(&self.lists)
            .map(|(ranked, l)| ListRun {
                ranked,
                weight: l.weight,
            })
            .collect();
        Ok((
            SearchOutcome {
                results,
                lists,
                rrf_k,
                filter_time,
                fuse_time,
            },
            allow,
        ))
    }

    /// Explains a search: for every fused result (or only for `focus`, even
    /// when it is not among them), each list's rank, raw score, weight and
    /// contribution, or why the list did not contribute.
    pub fn explain(
        &self,
        query: &str,
        params: &SearchParams,
        focus: Option<ChunkOrd>,
    ) -> Result<Explanation> {
        let (mut outcome, allow) = self.search_untruncated(query, params)?;
        // Each list's complete ranking of the allowed chunks, to tell
        // "outside the window" (with the rank) from "no match".
        let complete = self.run_lists(query, self.generation().len(), &allow)?;
        let targets: Vec<(Option<usize>, Fused)> = match focus {
            None => outcome
                .results
                .iter()
                .take(params.top_k)
                .cloned()
                .enumerate()
                .map(|(i, f)| (Some(i + 1), f))
                .collect(),
            Some(chunk) => vec![
                match outcome.results.iter().position(|f| f.chunk == chunk) {
                    Some(i) => (Some(i + 1), outcome.results[i].clone()),
                    None => (
                        None,
                        Fused {
                            chunk,
                            score: 0.0,
                            contributions: vec![None; self.lists.len()],
                        },
                    ),
                },
            ],
        };
        let chunks = targets
            .into_iter()
            .map(|(fused_rank, fused)| {
                let standings = fused
                    .contributions
                    .iter()
                    .zip(&complete)
                    .zip(&self.lists)
                    .map(|((contribution, full), list)| match contribution {
                        Some(c) => Ok(Standing::Ranked(*c)),
                        None => self
                            .absence(
                                fused.chunk,
                                full,
                                list.index.no_match_reason(),
                                &allow,
                                &params.filter,
                            )
                            .map(Standing::Absent),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let reasons = complete
                    .iter()
                    .map(|full| {
                        let position = full.hits.iter().position(|h| h.chunk == fused.chunk)?;
                        full.reasons.get(position).cloned()
                    })
                    .collect();
                Ok(ExplainedChunk {
                    chunk: fused.chunk,
                    fused_rank,
                    score: fused.score,
                    standings,
                    reasons,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        outcome.results.truncate(params.top_k);
        Ok(Explanation {
            outcome,
            window: self.window(params),
            chunks,
        })
    }

    /// Why `chunk` is not among a list's candidates.
    fn absence(
        &self,
        chunk: ChunkOrd,
        complete: &RankedList,
        no_match: &'static str,
        allow: &AllowSet,
        filter: &Filter,
    ) -> Result<Absence> {
        if !allow.allows(chunk) {
            let file = &self.generation().chunk(chunk)?.file.metadata;
            return Ok(Absence::Filtered {
                condition: filter.failing_condition(file).unwrap_or_default(),
            });
        }
        Ok(match complete.hits.iter().position(|h| h.chunk == chunk) {
            Some(i) => Absence::OutsideWindow {
                rank: i + 1,
                score: complete.hits[i].score,
            },
            None => Absence::NoMatch { reason: no_match },
        })
    }

    /// The indexed root folder (as recorded when indexing).
    pub fn root(&self) -> &Path {
        self.index.root()
    }

    /// Decodes `chunks` for printing, each once (a chunk named twice is
    /// read once), and checks each one's file on disk: a file whose size or
    /// modification time differs from when it was indexed is changed.
    pub fn decode(&self, chunks: impl IntoIterator<Item = ChunkOrd>) -> Result<Decoded> {
        let generation = self.generation();
        let mut decoded = Decoded::default();
        let mut file_changed: BTreeMap<u32, bool> = BTreeMap::new();
        for ord in chunks {
            if decoded.chunks.contains_key(&ord) {
                continue;
            }
            let view = generation.chunk(ord)?;
            let file = view.record.file;
            let changed = *file_changed
                .entry(file)
                .or_insert_with(|| changed_on_disk(self.root(), &view.file));
            decoded.chunks.insert(ord, DecodedChunk { view, changed });
        }
        Ok(decoded)
    }

    /// The window a search with `params` uses.
    pub fn window(&self, params: &SearchParams) -> usize {
        params
            .window
            .or(self.manifest().fusion.window)
            .unwrap_or_else(|| default_window(params.top_k))
    }

    /// The RRF constant a search with `params` uses.
    pub fn rrf_k(&self, params: &SearchParams) -> f64 {
        params.rrf_k.unwrap_or(self.manifest().fusion.rrf_k)
    }

    /// How many chunks move the dense list's query (`None` without a dense
    /// list).
    pub fn dense_feedback(&self) -> Option<usize> {
        self.dense_feedback
    }

    /// The lists' names and weights, in fusion order.
    pub fn list_weights(&self) -> Vec<(ListKind, f64)> {
        self.lists
            .iter()
            .map(|l| (l.index.kind(), l.weight))
            .collect()
    }

    /// Runs every list, each on its own thread when there are several, and
    /// returns their rankings unfused (in fusion order).
    pub fn run_lists(
        &self,
        query: &str,
        window: usize,
        allow: &AllowSet,
    ) -> Result<Vec<RankedList>> {
        let run = |l: &WeightedList| {
            guard::catch(l.index.kind().name(), self.generation().dir(), || {
                l.index.search(query, window, allow)
            })
        };
        if let [only] = self.lists.as_slice() {
            return Ok(vec![run(only)?]);
        }
        // On rayon's pool, not on threads of their own: a list that itself
        // runs in parallel (the dense scan, a transformer's matrix products)
        // then never waits on a pool whose workers are all blocked joining
        // list threads — which deadlocked `eval` (itself parallel over
        // queries) with a transformer model.
        self.lists.par_iter().map(run).collect()
    }
}

/// Chunks decoded for the printers, by ordinal (see [`Retriever::decode`]).
#[derive(Debug, Default)]
pub struct Decoded {
    chunks: BTreeMap<ChunkOrd, DecodedChunk>,
}

/// One decoded chunk.
#[derive(Debug)]
pub struct DecodedChunk {
    /// Its record, file entry and text.
    pub view: ChunkView,
    /// True when its file changed on disk since indexing.
    pub changed: bool,
}

impl Decoded {
    /// The decoded chunk `ord` (an error if it was not decoded).
    pub fn get(&self, ord: ChunkOrd) -> Result<&DecodedChunk> {
        self.chunks
            .get(&ord)
            .with_context(|| format!("chunk {ord} was not decoded"))
    }

    /// The files of `chunks` (in their order, each once) that changed on
    /// disk since indexing.
    pub fn changed_files(&self, chunks: impl IntoIterator<Item = ChunkOrd>) -> Vec<String> {
        let mut changed: Vec<String> = Vec::new();
        for ord in chunks {
            if let Some(chunk) = self.chunks.get(&ord).filter(|c| c.changed)
                && !changed.contains(&chunk.view.file.path)
            {
                changed.push(chunk.view.file.path.clone());
            }
        }
        changed
    }
}

/// True when `file` under `root` has another size or modification time
/// than when it was indexed (or is gone).
fn changed_on_disk(root: &Path, file: &FileEntry) -> bool {
    let now = std::fs::metadata(root.join(&file.path)).ok().map(|m| {
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        (m.len(), mtime.map_or(0, |d| d.as_nanos() as i128))
    });
    now != Some((file.stamp.size, file.stamp.mtime_ns))
}

/// The embedder for queries: the one that built the index, or an error
/// saying how to rebuild when it is not available or has changed.
fn query_embedder(manifest: &Manifest) -> Result<&'static dyn Embedder> {
    let built_with = &manifest.embedder;
    let rebuild = |dir: &str| match dir {
        "" => "memidx index --full DIR".to_string(),
        dir => format!("memidx index --full --model {dir} DIR"),
    };
    let dir = manifest.model_dir.as_deref();
    let embedder = crate::embed::load(dir.map(Path::new)).with_context(|| {
        format!(
            "cannot load the model the index was built with; rebuild it with '{}'",
            rebuild("")
        )
    })?;
    ensure!(
        built_with == embedder.info(),
        "the index was embedded with '{}' ({}), but {} is now '{}' ({}); rebuild it with '{}'",
        built_with.id,
        built_with.fingerprint,
        dir.map_or("this memidx's bundled model".to_string(), |d| format!(
            "the model in {d}"
        )),
        embedder.info().id,
        embedder.info().fingerprint,
        rebuild(dir.unwrap_or_default())
    );
    Ok(embedder)
}
