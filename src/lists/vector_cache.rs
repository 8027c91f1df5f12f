//! Vectors kept across runs and across models, keyed by the text embedded.
//!
//! Embedding is the slow part of indexing with a transformer (tens of
//! chunks per second), so a vector once computed is reused whenever the
//! same model meets the same text again:
//!
//! - the live generation's vectors, with their keys (`keys.u64`, see
//!   [`dense::vector_key`]), serve the next run of the same model: a chunk
//!   of an unchanged, moved or copied file is not embedded again;
//! - when a run switches models, the previous model's vectors are moved
//!   (renamed, not copied) to `.memidx/cache/<fingerprint>/`, so switching
//!   back embeds nothing that was embedded before. The cache keeps the
//!   [`KEPT_MODELS`] most recently replaced models; a model's cache is
//!   dropped once its vectors are live again.
//!
//! A cached folder carries `cache.json`: the model's identity and the
//! size, CRC-32 and sealed mtime of each file (the same checks as a
//! generation's, [`checks`]). A cache that fails them, or names another
//! model, is ignored with a warning and never trusted — the run embeds
//! instead, so a bad cache costs time, never results.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, ensure};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::store::checks::{self, Checksums};

use super::dense::{self, KEYS_FILE, SCALES_FILE, StoredVectors, VECTORS_FILE};
use crate::embed::EmbedderInfo;
use crate::store::generation::ChunkOrd;
use crate::store::{atomic, bounded, damaged};

/// Folder, inside the index folder, holding other models' vectors.
pub const CACHE_DIR: &str = "cache";

/// The description of one cached model's vectors.
const CACHE_META: &str = "cache.json";

/// Largest `cache.json` read (it names a model and three files' checks).
const MAX_CACHE_META_BYTES: u64 = 1 << 20;

/// How many replaced models keep their vectors.
const KEPT_MODELS: usize = 3;

/// The files that make up a model's vectors.
const VECTOR_FILES: [&str; 3] = [VECTORS_FILE, SCALES_FILE, KEYS_FILE];

/// What `cache.json` records.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheMeta {
    /// The model that made the vectors.
    embedder: EmbedderInfo,
    /// Checks of the vector files.
    checksums: Checksums,
}

/// One model's stored vectors, looked up by key.
pub struct ReusableVectors {
    /// The vectors of each folder they were opened from.
    stores: Vec<StoredVectors>,
    /// Folder and row by key; the keys are already hashes (xxh3), so
    /// `rustc-hash`'s cheap hasher spreads them as well as the default
    /// one, faster.
    by_key: FxHashMap<u64, (u32, ChunkOrd)>,
}

impl ReusableVectors {
    /// Opens the vectors of dimension `dim` in `dirs` (an index's parts,
    /// or a cache folder) with their keys. A folder given with its checks
    /// is mapped lazily and each row read is checked by its blocks (a
    /// run that reuses a few rows reads only theirs); one given without
    /// was re-read whole against its checks, and is read in at once.
    fn open(dirs: &[(&Path, Option<&Checksums>)], dim: usize) -> Result<Self> {
        let mut stores = Vec::with_capacity(dirs.len());
        let mut by_key = FxHashMap::default();
        for (at, (dir, checks)) in dirs.iter().enumerate() {
            let keys = dense::read_keys(dir)?;
            stores.push(match checks {
                Some(checks) => {
                    StoredVectors::open_lazily(dir, keys.len(), dim)?.checked(checks)?
                }
                None => StoredVectors::open(dir, keys.len(), dim)?,
            });
            by_key.reserve(keys.len());
            for (row, key) in keys.iter().enumerate() {
                by_key.insert(*key, (at as u32, row as ChunkOrd));
            }
        }
        Ok(Self { stores, by_key })
    }

    /// The vector stored under `key`, if any, as stored: int8 values and scale.
    pub fn get(&self, key: u64) -> Result<Option<(&[i8], f32)>> {
        self.by_key
            .get(&key)
            .map(|(at, row)| self.stores[*at as usize].quantized_row(*row))
            .transpose()
    }
}

/// The folder caching the vectors of the model with `fingerprint`.
fn model_dir(index_dir: &Path, fingerprint: &str) -> PathBuf {
    let name: String = fingerprint
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    index_dir.join(CACHE_DIR).join(name)
}

