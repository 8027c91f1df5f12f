//! The tool calls: what is open (the indexes, retrievers per list
//! selection), shared by every call in flight, and each tool call run
//! against it, from parsed arguments to the structured result and its text
//! rendering.
//!
//! Before every call the state compares the identity, size and
//! modification time of `meta.json` and of every file of the live
//! generation with what it saw when it opened things ([`LiveStamp`]), and
//! drops what it opened when they differ, so the call opens them again: no
//! call starts on a generation a `memidx index` run replaced, no answer
//! mixes two generations (a call keeps what it took to its end), and a
//! file truncated or rewritten in place under the server (a backup restored
//! over the index) is never read through its old mapping (which would end
//! the process with SIGBUS); the reopening runs the checks a fresh `memidx`
//! run makes, so damage is named as the command line names it, and once
//! the files are whole again the next call opens them. A write (`reindex`,
//! `remember`) writes a new generation beside the live one and touches none
//! of its files, so calls beside it read on.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Result, anyhow, bail};
use clap::ValueEnum;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::note::note;
use crate::cli::Mode;
use crate::config::{self, check_max_chars, check_top_k};
use memidx::corpus::note::{DEFAULT_NOTES_DIR, Note};
use memidx::filter::{Filter, TimeFilter};
use memidx::fusion::{FusionMethod, check_rrf_k, check_window};
use memidx::index::get::{self as fetch, LineRange, Target};
use memidx::index::set::{named_path, split_named};
use memidx::index::status::StatusReport;
use memidx::index::{Index, LiveStamp};
use memidx::indexer::{self, DEFAULT_MAX_FILE_SIZE, IndexOptions, Writer};
use memidx::output::get::GetResponse;
use memidx::output::here::Here;
use memidx::output::{SearchResponse, TextBudget, compact, human, nothing_matched_note};
use memidx::progress::Silent;
use memidx::request::FilterValue;
use memidx::retriever::{DEFAULT_PER_FILE, ListSelection, Retriever, SearchParams};

/// The `max_chars` of a `search` or `get` call that gives none: about 5k
/// tokens of text, well under the ~25k tokens at which clients drop a
/// tool result.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// How many retrievers (one per list selection, weights and indexes) stay
/// open.
const RETRIEVERS_KEPT: usize = 4;

/// An index the server serves: its name, its `.memidx` folder and, under
/// `--watch`, the writer lock held for it (`reindex` and `remember` run
/// under it).
#[derive(Clone)]
pub struct Served {
    /// The name its chunk ids carry when several indexes are served.
    pub name: String,
    /// The `.memidx` folder.
    pub dir: PathBuf,
    /// The lock a watcher holds.
    pub writer: Option<Arc<Mutex<Writer>>>,
}

/// The served indexes and what is open of them, shared by every call in
/// flight: calls read it at once, each holding the index and retrievers it
/// took (an `Arc`) for as long as it runs, so a call answers from the
/// generation it started on while the next one may open a newer one.
pub struct State {
    served: Vec<Served>,
    /// Held only to look up, open or drop: never while a call runs.
    open: Mutex<Open>,
}

/// What is open, and the `meta.json` of each served index it was opened
/// from.
struct Open {
    /// Per served index, the stamp of its live generation when last seen.
    stamps: Vec<Option<LiveStamp>>,
    /// Per served index, how many times what was opened of it was dropped:
    /// a retriever opened meanwhile is used by its call and not kept.
    epochs: Vec<u64>,
    /// Per served index, opened when a call first needs it alone (`get`,
    /// `status`, `reindex`), so that one index's damage fails only the
    /// calls that read it.
    opened: Vec<Option<Arc<Index>>>,
    /// Retrievers by list selection and the served indexes they search.
    retrievers: Vec<(ListSelection, Vec<usize>, Arc<Retriever>)>,
}

impl Open {
    /// Drops what was opened from served index `member`: it changed.
    fn forget(&mut self, member: usize) {
        self.epochs[member] += 1;
        self.opened[member] = None;
        self.retrievers
            .retain(|(_, members, _)| !members.contains(&member));
    }
}

impl State {
    /// Nothing open yet, serving `served` (at least one).
    pub fn new(served: Vec<Served>) -> Self {
        let count = served.len();
        Self {
            served,
            open: Mutex::new(Open {
                stamps: vec![None; count],
                epochs: vec![0; count],
                opened: (0..count).map(|_| None).collect(),
                retrievers: Vec::new(),
            }),
        }
    }

