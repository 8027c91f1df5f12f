//! `memidx eval`: quality per mode on a labelled collection, optionally a
//! sweep of the fusion settings whose winner can be stored in the index.

use std::io::Write;

use anyhow::Result;

use super::Status;
use crate::config::{EvalConfig, OutputFormat};
use memidx::eval::{self, EvalOptions, FusionSetting, RUN_DEPTH};
use memidx::fusion::FusionDefaults;
use memidx::index;
use memidx::lists::ListKind;
use memidx::output::progress::Bars;
use memidx::output::{human, json};
use memidx::retriever::{Retriever, default_window};

/// Evaluates per `config` and prints the report.
pub fn run(config: &EvalConfig, out: &mut dyn Write, err: &mut dyn Write) -> Result<Status> {
    let retriever = Retriever::open(&config.index_dir, &config.lists)?;
    let defaults = retriever.manifest().fusion;
    let fusion = defaults.resolve(config.fusion, config.rrf_k, config.lists.weights_given());
    let weight_of = |list: ListKind| {
        retriever
            .list_weights()
            .into_iter()
            .find_map(|(kind, weight)| (kind == list).then_some(weight))
            .unwrap_or(0.0)
    };
    let setting = FusionSetting {
        method: fusion.method,
        rrf_k: fusion.rrf_k,
        sparse_weight: weight_of(ListKind::Sparse),
        dense_weight: config.lists.dense_weight.unwrap_or(defaults.dense_weight),
        file_weight: weight_of(ListKind::Files),
        graph_weight: weight_of(ListKind::Graph),
        recency_weight: weight_of(ListKind::Recency),
        window: config
            .window
            .or(defaults.window)
            .unwrap_or_else(|| default_window(RUN_DEPTH)),
        own: fusion.own,
    };
    let options = EvalOptions {
        queries: config.queries.clone(),
        qrels: config.qrels.clone(),
        setting,
        sweep: config.sweep,
        ignore_identical: config.ignore_identical,
        strict: config.strict,
    };
    let report = eval::run(&retriever, &options, &Bars::new(config.progress))?;
    for warning in &report.warnings {
        writeln!(
            err,
            "memidx: warning: {}: {warning}",
            config.qrels.display()
        )?;
    }
    if let Some(dir) = &config.run_out {
        eval::write_runs(dir, &report, &config.queries)?;
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
        let fusion = FusionDefaults {
            method: chosen.setting.method,
            sparse_weight: chosen.setting.sparse_weight,
            dense_weight: chosen.setting.dense_weight,
            file_weight: chosen.setting.file_weight,
            rrf_k: chosen.setting.rrf_k,
            window: Some(chosen.setting.window),
            dense_feedback: report.dense_feedback,
        };
        index::save_fusion_defaults(&config.index_dir, fusion, chosen.setting.graph_weight)?;
    }
    match config.format {
        OutputFormat::Human => human::print_eval(out, &report, config.save.then_some(best_wins))?,
        OutputFormat::Json | OutputFormat::JsonLines => json::print(out, &report)?,
    }
    Ok(Status::Success)
}
