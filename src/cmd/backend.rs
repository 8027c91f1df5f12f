//! `--backend`: where search and explain run their lists — the index's own
//! files, or a Milvus collection `memidx push` filled (cargo feature
//! `milvus`; a build without it says so). A server answering the CLI keeps
//! the local retrievers it opened while their generations are live.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Result;

use crate::config::SearchConfig;
use memidx::index::LiveStamp;
use memidx::retriever::{ListSelection, Retriever};

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
/// rayon's threads live, interrupts them for each (bench/README.md).
pub struct Opened(Option<Arc<Retriever>>);

impl Deref for Opened {
    type Target = Retriever;

    fn deref(&self) -> &Retriever {
        self.0.as_deref().expect("held until dropped")
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        if ONCE.load(Ordering::Relaxed) {
            std::mem::forget(self.0.take());
        }
    }
}

/// How many retrievers a server keeps open for the commands it answers.
const KEPT_AT_MOST: usize = 4;

/// A retriever a server keeps open for the commands it answers (the
/// resident path, `cmd/resident.rs`): the indexes and lists it was opened
/// for, and the stamps of the generations it opened.
struct Kept {
    named: Vec<(Option<String>, PathBuf)>,
    lists: ListSelection,
    stamps: Vec<Option<LiveStamp>>,
    retriever: Arc<Retriever>,
}

/// The retrievers kept, the last used last.
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// The local retriever of `named` with `lists`: in a process that answers
/// many commands, one kept open since an earlier command while every index
/// still has the generation it opened (opening a large index costs about
/// as much as searching it), else opened now and kept.
fn local(named: &[(Option<String>, PathBuf)], lists: &ListSelection) -> Result<Arc<Retriever>> {
    if ONCE.load(Ordering::Relaxed) {
        return Ok(Arc::new(Retriever::open_several(named, lists)?));
    }
    let stamps: Vec<Option<LiveStamp>> = named.iter().map(|(_, dir)| LiveStamp::of(dir)).collect();
    let kept = || KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    {
        let mut kept = kept();
        kept.retain(|k| k.named != named || k.lists != *lists || k.stamps == stamps);
        if let Some(at) = kept
            .iter()
            .position(|k| k.named == named && k.lists == *lists)
        {
            let found = kept.remove(at);
            let retriever = found.retriever.clone();
            kept.push(found);
            return Ok(retriever);
        }
    }
    let retriever = Arc::new(Retriever::open_several(named, lists)?);
    let mut kept = kept();
    if kept.len() >= KEPT_AT_MOST {
        kept.remove(0);
    }
    kept.push(Kept {
        named: named.to_vec(),
        lists: *lists,
        stamps,
        retriever: retriever.clone(),
    });
    Ok(retriever)
}

/// Opens the retriever `config` asks for: local, or with `--backend` on
/// the Milvus collection it names.
pub fn open(config: &SearchConfig) -> Result<Opened> {
    let named = &config.indexes.named;
    let retriever = match (&config.backend, &named[..]) {
        (None, named) => local(named, &config.lists),
        (Some(uri), [(_, index_dir)]) => remote(index_dir, config, uri).map(Arc::new),
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
