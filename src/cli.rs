//! The command line, as clap derive data only.
//!
//! Kept free of logic so that the same definition drives parsing, the shell
//! completions in `completions/`, and their up-to-date test. Values are
//! validated and resolved into typed settings by [`crate::config`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use memidx::fusion::FusionMethod;
use memidx::lists::dense::codes::DenseIndexSetting;

/// Hybrid search memory over folders of markdown: BM25 + dense vectors, fused.
#[derive(Debug, Parser)]
#[command(
    name = "memidx",
    version,
    about,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// When to color human-readable output: auto (when stdout is a terminal),
    /// always or never; NO_COLOR and CLICOLOR_FORCE are respected.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        display_order = 1000,
        value_enum,
        default_value_t = ColorWhen::Auto,
        hide_possible_values = true
    )]
    pub color: ColorWhen,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// When to color output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// When stdout is a terminal and NO_COLOR is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build or update the index of a folder (written to DIR/.memidx).
    Index(IndexArgs),
    /// Search the index and print the best chunks.
    Search(SearchArgs),
    /// Print a chunk by id (`path#n`: heading path, lines, text from the
    /// index) or lines of an indexed file (`PATH`, `PATH:FROM`, `PATH:FROM-TO`).
    Get(GetArgs),
    /// Show how every result's score was made: each list's rank, raw score,
    /// weight and contribution, or why a list did not contribute.
    Explain(ExplainArgs),
    /// Serve the index to AI agents over stdio as a Model Context Protocol
    /// server (tools: search, get, explain, status, reindex, remember).
    #[cfg(feature = "mcp")]
    Mcp(McpArgs),
    /// Show what is indexed: files, chunks, model, settings, sizes, and which
    /// files changed since (--verify also checks every index file's checksum).
    Status(StatusArgs),
    /// Write a new dated note into the indexed folder (memories/ by default)
    /// and index it at once; prints its chunk ids.
    Remember(RememberArgs),
    /// Measure retrieval quality on labelled queries (nDCG@10, Recall, MRR per mode).
    Eval(EvalArgs),
    /// Show what the entity graph holds: entities, communities (with their
    /// extractive summaries), an entity's neighbors.
    Graph(GraphArgs),
    /// Send the index to a Milvus collection (created if missing; a second
    /// push sends only what changed), for search --backend.
    // Hidden from help in a build without the `milvus` feature, where it
    // only says so.
    #[command(hide = cfg!(not(feature = "milvus")))]
    Push(PushArgs),
    /// Print a shell completion script to stdout.
    Completions(CompletionsArgs),
    /// Print a man page (roff) to stdout: memidx(1), or one subcommand's.
    Man(ManArgs),
}

/// Arguments of `memidx push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The collection: milvus://HOST:PORT/COLLECTION, or milvus+tls://… for
    /// TLS (the token, if any, from MILVUS_TOKEN).
    #[arg(value_name = "URI")]
    pub uri: String,
    /// Print no progress bars.
    #[arg(short, long)]
    pub quiet: bool,
    /// Where the index is.
    #[command(flatten)]
    pub location: IndexLocation,
}

/// Arguments of `memidx remember`.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// The note's markdown text; `-` reads it from stdin.
    #[arg(value_name = "TEXT")]
    pub text: String,
    /// The note's title [default: its first line].
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    /// The folder to write to, relative to the indexed folder (created if
    /// missing; it must be inside the indexed folder).
    #[arg(long, value_name = "DIR", default_value = "memories")]
    pub dir: PathBuf,
    /// A front matter entry KEY=VALUE (repeatable).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub meta: Vec<String>,
    /// Refuse a note larger than this (bytes; K, M, G suffixes allowed).
    #[arg(long, value_name = "SIZE", default_value = "10M", value_parser = parse_size)]
    pub max_file_size: u64,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Where the index is.
    #[command(flatten)]
    pub location: IndexLocation,
}

