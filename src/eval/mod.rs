//! `memidx eval`: retrieval quality on a labelled collection, per mode, and
//! a sweep of the fusion settings with a held-out check.
//!
//! Every query runs each list once, with the largest window any setting
//! needs; the modes (sparse alone, dense alone, hybrid, and with a graph,
//! graph alone and hybrid+graph) and every sweep setting are then fused from
//! those same rankings, so a sweep costs one retrieval pass. A list that
//! refines its ranking with feedback (the dense list) also runs alone, as
//! `--mode dense` would, for its own mode; in the fused modes its feedback
//! is seeded by the default setting's first pass, also for the sweep's
//! other settings. Chunk hits become document hits by their best chunk
//! (a document id is its file name without `.md`), and
//! the measures follow `score.py` (trec_eval 9) exactly.

mod check;
pub mod collection;
pub mod metrics;

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde::Serialize;

use crate::fusion::{self, Fusion, FusionMethod, Ranking};
use crate::lists::{AllowSet, ListKind, RankedList};
use crate::progress::Progress;
use crate::retriever::{FirstPass, Retriever};
use collection::{EvalQuery, Qrels, Run, best_chunk_per_doc, doc_id, is_held_out};
use metrics::{Metrics, evaluate, evaluate_subset};

/// Documents kept per query in a run (Recall@100 needs 100).
pub const RUN_DEPTH: usize = 100;

/// What to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// Queries, JSON Lines `{"id", "text"}`.
    pub queries: PathBuf,
    /// Judgments, `query-id doc-id relevance`.
    pub qrels: PathBuf,
    /// Fusion settings of the default run.
    pub setting: FusionSetting,
    /// Also sweep k, the dense weight, the window and the graph weight.
    pub sweep: bool,
    /// Drop a hit whose document id equals the query id (BEIR's rule for a
    /// collection whose queries are also documents; `score.py
    /// --ignore-identical` does the same).
    pub ignore_identical: bool,
    /// Refuse judgments it cannot use (see [`check`]) instead of warning.
    pub strict: bool,
}

/// One fusion setting: the method, k, the lists' weights and the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FusionSetting {
    /// The fusion method.
    pub method: FusionMethod,
    /// The RRF constant (unused by relative scores).
    pub rrf_k: f64,
    /// Weight of the sparse list.
    pub sparse_weight: f64,
    /// Weight of the dense list.
    pub dense_weight: f64,
    /// Weight of the file list (where it runs: the index's own fusion).
    pub file_weight: f64,
    /// Weight of the graph list (where it runs).
    pub graph_weight: f64,
    /// Weight of the recency list (where it runs).
    pub recency_weight: f64,
    /// Candidates per list.
    pub window: usize,
    /// Whether exact terms come first ([`Fusion::own`]): for the
    /// index's own fusion and every setting the sweep tries (a candidate
    /// for it), not for one the run's flags spell out.
    #[serde(skip)]
    pub own: bool,
}

impl FusionSetting {
    /// The method and constant of this setting.
    pub fn fusion(&self) -> Fusion {
        Fusion {
            method: self.method,
            rrf_k: self.rrf_k,
            own: self.own,
        }
    }

    /// The weight this setting gives the list `kind`.
    pub fn weight(&self, kind: ListKind) -> f64 {
        match kind {
            ListKind::Sparse => self.sparse_weight,
            ListKind::Dense => self.dense_weight,
            ListKind::Files => self.file_weight,
            ListKind::Graph => self.graph_weight,
            ListKind::Recency => self.recency_weight,
        }
    }
}

/// The measures of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeResult {
    /// `sparse`, `dense`, `hybrid`, `graph`, `hybrid+graph` or
    /// `hybrid+recency`.
    pub mode: &'static str,
    /// Mean measures.
    pub metrics: Metrics,
    /// The run, for `--run-out`.
    #[serde(skip)]
    pub run: Run,
}

/// A setting's nDCG@10 on the two halves of the queries.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SweepScore {
    /// The setting.
    pub setting: FusionSetting,
    /// Mean nDCG@10 on the tuning half.
    pub tune_ndcg_10: f64,
    /// Mean nDCG@10 on the held-out half.
    pub held_out_ndcg_10: f64,
}

