//! Embedders: text → unit-length vectors for the dense list.
//!
//! An [`Embedder`] names itself ([`EmbedderInfo`]: id, dimension and a
//! fingerprint of its weights) so an index can record which model built it
//! and a search can refuse to mix models. The bundled model is
//! [`static_model::StaticEmbedder`]; a sentence-transformers folder runs
//! with `bert::BertEmbedder` (cargo feature `bert`, on by default); a
//! model an OpenAI-compatible server runs, with
//! [`endpoint::EndpointEmbedder`]; other models plug in by implementing
//! the trait.

#[cfg(feature = "bert")]
pub mod bert;
pub mod endpoint;
mod fingerprint;
pub mod stamp;
pub mod static_model;
mod wordpiece;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use anyhow::Result;

use serde::{Deserialize, Serialize};

use endpoint::{Endpoint, EndpointEmbedder, EndpointRecord};
use stamp::FolderStamp;
pub use stamp::ModelFiles;

/// Identity of an embedding model, recorded in the index manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedderInfo {
    /// Human-readable model id.
    pub id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Hash of the model's weights, tokenizer and configuration: two models
    /// with the same fingerprint embed identically.
    pub fingerprint: String,
}

/// What kind of model an embedder runs: the fusion picks its defaults by
/// it (a static model's dense list is weaker than a transformer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// A static (model2vec) model: one vector per token, averaged.
    Static,
    /// A transformer (sentence-transformers BERT family).
    Transformer,
}

/// A text embedding model.
pub trait Embedder: Send + Sync {
    /// The model's identity.
    fn info(&self) -> &EmbedderInfo;

    /// What kind of model this is.
    fn kind(&self) -> ModelKind;

    /// Embeds `texts` into one row-major buffer of `texts.len() × dim`
    /// floats; each row has unit length, or is all zeros when the text has
    /// nothing the model knows. Fails only when the model itself does
    /// (e.g. a transformer's inference error).
    fn embed(&self, texts: &[String]) -> Result<Vec<f32>> {
        Ok(self.embed_counting_cuts(texts)?.0)
    }

    /// Embeds `texts` as [`Embedder::embed`] does, and counts those cut at
    /// the model's window ([`Embedder::window`]: what lies past it never
    /// reaches the model), or `None` when the model cannot tell. An index
    /// run reports the count: chunks a model read only in part.
    fn embed_counting_cuts(&self, texts: &[String]) -> Result<(Vec<f32>, Option<usize>)>;

    /// Embeds `texts` as [`Embedder::embed`] does, and says how much of
    /// the time went to waiting on a remote model (`None` for a local
    /// one): `explain` shows a query's network time apart.
    fn embed_timed(&self, texts: &[String]) -> Result<(Vec<f32>, Option<Duration>)> {
        Ok((self.embed(texts)?, None))
    }

    /// The most word pieces of a text the model reads, or `None` when it
    /// does not say (a remote model).
    fn window(&self) -> Option<usize>;

    /// The endpoint serving this model, for the index to record; `None`
    /// for a local model.
    fn endpoint(&self) -> Option<&EndpointRecord> {
        None
    }

    /// Fails when the model is no longer the one this embedder started
    /// as: an index run asks before it commits, so that vectors of two
    /// models never share an index (a remote server can swap its model;
    /// a local model cannot change under a process).
    fn confirm_unchanged(&self) -> Result<()> {
        Ok(())
    }

    /// The weights of the pieces the model splits `word` into, first piece
    /// first (the lengths of their vectors, which a static model made
    /// small for frequent pieces such as `-s` and `-ing`; empty when it
    /// knows none of the word), or `None` when it cannot tell: how well a
    /// model that averages its pieces' vectors knows a word (a static
    /// model knows `outages`, whose first piece `outage` carries most of
    /// its weight, and reads `clipum`, `clip ##um`, as fragments).
    fn piece_weights(&self, word: &str) -> Option<Vec<f32>> {
        let _ = word;
        None
    }

    /// Whether the model reads only the first [`Embedder::window`] word
    /// pieces of `text`, or `None` when it cannot tell: `explain` says so
    /// of a result the dense list saw only in part.
    fn cuts(&self, text: &str) -> Option<bool> {
        let (_, cut) = self.embed_counting_cuts(&[text.to_string()]).ok()?;
        cut.map(|n| n > 0)
    }
}

/// How a transformer's word embeddings (half of a small model's bytes)
/// are held once it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Residency {
    /// Copied into memory at load, so that nothing depends on the model
    /// file afterwards: a long-running process (a server, an index run)
    /// keeps embedding correctly when the file is replaced or shrinks. The
    /// default.
    Copied,
    /// Left in the mapped model file and decoded a token at a time: a
    /// process that embeds a query and exits skips the copy, but stops with
    /// SIGBUS if the file is truncated while it runs.
    Mapped,
}

/// Whether this process asked for [`Residency::Mapped`].
static MAPPED: AtomicBool = AtomicBool::new(false);

