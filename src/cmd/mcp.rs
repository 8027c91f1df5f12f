//! `memidx mcp`: a Model Context Protocol server over stdio, on the
//! official Rust SDK (`rmcp`).
//!
//! Tools: `search`, `get`, `explain`, `status` and (unless `--read-only`)
//! `reindex`. Each declares an input schema, an output schema (the JSON
//! Schemas in `schemas/` for the shapes the command line prints too) and
//! honest annotations, and answers with `structuredContent` in that shape
//! plus a compact text rendering.
//!
//! The index is fixed at start. Opened retrievers (and with them the
//! embedder) are kept across calls; before every call the server compares
//! `meta.json`'s identity, size and modification time with what it saw
//! when it opened them, and reopens when they differ, so it never answers
//! from a generation a `memidx index` run replaced. stdout carries only
//! protocol messages; notices go to stderr.
//!
//! With `--watch` the server also keeps the index fresh: it takes the
//! writer lock at start and runs the watch loop of `watch.rs` on a thread
//! beside it (its lines on stderr), stopped when the session ends; the
//! `reindex` tool then runs under that same lock.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use clap::ValueEnum;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer, ServerInitializeError};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Status;
use super::watch::Background;
use crate::cli::Mode;
use crate::config::{self, check_max_chars, check_top_k};
use memidx::corpus::note::{DEFAULT_NOTES_DIR, Note};
use memidx::filter::{Filter, TimeFilter};
use memidx::fusion::{FusionMethod, check_rrf_k, check_window};
use memidx::index::get::{self as fetch, LineRange, Target};
use memidx::index::status::StatusReport;
use memidx::index::{Index, ManifestStamp};
use memidx::indexer::{self, DEFAULT_MAX_FILE_SIZE, IndexOptions, Writer};
use memidx::output::get::GetResponse;
use memidx::output::{SearchResponse, TextBudget, compact, human};
use memidx::progress::Silent;
use memidx::request::FilterValue;
use memidx::retriever::{ListSelection, Retriever, SearchParams};

/// The `max_chars` of a `search` or `get` call that gives none: about 5k
/// tokens of text, well under the ~25k tokens at which clients drop a
/// tool result.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// How many retrievers (one per list selection and weights) stay open.
const RETRIEVERS_KEPT: usize = 4;

const SEARCH_SCHEMA: &str = include_str!("../../schemas/search-response.schema.json");
const GET_SCHEMA: &str = include_str!("../../schemas/get-response.schema.json");
const EXPLAIN_SCHEMA: &str = include_str!("../../schemas/explain-response.schema.json");
const STATUS_SCHEMA: &str = include_str!("../../schemas/status-report.schema.json");

/// What the server tells an agent when it connects.
const INSTRUCTIONS: &str = "memidx searches a folder of markdown notes (runbooks, incidents, ADRs…). \
Use `search` first: it matches exact identifiers (INC-2023-Q4-011, max_connections, getUserById, error codes) \
and paraphrases alike, and `filter` (front-matter metadata, e.g. {\"environment\": \"production\"}) is applied \
before ranking, so filtered results are never short. Results carry chunk ids; `get` a chunk id for its full \
text, or a result's source path with from/to for surrounding lines. `explain` shows why a chunk ranks where it \
does; `status` says what is indexed and what changed since.";

/// Serves the index in `index_dir` over stdin/stdout until end of input;
/// with `watch`, re-indexing it whenever its files change meanwhile.
pub fn run(index_dir: &Path, read_only: bool, watch: bool) -> Result<Status> {
    // The lock is taken before serving, so a held one fails the start.
    let watching = if watch {
        let options = IndexOptions::updating(&Index::open(index_dir)?);
        let writer = Arc::new(Mutex::new(Writer::take(&options)?));
        Some((options, writer))
    } else {
        None
    };
    let server = Server::open(
        index_dir,
        read_only,
        watching.as_ref().map(|(_, w)| w.clone()),
    )?;
    note(&format!(
        "serving {} over stdio{}",
        index_dir.display(),
        match (read_only, watch) {
            (true, _) => " (read-only)",
            (false, true) => ", re-indexing when its files change",
            (false, false) => "",
        }
    ));
    let background = watching
        .map(|(options, writer)| Background::start(options, writer))
        .transpose()?;
    let served = serve(server);
    if let Some(background) = background {
        background.stop();
    }
    served?;
    Ok(Status::Success)
}

