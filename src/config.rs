//! Validated, resolved settings, built once from the command line, the
//! environment and (for `search --request`) a JSON request.
//!
//! Commands receive these typed values and never look at raw arguments:
//! every default, bound and precedence rule lives here.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail, ensure};

use crate::cli::{
    EvalArgs, ExplainArgs, IndexArgs, IndexLocation, IndexesLocation, Mode, RetrievalArgs,
    SearchArgs,
};
use memidx::corpus::walk::WalkOptions;
use memidx::embed::ModelSource;
use memidx::embed::endpoint::Endpoint;
use memidx::filter::{Filter, TimeFilter};
use memidx::fusion::{FusionMethod, check_rrf_k, check_weight, check_window};
use memidx::index::manifest::Manifest;
use memidx::indexer::IndexOptions;
use memidx::lists::dense::check_dense_feedback;
use memidx::lists::dense::codes::DenseIndexSetting;
use memidx::output::TextBudget;
use memidx::request::{MAX_REQUEST_BYTES, SearchRequest};
use memidx::retriever::{DEFAULT_PER_FILE, GraphUse, ListSelection, SearchParams, check_query};
use memidx::store::{INDEX_DIR_NAME, MANIFEST_FILE, bounded};

/// Default number of results.
pub const DEFAULT_TOP_K: usize = 10;
/// Largest accepted `top_k`.
pub const MAX_TOP_K: usize = 10_000;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Aligned text for people.
    Human,
    /// One JSON document (the response shape).
    Json,
    /// One JSON result per line.
    JsonLines,
}

/// Everything `memidx search` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// The indexes to search.
    pub indexes: Indexes,
    /// The caller's query id, echoed in JSON output.
    pub query_id: Option<String>,
    /// The query text.
    pub query: String,
    /// Which lists run, and weight overrides.
    pub lists: ListSelection,
    /// Window, top-k, k and filters.
    pub params: SearchParams,
    /// Output format.
    pub format: OutputFormat,
    /// How much of the results' text to print.
    pub budget: TextBudget,
    /// The Milvus collection to run the lists on (`--backend`), if any.
    pub backend: Option<String>,
}

impl SearchConfig {
    /// Resolves `memidx search` arguments; `stdin` is read for `--request -`.
    pub fn from_args(args: &SearchArgs, cwd: &Path, stdin: impl Read) -> Result<Self> {
        let request = match &args.request {
            Some(path) => Some(read_request(path, stdin)?),
            None => None,
        };
        let query = (!args.query.is_empty()).then(|| args.query.join(" "));
        let mut config = Self::build(
            request,
            query.as_ref(),
            args.top_k,
            args.json,
            &args.retrieval,
            cwd,
        )?;
        if args.jsonl {
            config.format = OutputFormat::JsonLines;
        }
        if let Some(max) = args.max_chars {
            config.budget.max_chars = Some(usize::try_from(max).unwrap_or(usize::MAX));
        }
        config.budget.no_text = args.no_text;
        config.params.keep_all |= args.keep_all;
        if args.no_text {
            config.budget.max_chars = None;
        }
        Ok(config)
    }

