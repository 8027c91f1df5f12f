//! memidx — a search memory over local folders of markdown.
//!
//! The engine behind the `memidx` binary. A folder of markdown is split into
//! heading-aware chunks ([`corpus`]), indexed into ranked lists ([`lists`]: BM25
//! over an identifier-aware tokenizer, [`text`]), stored as immutable generations
//! under `.memidx/` ([`store`]), and searched by a [`retriever`] that runs every
//! list, applies metadata filters ([`filter`]) before each list takes its top
//! window, and fuses the rankings by relative scores (the default) or
//! Reciprocal Rank Fusion ([`fusion`]).
//! Behind the `milvus` feature, `remote` pushes an index to a Milvus
//! collection and runs the lists there. The printers ([`output`]) render what the engine returns; the engine
//! never prints. The command line (`cli`, `config`, `cmd`) is the binary's,
//! not the library's; `ARCHITECTURE.md` maps the floors.

#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod corpus;
pub mod embed;
pub mod error;
pub mod eval;
pub mod filter;
pub mod fusion;
pub mod index;
pub mod indexer;
pub mod lists;
pub mod output;
pub mod progress;
#[cfg(feature = "milvus")]
pub mod remote;
pub mod request;
pub mod retriever;
pub mod store;
#[cfg(test)]
mod testing;
pub mod text;