/// The vectors a run with `embedder` may reuse: the live parts' in
/// `gen_dirs` when `live` (the model that made them) is the same model,
/// else that model's cache. A part given with its checks is read row by
/// row, checked ([`ReusableVectors::open`]). Problems become warnings and
/// mean embedding.
pub fn reusable(
    index_dir: &Path,
    gen_dirs: &[(&Path, Option<&Checksums>)],
    live: Option<&EmbedderInfo>,
    embedder: &EmbedderInfo,
    warnings: &mut Vec<String>,
) -> Option<ReusableVectors> {
    let (dir, opened) = match gen_dirs.first() {
        Some((base, _)) if live == Some(embedder) => (
            base.to_path_buf(),
            ReusableVectors::open(gen_dirs, embedder.dim),
        ),
        _ => {
            let dir = model_dir(index_dir, &embedder.fingerprint);
            if !dir.join(CACHE_META).exists() {
                return None;
            }
            let opened = check_cached(&dir, embedder)
                .and_then(|()| ReusableVectors::open(&[(&dir, None)], embedder.dim));
            (dir, opened)
        }
    };
    match opened {
        Ok(vectors) => Some(vectors),
        Err(err) => {
            warnings.push(format!(
                "not reusing the vectors in {}: {err:#}",
                dir.display()
            ));
            None
        }
    }
}

/// Checks a cached folder against its `cache.json`.
fn check_cached(dir: &Path, embedder: &EmbedderInfo) -> Result<()> {
    let meta_path = dir.join(CACHE_META);
    let bytes = bounded::read_regular(&meta_path, MAX_CACHE_META_BYTES)
        .map_err(|err| anyhow!(damaged(&meta_path, &err.to_string())))?;
    let meta: CacheMeta =
        serde_json::from_slice(&bytes).with_context(|| damaged(&meta_path, "does not parse"))?;
    ensure!(
        meta.embedder == *embedder,
        "{} holds the vectors of another model ({})",
        dir.display(),
        meta.embedder.id
    );
    for name in VECTOR_FILES {
        ensure!(
            meta.checksums.contains_key(name),
            damaged(&dir.join(name), "is not in cache.json")
        );
    }
    // Re-read in full: reused vectors are written into the new generation
    // under new checksums, so damage must be caught here.
    match checks::verify(dir, &meta.checksums).into_iter().next() {
        Some(problem) => Err(anyhow::anyhow!(problem)),
        None => Ok(()),
    }
}

/// Keeps the vectors of a replaced generation: moves them from `gen_dir`
/// (made by `embedder`, checked by `checksums`) into the cache, then drops
/// the oldest cached models beyond [`KEPT_MODELS`]. Called after the new
/// generation is live and before the old one is removed; a failure here
/// loses only the cache.
pub fn keep(
    index_dir: &Path,
    gen_dir: &Path,
    embedder: &EmbedderInfo,
    checksums: &Checksums,
) -> Result<()> {
    let dir = model_dir(index_dir, &embedder.fingerprint);
    let staging = dir.with_extension("tmp");
    for stale in [&dir, &staging] {
        if stale.exists() {
            fs::remove_dir_all(stale)
                .with_context(|| format!("cannot remove {}", stale.display()))?;
        }
    }
    fs::create_dir_all(&staging).with_context(|| format!("cannot create {}", staging.display()))?;
    let mut kept = Checksums::new();
    for name in VECTOR_FILES {
        let check = checksums
            .get(name)
            .with_context(|| damaged(&gen_dir.join(name), "is not in the manifest"))?;
        fs::rename(gen_dir.join(name), staging.join(name))
            .with_context(|| format!("cannot move {} into the cache", name))?;
        kept.insert(name.to_string(), *check);
    }
    let meta = CacheMeta {
        embedder: embedder.clone(),
        checksums: kept,
    };
    atomic::write_atomic(
        &staging.join(CACHE_META),
        &serde_json::to_vec_pretty(&meta)?,
    )?;
    fs::rename(&staging, &dir).with_context(|| format!("cannot create {}", dir.display()))?;
    prune(&index_dir.join(CACHE_DIR), KEPT_MODELS);
    Ok(())
}

/// Drops the cache of `embedder` (its vectors are live again).
pub fn forget(index_dir: &Path, embedder: &EmbedderInfo) {
    let _ = fs::remove_dir_all(model_dir(index_dir, &embedder.fingerprint));
}