/// Arguments of `memidx man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print; without it, memidx(1), which
    /// lists them all.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// Arguments of `memidx index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The folder of markdown to index.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Re-read every file instead of reusing unchanged ones.
    #[arg(long)]
    pub full: bool,
    /// Write the whole index anew, folding in the delta that runs append
    /// for small changes (unchanged chunks are carried, not re-read); runs
    /// do it on their own once the delta grows.
    #[arg(long, conflicts_with = "full")]
    pub compact: bool,
    /// Skip files larger than this (bytes; K, M, G suffixes allowed).
    #[arg(long, value_name = "SIZE", default_value = "10M", value_parser = parse_size)]
    pub max_file_size: u64,
    /// Target chunk size in estimated tokens; longer sections split at block
    /// boundaries [default: what the index was built with, else 200].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(16..=100_000))]
    pub chunk_tokens: Option<u32>,
    /// Index files that .gitignore or .memidxignore rules exclude. This,
    /// --include and --exclude are kept by the next run unless it gives any
    /// of them (then its own replace all three).
    #[arg(long)]
    pub no_ignore: bool,
    /// Index only files whose path (relative to DIR) matches GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files and folders whose path (relative to DIR) matches GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Embed with this sentence-transformers model folder (config.json,
    /// tokenizer.json, model.safetensors) instead of the bundled model;
    /// later runs keep embedding with it until --bundled-model.
    #[arg(long, value_name = "DIR", env = "MEMIDX_MODEL")]
    pub model: Option<PathBuf>,
    /// Go back to the bundled model (an index built with --model or
    /// --embed-url keeps its model otherwise); the bundled vectors of an
    /// earlier run are reused.
    #[arg(long, conflicts_with = "model")]
    pub bundled_model: bool,
    /// Embed with a model an OpenAI-compatible server runs (POST
    /// URL/embeddings), e.g. http://127.0.0.1:11434/v1 (Ollama) or
    /// https://api.openai.com/v1; searches ask it for their queries, and
    /// later runs keep it until --model or --bundled-model.
    #[arg(
        long,
        value_name = "URL",
        requires = "embed_model",
        conflicts_with_all = ["model", "bundled_model"]
    )]
    pub embed_url: Option<String>,
    /// The model --embed-url's server is asked for, e.g.
    /// text-embedding-3-small or nomic-embed-text.
    #[arg(long, value_name = "NAME", requires = "embed_url")]
    pub embed_model: Option<String>,
    /// Read --embed-url's API key from FILE (else from MEMIDX_EMBED_KEY);
    /// the index records the file's path for its searches, never the key.
    #[arg(long, value_name = "FILE", requires = "embed_url")]
    pub embed_key_file: Option<PathBuf>,
    /// Also build the entity graph (the `graph` list and `memidx graph`);
    /// later runs keep building it until --no-graph. It costs about as much
    /// time as the rest of indexing and a quarter more disk.
    #[arg(long, overrides_with = "no_graph")]
    pub graph: bool,
    /// Stop building the entity graph (drops it from the index).
    #[arg(long, overrides_with = "graph")]
    pub no_graph: bool,
    /// When to write the dense list's sign codes, which searches scan
    /// before scoring their best rows exactly, instead of every vector:
    /// auto writes them from 10,000 chunks and searches use them over
    /// 100,000 (an index alone or several together); later runs keep the
    /// setting [default: the index's, else auto].
    #[arg(long, value_name = "WHEN")]
    pub dense_index: Option<DenseIndexName>,
    /// Where to write the index [default: DIR/.memidx]; keeps it out of
    /// read-only or shared folders.
    #[arg(long, value_name = "PATH", env = "MEMIDX_INDEX")]
    pub index: Option<PathBuf>,
    /// Print no progress bar and no summary (warnings are still printed).
    #[arg(short, long)]
    pub quiet: bool,
    /// After indexing, keep watching DIR and re-index incrementally whenever
    /// files change (one summary line per run) until Ctrl-C or SIGTERM.
    #[arg(long)]
    pub watch: bool,
}

