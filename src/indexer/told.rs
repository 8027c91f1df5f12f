//! A run told which paths changed (a watcher, `remember`) that can append
//! a delta: it looks at the told paths, the files the previous delta holds
//! and the files the last run skipped, never at the whole folder or the
//! whole index. Every other live file is kept as it is, unlooked: the
//! caller vouches that nothing else changed, as it does for
//! [`walk_told`](crate::corpus::walk::walk_told). The previous index is
//! opened for what such a run reads ([`Verify::Appended`](super::previous::Verify)),
//! its files found by binary search in the parts' sorted tables, so the
//! run costs what changed, not the index's size.

use std::path::PathBuf;

use anyhow::Result;

use super::IndexOptions;
use super::previous::{Previous, recorded_file};
use crate::corpus::Skipped;
use crate::corpus::walk::{Walk, look_at_told, stated};
use crate::index::manifest::SkippedFile;

/// What a told run looks at, and what it keeps unlooked.
pub(super) struct Looked {
    /// The files looked at, by path: the told paths a walk would list now,
    /// the previous delta's files (with the stamps it recorded), and the
    /// files the last run skipped, stated again; with the walk's own skips.
    pub(super) walked: Walk,
    /// Per base file, whether the run keeps it without looking: live, and
    /// neither at nor under a told path.
    pub(super) kept: Vec<bool>,
    /// How many live files the run keeps without looking.
    pub(super) unwalked: usize,
}

/// What a run told the paths `told` looks at over `previous`, or `None`
/// when it must list every file instead: no usable previous index, other
/// walk settings, or told paths that could change more than themselves
/// ([`look_at_told`]).
pub(super) fn look(
    options: &IndexOptions,
    previous: &Previous,
    told: &[PathBuf],
) -> Result<Option<Looked>> {
    let (Some(manifest), Some(parts)) = (&previous.manifest, &previous.parts) else {
        return Ok(None);
    };
    if options.full || manifest.walk != options.walk {
        return Ok(None);
    }
    let walk_skips: Vec<Skipped> = (manifest.skipped.iter())
        .filter(|skip| skip.stamp.is_none())
        .map(SkippedFile::skipped)
        .collect();
    let Some(mut found) = look_at_told(&options.root, &options.walk, &walk_skips, told)? else {
        return Ok(None);
    };
    // The live files at or under a told path, and the delta's.
    let mut looked_at: Vec<u32> = Vec::new();
    for path in &found.paths {
        looked_at.extend(parts.file_index(path));
        looked_at.extend(parts.live_files_with_prefix(&format!("{path}/"))?);
    }
    let delta_files = parts.live_delta_files();
    let mut files = std::mem::take(&mut found.files);
    for &file in &delta_files {
        let entry = parts.file(file)?;
        if !found.covers(&entry.path) {
            files.push(recorded_file(entry));
        }
    }
    // A skipped file is read again, as after a walk.
    for skip in manifest.skipped.iter().filter(|s| s.stamp.is_some()) {
        if !found.covers(&skip.path) {
            files.extend(stated(&options.root, &skip.path));
        }
    }
    files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    files.dedup_by(|a, b| a.rel_path == b.rel_path);
    let base_files = parts.base().file_count() as u32;
    let mut kept: Vec<bool> = (0..base_files).map(|f| parts.file_is_live(f)).collect();
    for &file in &looked_at {
        if let Some(kept) = kept.get_mut(file as usize) {
            *kept = false;
        }
    }
    looked_at.extend(delta_files);
    looked_at.sort_unstable();
    looked_at.dedup();
    let skipped = (walk_skips.into_iter())
        .filter(|skip| !found.covers(&skip.path))
        .collect();
    Ok(Some(Looked {
        walked: Walk { files, skipped },
        kept,
        unwalked: parts.live_file_count().saturating_sub(looked_at.len()),
    }))
}