/// Sets how the transformers [`load`] loads from now on hold their word
/// embeddings (a process sets it once, before its first load).
pub fn set_residency(residency: Residency) {
    MAPPED.store(residency == Residency::Mapped, Ordering::Relaxed);
}

/// The model an index run embeds with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelSource {
    /// The bundled model.
    #[default]
    Bundled,
    /// A model folder (`--model DIR`).
    Folder(PathBuf),
    /// An OpenAI-compatible endpoint (`--embed-url`).
    Endpoint(Endpoint),
}

/// What an index recorded of the model that built it, for an index run
/// that embeds with the model `source` names again.
#[derive(Debug, Clone, Copy, Default)]
pub struct Known<'a> {
    /// Its identity.
    pub info: Option<&'a EmbedderInfo>,
    /// A folder's files as the run that hashed them found them.
    pub files: Option<&'a ModelFiles>,
    /// The endpoint that served it.
    pub endpoint: Option<&'a EndpointRecord>,
}

/// The embedder for `source`, for an index run: a folder's or the bundled
/// model ([`load_as_recorded`]), or an endpoint, probed now, that keeps
/// the fingerprint `known` recorded while it answers as that model did.
pub fn load_source(source: &ModelSource, known: Known) -> Result<&'static dyn Embedder> {
    match source {
        ModelSource::Bundled => Ok(static_model::StaticEmbedder::bundled()),
        ModelSource::Folder(dir) => {
            let recorded = known.files.zip(known.info).map(|(files, info)| Recorded {
                files,
                fingerprint: &info.fingerprint,
            });
            load_as_recorded(Some(dir), recorded)
        }
        ModelSource::Endpoint(endpoint) => {
            // A server's runs reuse the embedder its last run connected
            // (probed again), rather than leak one, and its connections,
            // a run.
            let same = |e: &EndpointEmbedder| {
                e.serves(endpoint) && known.endpoint.is_some() && known.info == Some(e.info())
            };
            let connect = || EndpointEmbedder::connect(endpoint, known.endpoint.zip(known.info));
            let (embedder, reused) = reuse_or_make(&CONNECTED, same, connect)?;
            if reused {
                embedder.confirm_unchanged()?;
            }
            Ok(embedder)
        }
    }
}

/// The embedder of an index built through the endpoint `record` with the
/// model `info`, for its searches: one per process for each (a server
/// reopens its index after every run), sending nothing until a query.
pub fn load_recorded_endpoint(
    record: &EndpointRecord,
    info: &EmbedderInfo,
) -> Result<&'static dyn Embedder> {
    let same = |e: &EndpointEmbedder| e.endpoint() == Some(record) && e.info() == info;
    let make = || EndpointEmbedder::recorded(record, info);
    Ok(reuse_or_make(&ENDPOINTS, same, make)?.0)
}

/// The embedder in `cache` that is `same`, or a new one `make` makes,
/// kept there for the life of the process; and whether it was reused.
fn reuse_or_make(
    cache: &Mutex<Vec<&'static EndpointEmbedder>>,
    same: impl Fn(&EndpointEmbedder) -> bool,
    make: impl FnOnce() -> Result<EndpointEmbedder>,
) -> Result<(&'static EndpointEmbedder, bool)> {
    let mut cached = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(embedder) = cached.iter().find(|e| same(e)) {
        return Ok((*embedder, true));
    }
    let embedder: &'static EndpointEmbedder = Box::leak(Box::new(make()?));
    cached.push(embedder);
    Ok((embedder, false))
}

/// The endpoint embedders [`load_source`] connected in this process.
static CONNECTED: Mutex<Vec<&'static EndpointEmbedder>> = Mutex::new(Vec::new());

/// The endpoint embedders [`load_recorded_endpoint`] made in this process.
static ENDPOINTS: Mutex<Vec<&'static EndpointEmbedder>> = Mutex::new(Vec::new());

/// The embedder for a model folder (`--model DIR`: a model2vec folder, or
/// a sentence-transformers BERT folder), or the bundled model.
///
/// A loaded transformer lives as long as the process, like the bundled
/// model, so every list can hold a plain `&'static` reference to it; so a
/// folder is loaded once per process while its files stay the same (a
/// server reopens its index after every run, and would otherwise read the
/// model again and keep every copy).
pub fn load(model_dir: Option<&Path>) -> Result<&'static dyn Embedder> {
    load_as_recorded(model_dir, None)
}

/// What an index recorded of the model that built it: its files' stamps
/// ([`files_of`]) and its fingerprint.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// The files as the run that hashed them found them.
    pub files: &'a ModelFiles,
    /// Their fingerprint.
    pub fingerprint: &'a str,
}

