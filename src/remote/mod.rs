//! The Milvus backend: `memidx push` sends an index to a Milvus collection,
//! and `search|explain --backend milvus://…` runs the sparse and dense
//! lists there, fused and explained by the retriever's own code.
//!
//! Milvus is the distributed engine chosen (issue 22) because it has BM25
//! *and* dense vectors *and* filters inside each sub-search, and because its
//! real gRPC protocol can be served here for tests (`milvus-lite server`).
//! The client is the official Rust SDK, `milvus-sdk-rust` 3.0 (crate
//! `milvus`, gRPC over tonic on tokio): the only maintained Rust client. It
//! brings about 230 crates, so all of this is behind the cargo feature
//! `milvus`, off by default.
//!
//! - [`target`]: the `milvus://HOST:PORT/COLLECTION` address;
//! - [`connection`]: one client on a small tokio runtime, called blocking;
//! - [`collection`]: the collection's schema, indexes and memidx records;
//! - [`rows`]: a chunk as a row, its terms as opaque tokens;
//! - [`push`]: the incremental push;
//! - [`expr`]: a filter as a Milvus boolean expression;
//! - [`lists`]: the sparse and dense lists run on Milvus.

pub mod collection;
pub mod connection;
pub mod expr;
pub mod lists;
pub mod push;
pub mod rows;
pub mod target;

pub use lists::Milvus;
pub use push::{PushReport, push};
pub use target::Target;