/// The sweep's outcome: the defaults and the best setting on the tuning
/// half, both also scored on the held-out half.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// Settings tried.
    pub settings_tried: usize,
    /// The default setting's scores.
    pub default: SweepScore,
    /// The best setting on the tuning half, and its held-out score.
    pub best: SweepScore,
    /// The five best settings on the tuning half.
    pub top: Vec<SweepScore>,
}

/// Everything `memidx eval` measured.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Queries run.
    pub queries: usize,
    /// Queries with at least one relevant document (the denominator).
    pub judged_queries: usize,
    /// Whether hits on the query's own document were dropped.
    pub ignore_identical: bool,
    /// The default setting.
    pub setting: FusionSetting,
    /// How many of its best chunks moved the dense list's query (0: none).
    pub dense_feedback: usize,
    /// Sparse, dense and hybrid measures; with a graph, graph and
    /// hybrid+graph too.
    pub modes: Vec<ModeResult>,
    /// The sweep, when asked for.
    pub sweep: Option<SweepReport>,
    /// Judgments that could not be used, one line per kind, with counts
    /// and examples: judged queries missing from the queries file,
    /// relevant documents missing from the index.
    pub warnings: Vec<String>,
    /// Wall-clock time of the evaluation.
    #[serde(serialize_with = "seconds")]
    pub elapsed: Duration,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The RRF constants the sweep tries (then relative scores, which have none).
const SWEEP_K: [f64; 5] = [1.0, 10.0, 30.0, 60.0, 100.0];
/// The dense weights the sweep tries (the sparse weight stays 1: only the
/// ratio of the two matters to the ranking).
const SWEEP_DENSE_WEIGHTS: [f64; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0];
/// The windows the sweep tries.
const SWEEP_WINDOWS: [usize; 3] = [50, 100, 200];
/// The graph weights the sweep tries, at the best sparse + dense setting
/// (a second stage, so the grid grows by 7 settings rather than 7 times).
const SWEEP_GRAPH_WEIGHTS: [f64; 7] = [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0];

/// Runs the evaluation.
pub fn run(
    retriever: &Retriever,
    options: &EvalOptions,
    progress: &dyn Progress,
) -> Result<EvalReport> {
    let started = Instant::now();
    let queries = collection::read_queries(&options.queries)?;
    let qrels = collection::read_qrels(&options.qrels)?;
    let depth = if options.sweep {
        options
            .setting
            .window
            .max(SWEEP_WINDOWS[SWEEP_WINDOWS.len() - 1])
    } else {
        options.setting.window
    };
    let first_pass = FirstPass {
        window: options.setting.window,
        fusion: options.setting.fusion(),
    };
    let docs = chunk_doc_ids(retriever)?;
    let warnings = check::unusable_judgments(&qrels, &queries, &docs);
    if options.strict && !warnings.is_empty() {
        bail!(
            "{} holds judgments eval cannot use (--strict):\n  {}",
            options.qrels.display(),
            warnings.join("\n  ")
        );
    }
    let rankings = rank_all(retriever, &queries, depth, first_pass, progress)?;
    let kinds: Vec<ListKind> = retriever.list_weights().iter().map(|(k, _)| *k).collect();
    let fuse_run = |setting: &FusionSetting, lists: &[ListKind]| {
        let target = RunTarget {
            queries: &queries,
            docs: &docs,
            ignore_identical: options.ignore_identical,
        };
        fuse_run(&target, &rankings, &kinds, lists, setting)
    };
    use ListKind::{Dense, Files, Graph, Recency, Sparse};
    let has_graph = kinds.contains(&Graph);
    // Hybrid is the sparse and dense lists, with the file list's evidence
    // where it runs (the index's own fusion).
    let hybrid: &[ListKind] = match kinds.contains(&Files) {
        true => &[Sparse, Dense, Files],
        false => &[Sparse, Dense],
    };
    let with = |more: ListKind| -> Vec<ListKind> { hybrid.iter().copied().chain([more]).collect() };
    let with_recency = with(Recency);
    let recency_modes = [("hybrid+recency", &with_recency[..])];
    let with_graph = with(Graph);
    let all_lists = if has_graph { &with_graph[..] } else { hybrid };
    let graph_modes = [("graph", &[Graph][..]), ("hybrid+graph", all_lists)];
    let modes = [
        ("sparse", &[Sparse][..]),
        ("dense", &[Dense]),
        ("hybrid", hybrid),
    ]
    .into_iter()
    .chain(graph_modes.into_iter().filter(|_| has_graph))
    .chain(
        recency_modes
            .into_iter()
            .filter(|_| kinds.contains(&Recency)),
    )
    .map(|(mode, lists)| {
        let run = fuse_run(&options.setting, lists);
        ModeResult {
            mode,
            metrics: evaluate(&qrels, &run).mean,
            run,
        }
    })
    .collect();
    let sweep = options.sweep.then(|| {
        sweep(&qrels, options.setting, has_graph, |setting| {
            let lists = if setting.graph_weight > 0.0 {
                all_lists
            } else {
                hybrid
            };
            fuse_run(setting, lists)
        })
    });
    let judged = evaluate(&qrels, &Run::new());
    Ok(EvalReport {
        queries: queries.len(),
        judged_queries: judged.queries,
        ignore_identical: options.ignore_identical,
        setting: options.setting,
        dense_feedback: retriever.dense_feedback().unwrap_or(0),
        modes,
        sweep,
        warnings,
        elapsed: started.elapsed(),
    })
}