/// Runs the MCP session on stdin/stdout until it ends.
fn serve(server: Server) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(async move {
        let service = match server.serve(rmcp::transport::stdio()).await {
            Ok(service) => service,
            // Input ended before a client said hello: nothing to serve.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(err) => return Err(anyhow!("the MCP session did not start: {err}")),
        };
        service
            .waiting()
            .await
            .map_err(|err| anyhow!("the MCP session failed: {err}"))?;
        Ok(())
    })
}

/// A line on stderr (the client's log), its write errors ignored.
fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "memidx mcp: {message}");
}

/// The server: its tools, and the thread that owns what is open (the
/// lists hold memory maps and readers that are shared, not sent, between
/// threads, so one thread opens and uses them all).
struct Server {
    tools: Vec<Tool>,
    calls: mpsc::Sender<Call>,
}

/// One tool call handed to the index thread, with where to answer.
struct Call {
    name: String,
    arguments: Value,
    reply: mpsc::Sender<Option<Result<(Value, String)>>>,
}

/// What is open, and the `meta.json` it was opened from.
#[derive(Default)]
struct State {
    stamp: Option<ManifestStamp>,
    index: Option<Index>,
    retrievers: Vec<(ListSelection, Retriever)>,
    /// The writer lock a watcher holds (`--watch`), for `reindex` to run under.
    writer: Option<Arc<Mutex<Writer>>>,
}

impl State {
    /// Drops everything opened from an older `meta.json`.
    fn refresh(&mut self, index_dir: &Path) {
        let now = ManifestStamp::of(index_dir);
        if now != self.stamp {
            if self.stamp.is_some() {
                note("the index changed; reopening it");
            }
            self.stamp = now;
            self.index = None;
            self.retrievers.clear();
        }
    }

    fn index(&mut self, index_dir: &Path) -> Result<&Index> {
        if self.index.is_none() {
            self.index = Some(Index::open(index_dir)?);
        }
        Ok(self.index.as_ref().expect("opened above"))
    }

    /// Runs tool `name` on `arguments` against what is open, first
    /// reopening it if `meta.json` changed: `None` for an unknown tool.
    fn call(
        &mut self,
        dir: &Path,
        read_only: bool,
        name: &str,
        arguments: Value,
    ) -> Option<Result<(Value, String)>> {
        self.refresh(dir);
        Some(match name {
            "search" => parse(arguments).and_then(|a| search(self, dir, a)),
            "get" => parse(arguments).and_then(|a| get(self, dir, a)),
            "explain" => parse(arguments).and_then(|a| explain(self, dir, a)),
            "status" => parse::<NoArgs>(arguments).and_then(|_| status(self, dir)),
            "reindex" if !read_only => {
                let result = parse(arguments).and_then(|a| reindex(self, dir, a));
                self.refresh(dir);
                result
            }
            "remember" if !read_only => {
                let result = parse(arguments).and_then(|a| remember(self, dir, a));
                self.refresh(dir);
                result
            }
            _ => return None,
        })
    }

    fn retriever(&mut self, index_dir: &Path, selection: &ListSelection) -> Result<&Retriever> {
        let position = match self.retrievers.iter().position(|(s, _)| s == selection) {
            Some(position) => position,
            None => {
                if self.retrievers.len() >= RETRIEVERS_KEPT {
                    self.retrievers.remove(0);
                }
                let retriever = Retriever::open(index_dir, selection)?;
                self.retrievers.push((*selection, retriever));
                self.retrievers.len() - 1
            }
        };
        Ok(&self.retrievers[position].1)
    }
}