    /// What is open, locked (a call that panicked left it whole: every
    /// change to it is one assignment).
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops everything opened from an older `meta.json`, index by index:
    /// a retriever that does not search a changed index is kept.
    pub fn refresh(&self) {
        // Stamped under the lock: two calls refreshing at once agree on
        // what they saw.
        let mut open = self.open();
        for (i, served) in self.served.iter().enumerate() {
            let now = LiveStamp::of(&served.dir);
            if now != open.stamps[i] {
                if open.stamps[i].is_some() {
                    match self.served.len() {
                        1 => note("the index changed; reopening it"),
                        _ => note(&format!(
                            "the index {} changed; reopening it",
                            self.served[i].name
                        )),
                    }
                }
                open.stamps[i] = now;
                open.forget(i);
            }
        }
    }

    /// The served index `member`, opened.
    fn index(&self, member: usize) -> Result<Arc<Index>> {
        let mut open = self.open();
        if let Some(index) = &open.opened[member] {
            return Ok(index.clone());
        }
        let index = Arc::new(Index::open(&self.served[member].dir)?);
        open.opened[member] = Some(index.clone());
        Ok(index)
    }

    /// The served index a chunk id or path names (`notes:db.md#3`, with
    /// several served), among `members`, and the rest of it: with one of
    /// `members`, a text without a served name is that index's.
    fn named_in<'a>(&self, typed: &'a str, members: &[usize]) -> Result<(usize, &'a str)> {
        if self.served.len() == 1 {
            return Ok((0, typed));
        }
        let named = split_named(typed, self.served.iter().map(|s| s.name.as_str()));
        match (named, members) {
            (Some((member, rest)), _) if members.contains(&member) => Ok((member, rest)),
            (Some((member, _)), _) => bail!(
                "'{typed}' is in the index {}, which indexes leaves out",
                self.served[member].name
            ),
            (None, [only]) => Ok((*only, typed)),
            (None, _) => Err(fetch::NotFound(format!(
                "'{typed}' names no served index; with several, ids and paths start with one's name and ':' ({})",
                self.names()
            ))
            .into()),
        }
    }

    /// The served indexes `names` names, in serving order (all of them
    /// when `None`); an error naming the served ones for an unknown name.
    fn members(&self, names: Option<&[String]>) -> Result<Vec<usize>> {
        let Some(names) = names else {
            return Ok((0..self.served.len()).collect());
        };
        if names.is_empty() {
            bail!("indexes is empty; name at least one of {}", self.names());
        }
        let mut members: Vec<usize> = names
            .iter()
            .map(|name| self.member(Some(name)))
            .collect::<Result<_>>()?;
        members.sort_unstable();
        members.dedup();
        Ok(members)
    }

    /// The served index named `name` (the first when `None`).
    fn member(&self, name: Option<&str>) -> Result<usize> {
        let Some(name) = name else {
            return Ok(0);
        };
        (self.served.iter().position(|s| s.name == name)).ok_or_else(|| {
            anyhow!(
                "no index named '{name}'; this server serves {}",
                self.names()
            )
        })
    }

    /// The served indexes' names, comma-separated.
    fn names(&self) -> String {
        let names: Vec<&str> = self.served.iter().map(|s| s.name.as_str()).collect();
        names.join(", ")
    }

    /// Whether tool `name` reads (and may run beside any other call) or
    /// writes (one at a time); `None` for a tool this server does not have.
    pub fn access(read_only: bool, name: &str) -> Option<Access> {
        match name {
            "search" | "get" | "explain" | "status" => Some(Access::Read),
            "reindex" | "remember" if !read_only => Some(Access::Write),
            _ => None,
        }
    }

    /// Runs tool `name` on `arguments` against what is open, first
    /// reopening what changed: `None` for an unknown tool. A write leaves
    /// what is open as it was, so calls beside it answer from the
    /// generation they started on; the next call after it reopens.
    pub fn call(
        &self,
        read_only: bool,
        name: &str,
        arguments: Value,
    ) -> Option<Result<(Value, String)>> {
        let access = Self::access(read_only, name)?;
        self.refresh();
        let result = match name {
            "search" => parse(arguments).and_then(|a| search(self, a)),
            "get" => parse(arguments).and_then(|a| get(self, a)),
            "explain" => parse(arguments).and_then(|a| explain(self, a)),
            "status" => parse::<NoArgs>(arguments).and_then(|_| status(self)),
            "reindex" => parse(arguments).and_then(|a| reindex(self, a)),
            "remember" => parse(arguments).and_then(|a| remember(self, a)),
            _ => return None,
        };
        if access == Access::Write {
            self.refresh();
        }
        Some(result)
    }

    /// The retriever of `selection` over the served indexes `members`,
    /// opened unless one is kept. It is opened with the lock released (a
    /// model may load), and kept only when none of `members` changed
    /// meanwhile.
    pub fn retriever(
        &self,
        selection: &ListSelection,
        members: &[usize],
    ) -> Result<Arc<Retriever>> {
        let epochs = {
            let open = self.open();
            let kept = (open.retrievers.iter()).find(|(s, m, _)| s == selection && m == members);
            if let Some((_, _, retriever)) = kept {
                return Ok(retriever.clone());
            }
            members.iter().map(|&m| open.epochs[m]).collect::<Vec<_>>()
        };
        let retriever = Arc::new(match &self.served[..] {
            [only] => Retriever::open(&only.dir, selection)?,
            served => {
                let named: Vec<(Option<String>, PathBuf)> = (members.iter())
                    .map(|&m| (Some(served[m].name.clone()), served[m].dir.clone()))
                    .collect();
                Retriever::open_named(&named, selection)?
            }
        });
        let mut open = self.open();
        let unchanged = members
            .iter()
            .zip(&epochs)
            .all(|(&m, &e)| open.epochs[m] == e);
        let kept = (open.retrievers.iter()).any(|(s, m, _)| s == selection && m == members);
        if unchanged && !kept {
            if open.retrievers.len() >= RETRIEVERS_KEPT {
                open.retrievers.remove(0);
            }
            (open.retrievers).push((*selection, members.to_vec(), retriever.clone()));
        }
        Ok(retriever)
    }
}