    /// Merges a request (if any) with command-line values, which win.
    fn build(
        request: Option<SearchRequest>,
        query: Option<&String>,
        top_k: Option<usize>,
        json: bool,
        retrieval: &RetrievalArgs,
        cwd: &Path,
    ) -> Result<Self> {
        let hybrid = request.as_ref().and_then(|r| r.hybrid_params);
        let max_chars = request.as_ref().and_then(|r| r.max_chars);
        let query = match (&request, query) {
            (Some(r), _) => r.search_text.clone(),
            (None, Some(q)) => q.clone(),
            (None, None) => bail!("give a query, or a JSON request with --request FILE"),
        };
        check_query(&query)?;
        // The error names where the number came from.
        let (top_k, top_k_name) = match (top_k, request.as_ref().and_then(|r| r.top_k)) {
            (Some(k), _) => (k, "-k/--top-k"),
            (None, Some(k)) => (k, "the request's top_k"),
            (None, None) => (DEFAULT_TOP_K, "top_k"),
        };
        let mut filter_pairs = request
            .as_ref()
            .map(|r| r.filter_pairs())
            .unwrap_or_default();
        filter_pairs.extend(parse_filters(&retrieval.filters)?);
        let fusion = &retrieval.fusion;
        let sparse_weight = fusion
            .sparse_weight
            .or(hybrid.and_then(|h| h.sparse_weight));
        let dense_weight = fusion.dense_weight.or(hybrid.and_then(|h| h.dense_weight));
        let graph_weight = fusion.graph_weight.or(hybrid.and_then(|h| h.graph_weight));
        let rrf_k = fusion.rrf_k.or(hybrid.and_then(|h| h.rrf_k_constant));
        let method = fusion
            .fusion
            .map(FusionMethod::from)
            .or(hybrid.and_then(|h| h.fusion));
        let dense_feedback = fusion
            .dense_feedback
            .or(hybrid.and_then(|h| h.dense_feedback));
        let recency_weight = fusion
            .recency_weight
            .or(hybrid.and_then(|h| h.recency_weight));
        let time_request = request.as_ref().and_then(|r| r.time_filter.clone());
        let bound = |flag: &Option<String>, flag_name, asked: Option<String>, asked_name| match (
            flag, asked,
        ) {
            (Some(given), _) => Some((flag_name, given.clone())),
            (None, Some(given)) => Some((asked_name, given)),
            (None, None) => None,
        };
        let since = bound(
            &retrieval.since,
            "--since",
            time_request.as_ref().and_then(|t| t.since.clone()),
            "time_filter.since",
        );
        let until = bound(
            &retrieval.until,
            "--until",
            time_request.and_then(|t| t.until),
            "time_filter.until",
        );
        let time = TimeFilter::parse(
            since.as_ref().map(|(n, s)| (*n, s.as_str())),
            until.as_ref().map(|(n, s)| (*n, s.as_str())),
            jiff::Timestamp::now(),
        )?;
        let params = SearchParams {
            top_k: check_top_k(top_k, top_k_name)?,
            window: fusion.window.map(check_window).transpose()?,
            rrf_k: rrf_k.map(check_rrf_k).transpose()?,
            fusion: method,
            filter: Filter::from_pairs(filter_pairs).within_time(time),
            per_file: retrieval
                .per_file
                .or(request.as_ref().and_then(|r| r.per_file))
                .unwrap_or(DEFAULT_PER_FILE),
            keep_all: request.as_ref().and_then(|r| r.keep_all).unwrap_or(false),
            here: retrieval.here.then(|| cwd.to_path_buf()),
        };
        let format = if json || request.is_some() {
            OutputFormat::Json
        } else {
            OutputFormat::Human
        };
        Ok(Self {
            indexes: resolve_indexes(&retrieval.location, cwd)?,
            query_id: request.and_then(|r| r.query_id),
            query,
            lists: with_weights(
                ListSelection {
                    dense_feedback: dense_feedback.map(check_dense_feedback).transpose()?,
                    dense_exact: fusion.exact,
                    dense_rescore: fusion.dense_rescore.map(|n| n as usize),
                    dense_probe: fusion.dense_probe,
                    fusion_given: params.fusion.is_some() || params.rrf_k.is_some(),
                    ..selected_lists(&retrieval.mode, retrieval.recent, recency_weight)
                },
                [sparse_weight, dense_weight, graph_weight, recency_weight],
            )?,
            params,
            format,
            budget: TextBudget {
                max_chars: max_chars.map(check_max_chars).transpose()?,
                no_text: false,
            },
            backend: retrieval.backend.clone(),
        })
    }
}