/// Arguments of `memidx search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to search for; several words need no quotes (`memidx search
    /// replication lag` searches "replication lag").
    #[arg(required_unless_present = "request", num_args = 1.., value_name = "QUERY")]
    pub query: Vec<String>,
    /// Read a JSON request (query_id, search_text, top_k, hybrid_params,
    /// metadata_filter) from FILE, or from stdin with '-'; answers in JSON.
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    pub request: Option<PathBuf>,
    /// Number of results [default: 10; at most 10000].
    #[arg(short = 'k', long, value_name = "N")]
    pub top_k: Option<usize>,
    /// Print one JSON document (the response shape) instead of text.
    #[arg(long, conflicts_with = "jsonl")]
    pub json: bool,
    /// Print one JSON result per line (no envelope), for very large --top-k.
    #[arg(long)]
    pub jsonl: bool,
    /// Keep results whole, in rank order, while their texts add up to at
    /// most N characters (a first result longer than N is cut at a word
    /// boundary); the JSON says `truncated` and how many were `omitted`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_chars: Option<u64>,
    /// Leave the text out of every result (ids, scores, sources, lines,
    /// metadata and ranks only), for callers that `memidx get` what they need.
    #[arg(long, conflicts_with = "max_chars")]
    pub no_text: bool,
    /// Show the closest chunks even when no list matches the query with
    /// confidence (no chunk holds its words, and no chunk is closer in
    /// meaning than random text); by default such a search prints nothing
    /// and exits 1.
    #[arg(long)]
    pub keep_all: bool,
    /// Retrieval settings shared with other commands.
    #[command(flatten)]
    pub retrieval: RetrievalArgs,
}

/// Arguments of `memidx get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// A chunk id (`notes/db.md#3`, as search prints it), or an indexed
    /// file's path relative to the indexed folder, optionally with lines:
    /// `PATH:FROM` or `PATH:FROM-` (to the end) or `PATH:FROM-TO`
    /// (inclusive), lines counted from 1; any other range after the last
    /// `:` (`PATH:`, `PATH:-1`, `PATH:+3`) is refused.
    #[arg(value_name = "ID|PATH[:FROM[-TO]]")]
    pub target: String,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Cut the text to at most N characters, at a word boundary.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_chars: Option<u64>,
    /// Where the indexes are.
    #[command(flatten)]
    pub location: IndexesLocation,
    /// Whether a running server may answer.
    #[command(flatten)]
    pub server: ServerChoice,
}

/// Arguments of `memidx explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The query to explain; several words need no quotes.
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    pub query: Vec<String>,
    /// Number of results to explain [default: 10; at most 10000].
    #[arg(short = 'k', long, value_name = "N")]
    pub top_k: Option<usize>,
    /// Explain only this chunk (an id like `notes/db.md#3`), even when it is not a result.
    #[arg(long, value_name = "ID")]
    pub chunk: Option<String>,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Retrieval settings shared with other commands.
    #[command(flatten)]
    pub retrieval: RetrievalArgs,
}

