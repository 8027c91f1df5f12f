//! The tools `memidx mcp` offers: names, descriptions, input and output
//! schemas and annotations. The output schemas are the JSON Schemas in
//! `schemas/` (the shapes the command line prints too), written with only
//! what draft-07 and 2020-12 validators read alike, since clients validate
//! with either.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::calls::DEFAULT_MAX_CHARS;
use memidx::corpus::note::DEFAULT_NOTES_DIR;
use memidx::retriever::DEFAULT_PER_FILE;

const SEARCH_SCHEMA: &str = include_str!("../../../schemas/search-response.schema.json");
const GET_SCHEMA: &str = include_str!("../../../schemas/get-response.schema.json");
const EXPLAIN_SCHEMA: &str = include_str!("../../../schemas/explain-response.schema.json");
const STATUS_SCHEMA: &str = include_str!("../../../schemas/status-report.schema.json");

/// What the server tells an agent when it connects.
pub const INSTRUCTIONS: &str = "memidx searches a folder of markdown notes (runbooks, incidents, ADRs…). \
Use `search` first: it matches exact identifiers (INC-2023-Q4-011, max_connections, getUserById, error codes) \
and paraphrases alike, and `filter` (front-matter metadata, e.g. {\"environment\": \"production\"}) is applied \
before ranking, so filtered results are never short. Results carry chunk ids; `get` a chunk id for its full \
text, or a result's source path with from/to for surrounding lines. `explain` shows why a chunk ranks where it \
does; `status` says what is indexed and what changed since.";