/// Everything `memidx explain` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainConfig {
    /// The search being explained.
    pub search: SearchConfig,
    /// Explain only this chunk id (`path#n`), even if it is not a result.
    pub chunk: Option<String>,
}

impl ExplainConfig {
    /// Resolves `memidx explain` arguments.
    pub fn from_args(args: &ExplainArgs, cwd: &Path) -> Result<Self> {
        let search = SearchConfig::build(
            None,
            Some(&args.query.join(" ")),
            args.top_k,
            args.json,
            &args.retrieval,
            cwd,
        )?;
        Ok(Self {
            search,
            chunk: args.chunk.clone(),
        })
    }
}

/// Everything `memidx eval` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalConfig {
    /// The `.memidx` folder to evaluate.
    pub index_dir: PathBuf,
    /// Queries file.
    pub queries: PathBuf,
    /// Judgments file.
    pub qrels: PathBuf,
    /// Weight overrides (every list the index has runs).
    pub lists: ListSelection,
    /// Fusion method override.
    pub fusion: Option<FusionMethod>,
    /// RRF constant override.
    pub rrf_k: Option<f64>,
    /// Window override.
    pub window: Option<usize>,
    /// Sweep the fusion settings.
    pub sweep: bool,
    /// Store the sweep's winner in the index.
    pub save: bool,
    /// Drop hits on the query's own document.
    pub ignore_identical: bool,
    /// Refuse judgments eval cannot use (`--strict`).
    pub strict: bool,
    /// Where to write TREC runs.
    pub run_out: Option<PathBuf>,
    /// Output format.
    pub format: OutputFormat,
    /// Show a progress bar.
    pub progress: bool,
}

impl EvalConfig {
    /// Resolves `memidx eval` arguments.
    pub fn from_args(args: &EvalArgs, cwd: &Path) -> Result<Self> {
        let fusion = &args.fusion;
        Ok(Self {
            index_dir: resolve_index_dir(&args.location, cwd)?,
            queries: cwd.join(&args.queries),
            qrels: cwd.join(&args.qrels),
            lists: with_weights(
                ListSelection {
                    sparse: true,
                    dense: true,
                    graph: GraphUse::Available,
                    dense_feedback: fusion
                        .dense_feedback
                        .map(check_dense_feedback)
                        .transpose()?,
                    dense_exact: fusion.exact,
                    dense_rescore: fusion.dense_rescore.map(|n| n as usize),
                    dense_probe: fusion.dense_probe,
                    recency: fusion.recency_weight.is_some_and(|w| w > 0.0),
                    fusion_given: fusion.fusion.is_some() || fusion.rrf_k.is_some(),
                    ..ListSelection::default()
                },
                [
                    fusion.sparse_weight,
                    fusion.dense_weight,
                    fusion.graph_weight,
                    fusion.recency_weight,
                ],
            )?,
            fusion: fusion.fusion.map(FusionMethod::from),
            rrf_k: fusion.rrf_k.map(check_rrf_k).transpose()?,
            window: fusion.window.map(check_window).transpose()?,
            sweep: args.sweep,
            save: args.save,
            ignore_identical: args.ignore_identical,
            strict: args.strict,
            run_out: args.run_out.as_ref().map(|d| cwd.join(d)),
            format: if args.json {
                OutputFormat::Json
            } else {
                OutputFormat::Human
            },
            progress: !args.quiet,
        })
    }
}

/// The lists `--mode` names: `hybrid` stands for the default lists (the
/// graph only when the index has one); a list named on its own must exist.
/// The recency list runs when named, with `--recent`, or at a positive
/// `--recency-weight`.
pub fn selected_lists(modes: &[Mode], recent: bool, recency_weight: Option<f64>) -> ListSelection {
    let has = |mode| modes.contains(&mode);
    ListSelection {
        recency: has(Mode::Recency) || recent || recency_weight.is_some_and(|w| w > 0.0),
        sparse: has(Mode::Hybrid) || has(Mode::Sparse),
        dense: has(Mode::Hybrid) || has(Mode::Dense),
        graph: if has(Mode::Graph) {
            GraphUse::Required
        } else if has(Mode::Hybrid) {
            GraphUse::Default
        } else {
            GraphUse::Off
        },
        ..ListSelection::default()
    }
}