impl Server {
    /// Starts the index thread, which opens the index once (so a bad
    /// `--index` fails at start) and then answers calls in order.
    fn open(index_dir: &Path, read_only: bool, writer: Option<Arc<Mutex<Writer>>>) -> Result<Self> {
        let (calls, inbox) = mpsc::channel::<Call>();
        let (opened, started) = mpsc::channel();
        let dir = index_dir.to_path_buf();
        std::thread::Builder::new()
            .name("memidx-index".into())
            .spawn(move || {
                let mut state = State {
                    writer,
                    ..State::default()
                };
                state.refresh(&dir);
                let open = state.retriever(&dir, &ListSelection::default()).map(|_| ());
                let ok = open.is_ok();
                let _ = opened.send(open);
                if !ok {
                    return;
                }
                for call in inbox {
                    let answer = state.call(&dir, read_only, &call.name, call.arguments);
                    let _ = call.reply.send(answer);
                }
            })
            .context("cannot start the index thread")?;
        started
            .recv()
            .context("the index thread stopped while opening the index")??;
        Ok(Self {
            tools: tools(read_only)?,
            calls,
        })
    }

    /// Runs tool `name` on the index thread: `None` for an unknown tool.
    fn call(&self, name: &str, arguments: Value) -> Option<Result<(Value, String)>> {
        let (reply, answer) = mpsc::channel();
        let call = Call {
            name: name.to_string(),
            arguments,
            reply,
        };
        if self.calls.send(call).is_err() {
            return Some(Err(anyhow!("the index thread stopped")));
        }
        answer
            .recv()
            .unwrap_or_else(|_| Some(Err(anyhow!("the index thread stopped"))))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memidx", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        match self.call(&request.name, arguments) {
            None => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}'; the tools are {}",
                    request.name,
                    self.tools
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            )),
            Some(Ok((structured, text))) => {
                let mut result = CallToolResult::structured(structured);
                result.content = vec![ContentBlock::text(text)];
                Ok(result.into())
            }
            Some(Err(err)) => Ok(CallToolResult::error(vec![ContentBlock::text(
                memidx::output::one_line(&format!("{err:#}")),
            )])
            .into()),
        }
    }
}

/// Parses tool arguments, naming the offending field on error.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T> {
    serde_path_to_error::deserialize(arguments).map_err(|err| {
        let path = err.path().to_string();
        match path.as_str() {
            "." => anyhow!("invalid arguments: {}", err.into_inner()),
            _ => anyhow!("invalid argument '{path}': {}", err.into_inner()),
        }
    })
}

/// No arguments at all.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// Arguments of `search` and `explain` (each tool's schema says which).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    query: String,
    top_k: Option<usize>,
    mode: Option<String>,
    filter: Option<BTreeMap<String, FilterValue>>,
    sparse_weight: Option<f64>,
    dense_weight: Option<f64>,
    graph_weight: Option<f64>,
    recency_weight: Option<f64>,
    since: Option<String>,
    until: Option<String>,
    fusion: Option<FusionMethod>,
    rrf_k: Option<f64>,
    window: Option<usize>,
    /// `search` only.
    max_chars: Option<usize>,
    /// `search` only.
    include_text: Option<bool>,
    /// `explain` only.
    chunk_id: Option<String>,
}

