//! Committing a run: the new generation's folder, checksums and manifest,
//! the switch to it, and the clean-up of what older runs left.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use super::Run;
use super::lists::FinishedLists;
use super::previous::{FusionChoice, Previous};
use crate::corpus::Skipped;
use crate::corpus::walk::SourceFile;

use crate::embed::{ModelKind, ModelSource};
use crate::index::manifest::{Counts, FORMAT_VERSION, GraphManifest, Manifest, SkippedFile};
use crate::lists::List;
use crate::lists::dense::codes::DenseIndexSetting;
use crate::lists::dense::{DenseList, DenseOptions};
use crate::lists::sparse::Bm25Params;
use crate::lists::vector_cache;
use crate::store::checks::{self, Checksums};
use crate::store::generation::Generation;
use crate::store::{self, atomic};

/// Creates the empty folder of generation `generation` under `index_dir`,
/// removing a leftover of that name first.
pub(super) fn create_generation_dir(index_dir: &Path, generation: u64) -> Result<PathBuf> {
    let gen_dir = store::generation_dir(index_dir, generation);
    if gen_dir.exists() {
        fs::remove_dir_all(&gen_dir)
            .with_context(|| format!("cannot remove leftover {}", gen_dir.display()))?;
    }
    fs::create_dir_all(&gen_dir).with_context(|| format!("cannot create {}", gen_dir.display()))?;
    Ok(gen_dir)
}

/// Seals `gen_dir`'s files and computes their checks; the sparse segment
/// files `linked` from the previous generation (by name in the generation)
/// keep the checks `previous` recorded for them.
pub(super) fn checksums(
    gen_dir: &Path,
    linked: &[String],
    previous: Option<&Manifest>,
) -> Result<Checksums> {
    let linked: Checksums = match previous {
        Some(old) => linked
            .iter()
            .filter_map(|name| Some((name.clone(), *old.checksums.get(name)?)))
            .collect(),
        None => Checksums::new(),
    };
    checks::compute(gen_dir, &linked)
}

/// The dense list's noise floor over the rows of generation `generation`
/// (its files' checks `checksums`, its codes written under `setting`), as
/// a search measures it ([`crate::lists::dense::floor`]): measured here,
/// once, so that no search embeds the probes. `None` for a static model,
/// which has no cosine floor, and for a generation without rows.
pub(super) fn noise_floor(
    run: &Run,
    generation: u64,
    checksums: &Checksums,
    setting: DenseIndexSetting,
) -> Result<Option<f32>> {
    if run.embedder.kind() == ModelKind::Static {
        return Ok(None);
    }
    let opened = Generation::open(&run.options.index_dir, generation, checksums)?;
    let options = DenseOptions {
        feedback: 0,
        exact: false,
        rescore: None,
        probe: None,
    };
    let list = DenseList::open(
        opened.dir(),
        checksums,
        opened.vector_flags(),
        run.embedder,
        setting,
        options,
    )?;
    list.noise_floor()
}

/// The manifest of generation `generation`, written by `run` with the
/// finished `lists`; fusion defaults saved in `previous` are kept (see
/// [`FusionChoice::for_run`]).
pub(super) fn manifest(
    run: &Run,
    generation: u64,
    lists: FinishedLists,
    counts: Counts,
    skipped: Vec<SkippedFile>,
    checksums: Checksums,
    previous: Option<&Manifest>,
) -> Manifest {
    let (options, embedder) = (run.options, run.embedder);
    let root = &options.root;
    let fusion = FusionChoice::for_run(previous, embedder);
    let (model_dir, model_files) = match &options.model {
        ModelSource::Folder(dir) => {
            let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            (
                Some(dir.display().to_string()),
                crate::embed::files_of(embedder),
            )
        }
        _ => (None, None),
    };
    Manifest {
        format_version: FORMAT_VERSION,
        generation,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        created_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        root: fs::canonicalize(root)
            .unwrap_or_else(|_| root.clone())
            .display()
            .to_string(),
        index_in_root: index_in_root(root, &options.index_dir),
        walk: options.walk.clone(),
        tokenizer: options.analyzer,
        bm25: Bm25Params::default(),
        sparse_fields: options.sparse_fields,
        file_list: options.file_list,
        // Measured over the written rows before the switch (`noise_floor`).
        noise_floor: None,
        word_floor: None,
        chunker: options.chunker,
        embedder: embedder.info().clone(),
        model_dir,
        model_files,
        model_endpoint: embedder.endpoint().cloned(),
        fusion: fusion.defaults,
        fusion_source: fusion.source,
        sparse: lists.sparse.stats,
        graph: lists.graph.map(|(graph_manifest, _)| GraphManifest {
            weight: fusion.graph_weight,
            ..graph_manifest
        }),
        dense_index: lists.dense_index,
        counts,
        skipped,
        checksums,
        delta: None,
    }
}

/// Writes `manifest` into `index_dir`, switching the index to its
/// generation, and keeps the generation folder `partial` once it is live
/// (a failed folder sync after the switch is a warning).
pub(super) fn switch(
    index_dir: &Path,
    manifest: &Manifest,
    mut partial: PartialGeneration,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let generation = manifest.generation;
    if let Err(err) = manifest.write(index_dir) {
        if !names_generation(index_dir, generation) {
            return Err(err);
        }
        // The rename went through; only the folder's sync failed.
        warnings.push(format!(
            "generation {generation} is live, but {err:#}; a power cut before the disk catches up could bring back the previous index"
        ));
    }
    partial.0 = None;
    Ok(())
}