/// Retrieval settings common to the commands that search.
#[derive(Debug, Args)]
pub struct RetrievalArgs {
    /// Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across
    /// keys, OR across values of one key).
    #[arg(short, long = "filter", value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// Which lists to run, comma-separated (e.g. sparse,graph); hybrid is
    /// the default lists: sparse, dense, and graph when the index has one.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "hybrid")]
    pub mode: Vec<Mode>,
    /// Only chunks from files in the current folder and below.
    #[arg(long)]
    pub here: bool,
    /// Run the sparse and dense lists on the Milvus collection URI
    /// (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the
    /// index's files; fused and explained as locally.
    // Hidden from help in a build without the `milvus` feature.
    #[arg(long, value_name = "URI", hide = cfg!(not(feature = "milvus")))]
    pub backend: Option<String>,
    /// Only chunks from files dated at or after WHEN: an ISO date
    /// (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an
    /// offset) or a span back from now (7d, 2w, 6m, 1y).
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Only chunks from files dated at or before WHEN (same forms as
    /// --since; a date includes that whole day).
    #[arg(long, value_name = "WHEN", allow_hyphen_values = true)]
    pub until: Option<String>,
    /// Favour newer chunks: fuse the recency list in at its measured weight
    /// (--recency-weight sets another).
    #[arg(long)]
    pub recent: bool,
    /// Show at most N results from one file; its further matches are
    /// folded into "N more from this file" [default: 3; 0 shows all].
    #[arg(long, value_name = "N")]
    pub per_file: Option<usize>,
    /// Fusion settings.
    #[command(flatten)]
    pub fusion: FusionArgs,
    /// Where the indexes are.
    #[command(flatten)]
    pub location: IndexesLocation,
    /// Whether a running server may answer.
    #[command(flatten)]
    pub server: ServerChoice,
}

/// Whether a running `memidx mcp` may answer for this process.
#[derive(Debug, Args)]
pub struct ServerChoice {
    /// Answer in this process even when a `memidx mcp` server serves the
    /// index (by default it answers, through the socket in the index folder,
    /// with the same output).
    #[arg(long)]
    pub no_server: bool,
}

/// Fusion settings that override the index's defaults.
#[derive(Debug, Args)]
pub struct FusionArgs {
    /// How the lists are fused: relative scores (each list's score over its
    /// best, weighted) or RRF (w / (k + rank)) [default: the index's].
    #[arg(long, value_name = "METHOD")]
    pub fusion: Option<FusionName>,
    /// The RRF constant k in w / (k + rank); without --fusion it asks for
    /// RRF [default: the index's, 60].
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub rrf_k: Option<f64>,
    /// Weight of the sparse (BM25) list in the fusion [default: the index's].
    #[arg(long, value_name = "W", allow_negative_numbers = true)]
    pub sparse_weight: Option<f64>,
    /// Weight of the dense (embedding) list in the fusion [default: the index's].
    #[arg(long, value_name = "W", allow_negative_numbers = true)]
    pub dense_weight: Option<f64>,
    /// Weight of the graph (entities and communities) list in the fusion
    /// [default: the index's, 0 (off) unless eval --save chose one; 0.2 when
    /// --mode names graph].
    #[arg(long, value_name = "W", allow_negative_numbers = true)]
    pub graph_weight: Option<f64>,
    /// Weight of the recency list (newest first) in the fusion; above 0 it
    /// runs [default: 0 (off); 0.1 with --recent or --mode recency].
    #[arg(long, value_name = "W", allow_negative_numbers = true)]
    pub recency_weight: Option<f64>,
    /// Candidates taken from each list before fusion [default: the index's,
    /// else max(200, 2 × top-k)].
    #[arg(long, value_name = "N")]
    pub window: Option<usize>,
    /// Move the dense list's query toward its N best chunks before ranking
    /// (pseudo-relevance feedback); 0 turns it off [default: the index's, 3].
    #[arg(long, value_name = "N")]
    pub dense_feedback: Option<usize>,
    /// Rank the dense list by scanning every vector, even in an index with
    /// an approximate dense index (exact recall, slower on large indexes).
    #[arg(long, conflicts_with = "dense_rescore")]
    pub exact: bool,
    /// Rows the dense list's sign codes choose for exact rescoring: more
    /// finds more of what an exact scan would, at more cost [default:
    /// max(20 × window, 9 × √chunks)].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub dense_rescore: Option<u32>,
    /// Share of the rows the filters allow, above 0 and at most 1, whose
    /// cells the dense list's sign codes are scored in (the cells nearest
    /// the query): less reads fewer codes and may miss more of what an
    /// exact scan finds [default: the cells holding 20 × the rows
    /// rescored; every cell when that is over half the allowed chunks].
    #[arg(long, value_name = "SHARE", conflicts_with = "exact", value_parser = parse_share)]
    pub dense_probe: Option<f64>,
}

/// Where to find the index.
#[derive(Debug, Args)]
pub struct IndexLocation {
    /// The index: a .memidx folder or the folder holding it [default: the
    /// nearest .memidx in the current folder or its parents].
    #[arg(long, value_name = "PATH", env = "MEMIDX_INDEX")]
    pub index: Option<PathBuf>,
}

/// Where to find the indexes a search reads, one or several.
#[derive(Debug, Args)]
pub struct IndexesLocation {
    /// An index: a .memidx folder or the folder holding it, named NAME in
    /// chunk ids when given as NAME=PATH [default: its folder's name];
    /// repeat to search several as one [default: MEMIDX_INDEX, several
    /// separated like PATH; else the nearest .memidx in the current folder
    /// or its parents].
    #[arg(long, value_name = "[NAME=]PATH")]
    pub index: Vec<PathBuf>,
    /// With several indexes, skip one that does not exist (naming it on
    /// stderr) instead of failing.
    #[arg(long)]
    pub skip_missing: bool,
}

/// Arguments of `memidx mcp`.
#[cfg(feature = "mcp")]
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer no tool that writes (no `reindex`, no `remember`).
    #[arg(long)]
    pub read_only: bool,
    /// Keep the index fresh while serving: re-index incrementally whenever
    /// the indexed files change (summary lines on stderr), holding the
    /// writer lock until the server ends.
    #[arg(long, conflicts_with = "read_only")]
    pub watch: bool,
    /// Serve MCP's Streamable HTTP transport at http://ADDR/mcp instead of
    /// stdio, for many clients at once (e.g. 127.0.0.1:8765; port 0 picks
    /// a free one). An address off loopback needs --token-file.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// With --http: require `Authorization: Bearer TOKEN`, the token being
    /// this file's content (at least 16 characters, no spaces).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// Where the indexes are (fixed for the whole session).
    #[command(flatten)]
    pub location: IndexesLocation,
}