impl QueryArgs {
    /// The lists and parameters these arguments ask for.
    fn settings(&self) -> Result<(ListSelection, SearchParams)> {
        let modes = match &self.mode {
            None => vec![Mode::Hybrid],
            Some(text) => text
                .split(',')
                .map(|m| {
                    Mode::from_str(m.trim(), true).map_err(|_| {
                        anyhow!("unknown mode '{m}'; use hybrid, or any of sparse, dense, graph, recency joined by commas")
                    })
                })
                .collect::<Result<_>>()?,
        };
        let selection = config::with_weights(
            config::selected_lists(&modes, false, self.recency_weight),
            [
                self.sparse_weight,
                self.dense_weight,
                self.graph_weight,
                self.recency_weight,
            ],
        )?;
        let time = TimeFilter::parse(
            self.since.as_deref().map(|s| ("since", s)),
            self.until.as_deref().map(|s| ("until", s)),
            jiff::Timestamp::now(),
        )?;
        let pairs = self.filter.iter().flatten().flat_map(|(key, value)| {
            let values = match value {
                FilterValue::One(v) => vec![v.clone()],
                FilterValue::Any(vs) => vs.clone(),
            };
            values.into_iter().map(move |v| (key.clone(), v))
        });
        let params = SearchParams {
            top_k: check_top_k(self.top_k.unwrap_or(config::DEFAULT_TOP_K), "top_k")?,
            window: self.window.map(check_window).transpose()?,
            rrf_k: self.rrf_k.map(check_rrf_k).transpose()?,
            fusion: self.fusion,
            filter: Filter::from_pairs(pairs).within_time(time),
        };
        Ok((selection, params))
    }
}

fn search(state: &mut State, dir: &Path, args: QueryArgs) -> Result<(Value, String)> {
    if args.chunk_id.is_some() {
        bail!("search takes no chunk_id; use get for a chunk, explain for why it ranks");
    }
    let (selection, params) = args.settings()?;
    let budget = TextBudget {
        max_chars: Some(check_max_chars(
            args.max_chars.unwrap_or(DEFAULT_MAX_CHARS),
        )?),
        no_text: args.include_text == Some(false),
    };
    let retriever = state.retriever(dir, &selection)?;
    let outcome = retriever.search(&args.query, &params)?;
    let decoded = retriever.decode(outcome.shown_chunks())?;
    let response = SearchResponse::build(None, &outcome, &decoded)?.within(budget);
    Ok((serde_json::to_value(&response)?, compact::search(&response)))
}

/// Arguments of `get`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    chunk_id: Option<String>,
    path: Option<String>,
    from: Option<u32>,
    to: Option<u32>,
    max_chars: Option<usize>,
}

fn get(state: &mut State, dir: &Path, args: GetArgs) -> Result<(Value, String)> {
    let target = match (args.chunk_id, args.path) {
        (Some(id), None) if args.from.is_none() && args.to.is_none() => Target::Chunk(id),
        (Some(_), None) => bail!("from and to go with a path, not a chunk_id"),
        (None, Some(path)) => Target::File {
            path,
            lines: match (args.from, args.to) {
                (None, None) => None,
                (from, to) => Some(LineRange::new(from.unwrap_or(1), to)?),
            },
        },
        _ => bail!("give either chunk_id (from search) or path (an indexed file's source)"),
    };
    let max_chars = check_max_chars(args.max_chars.unwrap_or(DEFAULT_MAX_CHARS))?;
    let fetched = fetch::fetch(state.index(dir)?, &target)?;
    let response = GetResponse::build(fetched, Some(max_chars));
    Ok((serde_json::to_value(&response)?, compact::get(&response)))
}

fn explain(state: &mut State, dir: &Path, args: QueryArgs) -> Result<(Value, String)> {
    if args.max_chars.is_some() || args.include_text.is_some() {
        bail!("explain returns no text, so it takes no max_chars or include_text");
    }
    let (selection, params) = args.settings()?;
    let started = Instant::now();
    let retriever = state.retriever(dir, &selection)?;
    let open_time = started.elapsed();
    let report = super::explain::report(
        retriever,
        &args.query,
        &params,
        args.chunk_id.as_deref(),
        open_time,
        "chunk ids come from search (chunk_id)",
    )?;
    Ok((
        serde_json::to_value(&report)?,
        plain(|out| human::print_explain(out, &report))?,
    ))
}

fn status(state: &mut State, dir: &Path) -> Result<(Value, String)> {
    let report = StatusReport::of(state.index(dir)?, None)?;
    Ok((
        serde_json::to_value(&report)?,
        plain(|out| human::print_status(out, &report))?,
    ))
}