/// Removes the previous generations `manifest` no longer names now that
/// its parts are live; when the model changed, first keeps the previous
/// base's vectors for a switch back. Either way the cache of `manifest`'s
/// model is dropped (its vectors are in the live parts).
pub(super) fn clean_up(
    index_dir: &Path,
    previous: &Previous,
    manifest: &Manifest,
    warnings: &mut Vec<String>,
) {
    if let Some(old) = &previous.manifest {
        let old_dir = store::generation_dir(index_dir, old.generation);
        if old.embedder != manifest.embedder && previous.parts.is_some() {
            // Switching models: keep the old model's vectors for a switch back.
            if let Err(err) = vector_cache::keep(index_dir, &old_dir, &old.embedder, &old.checksums)
            {
                warnings.push(format!(
                    "could not keep the previous model's vectors: {err:#}"
                ));
            }
        }
        let live = manifest.generations();
        for (generation, _) in old.parts() {
            if !live.contains(&generation) {
                let _ = fs::remove_dir_all(store::generation_dir(index_dir, generation));
            }
        }
    }
    vector_cache::forget(index_dir, &manifest.embedder);
}

/// The record of what a run skipped: each file with the stamp it was
/// walked with (found in `walked`), each walk-level skip without one.
pub(super) fn skipped_files(skipped: &[Skipped], walked: &[SourceFile]) -> Vec<SkippedFile> {
    // The walk is sorted by path: each skipped file is found by a binary
    // search (the walk's own skips, unreadable folders, have no stamp).
    skipped
        .iter()
        .map(|s| SkippedFile {
            path: s.path.clone(),
            reason: s.reason.clone(),
            stamp: walked
                .binary_search_by(|f| f.rel_path.as_str().cmp(s.path.as_str()))
                .ok()
                .map(|i| (walked[i].size, walked[i].mtime_ns)),
        })
        .collect()
}

/// The skips in `record` that the index before (`previous`) did not
/// record as they are now: new files, new reasons, changed files.
pub(super) fn new_skips(record: &[SkippedFile], previous: Option<&Manifest>) -> Vec<Skipped> {
    let before: HashSet<&SkippedFile> = previous.iter().flat_map(|m| &m.skipped).collect();
    record
        .iter()
        .filter(|s| !before.contains(s))
        .map(SkippedFile::skipped)
        .collect()
}

/// True when `index_dir/meta.json` names `generation` (the switch to it
/// happened, whatever failed after).
fn names_generation(index_dir: &Path, generation: u64) -> bool {
    Manifest::read(index_dir).is_ok_and(|m| m.is_some_and(|m| m.generation == generation))
}

/// A generation folder being written: removed when the run fails before
/// the manifest names it (so a full disk is freed at once), kept once the
/// field is cleared.
pub(super) struct PartialGeneration<'a>(Option<&'a Path>);

impl<'a> PartialGeneration<'a> {
    /// Arms the removal of `dir`.
    pub(super) fn new(dir: &'a Path) -> Self {
        Self(Some(dir))
    }
}

impl Drop for PartialGeneration<'_> {
    fn drop(&mut self) {
        if let Some(dir) = self.0 {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// Where `index_dir` lies inside `root`, when it does (`.memidx`).
fn index_in_root(root: &Path, index_dir: &Path) -> Option<String> {
    let (root, index) = (
        fs::canonicalize(root).ok()?,
        fs::canonicalize(index_dir).ok()?,
    );
    let inside = index.strip_prefix(&root).ok()?;
    Some(inside.to_str()?.to_string()).filter(|s| !s.is_empty())
}

/// Refuses an index folder that is the indexed folder or holds it: the
/// run would index its own files and clean up among the user's.
pub(super) fn refuse_index_over_root(root: &Path, index_dir: &Path) -> Result<()> {
    let (Ok(root), Ok(index)) = (fs::canonicalize(root), fs::canonicalize(index_dir)) else {
        return Ok(());
    };
    if root.starts_with(&index) {
        bail!(
            "the index folder {} is the folder being indexed or holds it; keep the index in its own folder",
            index.display()
        );
    }
    Ok(())
}

/// Refuses to index `root` into an index that `previous` records for
/// another folder, naming both: that would replace one folder's index with
/// another's, and searches from the first folder would return files it does
/// not hold. An index folder inside `root` is allowed (the folder was moved
/// or renamed with its index), and so is an index whose folder is gone.
pub(super) fn refuse_another_root(
    root: &Path,
    index_dir: &Path,
    previous: Option<&Manifest>,
) -> Result<()> {
    let Some(previous) = previous else {
        return Ok(());
    };
    let recorded = Path::new(&previous.root);
    let (Ok(root), Ok(index)) = (fs::canonicalize(root), fs::canonicalize(index_dir)) else {
        return Ok(());
    };
    let same = fs::canonicalize(recorded).map_or(true, |r| r == root);
    if same || index.starts_with(&root) {
        return Ok(());
    }
    bail!(
        "the index {} belongs to {}, not to {}; give {} its own index (--index PATH, or unset MEMIDX_INDEX), or remove {} first to reuse the folder",
        index.display(),
        recorded.display(),
        root.display(),
        root.display(),
        index.display()
    );
}

/// Removes what interrupted runs left in the (claimed) index folder:
/// generation folders other than the `live` ones, temporary files of
/// `meta.json` writes, and half-moved vector caches.
pub(super) fn remove_leftovers(index_dir: &Path, live: &[u64]) {
    let Ok(entries) = fs::read_dir(index_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name.starts_with(atomic::TEMP_PREFIX) {
            let _ = fs::remove_file(entry.path());
        } else if store::parse_generation_name(name).is_some_and(|n| !live.contains(&n)) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    vector_cache::remove_staging(index_dir);
}