/// Arguments of `memidx status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Re-read every index file and check its checksum, and count the
    /// chunks longer than the model reads (loads the model).
    #[arg(long)]
    pub verify: bool,
    /// Where the index is.
    #[command(flatten)]
    pub location: IndexLocation,
}

/// Arguments of `memidx eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Queries, JSON Lines: {"id": …, "text": …} per line.
    #[arg(long, value_name = "FILE")]
    pub queries: PathBuf,
    /// Relevance judgments: `query-id doc-id relevance` per line (a header
    /// line is allowed); a doc id is a file name without `.md`.
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write TREC run files (sparse.trec, dense.trec, hybrid.trec) into DIR.
    #[arg(long, value_name = "DIR")]
    pub run_out: Option<PathBuf>,
    /// Also try a grid of fusions (RRF at several k, relative and adaptive
    /// scores), dense weights and windows; tune on half of the
    /// queries and report the winner on the other (held-out) half.
    #[arg(long)]
    pub sweep: bool,
    /// With --sweep: store the winning settings in the index, so later
    /// searches use them.
    #[arg(long, requires = "sweep")]
    pub save: bool,
    /// Drop a hit whose document id equals the query id (BEIR's rule for
    /// collections whose queries are themselves documents, e.g. ArguAna).
    #[arg(long)]
    pub ignore_identical: bool,
    /// Refuse qrels that name queries the queries file lacks or relevant
    /// documents the index lacks (otherwise a warning, and they are
    /// scored as unjudged and as misses).
    #[arg(long)]
    pub strict: bool,
    /// Print no progress bar.
    #[arg(short, long)]
    pub quiet: bool,
    /// Fusion settings of the default run.
    #[command(flatten)]
    pub fusion: FusionArgs,
    /// Where the index is.
    #[command(flatten)]
    pub location: IndexLocation,
}

/// When to build the dense index, as `--dense-index` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DenseIndexName {
    /// Written from 10,000 chunks, used by searches over
    /// 100,000 (with other indexes).
    Auto,
    /// Whatever the size.
    Always,
    /// Never: searches scan every vector.
    Never,
}

impl From<DenseIndexName> for DenseIndexSetting {
    fn from(name: DenseIndexName) -> Self {
        match name {
            DenseIndexName::Auto => Self::Auto,
            DenseIndexName::Always => Self::Always,
            DenseIndexName::Never => Self::Never,
        }
    }
}