/// [`load`], taking `recorded`'s fingerprint instead of hashing the model
/// when the folder's files are still the ones it describes (see
/// [`stamp`]).
pub fn load_as_recorded(
    model_dir: Option<&Path>,
    recorded: Option<Recorded>,
) -> Result<&'static dyn Embedder> {
    let Some(dir) = model_dir else {
        return Ok(static_model::StaticEmbedder::bundled());
    };
    let stamp = FolderStamp::of(dir);
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, embedder)) = loaded.iter().find(|(s, _)| stamp.as_ref() == Some(s)) {
        return Ok(*embedder);
    }
    let known = recorded
        .filter(|r| stamp.as_ref().is_some_and(|s| &s.files == r.files))
        .map(|r| r.fingerprint);
    let embedder: &'static dyn Embedder = if is_model2vec_folder(dir) {
        Box::leak(Box::new(static_model::StaticEmbedder::load(dir, known)?))
    } else {
        load_folder(dir, known)?
    };
    if let Some(stamp) = stamp {
        loaded.push((stamp, embedder));
    }
    Ok(embedder)
}

/// The stamps of the files `embedder` was loaded from, taken before they
/// were read, for an index to record beside its fingerprint; `None` for
/// the bundled model, and when a file had changed too recently for its
/// stamp to vouch for it.
pub fn files_of(embedder: &dyn Embedder) -> Option<ModelFiles> {
    let loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    loaded
        .iter()
        .find(|(_, e)| std::ptr::addr_eq(*e, embedder))
        .filter(|(stamp, _)| stamp.settled)
        .map(|(stamp, _)| stamp.files.clone())
}

/// The models [`load`] has loaded from folders in this process, by the
/// stamp their folder had when they were.
static LOADED: Mutex<Vec<(FolderStamp, &'static dyn Embedder)>> = Mutex::new(Vec::new());

/// True when `dir/config.json` names a model2vec model.
fn is_model2vec_folder(dir: &Path) -> bool {
    std::fs::read(dir.join("config.json"))
        .is_ok_and(|config| static_model::is_model2vec_config(&config))
}

/// Loads the transformer in `dir`, taking `known` as its fingerprint
/// instead of hashing it when given.
#[cfg(feature = "bert")]
fn load_folder(dir: &Path, known: Option<&str>) -> Result<&'static dyn Embedder> {
    let residency = if MAPPED.load(Ordering::Relaxed) {
        Residency::Mapped
    } else {
        Residency::Copied
    };
    Ok(Box::leak(Box::new(bert::BertEmbedder::load(
        dir, residency, known,
    )?)))
}

#[cfg(not(feature = "bert"))]
fn load_folder(dir: &Path, _known: Option<&str>) -> Result<&'static dyn Embedder> {
    anyhow::bail!(
        "this memidx was built without the 'bert' feature, so it cannot run the model in {}",
        dir.display()
    )
}

/// Scales `v` to unit length (left as is when all zeros), accumulating in
/// f64. Shared by the transformer's pooling and the dense list's feedback.
pub fn normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in v {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder holding the bundled model's files.
    fn bundled_model_copy() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/model");
        for name in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::copy(assets.join(name), dir.path().join(name)).unwrap();
        }
        dir
    }

    #[test]
    fn a_model_folder_is_loaded_once_until_its_files_change() {
        let dir = bundled_model_copy();
        let first = load(Some(dir.path())).unwrap();
        let again = load(Some(&dir.path().join("."))).unwrap();
        assert!(std::ptr::addr_eq(first, again));

        let config = dir.path().join("config.json");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{text} ")).unwrap();
        let changed = load(Some(dir.path())).unwrap();
        assert!(!std::ptr::addr_eq(first, changed));
        assert_ne!(first.info().fingerprint, changed.info().fingerprint);
        assert!(std::ptr::addr_eq(changed, load(Some(dir.path())).unwrap()));
    }

    #[test]
    fn a_recorded_fingerprint_is_taken_while_the_files_are_those_it_was_recorded_with() {
        let dir = bundled_model_copy();
        let fresh = FolderStamp::of(dir.path()).unwrap();
        assert!(!fresh.settled, "files copied just now vouch for nothing");
        std::thread::sleep(stamp::STILL_FOR + std::time::Duration::from_millis(100));

        let files = FolderStamp::of(dir.path()).unwrap().files;
        assert_eq!(files, fresh.files);
        let recorded = Recorded {
            files: &files,
            fingerprint: "xxh3:0000000000000001",
        };
        let taken = load_as_recorded(Some(dir.path()), Some(recorded)).unwrap();
        assert_eq!(taken.info().fingerprint, recorded.fingerprint);
        assert_eq!(files_of(taken), Some(files.clone()));

        // The same bytes written again: a new change time, so hashed.
        let config = dir.path().join("config.json");
        std::fs::write(&config, std::fs::read(&config).unwrap()).unwrap();
        let hashed = load_as_recorded(Some(dir.path()), Some(recorded)).unwrap();
        assert_ne!(hashed.info().fingerprint, recorded.fingerprint);
        assert_eq!(
            hashed.info().fingerprint,
            static_model::StaticEmbedder::bundled().info().fingerprint
        );
        assert_eq!(files_of(hashed), None, "changed just now");
    }
}