/// Checks a text budget: at least one character.
pub fn check_max_chars(max_chars: usize) -> Result<usize> {
    ensure!(
        max_chars >= 1,
        "max_chars must be at least 1 (characters of result text), not {max_chars}"
    );
    Ok(max_chars)
}

/// Resolves `memidx index` arguments.
pub fn index_options(args: &IndexArgs) -> IndexOptions {
    let mut options = IndexOptions::new(args.dir.clone());
    if let Some(index) = &args.index {
        options.index_dir = index.clone();
    }
    // What the last run of this index walked, chunked and embedded with,
    // kept unless this run's flags say otherwise (as --graph is), so a
    // plain re-index neither drops the globs nor re-chunks or re-embeds
    // everything. An unreadable index keeps nothing (the run reports it
    // and rebuilds).
    let previous = Manifest::read(&options.index_dir).ok().flatten();
    options.model = match (&args.model, &args.embed_url, &previous) {
        (Some(model), _, _) => ModelSource::Folder(model.clone()),
        (None, Some(url), _) => ModelSource::Endpoint(Endpoint {
            url: url.clone(),
            model: args.embed_model.clone().unwrap_or_default(),
            key_file: args.embed_key_file.clone(),
        }),
        (None, None, Some(manifest)) if !args.bundled_model => manifest.model_source(),
        _ => ModelSource::Bundled,
    };
    let walk_flags = args.no_ignore || !args.include.is_empty() || !args.exclude.is_empty();
    options.walk = match &previous {
        Some(manifest) if !walk_flags => manifest.walk.clone(),
        _ => WalkOptions {
            no_ignore: args.no_ignore,
            include: args.include.clone(),
            exclude: args.exclude.clone(),
        },
    };
    options.full = args.full;
    options.compact = args.compact;
    options.graph = match (args.graph, args.no_graph) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    options.dense_index = args.dense_index.map(DenseIndexSetting::from);
    options.max_file_size = args.max_file_size;
    match (args.chunk_tokens, &previous) {
        (Some(tokens), _) => options.chunker.budget_tokens = tokens as usize,
        (None, Some(manifest)) => options.chunker = manifest.chunker,
        (None, None) => {}
    }
    options
}

/// The variable that gives `--index` when the flag is absent.
const INDEX_ENV: &str = "MEMIDX_INDEX";

/// Finds the index: `--index`/`MEMIDX_INDEX` when given (a `.memidx` folder
/// or the folder holding one), else the nearest `.memidx` in `cwd` or its
/// parents, as git finds `.git`.
pub fn resolve_index_dir(args: &IndexLocation, cwd: &Path) -> Result<PathBuf> {
    match &args.index {
        Some(index) => {
            // clap fills --index from the environment too: say so, since a
            // variable set long ago is easy to forget.
            let from_env = std::env::var_os(INDEX_ENV).is_some_and(|v| Path::new(&v) == index);
            let listed = std::env::split_paths(index).count();
            ensure!(
                !from_env || listed < 2 || cwd.join(index).exists(),
                "{INDEX_ENV} lists {listed} indexes, and this command reads one; give it --index PATH"
            );
            index_dir_at(index, cwd, from_env)
        }
        None => nearest_index_dir(cwd),
    }
}

/// The indexes a search reads ([`resolve_indexes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexes {
    /// Each index's name, when given, and `.memidx` folder, in order, each
    /// folder once.
    pub named: Vec<(Option<String>, PathBuf)>,
    /// Under `--skip-missing`, why each index that does not exist was
    /// skipped.
    pub skipped: Vec<String>,
}

