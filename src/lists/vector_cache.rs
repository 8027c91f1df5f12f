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
use std::sync::{Arc, OnceLock};

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
    /// Each folder's keys, by row.
    keys: Vec<Arc<[u64]>>,
    /// Folder and row by key, made the first time a lookup asks for many
    /// keys ([`ReusableVectors::find`]). The keys are already hashes
    /// (xxh3), so `rustc-hash`'s cheap hasher spreads them as well as the
    /// default one, faster.
    by_key: OnceLock<FxHashMap<u64, (u32, ChunkOrd)>>,
}

/// A stored vector: its int8 values and its scale.
pub type StoredRow<'a> = (&'a [i8], f32);

/// A lookup of at most one key per this many stored rows scans the keys
/// rather than making the map: a run told one path reuses a few rows out
/// of hundreds of thousands, and one pass over their keys costs a small
/// part of what hashing them all does.
const SCAN_SHARE: usize = 64;

impl ReusableVectors {
    /// Opens the vectors of dimension `dim` of `parts` (an index's, or a
    /// cache folder's), mapped lazily: a run that reuses a few rows reads
    /// only their pages. A part given with its checks has each row read
    /// checked by its blocks; one given without was re-read whole against
    /// its checks.
    fn open(parts: &[PartVectors], dim: usize) -> Result<Self> {
        let mut stores = Vec::with_capacity(parts.len());
        for part in parts {
            let store = StoredVectors::open_lazily(part.dir, part.keys.len(), dim)?;
            stores.push(match part.checks {
                Some(checks) => store.checked(checks)?,
                None => store,
            });
        }
        Ok(Self {
            stores,
            keys: parts.iter().map(|part| part.keys.clone()).collect(),
            by_key: OnceLock::new(),
        })
    }

    /// The vectors stored under `keys`, each as stored (int8 values and
    /// scale) or `None`; where a key is stored twice, the last folder's
    /// last row.
    pub fn find(&self, keys: &[u64]) -> Result<Vec<Option<StoredRow<'_>>>> {
        let rows: usize = self.keys.iter().map(|keys| keys.len()).sum();
        let found: Vec<Option<(u32, ChunkOrd)>> =
            match self.by_key.get().is_none() && keys.len() * SCAN_SHARE <= rows {
                true => self.scan(keys),
                false => {
                    let by_key = self.by_key.get_or_init(|| self.map());
                    keys.iter().map(|key| by_key.get(key).copied()).collect()
                }
            };
        (found.into_iter())
            .map(|at| {
                at.map(|(store, row)| self.stores[store as usize].quantized_row(row))
                    .transpose()
            })
            .collect()
    }

    /// Every stored key's folder and row (later ones win).
    fn map(&self) -> FxHashMap<u64, (u32, ChunkOrd)> {
        let mut by_key = FxHashMap::default();
        by_key.reserve(self.keys.iter().map(|keys| keys.len()).sum());
        for (at, keys) in self.keys.iter().enumerate() {
            for (row, key) in keys.iter().enumerate() {
                by_key.insert(*key, (at as u32, row as ChunkOrd));
            }
        }
        by_key
    }

    /// Where each of `wanted` is stored, by one pass over every key.
    fn scan(&self, wanted: &[u64]) -> Vec<Option<(u32, ChunkOrd)>> {
        let mut found: FxHashMap<u64, Option<(u32, ChunkOrd)>> =
            wanted.iter().map(|key| (*key, None)).collect();
        for (at, keys) in self.keys.iter().enumerate() {
            for (row, key) in keys.iter().enumerate() {
                if let Some(slot) = found.get_mut(key) {
                    *slot = Some((at as u32, row as ChunkOrd));
                }
            }
        }
        wanted.iter().map(|key| found[key]).collect()
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

/// One folder's vectors a run may reuse.
pub struct PartVectors<'a> {
    /// The folder (a generation's).
    pub dir: &'a Path,
    /// Its keys, by row, already read (and checked).
    pub keys: Arc<[u64]>,
    /// Its generation's checks, when each row is to be checked as it is
    /// read; `None` when the folder was re-read whole against them.
    pub checks: Option<&'a Checksums>,
}

/// The vectors a run with `embedder` may reuse: the live parts' `parts`
/// when `live` (the model that made them) is the same model, else that
/// model's cache. Problems become warnings and mean embedding.
pub fn reusable(
    index_dir: &Path,
    parts: &[PartVectors],
    live: Option<&EmbedderInfo>,
    embedder: &EmbedderInfo,
    warnings: &mut Vec<String>,
) -> Option<ReusableVectors> {
    let (dir, opened) = match parts.first() {
        Some(base) if live == Some(embedder) => (
            base.dir.to_path_buf(),
            ReusableVectors::open(parts, embedder.dim),
        ),
        _ => {
            let dir = model_dir(index_dir, &embedder.fingerprint);
            if !dir.join(CACHE_META).exists() {
                return None;
            }
            let opened = check_cached(&dir, embedder).and_then(|()| {
                let keys = dense::read_keys(&dir)?.into();
                let part = PartVectors {
                    dir: &dir,
                    keys,
                    checks: None,
                };
                ReusableVectors::open(&[part], embedder.dim)
            });
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
        let found = cached.find(&[dense::vector_key("beta"), dense::vector_key("gamma")]);
        let found = found.unwrap();
        let (values, scale) = found[0].unwrap();
        assert_eq!(values, [0, 127]);
        assert_eq!(scale, 1.0 / 127.0);
        assert_eq!(found[1], None);
        assert!(reusable(index.path(), &[], None, &info("xxh3:0002"), &mut warnings).is_none());
        assert!(warnings.is_empty(), "{warnings:?}");

        forget(index.path(), &old);
        assert!(reusable(index.path(), &[], None, &old, &mut warnings).is_none());
    }

    #[test]
    fn a_scan_of_the_keys_finds_what_the_map_finds() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let checks = [vectors_in(one.path()), vectors_in(two.path())];
        let parts: Vec<PartVectors> = [one.path(), two.path()]
            .iter()
            .zip(&checks)
            .map(|(dir, checks)| PartVectors {
                dir,
                keys: dense::read_keys(dir).unwrap().into(),
                checks: Some(checks),
            })
            .collect();
        let vectors = ReusableVectors::open(&parts, 2).unwrap();
        let wanted = [dense::vector_key("beta"), 7, dense::vector_key("alpha")];
        // Few keys for the rows: scanned; the same key stored twice is the
        // last folder's.
        assert!(vectors.by_key.get().is_none());
        let scanned = vectors.scan(&wanted);
        assert_eq!(scanned, [Some((1, 1)), None, Some((1, 0))]);
        let mapped = vectors.map();
        let mapped: Vec<_> = wanted.iter().map(|key| mapped.get(key).copied()).collect();
        assert_eq!(scanned, mapped);
        assert_eq!(vectors.find(&wanted).unwrap()[0].unwrap().0, [0, 127]);
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