/// Removes the half-moved caches (`<fingerprint>.tmp/`) an interrupted
/// model switch left behind.
pub fn remove_staging(index_dir: &Path) {
    let Ok(entries) = fs::read_dir(index_dir.join(CACHE_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "tmp") {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// Removes all but the `keep` most recently cached models. Only folders
/// with a `cache.json` count; anything else in `cache/` is left alone.
fn prune(cache_dir: &Path, keep: usize) {
    let Ok(entries) = fs::read_dir(cache_dir) else {
        return;
    };
    let mut cached = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if let Ok(written) = fs::metadata(path.join(CACHE_META)).and_then(|m| m.modified()) {
            cached.push((written, path));
        }
    }
    cached.sort_by_key(|(written, _)| std::cmp::Reverse(*written));
    for (_, path) in cached.into_iter().skip(keep) {
        let _ = fs::remove_dir_all(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(fingerprint: &str) -> EmbedderInfo {
        EmbedderInfo {
            id: "test-model".into(),
            dim: 2,
            fingerprint: fingerprint.into(),
        }
    }

    /// A generation-like folder holding two vectors, sealed and checked.
    fn vectors_in(dir: &Path) -> Checksums {
        fs::create_dir_all(dir).unwrap();
        let keys = [dense::vector_key("alpha"), dense::vector_key("beta")];
        let mut vectors = dense::QuantizedVectors::zeros(2, 2);
        vectors.set(0, &[1.0, 0.0]);
        vectors.set(1, &[0.0, 1.0]);
        let mut writer = dense::VectorWriter::create(dir).unwrap();
        writer.append(vectors.rows(), &keys).unwrap();
        writer.finish().unwrap();
        checks::compute(dir, &Checksums::new()).unwrap()
    }

    #[test]
    fn kept_vectors_come_back_for_the_same_model_only() {
        let index = tempfile::tempdir().unwrap();
        let gen_dir = index.path().join("gen-1");
        let checksums = vectors_in(&gen_dir);
        let old = info("xxh3:0001");
        keep(index.path(), &gen_dir, &old, &checksums).unwrap();
        assert!(!gen_dir.join(VECTORS_FILE).exists(), "moved, not copied");

        let mut warnings = Vec::new();
        let cached = reusable(index.path(), &[], None, &old, &mut warnings).unwrap();
        let (values, scale) = cached.get(dense::vector_key("beta")).unwrap().unwrap();
        assert_eq!(values, [0, 127]);
        assert_eq!(scale, 1.0 / 127.0);
        assert_eq!(cached.get(dense::vector_key("gamma")).unwrap(), None);
        assert!(reusable(index.path(), &[], None, &info("xxh3:0002"), &mut warnings).is_none());
        assert!(warnings.is_empty(), "{warnings:?}");

        forget(index.path(), &old);
        assert!(reusable(index.path(), &[], None, &old, &mut warnings).is_none());
    }

    #[test]
    fn a_damaged_cache_is_ignored_with_a_warning() {
        let index = tempfile::tempdir().unwrap();
        let gen_dir = index.path().join("gen-1");
        let checksums = vectors_in(&gen_dir);
        let model = info("xxh3:0001");
        keep(index.path(), &gen_dir, &model, &checksums).unwrap();
        let vectors = model_dir(index.path(), &model.fingerprint).join(VECTORS_FILE);
        fs::write(&vectors, [0u8; 4]).unwrap();
        let mut warnings = Vec::new();
        assert!(reusable(index.path(), &[], None, &model, &mut warnings).is_none());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("vectors.i8"), "{warnings:?}");
    }

    #[test]
    fn only_the_most_recent_models_are_kept() {
        let index = tempfile::tempdir().unwrap();
        for n in 0..KEPT_MODELS + 2 {
            let gen_dir = index.path().join(format!("gen-{n}"));
            let checksums = vectors_in(&gen_dir);
            keep(index.path(), &gen_dir, &info(&format!("fp{n}")), &checksums).unwrap();
            // Distinct modification times order the models.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let left = fs::read_dir(index.path().join(CACHE_DIR)).unwrap().count();
        assert_eq!(left, KEPT_MODELS);
        let mut warnings = Vec::new();
        assert!(reusable(index.path(), &[], None, &info("fp0"), &mut warnings).is_none());
        let newest = info(&format!("fp{}", KEPT_MODELS + 1));
        assert!(reusable(index.path(), &[], None, &newest, &mut warnings).is_some());
    }
}