/// Finds the indexes a search reads: each `--index [NAME=]PATH`, else
/// those `MEMIDX_INDEX` lists (separated the platform's way, like `PATH`),
/// else the nearest `.memidx` in `cwd` or its parents. The same folder
/// given twice is read once, under its first name. An index that does not
/// exist is an error naming it, or under `--skip-missing` (with several)
/// is skipped and named in [`Indexes::skipped`].
pub fn resolve_indexes(args: &IndexesLocation, cwd: &Path) -> Result<Indexes> {
    let (given, from_env): (Vec<PathBuf>, bool) =
        match (&args.index[..], std::env::var_os(INDEX_ENV)) {
            ([], Some(var)) if !var.is_empty() => (std::env::split_paths(&var).collect(), true),
            ([], _) => {
                return Ok(Indexes {
                    named: vec![(None, nearest_index_dir(cwd)?)],
                    skipped: Vec::new(),
                });
            }
            (given, _) => (given.to_vec(), false),
        };
    let mut indexes = Indexes {
        named: Vec::new(),
        skipped: Vec::new(),
    };
    let mut seen = Vec::new();
    for entry in &given {
        let (name, path) = split_name(entry, cwd);
        let dir = match index_dir_at(&path, cwd, from_env) {
            Ok(dir) => dir,
            Err(err) if args.skip_missing && given.len() > 1 => {
                indexes
                    .skipped
                    .push(format!("skipped {}: {err}", entry.display()));
                continue;
            }
            Err(err) => return Err(err),
        };
        let canonical = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !seen.contains(&canonical) {
            seen.push(canonical);
            indexes.named.push((name, dir));
        }
    }
    ensure!(
        !indexes.named.is_empty(),
        "no index to search: {}",
        indexes.skipped.join("; ")
    );
    Ok(indexes)
}

/// An `--index` value as its name, when it gives one (`NAME=PATH`, where
/// NAME holds no path separator and the whole is no existing path), and
/// its path.
fn split_name(entry: &Path, cwd: &Path) -> (Option<String>, PathBuf) {
    let text = entry.to_string_lossy();
    match text.split_once('=') {
        Some((name, path))
            if !name.is_empty() && !name.contains(['/', '\\']) && !cwd.join(entry).exists() =>
        {
            (Some(name.to_string()), PathBuf::from(path))
        }
        _ => (None, entry.to_path_buf()),
    }
}

/// The `.memidx` folder `index` names (the folder itself, or the folder
/// holding one), or an error saying there is none (and that the path came
/// from `MEMIDX_INDEX`, when it did).
fn index_dir_at(index: &Path, cwd: &Path, from_env: bool) -> Result<PathBuf> {
    let path = cwd.join(index);
    let nested = path.join(INDEX_DIR_NAME);
    if path.join(MANIFEST_FILE).is_file() || path.file_name().is_some_and(|n| n == INDEX_DIR_NAME) {
        return Ok(path);
    }
    if nested.is_dir() {
        return Ok(nested);
    }
    bail!(
        "no index at {}{}; run 'memidx index DIR' first",
        path.display(),
        if from_env {
            format!(" (from {INDEX_ENV}; unset it to search the nearest .memidx)")
        } else {
            String::new()
        }
    );
}

/// The nearest `.memidx` in `cwd` or its parents.
fn nearest_index_dir(cwd: &Path) -> Result<PathBuf> {
    cwd.ancestors()
        .map(|dir| dir.join(INDEX_DIR_NAME))
        .find(|candidate| candidate.is_dir())
        .with_context(|| {
            format!(
                "no index found in {} or its parents; run 'memidx index DIR' first",
                cwd.display()
            )
        })
}

