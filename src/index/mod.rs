//! The index as a whole: its manifest (`meta.json`), the one file that says
//! which generation is live and with what settings.
//!
//! This floor stands above the lists and the fusion, so the manifest can
//! record their settings (BM25 parameters, fusion defaults, the graph's
//! options) without the storage floor knowing any of them.

pub mod manifest;