/// What a tool does to the index: how many may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads the live generation (`search`, `get`, `explain`, `status`).
    Read,
    /// Writes a new generation (`reindex`, `remember`).
    Write,
}

/// Parses tool arguments, naming the offending field on error.
fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T> {
    serde_path_to_error::deserialize(arguments).map_err(|err| {
        let path = err.path().to_string();
        let why = in_words(&err.into_inner().to_string());
        match path.as_str() {
            "." => anyhow!("invalid arguments: {why}"),
            _ => anyhow!("invalid argument '{path}': {why}"),
        }
    })
}

/// A deserializer's message with Rust's type names said in words, for an
/// agent that never saw `usize` (`expected usize` → `expected a whole
/// number, 0 or more`).
fn in_words(message: &str) -> String {
    let mut out = message.to_string();
    for (rust, words) in [
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected f64", "expected a number"),
    ] {
        out = out.replace(rust, words);
    }
    out
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
    per_file: Option<usize>,
    /// `search` only.
    max_chars: Option<usize>,
    /// `search` only.
    include_text: Option<bool>,
    /// `search` only.
    keep_all: Option<bool>,
    /// `explain` only.
    chunk_id: Option<String>,
    /// The served indexes to search, by name (default: all).
    indexes: Option<Vec<String>>,
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
            ListSelection {
                fusion_given: self.fusion.is_some() || self.rrf_k.is_some(),
                ..config::selected_lists(&modes, false, self.recency_weight)
            },
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
            per_file: self.per_file.unwrap_or(DEFAULT_PER_FILE),
            keep_all: self.keep_all.unwrap_or(false),
            here: None,
        };
        Ok((selection, params))
    }
}

fn search(state: &State, args: QueryArgs) -> Result<(Value, String)> {
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
    let members = state.members(args.indexes.as_deref())?;
    let retriever = state.retriever(&selection, &members)?;
    let outcome = retriever.search(&args.query, &params)?;
    let decoded = retriever.decode_outcome(&args.query, &outcome)?;
    let mut response = SearchResponse::build(None, &outcome, &decoded)?.within(budget);
    response.nothing_matched = nothing_matched_note(&outcome, "keep_all: true");
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
    indexes: Option<Vec<String>>,
}