/// Reads and parses the request at `path` (`-`: `stdin`), a regular file
/// of at most [`MAX_REQUEST_BYTES`].
fn read_request(path: &Path, stdin: impl Read) -> Result<SearchRequest> {
    let bytes = if path == Path::new("-") {
        bounded::read_limited(stdin, MAX_REQUEST_BYTES)
            .map_err(|err| anyhow!("the request on stdin {err}"))?
    } else {
        bounded::read_regular(path, MAX_REQUEST_BYTES)
            .map_err(|err| anyhow!("request file {} {err}", path.display()))?
    };
    let json = String::from_utf8(bytes).context("the request is not UTF-8")?;
    SearchRequest::parse(&json)
}

/// The token in the file at `path` (`memidx mcp --token-file`): its text
/// without surrounding whitespace, one word of at least `min_len`
/// characters. Read as a regular file of at most 4 KiB (a FIFO or a device
/// is refused, not waited on).
pub fn read_token(path: &Path, min_len: usize) -> Result<String> {
    let bytes = bounded::read_regular(path, 4096)
        .map_err(|err| anyhow!("the token file {} {err}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow!("the token file {} is not UTF-8 text", path.display()))?;
    let token = text.trim();
    ensure!(
        token.chars().count() >= min_len && !token.chars().any(char::is_whitespace),
        "the token file {} must hold one token of at least {min_len} characters without spaces",
        path.display()
    );
    Ok(token.to_string())
}

/// Checks a result count: 1 to [`MAX_TOP_K`].
pub fn check_top_k(top_k: usize, name: &str) -> Result<usize> {
    ensure!(
        (1..=MAX_TOP_K).contains(&top_k),
        "{name} must be between 1 and {MAX_TOP_K}, got {top_k}"
    );
    Ok(top_k)
}

/// `lists` with the sparse, dense and graph weights given, each checked
/// (the graph's first, so a search naming several bad weights reports the
/// one it always reported).
pub(crate) fn with_weights(
    lists: ListSelection,
    [sparse, dense, graph, recency]: [Option<f64>; 4],
) -> Result<ListSelection> {
    let check = |list, weight: Option<f64>| weight.map(|w| check_weight(list, w)).transpose();
    let graph_weight = check("graph", graph)?;
    Ok(ListSelection {
        sparse_weight: check("sparse", sparse)?,
        dense_weight: check("dense", dense)?,
        graph_weight,
        recency_weight: check("recency", recency)?,
        ..lists
    })
}

/// The `--filter KEY=VALUE` arguments as (key, value) pairs.
fn parse_filters(args: &[String]) -> Result<Vec<(String, String)>> {
    args.iter()
        .map(|arg| match arg.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_string(), value.trim().to_string()))
            }
            _ => bail!("--filter expects KEY=VALUE (e.g. environment=production), got '{arg}'"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn a_filter_argument_without_a_key_is_an_error() {
        let err = parse_filters(&["environment".into()]).unwrap_err();
        assert!(err.to_string().contains("KEY=VALUE"));
        assert_eq!(
            parse_filters(&[" environment = staging ".into()]).unwrap(),
            [("environment".to_string(), "staging".to_string())]
        );
    }
    use clap::Parser;

    fn search_config(argv: &[&str], stdin: &str) -> Result<SearchConfig> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(INDEX_DIR_NAME)).unwrap();
        let cli = Cli::try_parse_from(argv).unwrap();
        let Command::Search(args) = cli.command else {
            panic!("not a search")
        };
        SearchConfig::from_args(&args, dir.path(), stdin.as_bytes())
    }

    #[test]
    fn defaults_follow_the_design() {
        let c = search_config(&["memidx", "search", "pool"], "").unwrap();
        assert_eq!(
            (c.params.top_k, c.params.window, c.params.rrf_k),
            (10, None, None)
        );
        assert_eq!(c.lists, ListSelection::default());
        assert_eq!(c.format, OutputFormat::Human);
        assert!(c.indexes.named[0].1.ends_with(INDEX_DIR_NAME));
        let c = search_config(
            &["memidx", "search", "pool", "-k", "40", "--window", "7"],
            "",
        )
        .unwrap();
        assert_eq!((c.params.top_k, c.params.window), (40, Some(7)));
    }

    #[test]
    fn request_from_stdin_sets_everything_and_flags_override() {
        let json = r#"{"query_id": "q1", "search_text": "pool", "top_k": 3,
            "hybrid_params": {"sparse_weight": 0.4, "rrf_k_constant": 10},
            "metadata_filter": {"environment": "production"}}"#;
        let c = search_config(
            &["memidx", "search", "--request", "-", "--rrf-k", "20"],
            json,
        )
        .unwrap();
        assert_eq!(c.query_id.as_deref(), Some("q1"));
        assert_eq!(
            (c.query.as_str(), c.params.top_k, c.params.rrf_k),
            ("pool", 3, Some(20.0))
        );
        assert_eq!(
            (c.lists.sparse_weight, c.lists.dense_weight),
            (Some(0.4), None)
        );
        assert_eq!(
            c.params.filter,
            Filter::from_pairs([("environment", "production")])
        );
        assert_eq!(c.format, OutputFormat::Json);
    }

    #[test]
    fn a_request_is_read_only_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let cli = Cli::try_parse_from(["memidx", "search", "--request", "-"]).unwrap();
        let Command::Search(args) = cli.command else {
            panic!("not a search")
        };
        let err = SearchConfig::from_args(&args, dir.path(), std::io::repeat(b' '))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the request on stdin is larger than the limit of 16 MiB"
        );
    }

    #[test]
    fn modes_combine_lists() {
        let lists = |mode: &str| {
            search_config(&["memidx", "search", "x", "--mode", mode], "")
                .unwrap()
                .lists
        };
        let picked = |l: ListSelection| (l.sparse, l.dense, l.graph);
        assert_eq!(picked(lists("hybrid")), (true, true, GraphUse::Default));
        assert_eq!(picked(lists("sparse")), (true, false, GraphUse::Off));
        assert_eq!(picked(lists("dense")), (false, true, GraphUse::Off));
        assert_eq!(picked(lists("graph")), (false, false, GraphUse::Required));
        assert_eq!(
            picked(lists("sparse,graph")),
            (true, false, GraphUse::Required)
        );
        assert_eq!(
            picked(lists("hybrid,graph")),
            (true, true, GraphUse::Required)
        );
        let c = search_config(&["memidx", "search", "x", "--graph-weight", "0.7"], "").unwrap();
        assert_eq!(c.lists.graph_weight, Some(0.7));
    }

    #[test]
    fn out_of_range_values_are_refused() {
        for argv in [
            &["memidx", "search", "x", "-k", "0"][..],
            &["memidx", "search", "x", "-k", "1000000000"],
            &["memidx", "search", "x", "--rrf-k", "-1"],
            &["memidx", "search", "x", "--rrf-k", "NaN"],
            &["memidx", "search", "x", "--sparse-weight", "-0.5"],
            &["memidx", "search", "x", "--graph-weight", "-1"],
            &["memidx", "search", "x", "--dense-weight", "1e308"],
            &["memidx", "search", "x", "--window", "0"],
        ] {
            assert!(search_config(argv, "").is_err(), "{argv:?}");
        }
    }

    #[test]
    fn index_is_found_upward_or_named() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(dir.path().join(INDEX_DIR_NAME)).unwrap();
        let cli = Cli::try_parse_from(["memidx", "search", "x"]).unwrap();
        let Command::Search(args) = cli.command else {
            panic!()
        };
        assert_eq!(
            resolve_indexes(&args.retrieval.location, &sub)
                .unwrap()
                .named,
            [(None, dir.path().join(INDEX_DIR_NAME))]
        );
        let cli = Cli::try_parse_from(["memidx", "search", "x", "--index", "a"]).unwrap();
        let Command::Search(args) = cli.command else {
            panic!()
        };
        let err = resolve_indexes(&args.retrieval.location, dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no index at"), "{err}");
    }
}