/// What a human printer writes, without its styles: a tool's text content.
fn plain(print: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<String> {
    let mut text = anstream::StripStream::new(Vec::new());
    print(&mut text)?;
    Ok(String::from_utf8_lossy(&text.into_inner()).into_owned())
}

/// Arguments of `remember`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    text: String,
    title: Option<String>,
    dir: Option<String>,
    meta: Option<BTreeMap<String, String>>,
}

fn remember(state: &mut State, dir: &Path, args: RememberArgs) -> Result<(Value, String)> {
    let note = Note {
        text: args.text,
        title: args.title,
        meta: args.meta.unwrap_or_default().into_iter().collect(),
    };
    let folder = PathBuf::from(args.dir.as_deref().unwrap_or(DEFAULT_NOTES_DIR));
    // The index is about to change: nothing opened from it is kept.
    state.index = None;
    state.retrievers.clear();
    let mut held = state
        .writer
        .as_ref()
        .map(|w| w.lock().unwrap_or_else(PoisonError::into_inner));
    let report = super::remember::remember(
        dir,
        &folder,
        &note,
        DEFAULT_MAX_FILE_SIZE,
        held.as_deref_mut(),
    )?;
    Ok((
        serde_json::to_value(&report)?,
        plain(|out| human::print_remembered(out, &report))?,
    ))
}

/// Arguments of `reindex`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReindexArgs {
    full: Option<bool>,
}

/// What `reindex` returns.
#[derive(Serialize)]
struct ReindexReport {
    generation: u64,
    up_to_date: bool,
    files: usize,
    reused: usize,
    chunks: usize,
    embedded: usize,
    skipped: Vec<String>,
    warnings: Vec<String>,
    elapsed_ms: f64,
}

fn reindex(state: &mut State, dir: &Path, args: ReindexArgs) -> Result<(Value, String)> {
    let options = IndexOptions {
        full: args.full.unwrap_or(false),
        ..IndexOptions::updating(state.index(dir)?)
    };
    // The index is about to change: nothing opened from it is kept.
    state.index = None;
    state.retrievers.clear();
    let embedder = memidx::embed::load(options.model_dir.as_deref())?;
    let report = match &state.writer {
        Some(writer) => writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .run(&options, embedder, &Silent)?,
        None => indexer::run(&options, embedder, &Silent)?,
    };
    let out = ReindexReport {
        generation: report.generation,
        up_to_date: report.up_to_date,
        files: report.files,
        reused: report.reused,
        chunks: report.chunks,
        embedded: report.embedded,
        skipped: report
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.path, s.reason))
            .collect(),
        warnings: report.warnings.clone(),
        elapsed_ms: report.elapsed.as_secs_f64() * 1e3,
    };
    let text = if report.up_to_date {
        format!(
            "up to date: {} files, {} chunks (generation {})",
            out.files, out.chunks, out.generation
        )
    } else {
        format!(
            "indexed {} files ({} unchanged), {} chunks, {} skipped -> generation {}",
            out.files,
            out.reused,
            out.chunks,
            out.skipped.len(),
            out.generation
        )
    };
    Ok((serde_json::to_value(&out)?, text))
}

