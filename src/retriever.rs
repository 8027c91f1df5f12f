//! The retriever: opens an index, runs its lists in parallel over the
//! filtered chunks, and fuses their rankings.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::filter::{AllowSet, Filter};
use crate::fusion::{self, Fused, WeightedList};
use crate::lists::sparse::SparseIndex;
use crate::lists::{RankedList, SearchIndex};
use crate::store::generation::{Generation, SPARSE_DIR};
use crate::store::manifest::Manifest;

/// How one search is run.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchParams {
    /// Number of fused results to return.
    pub top_k: usize,
    /// Candidates each list contributes before fusion.
    pub window: usize,
    /// The RRF constant `k`.
    pub rrf_k: f64,
    /// Metadata conditions, applied before each list's window is taken.
    pub filter: Filter,
}

/// A list taking part in the fusion, with its weight.
pub struct WeightedIndex {
    /// The list.
    pub index: Box<dyn SearchIndex>,
    /// Its RRF weight.
    pub weight: f64,
}

/// An opened index: manifest, generation and lists.
pub struct Retriever {
    index_dir: PathBuf,
    manifest: Manifest,
    generation: Generation,
    lists: Vec<WeightedIndex>,
}

/// One list's part in a search, for `explain` and the JSON `ranks`.
#[derive(Debug, Clone)]
pub struct ListRun {
    /// The ranking the list returned.
    pub ranked: RankedList,
    /// The weight it was fused with.
    pub weight: f64,
}

/// Everything a search produced.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Fused results, best first, at most `top_k`.
    pub results: Vec<Fused>,
    /// Each list's run, in fusion order (the order of `Fused::contributions`).
    pub lists: Vec<ListRun>,
    /// Time spent evaluating filters.
    pub filter_time: Duration,
    /// Time spent fusing.
    pub fuse_time: Duration,
}

impl Retriever {
    /// Opens the index in `index_dir` (a `.memidx` folder) with its sparse list.
    pub fn open(index_dir: &Path, sparse_weight: f64) -> Result<Self> {
        let manifest = Manifest::read(index_dir)?.with_context(|| {
            format!(
                "{} holds no complete index (no meta.json); run 'memidx index DIR' first",
                index_dir.display()
            )
        })?;
        let generation = Generation::open(index_dir, &manifest)?;
        let sparse = SparseIndex::open(&generation.dir().join(SPARSE_DIR), manifest.tokenizer)?;
        let lists = vec![WeightedIndex {
            index: Box::new(sparse),
            weight: sparse_weight,
        }];
        Ok(Self {
            index_dir: index_dir.to_path_buf(),
            manifest,
            generation,
            lists,
        })
    }

    /// The index folder.
    pub fn index_dir(&self) -> &Path {
        &self.index_dir
    }

    /// The manifest of the opened index.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The opened generation (chunk table and texts).
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// Runs `query` through every list in parallel and fuses the rankings.
    pub fn search(&self, query: &str, params: &SearchParams) -> Result<SearchOutcome> {
        if query.trim().is_empty() {
            bail!("the query is empty; give words to search for");
        }
        if !query.chars().any(char::is_alphanumeric) {
            bail!("the query '{query}' has no letters or digits to search for");
        }
        let started = Instant::now();
        let allow = params.filter.evaluate(self.generation.table())?;
        let filter_time = started.elapsed();
        let ranked = self.run_lists(query, params.window, &allow)?;
        let started = Instant::now();
        let inputs: Vec<WeightedList<'_>> = ranked
            .iter()
            .zip(&self.lists)
            .map(|(r, l)| WeightedList {
                hits: &r.hits,
                weight: l.weight,
            })
            .collect();
        let mut results = fusion::fuse(&inputs, params.rrf_k);
        results.truncate(params.top_k);
        let fuse_time = started.elapsed();
        let lists = ranked
            .into_iter()
            .zip(&self.lists)
            .map(|(ranked, l)| ListRun {
                ranked,
                weight: l.weight,
            })
            .collect();
        Ok(SearchOutcome {
            results,
            lists,
            filter_time,
            fuse_time,
        })
    }

    /// Runs every list, each on its own thread when there are several.
    fn run_lists(&self, query: &str, window: usize, allow: &AllowSet) -> Result<Vec<RankedList>> {
        if let [only] = self.lists.as_slice() {
            return Ok(vec![only.index.search(query, window, allow)?]);
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .lists
                .iter()
                .map(|l| scope.spawn(move || l.index.search(query, window, allow)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| bail!("a list's search thread panicked"))
                })
                .collect()
        })
    }
}
