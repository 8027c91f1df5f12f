//! memidx's integration tests, as one test binary.
//!
//! Each module below used to be its own file under `tests/`, and so its own
//! binary: seventeen links of the whole dependency tree (candle, tantivy, …)
//! took minutes and gigabytes of disk per build. One crate links once; the
//! modules still run in parallel, and `cargo test --test integration search::`
//! runs one of them.

mod common;

mod architecture;
mod bm25_oracle;
mod budget;
mod completions;
mod dense_index;
mod embeddings;
mod endpoint;
mod eval;
mod findability;
mod get;
mod graph;
mod hardening;
mod hybrid;
mod incremental;
mod index;
mod index_folder;
mod integrity;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_http;
#[cfg(feature = "mcp")]
mod mcp_schemas;
#[cfg(feature = "mcp")]
mod mcp_stdio;
#[cfg(feature = "mcp")]
mod mcp_ts;
mod milvus;
mod minilm;
mod parts;
mod properties;
mod ranking;
mod reliability;
mod remember;
#[cfg(all(unix, feature = "mcp"))]
mod resident;
mod reuse;
mod schema;
mod schema_outputs;
mod search;
mod several;
#[cfg(feature = "mcp")]
mod several_mcp;
mod status;
mod terminal;
mod time;
mod tour;
mod ux;
#[cfg(unix)]
mod watch;
