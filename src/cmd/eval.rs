//! `memidx eval`: quality per mode on a labelled collection, optionally a
//! sweep of the fusion settings whose winner can be stored in the index.

use std::fs;
use std::io::Write;

use anyhow::{Context, Result};

use super::Status;
use crate::config::{EvalConfig, OutputFormat};
use memidx::eval::collection::write_trec;
use memidx::eval::{self, EvalOptions, EvalReport, FusionSetting, RUN_DEPTH};
use memidx::fusion::FusionDefaults;
use memidx::index::manifest::Manifest;
use memidx::lists::ListKind;
use memidx::output::progress::Bars;
use memidx::output::{human, json};
use memidx::retriever::{Retriever, default_window};
use memidx::store::LOCK_FILE;
use memidx::store::lock::IndexLock;

/// Evaluates per `config` and prints the report.
pub fn run(config: &EvalConfig, out: &mut dyn Write) -> Result<Status> {
    let retriever = Retriever::open(&config.index_dir, &config.lists)?;
    let defaults = retriever.manifest().fusion;
    let setting = FusionSetting {
        rrf_k: config.rrf_k.unwrap_or(defaults.rrf_k),
        sparse_weight: config.lists.sparse_weight.unwrap_or(defaults.sparse_weight),
        dense_weight: config.lists.dense_weight.unwrap_or(defaults.dense_weight),
        graph_weight: retriever
            .list_weights()
            .into_iter()
            .find_map(|(kind, weight)| (kind == ListKind::Graph).then_some(weight))
            .unwrap_or(0.0),
        window: config
            .window
            .or(defaults.window)
            .unwrap_or_else(|| default_window(RUN_DEPTH)),
    };
    let options = EvalOptions {
        queries: config.queries.clone(),
        qrels: config.qrels.clone(),
        setting,
        sweep: config.sweep,
    };
    let report = eval::run(&retriever, &options, &Bars::new(config.progress))?;
    if let Some(dir) = &config.run_out {
        write_runs(dir, &report, &config.queries)?;
    }
    // The best setting replaces the defaults only when it beats them on the
    // tuning half: on a tie the defaults stay (the first of equals may be a
    // degenerate setting), saved with the feedback the sweep ran with.
    let best_wins = report
        .sweep
        .as_ref()
        .is_some_and(|s| s.best.tune_ndcg_10 > s.default.tune_ndcg_10);
    if config.save
        && let Some(sweep) = &report.sweep
    {
        let chosen = if best_wins { sweep.best } else { sweep.default };
        save_defaults(config, chosen.setting, report.dense_feedback)?;
    }
    match config.format {
        OutputFormat::Human => human::print_eval(out, &report, config.save.then_some(best_wins))?,
        OutputFormat::Json | OutputFormat::JsonLines => json::print(out, &report)?,
    }
    Ok(Status::Success)
}

/// Writes one TREC run per mode into `dir`, queries in file order.
fn write_runs(dir: &std::path::Path, report: &EvalReport, queries: &std::path::Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let order: Vec<String> = eval::collection::read_queries(queries)?
        .into_iter()
        .map(|q| q.id)
        .collect();
    for mode in &report.modes {
        let path = dir.join(format!("{}.trec", mode.mode));
        let mut file = std::io::BufWriter::new(
            fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
        );
        write_trec(
            &mut file,
            &mode.run,
            &order,
            &format!("memidx-{}", mode.mode),
        )?;
        file.flush()?;
    }
    Ok(())
}

/// Stores `setting` as the index's fusion defaults, with the dense list's
/// feedback the sweep ran with (under the writer lock, replacing the
/// manifest atomically).
fn save_defaults(config: &EvalConfig, setting: FusionSetting, dense_feedback: usize) -> Result<()> {
    let _lock = IndexLock::acquire(&config.index_dir.join(LOCK_FILE))?;
    let mut manifest =
        Manifest::read(&config.index_dir)?.context("the index disappeared during eval")?;
    manifest.fusion = FusionDefaults {
        sparse_weight: setting.sparse_weight,
        dense_weight: setting.dense_weight,
        rrf_k: setting.rrf_k,
        window: Some(setting.window),
        dense_feedback,
    };
    if let Some(graph) = &mut manifest.graph {
        graph.weight = setting.graph_weight;
    }
    manifest.write(&config.index_dir)
}