/// A fusion method, as `--fusion` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FusionName {
    /// Each list's score divided by its best score for the query, weighted
    /// and summed.
    Relative,
    /// Relative scores, each list's weight moved for the query by how far
    /// its scores fall over its best 10 (the list whose best stand apart
    /// leads).
    Adaptive,
    /// Weighted Reciprocal Rank Fusion, w / (k + rank).
    Rrf,
}

impl From<FusionName> for FusionMethod {
    fn from(name: FusionName) -> Self {
        match name {
            FusionName::Relative => Self::Relative,
            FusionName::Adaptive => Self::Adaptive,
            FusionName::Rrf => Self::Rrf,
        }
    }
}

/// A ranked list a search runs (several are fused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// The default lists: sparse, dense, and graph when the index has one.
    Hybrid,
    /// BM25 over the identifier-aware tokenizer.
    Sparse,
    /// Embedding similarity.
    Dense,
    /// Chunks reached through the query's entities and their communities.
    Graph,
    /// The allowed chunks by document date, newest first (the query is not read).
    Recency,
}

/// Arguments of `memidx graph`.
#[derive(Debug, Args)]
pub struct GraphArgs {
    /// What to show.
    #[command(subcommand)]
    pub view: GraphTable,
    /// Print one JSON document instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// How many rows to show at most.
    #[arg(
        short = 'n',
        long,
        value_name = "N",
        global = true,
        default_value_t = 20
    )]
    pub limit: usize,
    /// Where the index is.
    #[command(flatten)]
    pub location: IndexLocation,
}

/// What `memidx graph` shows.
#[derive(Debug, Clone, Subcommand)]
pub enum GraphTable {
    /// The entities mentioned by the most chunks, with their community.
    Entities {
        /// Only entities of this kind.
        #[arg(long, value_enum)]
        kind: Option<EntityKindArg>,
    },
    /// The communities of one level, largest first, each with its
    /// extractive summary (central entities and the chunks covering them).
    Communities {
        /// The level: 0 is the finest; higher levels merge communities.
        #[arg(long, value_name = "L", default_value_t = 0)]
        level: usize,
    },
    /// An entity's strongest relations.
    Neighbors {
        /// The entity's name, as `graph entities` shows it (any kind with
        /// that name; --kind picks one).
        entity: String,
        /// Only the entity of this kind.
        #[arg(long, value_enum)]
        kind: Option<EntityKindArg>,
    },
}

/// An entity kind, as `memidx graph` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EntityKindArg {
    /// A word the tokenizer keeps whole (`max_connections`, `getUserById`).
    Identifier,
    /// A plain word used as code (`malloc(`, a word alone in backticks).
    Code,
    /// An error or status code (`E1234`, `HTTP 504`).
    ErrorCode,
    /// A heading.
    Heading,
    /// A front-matter value, `key: value`.
    Metadata,
    /// A file.
    Document,
    /// A capitalized name inside a sentence (`Patroni`).
    Name,
}

/// Arguments of `memidx completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Parses a byte size: a number with an optional K, M or G suffix (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, factor) = match text.char_indices().last() {
        Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&text[..i], 1u64 << 10),
        Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&text[..i], 1 << 20),
        Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(|| format!("'{text}' is not a size (examples: 500000, 512K, 10M, 1G)"))
}

/// Parses a share: a number above 0 and at most 1.
pub fn parse_share(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(share) if share > 0.0 && share <= 1.0 => Ok(share),
        _ => Err(format!(
            "'{text}' is not a share above 0 and at most 1 (examples: 0.2, 1)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("123"), Ok(123));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("10M"), Ok(10 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("ten").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999G").is_err());
    }

    #[test]
    fn shares_are_above_zero_and_at_most_one() {
        assert_eq!(parse_share("0.2"), Ok(0.2));
        assert_eq!(parse_share("1"), Ok(1.0));
        for bad in ["0", "-0.1", "1.5", "NaN", "inf", "a fifth"] {
            assert!(parse_share(bad).is_err(), "{bad}");
        }
    }
}