fn get(state: &State, args: GetArgs) -> Result<(Value, String)> {
    let typed = match (&args.chunk_id, &args.path) {
        (Some(id), None) if args.from.is_none() && args.to.is_none() => id,
        (Some(_), None) => bail!("from and to go with a path, not a chunk_id"),
        (None, Some(path)) => path,
        _ => bail!("give either chunk_id (from search) or path (an indexed file's source)"),
    };
    let max_chars = check_max_chars(args.max_chars.unwrap_or(DEFAULT_MAX_CHARS))?;
    let members = state.members(args.indexes.as_deref())?;
    let (member, rest) = state.named_in(typed, &members)?;
    let target = match (&args.chunk_id, args.from, args.to) {
        (Some(_), ..) => Target::Chunk(rest.to_string()),
        // A path alone is read as the command line reads its target, so
        // `path:39-43` (and a chunk id given as a path) work here too.
        (None, None, None) => Target::parse(rest)?,
        (None, from, to) => Target::File {
            path: rest.to_string(),
            lines: Some(LineRange::new(from.unwrap_or(1), to)?),
        },
    };
    let mut fetched = fetch::fetch(&*state.index(member)?, &target)?;
    // With several served, ids and paths name their index, as search's do.
    if state.served.len() > 1 {
        let file = fetched.file_mut();
        file.path = named_path(&state.served[member].name, &file.path);
    }
    let response = GetResponse::build(fetched, Some(max_chars));
    Ok((serde_json::to_value(&response)?, compact::get(&response)))
}

fn explain(state: &State, args: QueryArgs) -> Result<(Value, String)> {
    if args.max_chars.is_some() || args.include_text.is_some() {
        bail!("explain returns no text, so it takes no max_chars or include_text");
    }
    if args.keep_all.is_some() {
        bail!("explain drops nothing (it says whether search would), so it takes no keep_all");
    }
    let (selection, params) = args.settings()?;
    let started = Instant::now();
    let members = state.members(args.indexes.as_deref())?;
    let retriever = state.retriever(&selection, &members)?;
    let open_time = started.elapsed();
    let report = crate::cmd::explain::report(
        &retriever,
        &args.query,
        &params,
        args.chunk_id.as_deref(),
        open_time,
        "chunk ids come from search (chunk_id)",
    )?;
    Ok((
        serde_json::to_value(&report)?,
        plain(|out| human::print_explain(out, &report, &Here::default()))?,
    ))
}

/// The status of each served index: its report alone when it is the only
/// one, else `{"indexes": [{"name", "status"}]}` (see
/// [`super::tools::statuses_schema`]), the text one report after another.
fn status(state: &State) -> Result<(Value, String)> {
    let several = state.served.len() > 1;
    let mut reports = Vec::new();
    let mut text = String::new();
    for member in 0..state.served.len() {
        let report = StatusReport::of(&*state.index(member)?, None, None)?;
        let name = &state.served[member].name;
        if several {
            text.push_str(&format!("index {name}\n"));
        }
        text.push_str(&plain(|out| human::print_status(out, &report))?);
        reports.push(json!({"name": name, "status": report}));
    }
    let structured = match several {
        true => json!({ "indexes": reports }),
        false => reports.remove(0)["status"].take(),
    };
    Ok((structured, text))
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
    /// The served index to write into, by name (default: the first).
    into: Option<String>,
}

fn remember(state: &State, args: RememberArgs) -> Result<(Value, String)> {
    let member = state.member(args.into.as_deref())?;
    let served = state.served[member].clone();
    let note = Note {
        text: args.text,
        title: args.title,
        meta: args.meta.unwrap_or_default().into_iter().collect(),
    };
    let folder = PathBuf::from(args.dir.as_deref().unwrap_or(DEFAULT_NOTES_DIR));
    let mut held = served
        .writer
        .as_ref()
        .map(|w| w.lock().unwrap_or_else(PoisonError::into_inner));
    let mut report = crate::cmd::remember::remember(
        &served.dir,
        &folder,
        &note,
        DEFAULT_MAX_FILE_SIZE,
        held.as_deref_mut(),
    )?;
    // With several served, ids and paths name their index, as search's do.
    if state.served.len() > 1 {
        report.path = named_path(&served.name, &report.path);
        report.chunk_ids = (report.chunk_ids.iter())
            .map(|id| named_path(&served.name, id))
            .collect();
    }
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
    /// The served index to update, by name (default: the first).
    index: Option<String>,
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

fn reindex(state: &State, args: ReindexArgs) -> Result<(Value, String)> {
    let member = state.member(args.index.as_deref())?;
    let options = IndexOptions {
        full: args.full.unwrap_or(false),
        ..IndexOptions::updating(&*state.index(member)?)
    };
    let embedder = indexer::load_model(&options)?;
    let report = match &state.served[member].writer {
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