/// One query's rankings: every list's in the fused search, and, for a list
/// that refines its ranking with feedback, its ranking when run alone.
struct QueryRankings {
    lists: Vec<RankedList>,
    alone: Vec<Option<RankedList>>,
}

impl QueryRankings {
    /// The ranking list `index` contributes when fused with `others` lists
    /// besides itself (0: the list's own mode).
    fn of(&self, index: usize, others: usize) -> &RankedList {
        match (&self.alone[index], others) {
            (Some(alone), 0) => alone,
            _ => &self.lists[index],
        }
    }
}

/// Runs every list for every query (in parallel over queries).
fn rank_all(
    retriever: &Retriever,
    queries: &[EvalQuery],
    depth: usize,
    first_pass: FirstPass,
    progress: &dyn Progress,
) -> Result<Vec<QueryRankings>> {
    progress.stage("querying", queries.len(), "queries");
    let refining = retriever.refining();
    let rankings = queries
        .par_iter()
        .map(|q| {
            let lists = retriever.run_lists(&q.text, depth, first_pass, &AllowSet::All)?;
            let alone = refining
                .iter()
                .enumerate()
                .map(|(index, refines)| {
                    refines
                        .then(|| {
                            retriever.run_alone(index, &q.text, depth, first_pass, &AllowSet::All)
                        })
                        .transpose()
                })
                .collect::<Result<_>>()?;
            progress.advance(1);
            Ok(QueryRankings { lists, alone })
        })
        .collect();
    progress.finish();
    rankings
}

/// The document id of every chunk, by ordinal (over every searched index,
/// in order).
fn chunk_doc_ids(retriever: &Retriever) -> Result<Vec<String>> {
    let mut ids = Vec::with_capacity(retriever.indexes().len());
    for member in retriever.indexes().members() {
        let parts = member.index().parts();
        let files: Vec<String> = (0..parts.file_count() as u32)
            .map(|file| Ok(doc_id(parts.file_path(file)?)))
            .collect::<Result<_>>()?;
        ids.extend((parts.chunk_files()?.into_iter()).map(|f| files[f as usize].clone()));
    }
    Ok(ids)
}

/// What a document run is built for: the queries, each chunk's document,
/// and whether a query's own document is dropped.
struct RunTarget<'a> {
    queries: &'a [EvalQuery],
    docs: &'a [String],
    ignore_identical: bool,
}

/// Fuses the chosen lists of every query under `setting` into a document run.
fn fuse_run(
    target: &RunTarget<'_>,
    rankings: &[QueryRankings],
    kinds: &[ListKind],
    lists: &[ListKind],
    setting: &FusionSetting,
) -> Run {
    let docs = target.docs;
    target
        .queries
        .iter()
        .zip(rankings)
        .map(|(query, ranked)| {
            let chosen: Vec<usize> = (0..kinds.len())
                .filter(|&i| lists.contains(&kinds[i]))
                .collect();
            let inputs: Vec<Ranking<'_>> = chosen
                .iter()
                .map(|&i| {
                    let list = ranked.of(i, chosen.len() - 1);
                    Ranking {
                        hits: &list.hits[..list.hits.len().min(setting.window)],
                        weight: setting.weight(kinds[i]),
                        exact: list.exact,
                        tied: list.kind == ListKind::Files,
                    }
                })
                .collect();
            let fused = fusion::fuse(&inputs, setting.fusion());
            let hits = fused
                .iter()
                .map(|f| (docs[f.chunk as usize].as_str(), f.score));
            let mut per_doc = best_chunk_per_doc(hits);
            if target.ignore_identical {
                per_doc.retain(|(doc, _)| *doc != query.id);
            }
            per_doc.truncate(RUN_DEPTH);
            (query.id.clone(), per_doc)
        })
        .collect()
}

