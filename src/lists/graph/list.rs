//! The graph list: chunks ranked through the query's entities and their
//! communities ([`super::query`]), as one more [`List`].

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, ensure};

use super::query::{self, QueryOptions};
use super::{GRAPH_FILE, GraphFile, GraphView};
use crate::error::IndexError;
use crate::lists::{AllowSet, List, ListHit, ListKind, RankedList};
use crate::store::damaged;

/// The error for an index of `root` built without a graph (`index --graph`
/// builds one).
pub fn no_graph(root: &str) -> anyhow::Error {
    IndexError::NoGraph {
        root: root.to_string(),
    }
    .into()
}

/// The graph list of one generation.
#[derive(Debug)]
pub struct GraphList {
    file: GraphFile,
    options: QueryOptions,
}

impl GraphList {
    /// Opens the graph of the generation folder `gen_dir`, whose chunk table
    /// holds `chunk_count` chunks.
    pub fn open(gen_dir: &Path, chunk_count: usize, options: QueryOptions) -> Result<Self> {
        let path = gen_dir.join(GRAPH_FILE);
        let file = GraphFile::open(&path)?;
        let built_for = file.view()?.header.chunk_count as usize;
        ensure!(
            built_for == chunk_count,
            damaged(
                &path,
                &format!("was built for {built_for} chunks, the index has {chunk_count}")
            )
        );
        Ok(Self { file, options })
    }

    /// The graph's tables, for `memidx graph`.
    pub fn view(&self) -> Result<GraphView<'_>> {
        self.file.view()
    }
}

impl List for GraphList {
    fn kind(&self) -> ListKind {
        ListKind::Graph
    }

    fn search(&self, query: &str, window: usize, allow: &AllowSet) -> Result<RankedList> {
        let started = Instant::now();
        let view = self.view()?;
        let ranking = query::rank(&view, query, window, &self.options, |chunk| {
            allow.allows(chunk)
        });
        let mut list = RankedList::empty(self.kind());
        (list.hits, list.reasons) = ranking
            .hits
            .into_iter()
            .map(|hit| {
                let listed = ListHit {
                    chunk: hit.chunk,
                    score: hit.score,
                };
                (listed, hit.reason)
            })
            .unzip();
        list.matched = ranking.matched;
        list.filtered_out = ranking.filtered_out;
        list.elapsed = started.elapsed();
        Ok(list)
    }

    fn no_match_reason(&self) -> &'static str {
        "no query entity, nor a central entity of their communities, is in it"
    }
}