/// The tools, with their schemas and annotations (`reindex` unless
/// read-only), for a server of the indexes `names` (in serving order).
pub fn tools(read_only: bool, names: &[String]) -> Result<Vec<Tool>> {
    let several = names.len() > 1;
    let name_of = |what: &str| {
        json!({"type": "string", "enum": names,
               "description": format!("{what}, by name (default: the first, {}).", names[0])})
    };
    let indexes = json!({"type": "array", "items": {"type": "string", "enum": names},
        "minItems": 1, "uniqueItems": true,
        "description": format!(
            "The indexes to search, by name (default: all of them{}). Results from several rank as one index of all their files; with several served, every chunk_id and source starts with its index's name and ':'.",
            match several { true => format!(": {}", names.join(", ")), false => String::new() })});
    let mut retrieval = json!({
        "top_k": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 10,
                  "description": "Number of results."},
        "mode": {"type": "string", "default": "hybrid",
                 "pattern": "^(hybrid|sparse|dense|graph|recency)(,(hybrid|sparse|dense|graph|recency))*$",
                 "description": "Lists to fuse: hybrid (default), or sparse (exact words and identifiers), dense (meaning), graph, recency (newest first), joined by commas."},
        "filter": {"type": "object",
                   "description": "Metadata conditions applied before ranking: key -> value or list of values (AND across keys, OR within a list); every file has path, dir and title; status lists the keys.",
                   "additionalProperties": {"oneOf": [
                       {"type": "string"},
                       {"type": "array", "items": {"type": "string"}, "minItems": 1}]}},
        "sparse_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                          "description": "Tuning: weight of the BM25 list in the fusion (default: the index's)."},
        "dense_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                         "description": "Tuning: weight of the embedding list in the fusion (default: the index's)."},
        "graph_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                         "description": "Tuning: weight of the graph list (default: the index's)."},
        "recency_weight": {"type": "number", "minimum": 0, "maximum": 1000000,
                           "description": "Tuning: weight of the recency list (newest first); above 0 it runs (default 0; 0.1 when mode names recency)."},
        "since": {"type": "string",
                  "description": "Only notes dated at or after this: 2024-03-01, 2024-03-01T12:00 (UTC unless an offset is given) or a span back (7d, 2w, 6m, 1y)."},
        "until": {"type": "string",
                  "description": "Only notes dated at or before this (same forms as since; a date includes that whole day)."},
        "fusion": {"enum": ["relative", "adaptive", "rrf"],
                   "description": "Tuning: relative scores (each list's over its best), adaptive (weights move per query) or rrf (default: the index's)."},
        "rrf_k": {"type": "number", "minimum": 0,
                  "description": "Tuning: RRF's k in weight / (k + rank); alone it asks for RRF (default: the index's, 60)."},
        "window": {"type": "integer", "minimum": 1, "maximum": 100000,
                   "description": "Tuning: candidates per list before fusion (default max(200, 2 x top_k))."},
        "per_file": {"type": "integer", "minimum": 0, "maximum": 10000, "default": DEFAULT_PER_FILE,
                     "description": "At most this many results from one file; its further matches are counted in more_in_file (0: no limit)."}
    });
    retrieval["indexes"] = indexes.clone();
    let mut search_props = retrieval.clone();
    search_props["query"] = json!({"type": "string", "minLength": 1,
        "description": "What to find: an exact identifier (INC-2023-Q4-011, max_connections) or a question in any words."});
    search_props["max_chars"] = json!({"type": "integer", "minimum": 1, "default": DEFAULT_MAX_CHARS,
        "description": "Budget on the results' text: whole results in rank order while they fit; the response says truncated and omitted."});
    search_props["include_text"] = json!({"type": "boolean", "default": true,
        "description": "false: ids, scores, sources, lines and metadata only (then get what you need)."});
    search_props["keep_all"] = json!({"type": "boolean", "default": false,
        "description": "true: return the closest chunks even when nothing matches the query with confidence (by default such a search returns none)."});
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
            "Search the notes for exact identifiers or questions in any words: ranked chunks with text, source, lines, \
             metadata and coverage (the share of the query each holds; strong_match false: none holds much of it). \
             filter narrows by metadata before ranking (status lists the keys). Example: \
             {\"query\": \"INC-2023-Q4-011 gateway timeout\", \"filter\": {\"environment\": \"production\"}, \"top_k\": 5}; \
             then get a result's chunk_id for its whole text.",
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
                "path": {"type": "string", "description": "An indexed file, relative to the indexed folder (path:FROM-TO reads those lines)."},
                "from": {"type": "integer", "minimum": 1, "description": "First line (with path), default 1."},
                "to": {"type": "integer", "minimum": 1, "description": "Last line (with path), default the end."},
                "max_chars": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_CHARS,
                              "description": "Cut the text to this many characters at a word boundary."},
                "indexes": {"type": "array", "items": {"type": "string", "enum": names}, "minItems": 1,
                            "uniqueItems": true,
                            "description": "The indexes the chunk_id or path may come from (default: all); with one named, a chunk_id or path need not start with its name."}
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
            "What is indexed: files, chunks, model, fusion settings, sizes, the metadata keys a filter can name with their \
             most common values, and files changed, added or deleted since indexing (each served index's, by name, when \
             there are several).",
            input(json!({}), &[])?,
        )
        .with_raw_output_schema(match several {
            true => object(slim(statuses_schema()?))?,
            false => output_schema(STATUS_SCHEMA)?,
        })
        .with_annotations(reading("Index status")),
    ];
    if !read_only {
        tools.push(
            Tool::new(
                "reindex",
                "Update the index from the files now (incremental: unchanged files are reused; full re-reads all). \
                 Use after status reports changed files.",
                input(json!({"full": {"type": "boolean", "default": false,
                                      "description": "Re-read every file instead of reusing unchanged ones."},
                             "index": name_of("The index to update")}), &[])?,
            )
            .with_raw_output_schema(object(slim(reindex_schema()))?)
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
                "Write a new dated note (markdown) into the indexed folder and index it at once; returns its path and \
                 chunk ids, which search finds immediately. Never overwrites: a taken name gets -2, -3, ….",
                input(json!({
                    "text": {"type": "string", "minLength": 1, "description": "The note, in markdown."},
                    "title": {"type": "string", "minLength": 1, "description": "Its title (default: its first line)."},
                    "dir": {"type": "string", "default": DEFAULT_NOTES_DIR,
                            "description": "Folder inside the indexed folder to write to (created if missing)."},
                    "meta": {"type": "object", "additionalProperties": {"type": "string"},
                             "description": "Further front matter, key -> value (date and title are set by remember)."},
                    "into": name_of("The index whose folder the note is written into")
                }), &["text"])?,
            )
            .with_raw_output_schema(object(slim(remember_schema()))?)
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
    // The title a host shows, where the current protocol puts it (older
    // hosts read it from the annotations, which keep it too).
    for tool in &mut tools {
        tool.title = tool.annotations.as_ref().and_then(|a| a.title.clone());
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

/// A schema file as an output schema ([`slim`]).
fn output_schema(text: &str) -> Result<Arc<JsonObject>> {
    object(slim(
        serde_json::from_str(text).context("a bundled schema is not JSON")?,
    ))
}

/// `schema` as a tool serves it: without its titles, descriptions,
/// comments and `$id` (its references are all within it), and each type
/// written as a list (`["integer", "null"]`) split into `anyOf` branches of
/// one type each, the same contract.
///
/// The schema files (`schemas/`) keep the prose for people; a client
/// validates a tool's output without it, and every `tools/list` puts the
/// output schemas in a model's context, where the tools' descriptions
/// already say what the results hold (the documented schemas were 45 of its
/// 57 KB). A client that maps schemas onto a dialect of one type a schema
/// (Gemini's function declarations) rejects a list of types; the MCP
/// Inspector's `--strict` check names each. A keyword is changed only where
/// it is one, never a property of that name.
fn slim(schema: Value) -> Value {
    let Value::Object(map) = schema else {
        return schema;
    };
    let slim_each = |value: Value, each: fn(Value) -> Value| match value {
        Value::Object(named) => {
            Value::Object(named.into_iter().map(|(k, v)| (k, each(v))).collect())
        }
        Value::Array(list) => Value::Array(list.into_iter().map(each).collect()),
        other => other,
    };
    let kept = map
        .into_iter()
        .filter(|(keyword, _)| {
            !matches!(
                keyword.as_str(),
                "title" | "description" | "$id" | "$comment"
            )
        })
        .map(|(keyword, value)| {
            let value = match keyword.as_str() {
                // Maps of names to schemas, and lists of schemas.
                "properties" | "patternProperties" | "$defs" | "definitions" | "oneOf"
                | "anyOf" | "allOf" | "prefixItems" => slim_each(value, slim),
                // One schema (or, for `items` in draft-07, a list of them).
                "items"
                | "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "if"
                | "then"
                | "else" => match value {
                    Value::Array(_) => slim_each(value, slim),
                    one => slim(one),
                },
                _ => value,
            };
            (keyword, value)
        });
    let mut kept: JsonObject = kept.collect();
    if let Some(Value::Array(types)) = kept.get("type")
        && !kept.contains_key("anyOf")
    {
        let branches: Vec<Value> = types.iter().map(|t| json!({ "type": t })).collect();
        kept.remove("type");
        kept.insert("anyOf".into(), Value::Array(branches));
    }
    Value::Object(kept)
}

/// The output schema of `status` on a server of several indexes: each
/// one's status report (`schemas/status-report.schema.json`) with its name,
/// in serving order. The report's definitions move to the top, where its
/// `#/$defs/…` references find them.
pub fn statuses_schema() -> Result<Value> {
    let mut status: Value =
        serde_json::from_str(STATUS_SCHEMA).context("a bundled schema is not JSON")?;
    let defs = status.as_object_mut().and_then(|s| s.remove("$defs"));
    if let Some(report) = status.as_object_mut() {
        report.remove("$schema");
        report.remove("$id");
    }
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memidx status of several indexes",
        "type": "object",
        "additionalProperties": false,
        "required": ["indexes"],
        "properties": {
            "indexes": {
                "type": "array",
                "minItems": 2,
                "description": "Each served index, in serving order.",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name", "status"],
                    "properties": {
                        "name": {"type": "string", "description": "The index's name, which its chunk ids start with."},
                        "status": status
                    }
                }
            }
        }
    });
    if let Some(defs) = defs {
        schema["$defs"] = defs;
    }
    Ok(schema)
}

/// The output schema of `remember`.
fn remember_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "memidx remember report",
        "type": "object",
        "additionalProperties": false,
        "required": ["path", "chunk_ids", "indexed", "date", "generation", "embedded", "elapsed_ms"],
        "properties": {
            "path": {"type": "string", "description": "The new file, relative to the indexed folder (after its index's name and ':' when several are served)."},
            "chunk_ids": {"type": "array", "items": {"type": "string"}, "description": "Its chunks' ids, in file order (none when not indexed), as search gives them."},
            "indexed": {"type": "boolean", "description": "False when another run held the index's lock past the wait: the note is written, and that run or the next indexes it."},
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