/// The tools, with their schemas and annotations (`reindex` unless read-only).
fn tools(read_only: bool) -> Result<Vec<Tool>> {
    let retrieval = json!({
        "top_k": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 10,
                  "description": "Number of results."},
        "mode": {"type": "string", "default": "hybrid",
                 "pattern": "^(hybrid|sparse|dense|graph|recency)(,(hybrid|sparse|dense|graph|recency))*$",
                 "description": "Lists to fuse: hybrid (default), or sparse (exact words and identifiers), dense (meaning), graph, recency (newest first), joined by commas."},
        "filter": {"type": "object",
                   "description": "Front-matter metadata conditions, applied before ranking: key -> value or list of values (AND across keys, OR within a list). Every file also has path, dir and title.",
                   "additionalProperties": {"oneOf": [
                       {"type": "string"},
                       {"type": "array", "items": {"type": "string"}}]}},
        "sparse_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                          "description": "Weight of the BM25 list in the fusion (default: the index's)."},
        "dense_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                         "description": "Weight of the embedding list in the fusion (default: the index's)."},
        "graph_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                         "description": "Weight of the graph list (default: the index's)."},
        "recency_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                           "description": "Weight of the recency list (newest first); above 0 it runs (default 0; 0.1 when mode names recency)."},
        "since": {"type": "string",
                  "description": "Only notes dated at or after this: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)."},
        "until": {"type": "string",
                  "description": "Only notes dated at or before this (same forms as since; a date includes that whole day)."},
        "fusion": {"enum": ["relative", "rrf"],
                   "description": "How the lists are fused: relative scores (each list's score over its best, weighted) or RRF (default: the index's, relative)."},
        "rrf_k": {"type": "number", "minimum": 0,
                  "description": "RRF constant k in weight / (k + rank); given without fusion it asks for RRF (default: the index's, 60)."},
        "window": {"type": "integer", "minimum": 1, "maximum": 100000,
                   "description": "Candidates per list before fusion (default max(50, 2 x top_k))."}
    });
    let mut search_props = retrieval.clone();
    search_props["query"] = json!({"type": "string", "minLength": 1,
        "description": "What to find: an exact identifier (INC-2023-Q4-011, max_connections) or a question in any words."});
    search_props["max_chars"] = json!({"type": "integer", "minimum": 1, "default": DEFAULT_MAX_CHARS,
        "description": "Budget on the results' text: whole results in rank order while they fit; the response says truncated and omitted."});
    search_props["include_text"] = json!({"type": "boolean", "default": true,
        "description": "false: ids, scores, sources, lines and metadata only (then get what you need)."});
    let mut explain_props = retrieval;
    explain_props["query"] =
        json!({"type": "string", "minLength": 1, "description": "The query to explain."});
    explain_props["chunk_id"] = json!({"type": "string",
        "description": "Explain only this chunk (an id from search), even when it is not a result."});
    let input = |props: Value, required: &[&str]| {
        object(
            json!({"type": "object", "properties": props, "required": required,
                      "additionalProperties": false}),
        )
    };
    let mut tools = vec![
        Tool::new(
            "search",
            "Search the notes; returns ranked chunks (chunk_id, score, text, source, heading, lines, metadata, per-list ranks). \
             Exact identifiers and paraphrases both work; filter narrows by metadata before ranking. Text is budgeted by max_chars.",
            input(search_props, &["query"])?,
        )
        .with_raw_output_schema(output_schema(SEARCH_SCHEMA)?)
        .with_annotations(reading("Search notes")),
        Tool::new(
            "get",
            "Read a chunk by chunk_id (from search) with its heading path and lines, or lines of an indexed file \
             (path = a result's source, optional from/to). Only indexed files inside the indexed folder are served.",
            input(json!({
                "chunk_id": {"type": "string", "description": "A chunk id from search, path#n."},
                "path": {"type": "string", "description": "An indexed file, relative to the indexed folder."},
                "from": {"type": "integer", "minimum": 1, "description": "First line (with path), default 1."},
                "to": {"type": "integer", "minimum": 1, "description": "Last line (with path), default the end."},
                "max_chars": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_CHARS,
                              "description": "Cut the text to this many characters at a word boundary."}
            }), &[])?,
        )
        .with_raw_output_schema(output_schema(GET_SCHEMA)?)
        .with_annotations(reading("Read a chunk or lines")),
        Tool::new(
            "explain",
            "Explain a search: per result (or one chunk_id), each list's rank, raw score, weight and contribution, \
             or why a list did not count it (filtered, no match, outside the window).",
            input(explain_props, &["query"])?,
        )
        .with_raw_output_schema(output_schema(EXPLAIN_SCHEMA)?)
        .with_annotations(reading("Explain a ranking")),
        Tool::new(
            "status",
            "What is indexed: files, chunks, model, fusion settings, sizes, and files changed, added or deleted since indexing.",
            input(json!({}), &[])?,
        )
        .with_raw_output_schema(output_schema(STATUS_SCHEMA)?)
        .with_annotations(reading("Index status")),
    ];
    if !read_only {
        tools.push(
            Tool::new(
                "reindex",
                "Update the index from the files now (incremental: unchanged files are reused; full re-reads all). \
                 Use after status reports changed files.",
                input(json!({"full": {"type": "boolean", "default": false,
                                      "description": "Re-read every file instead of reusing unchanged ones."}}), &[])?,
            )
            .with_raw_output_schema(object(reindex_schema())?)
            // It rewrites only the index (from the files, which it never
            // changes), and a second run right after changes nothing.
            .with_annotations(
                ToolAnnotations::with_title("Update the index")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            ),
        );
        tools.push(
            Tool::new(
                "remember",
                "Write a new dated note (markdown) into the indexed folder and index it at once; returns its path and                  chunk ids, which search finds immediately. Never overwrites: a taken name gets -2, -3, ….",
                input(json!({
                    "text": {"type": "string", "minLength": 1, "description": "The note, in markdown."},
                    "title": {"type": "string", "minLength": 1, "description": "Its title (default: its first line)."},
                    "dir": {"type": "string", "default": DEFAULT_NOTES_DIR,
                            "description": "Folder inside the indexed folder to write to (created if missing)."},
                    "meta": {"type": "object", "additionalProperties": {"type": "string"},
                             "description": "Further front matter, key -> value (date and title are set by remember)."}
                }), &["text"])?,
            )
            .with_raw_output_schema(object(remember_schema())?)
            // It adds a file (never changing or removing one); a second call
            // adds a second note.
            .with_annotations(
                ToolAnnotations::with_title("Remember a note")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(false),
            ),
        );
    }
    Ok(tools)
}

/// The annotations of a tool that only reads: the index, and for `get` an
/// indexed file.
fn reading(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

fn object(value: Value) -> Result<Arc<JsonObject>> {
    match value {
        Value::Object(map) => Ok(Arc::new(map)),
        _ => bail!("a tool schema must be an object"),
    }
}

/// A schema file as an output schema.
fn output_schema(text: &str) -> Result<Arc<JsonObject>> {
    object(serde_json::from_str(text).context("a bundled schema is not JSON")?)
}

/// The output schema of `remember`.
fn remember_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memidx remember report",
        "type": "object",
        "additionalProperties": false,
        "required": ["path", "chunk_ids", "date", "generation", "embedded", "elapsed_ms"],
        "properties": {
            "path": {"type": "string", "description": "The new file, relative to the indexed folder."},
            "chunk_ids": {"type": "array", "items": {"type": "string"}, "description": "Its chunks' ids, in file order."},
            "date": {"type": "string", "description": "Its document date, the time of writing (RFC 3339, UTC)."},
            "generation": {"type": "integer", "minimum": 0, "description": "The index generation now live."},
            "embedded": {"type": "integer", "minimum": 0, "description": "Chunks embedded by the run."},
            "elapsed_ms": {"type": "number", "minimum": 0, "description": "Time to write and index, milliseconds."}
        }
    })
}

/// The output schema of `reindex`.
fn reindex_schema() -> Value {
    let count =
        |description: &str| json!({"type": "integer", "minimum": 0, "description": description});
    let list = |description: &str| json!({"type": "array", "items": {"type": "string"}, "description": description});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memidx reindex report",
        "type": "object",
        "additionalProperties": false,
        "required": ["generation", "up_to_date", "files", "reused", "chunks", "embedded",
                     "skipped", "warnings", "elapsed_ms"],
        "properties": {
            "generation": {"type": "integer", "minimum": 1, "description": "The generation now live."},
            "up_to_date": {"type": "boolean", "description": "True when nothing changed (no new generation)."},
            "files": count("Files indexed."),
            "reused": count("Files whose chunks were kept."),
            "chunks": count("Chunks in the index."),
            "embedded": count("Chunks embedded by this run."),
            "skipped": list("Files skipped, as `path: reason`."),
            "warnings": list("Problems in indexed files."),
            "elapsed_ms": {"type": "number", "minimum": 0, "description": "Wall-clock time of the run."}
        }
    })
}
