//! `--backend`: where search and explain run their lists — the index's own
//! files, or a Milvus collection `memidx push` filled (cargo feature
//! `milvus`; a build without it says so).

use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use crate::config::SearchConfig;
use memidx::retriever::Retriever;

/// Whether this process answers one command and exits ([`answer_once`]).
static ONCE: AtomicBool = AtomicBool::new(false);

/// Says that this process answers one command and exits: the retrievers
/// [`open`] gives are then never dropped.
pub fn answer_once() {
    ONCE.store(true, Ordering::Relaxed);
}

/// A retriever [`open`] gave: dropped with it, unless the process answers
/// once ([`answer_once`]). Then the kernel releases the whole address space
/// at exit at once, where unmapping the index's files one by one, while
/// rayon's threads live, interrupts them for each (bench/README.md); a
/// server answering for many processes drops each.
pub struct Opened(Option<Retriever>);

impl Deref for Opened {
    type Target = Retriever;

    fn deref(&self) -> &Retriever {
        self.0.as_ref().expect("held until dropped")
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        if ONCE.load(Ordering::Relaxed) {
            std::mem::forget(self.0.take());
        }
    }
}

/// Opens the retriever `config` asks for: local, or with `--backend` on
/// the Milvus collection it names.
pub fn open(config: &SearchConfig) -> Result<Opened> {
    let named = &config.indexes.named;
    let retriever = match (&config.backend, &named[..]) {
        (None, named) => Retriever::open_several(named, &config.lists),
        (Some(uri), [(_, index_dir)]) => remote(index_dir, config, uri),
        (Some(_), _) => Err(anyhow::anyhow!(
            "--backend searches one index; give one --index"
        )),
    }?;
    Ok(Opened(Some(retriever)))
}

/// The collection `uri` (the token from `MILVUS_TOKEN`).
#[cfg(feature = "milvus")]
pub fn target(uri: &str) -> Result<memidx::remote::Target> {
    memidx::remote::Target::parse(uri, std::env::var("MILVUS_TOKEN").ok())
}

#[cfg(feature = "milvus")]
fn remote(index_dir: &Path, config: &SearchConfig, uri: &str) -> Result<Retriever> {
    let backend = memidx::remote::Milvus::new(target(uri)?);
    Retriever::open_on(index_dir, &config.lists, std::sync::Arc::new(backend))
}

#[cfg(not(feature = "milvus"))]
fn remote(_: &Path, _: &SearchConfig, _: &str) -> Result<Retriever> {
    Err(not_built())
}

/// The error of a Milvus command in a build without the backend.
#[cfg(not(feature = "milvus"))]
pub fn not_built() -> anyhow::Error {
    anyhow::anyhow!(
        "this memidx was built without the Milvus backend; build it with 'cargo install --path . --features milvus'"
    )
}