/// Tries the grid on the tuning half (k, dense weight and window without
/// the graph; then, when there is a graph, its weights at the best of
/// those), reports the best and its held-out score.
fn sweep(
    qrels: &Qrels,
    default: FusionSetting,
    has_graph: bool,
    run_for: impl Fn(&FusionSetting) -> Run + Sync,
) -> SweepReport {
    let score = |setting: FusionSetting| {
        let run = run_for(&setting);
        let half = |held: bool| {
            evaluate_subset(qrels, &run, |q| is_held_out(q) == held)
                .mean
                .ndcg_10
        };
        SweepScore {
            setting,
            tune_ndcg_10: half(false),
            held_out_ndcg_10: half(true),
        }
    };
    // The file list's share of the words' weight, as the defaults give it.
    let words = default.sparse_weight + default.file_weight;
    let file_share = match words > 0.0 {
        true => default.file_weight / words,
        false => 0.0,
    };
    // RRF at every k, then relative scores, fixed and adaptive (no k).
    let methods = SWEEP_K
        .iter()
        .map(|&rrf_k| (FusionMethod::Rrf, rrf_k))
        .chain([
            (FusionMethod::Relative, default.rrf_k),
            (FusionMethod::Adaptive, default.rrf_k),
        ]);
    let grid: Vec<FusionSetting> = methods
        .flat_map(|(method, rrf_k)| {
            SWEEP_DENSE_WEIGHTS.iter().flat_map(move |&dense_weight| {
                SWEEP_WINDOWS.iter().map(move |&window| FusionSetting {
                    method,
                    rrf_k,
                    // The words' weight, 1, shared with the file list as
                    // the defaults share it.
                    sparse_weight: 1.0 - file_share,
                    dense_weight,
                    file_weight: file_share,
                    graph_weight: 0.0,
                    recency_weight: 0.0,
                    window,
                    // A candidate for the index's own fusion, as saved.
                    own: true,
                })
            })
        })
        .collect();
    // Best on the tuning half; ties to the earlier (RRF, smaller k, weight, window) setting.
    let best_first = |scores: &mut Vec<SweepScore>| {
        scores.sort_by(|a, b| b.tune_ndcg_10.total_cmp(&a.tune_ndcg_10));
    };
    let mut scores: Vec<SweepScore> = grid.par_iter().map(|s| score(*s)).collect();
    best_first(&mut scores);
    let mut settings_tried = grid.len();
    if has_graph {
        let base = scores[0].setting;
        let graph_grid: Vec<FusionSetting> = SWEEP_GRAPH_WEIGHTS[1..]
            .iter()
            .map(|&graph_weight| FusionSetting {
                graph_weight,
                ..base
            })
            .collect();
        settings_tried += graph_grid.len();
        scores.par_extend(graph_grid.par_iter().map(|s| score(*s)));
        best_first(&mut scores);
    }
    SweepReport {
        settings_tried,
        default: score(default),
        best: scores[0],
        top: scores.into_iter().take(5).collect(),
    }
}
/// Writes one TREC run per mode into `dir`, queries in file order.
pub fn write_runs(dir: &Path, report: &EvalReport, queries: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let order: Vec<String> = collection::read_queries(queries)?
        .into_iter()
        .map(|q| q.id)
        .collect();
    for mode in &report.modes {
        let path = dir.join(format!("{}.trec", mode.mode));
        let mut file = BufWriter::new(
            fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
        );
        collection::write_trec(
            &mut file,
            &mode.run,
            &order,
            &format!("memidx-{}", mode.mode),
        )?;
        file.flush()?;
    }
    Ok(())
}
