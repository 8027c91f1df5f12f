//! Finding the markdown files under a root folder.
//!
//! Uses `walkdir` (the walker ripgrep's and fd's authors maintain) with
//! symlinks not followed, so symlink loops and links that point outside the
//! root can neither trap nor widen the walk. Hidden folders (a name starting
//! with `.`, which includes `.memidx` and `.git`) are pruned, and one that
//! holds markdown files is named as skipped with their count (`.git` and
//! `.memidx` aside, which hold none of the user's notes); a hidden
//! markdown file is skipped with a warning naming it. Entries come
//! back sorted by path so that every run sees the same order. The walk
//! itself is one thread; the files' stat calls, most of its time, run in
//! parallel with `rayon`.
//!
//! A run told which paths changed updates the last walk's list with just
//! those ([`walk_told`]), deciding each as the walk would.
//!
//! Ignore rules: `.gitignore` and `.memidxignore` files in any folder are
//! read as the walk enters it and apply below it, a deeper file's rules
//! winning over a shallower one's — matched with the `ignore` crate's
//! gitignore matcher (ripgrep's), not by hand. `--include`/`--exclude` globs
//! (matched with `globset` against the path relative to the root) narrow the
//! walk further.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use walkdir::WalkDir;

use super::Skipped;

/// Names of the ignore files read in every folder.
pub const IGNORE_FILES: [&str; 2] = [".gitignore", ".memidxignore"];

/// Which files the walk keeps (recorded in the index, so `status` walks alike).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalkOptions {
    /// Do not read `.gitignore` / `.memidxignore` files.
    pub no_ignore: bool,
    /// Globs a file's relative path must match (any of them), when given.
    pub include: Vec<String>,
    /// Globs whose matching files and folders are skipped.
    pub exclude: Vec<String>,
}

/// File name extensions (compared case-insensitively) that count as markdown.
pub const MARKDOWN_EXTENSIONS: [&str; 2] = ["md", "markdown"];

/// A markdown file found by the walk, with the stamp used to detect changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Path relative to the root, with `/` separators on every platform; this
    /// is the `path` of chunk ids and of the `path` metadata key.
    pub rel_path: String,
    /// Size in bytes when walked.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (0 if unknown).
    pub mtime_ns: i128,
    /// Device and inode when walked (Unix; `(0, 0)` elsewhere), so the read
    /// can check it opened this very file ([`super::read`]).
    pub identity: (u64, u64),
}

impl SourceFile {
    /// The file at `rel_path`, its stamp not yet known (zero).
    pub fn unstated(rel_path: String) -> Self {
        Self {
            rel_path,
            size: 0,
            mtime_ns: 0,
            identity: (0, 0),
        }
    }

    /// The path to open under `root`, the folder walked. (Not kept per
    /// file: a walk of a large tree would hold every path twice.)
    pub fn abs_path(&self, root: &Path) -> PathBuf {
        under(root, &self.rel_path)
    }

    /// Records the stamp and identity `stat` gave.
    fn stamp_from(&mut self, meta: &std::fs::Metadata) {
        self.size = meta.len();
        self.mtime_ns = mtime_ns(meta);
        self.identity = identity(meta);
    }
}

/// Everything the walk found: the files to read, and what it could not enter.
#[derive(Debug, Default)]
pub struct Walk {
    /// Markdown files, sorted by `rel_path`.
    pub files: Vec<SourceFile>,
    /// Unreadable folders or entries, named for a warning, sorted by path.
    pub skipped: Vec<Skipped>,
}

/// Lists the markdown files under `root` that `options` keep.
///
/// Errors on entries (a folder without read permission, a file that vanished)
/// are collected in [`Walk::skipped`]; they never abort the walk. A bad glob
/// is an error.
pub fn walk(root: &Path, options: &WalkOptions) -> Result<Walk> {
    let include = glob_set(&options.include)?;
    let exclude = glob_set(&options.exclude)?;
    let mut rules = IgnoreRules::default();
    let mut out = Walk::default();
    let mut hidden_dirs = Vec::new();
    let entries = WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            if e.depth() == 0 {
                if !options.no_ignore {
                    rules.enter(e.path());
                }
                return true;
            }
            let is_dir = e.file_type().is_dir();
            // Hidden folders are pruned; hidden files are skipped by name below.
            let hidden_dir = is_dir && is_hidden(e.file_name());
            let keep = !exclude
                .as_ref()
                .is_some_and(|x| x.is_match(rel_path(root, e.path())))
                && !rules.ignores(e.path(), is_dir);
            if keep && hidden_dir {
                hidden_dirs.push(e.path().to_path_buf());
                return false;
            }
            if keep && is_dir && !options.no_ignore {
                rules.enter(e.path());
            }
            keep
        });
    // The markdown files in walk order, each with its path alone: their
    // stat calls (most of a walk's time, a path lookup each) then run in
    // parallel, filling the stamps in place, so a walk of a large tree
    // holds one small entry and one path per file (not the walker's).
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                let path = err
                    .path()
                    .map(|p| display_rel(root, p))
                    .unwrap_or_else(|| root.display().to_string());
                let reason = err
                    .io_error()
                    .map(|e| e.to_string().to_lowercase())
                    .unwrap_or_else(|| err.to_string());
                out.skipped.push(Skipped { path, reason });
                continue;
            }
        };
        if !entry.file_type().is_file() || !is_markdown(entry.path()) {
            continue;
        }
        if include
            .as_ref()
            .is_some_and(|set| !set.is_match(rel_path(root, entry.path())))
        {
            continue;
        }
        let rel_path = rel_path_of(root, entry.path());
        let hidden = is_hidden(entry.file_name());
        match rel_path {
            Some(rel_path) if !hidden => out.files.push(SourceFile::unstated(rel_path)),
            // Lossy decoding would give two names that are not UTF-8 one
            // path and one id.
            _ => out.skipped.push(Skipped {
                path: rel_path.unwrap_or_else(|| display_rel(root, entry.path())),
                reason: match hidden {
                    true => "hidden (its name starts with '.'); rename it to index it",
                    false => {
                        "its path is not valid UTF-8 (shown with U+FFFD); rename it to index it"
                    }
                }
                .into(),
            }),
        }
    }
    out.skipped.extend(
        hidden_dirs
            .iter()
            .filter_map(|dir| hidden_notes(root, dir, HIDDEN_ENTRIES_COUNTED)),
    );
    out.files.shrink_to_fit();
    let unstated: Vec<(usize, String)> = (out.files.par_iter_mut().enumerate())
        .filter_map(
            |(at, file)| match std::fs::symlink_metadata(file.abs_path(root)) {
                Ok(meta) => {
                    file.stamp_from(&meta);
                    None
                }
                Err(err) => Some((at, err.to_string().to_lowercase())),
            },
        )
        .collect();
    if !unstated.is_empty() {
        let mut unstated = unstated.into_iter().peekable();
        let files = std::mem::take(&mut out.files);
        out.files.reserve_exact(files.len() - unstated.len());
        for (at, file) in files.into_iter().enumerate() {
            match unstated.next_if(|(failed, _)| *failed == at) {
                Some((_, reason)) => out.skipped.push(Skipped {
                    path: file.rel_path,
                    reason,
                }),
                None => out.files.push(file),
            }
        }
    }
    out.files
        .sort_unstable_by(|a, b| a.rel_path.cmp(&b.rel_path));
    out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Most paths a run is told before it walks instead: each told path costs
/// a few system calls and an update of the known list, and a burst this
/// large (a checkout, a copy) is cheaper walked.
pub const MAX_TOLD: usize = 1_000;

/// What a walk would find at the paths a run was told changed
/// ([`look_at_told`]).
#[derive(Debug, Default)]
pub struct ToldPaths {
    /// Every told path, relative to the root, sorted and without repeats:
    /// a walk would find nothing else at it or under it than `files` holds.
    pub paths: Vec<String>,
    /// The told paths a walk would list now, with their stamps, by path.
    pub files: Vec<SourceFile>,
}

impl ToldPaths {
    /// Whether `rel_path` is a told path or lies under one (a folder moved
    /// away, or replaced by a file or a link).
    pub fn covers(&self, rel_path: &str) -> bool {
        self.paths.iter().any(|told| {
            (rel_path.strip_prefix(told.as_str()))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }
}

/// What the walk [`walk`] would find now at `told`, the paths changed since
/// the last walk (absolute, under `root` or its canonical form, or relative
/// to `root`), that walk having skipped the entries `skipped`: only the
/// told paths are looked at, so a watcher's or `remember`'s run costs what
/// changed, not the folder's size. `Ok(None)` when a told path could change
/// more than itself, or when it cannot be sure, and the folder must be
/// walked: a folder (created, moved in or renamed), an ignore file, a
/// hidden markdown file or one in a hidden folder (the walk names it, or
/// counts it in its folder's skip), a path outside the root, with
/// `.` or `..` in it, not UTF-8, through a symbolic link or under an entry
/// the walk could not read, a name a case-insensitive file system spells
/// otherwise, one that cannot be read itself, or more than [`MAX_TOLD`]
/// paths.
pub fn look_at_told(
    root: &Path,
    options: &WalkOptions,
    skipped: &[Skipped],
    told: &[PathBuf],
) -> Result<Option<ToldPaths>> {
    if told.len() > MAX_TOLD {
        return Ok(None);
    }
    let include = glob_set(&options.include)?;
    let exclude = glob_set(&options.exclude)?;
    let canonical = root.canonicalize().ok();
    let mut found = ToldPaths::default();
    for path in told {
        let rel = match path.is_relative() {
            true => Some(path.as_path()),
            false => [Some(root), canonical.as_deref()]
                .into_iter()
                .flatten()
                .find_map(|r| path.strip_prefix(r).ok()),
        };
        let plain = rel
            .filter(|rel| (rel.components()).all(|c| matches!(c, std::path::Component::Normal(_))));
        let Some(rel_str) = plain.and_then(|rel| rel_path_of(Path::new(""), rel)) else {
            return Ok(None);
        };
        let name = rel_str.rsplit('/').next().unwrap_or_default();
        let is_ignore_file = IGNORE_FILES.iter().any(|n| n.eq_ignore_ascii_case(name));
        let under_skip = skipped.iter().any(|s| {
            s.path.is_empty() || rel_str == s.path || rel_str.starts_with(&format!("{}/", s.path))
        });
        if rel_str.is_empty() || is_ignore_file || under_skip || !real_folders(root, &rel_str) {
            return Ok(None);
        }
        let abs_path = under(root, &rel_str);
        let meta = match std::fs::symlink_metadata(&abs_path) {
            Ok(meta) if meta.is_dir() || !named_exactly(&abs_path) => return Ok(None),
            Ok(meta) => Some(meta),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return Ok(None),
        };
        let kept = match &meta {
            Some(meta) if meta.is_file() && is_markdown(&abs_path) => {
                // A hidden file or a hidden folder's note: the walk names
                // it, or counts it in its folder's skip.
                if name.starts_with('.') || under_hidden(&rel_str) {
                    return Ok(None);
                }
                keeps(root, &rel_str, options, include.as_ref(), exclude.as_ref())
            }
            _ => false,
        };
        if let (true, Some(meta)) = (kept, meta) {
            found.files.push(source_file(rel_str.clone(), &meta));
        }
        found.paths.push(rel_str);
    }
    found.paths.sort();
    found.paths.dedup();
    found.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    found.files.dedup_by(|a, b| a.rel_path == b.rel_path);
    Ok(Some(found))
}

/// The walk [`walk`] would give now, from `known` (the files a walk of
/// `root` found before, each with the stamp it had then, and the entries
/// it could not read) and `told`, the paths changed since, as
/// [`look_at_told`] finds them (`Ok(None)` when it cannot). A told path
/// that is not a folder drops every known file and skip under it.
pub fn walk_told(
    root: &Path,
    options: &WalkOptions,
    mut known: Walk,
    told: &[PathBuf],
) -> Result<Option<Walk>> {
    let Some(found) = look_at_told(root, options, &known.skipped, told)? else {
        return Ok(None);
    };
    known.files.retain(|f| !found.covers(&f.rel_path));
    // (A skip at a told path sends the run to walk: only those under one remain.)
    known.skipped.retain(|s| !found.covers(&s.path));
    known.files.extend(found.files);
    known.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    Ok(Some(known))
}

/// The file `rel_path` under `root` as a walk would list it now (its
/// stamp and identity), or `None` when it is gone or not a plain file.
pub fn stated(root: &Path, rel_path: &str) -> Option<SourceFile> {
    let abs_path = under(root, rel_path);
    let meta = std::fs::symlink_metadata(&abs_path).ok()?;
    meta.is_file()
        .then(|| source_file(rel_path.to_string(), &meta))
}

/// The path of `rel_path` (`/`-separated) under `root`, joined a component
/// at a time: a Windows root spelled `\\?\C:\…` takes no `/`.
fn under(root: &Path, rel_path: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    path.extend(rel_path.split('/'));
    path
}

/// A listed file from its path and what `stat` said of it.
fn source_file(rel_path: String, meta: &std::fs::Metadata) -> SourceFile {
    let mut file = SourceFile::unstated(rel_path);
    file.stamp_from(meta);
    file
}

/// Whether every folder on the way from `root` to `rel` is a folder, not a
/// symbolic link to one (the walk does not follow links) nor a file; a
/// folder that is gone counts (what is under it is gone too).
fn real_folders(root: &Path, rel: &str) -> bool {
    let mut at = root.to_path_buf();
    let mut folders: Vec<&str> = rel.split('/').collect();
    folders.pop();
    for folder in folders {
        at.push(folder);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return true,
            _ => return false,
        }
    }
    true
}

/// Whether `path`'s folder lists its name exactly as written: on a file
/// system that ignores case (macOS, Windows) `Note.md` opens `note.md`,
/// which the walk would list under the second name.
fn named_exactly(path: &Path) -> bool {
    if cfg!(not(any(target_os = "macos", windows))) {
        return true;
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    std::fs::read_dir(parent)
        .is_ok_and(|entries| entries.flatten().any(|entry| entry.file_name() == name))
}

/// Whether a folder of `rel` (a `/`-separated path under the root) is
/// hidden: the walk prunes it, so nothing under it is named.
fn under_hidden(rel: &str) -> bool {
    let mut folders: Vec<&str> = rel.split('/').collect();
    folders.pop();
    folders.iter().any(|folder| folder.starts_with('.'))
}

/// Whether [`walk`] would list the markdown file `rel` (relative to `root`,
/// `/`-separated) if it were there: it is not hidden nor in a hidden
/// folder, and no exclude, include or ignore rule leaves it out. What
/// `remember` asks before it writes a note, so that a note is never
/// written where the index would not read it.
pub fn would_keep(root: &Path, rel: &str, options: &WalkOptions) -> Result<bool> {
    let name = rel.rsplit('/').next().unwrap_or_default();
    if rel.is_empty() || name.starts_with('.') || under_hidden(rel) {
        return Ok(false);
    }
    let include = glob_set(&options.include)?;
    let exclude = glob_set(&options.exclude)?;
    Ok(keeps(
        root,
        rel,
        options,
        include.as_ref(),
        exclude.as_ref(),
    ))
}

/// Whether [`walk`] keeps the markdown file `rel` under `root`: no folder
/// on its way is hidden, excluded or ignored, and the file itself is
/// neither excluded nor ignored and matches the includes. The ignore files
/// are read as the walk reads them, folder by folder from the root.
fn keeps(
    root: &Path,
    rel: &str,
    options: &WalkOptions,
    include: Option<&GlobSet>,
    exclude: Option<&GlobSet>,
) -> bool {
    let mut rules = IgnoreRules::default();
    if !options.no_ignore {
        rules.enter(root);
    }
    let parts: Vec<&str> = rel.split('/').collect();
    let (file, folders) = parts.split_last().expect("a path has a last part");
    let mut at = root.to_path_buf();
    for folder in folders {
        at.push(folder);
        let pruned = folder.starts_with('.')
            || exclude.is_some_and(|x| x.is_match(rel_path(root, &at)))
            || rules.ignores(&at, true);
        if pruned {
            return false;
        }
        if !options.no_ignore {
            rules.enter(&at);
        }
    }
    at.push(file);
    let name = rel_path(root, &at);
    !exclude.is_some_and(|x| x.is_match(name))
        && !rules.ignores(&at, false)
        && include.is_none_or(|set| set.is_match(name))
}

/// The device and inode of a walked entry (not followed if a link).
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// The gitignore matchers of the folders entered so far, deepest last.
#[derive(Default)]
struct IgnoreRules {
    matchers: Vec<(PathBuf, Gitignore)>,
}

impl IgnoreRules {
    /// Reads the ignore files of `dir`, if it has any.
    fn enter(&mut self, dir: &Path) {
        let files: Vec<PathBuf> = IGNORE_FILES
            .iter()
            .map(|n| dir.join(n))
            .filter(|p| p.is_file())
            .collect();
        if files.is_empty() {
            return;
        }
        let mut builder = GitignoreBuilder::new(dir);
        for file in &files {
            // A malformed line is skipped by the builder; the rest still apply.
            let _ = builder.add(file);
        }
        if let Ok(matcher) = builder.build() {
            self.matchers.push((dir.to_path_buf(), matcher));
        }
    }

    /// True when the deepest rule that speaks about `path` ignores it.
    fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        for (dir, matcher) in self.matchers.iter().rev() {
            if !path.starts_with(dir) {
                continue;
            }
            let verdict = matcher.matched(path, is_dir);
            if verdict.is_ignore() {
                return true;
            }
            if verdict.is_whitelist() {
                return false;
            }
        }
        false
    }
}

/// Compiles globs into one set (`None` when there are none).
fn glob_set(patterns: &[String]) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(Glob::new(pattern).with_context(|| format!("invalid glob '{pattern}'"))?);
    }
    Ok(Some(builder.build()?))
}

/// Folders memidx and git keep their own files in: pruned as hidden
/// folders are, but not named, since no note of the user's lives there.
const TOOL_FOLDERS: [&str; 2] = [".git", ".memidx"];

/// Most entries of one hidden folder a walk looks at to count its markdown
/// files: a walk of a home folder meets `.cache` and `.cargo`, whose tens of
/// thousands of files it should not read on every run to say so.
const HIDDEN_ENTRIES_COUNTED: usize = 10_000;

/// The skip naming the hidden folder `dir` under `root`, when it holds
/// markdown files (counted without following links, among its first
/// `looked_at` entries); `None` when it holds none or is a tool's
/// ([`TOOL_FOLDERS`]).
fn hidden_notes(root: &Path, dir: &Path, looked_at: usize) -> Option<Skipped> {
    let name = dir.file_name()?.to_str()?;
    if TOOL_FOLDERS.contains(&name) {
        return None;
    }
    let mut entries = WalkDir::new(dir).follow_links(false).into_iter().flatten();
    let notes = (entries.by_ref().take(looked_at))
        .filter(|e| e.file_type().is_file() && is_markdown(e.path()))
        .count();
    let more = match entries.next() {
        Some(_) => "at least ",
        None => "",
    };
    let (files, them) = match notes {
        0 => return None,
        1 => (format!("{more}1 markdown file"), "it"),
        n => (format!("{more}{n} markdown files"), "them"),
    };
    Some(Skipped {
        path: display_rel(root, dir),
        reason: format!(
            "hidden folder (its name starts with '.') with {files}; rename it to index {them}"
        ),
    })
}

/// `path` relative to `root`.
fn rel_path<'a>(root: &Path, path: &'a Path) -> &'a Path {
    path.strip_prefix(root).unwrap_or(path)
}

/// True for names that start with a dot (`.git`, `.obsidian`, `.memidx`).
fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with('.'))
}

/// A file's modification time in nanoseconds since the Unix epoch (0 if
/// unknown): the unit of every stamp (walked files, index entries,
/// generation checks).
pub fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// True when the path has a markdown extension.
pub fn is_markdown(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|ext| {
            MARKDOWN_EXTENSIONS
                .iter()
                .any(|m| ext.eq_ignore_ascii_case(m))
        })
}

/// `path` relative to `root` with `/` separators, or `None` when a part of
/// it is not valid UTF-8.
fn rel_path_of(root: &Path, path: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = rel_path(root, path)
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    Some(parts?.join("/"))
}

/// `path` relative to `root` with `/` separators (the path itself if it is
/// not under `root`), invalid UTF-8 shown as U+FFFD.
fn display_rel(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// The files of a walk as (path, size) pairs, to compare two walks.
    fn listed(walk: &Walk) -> Vec<(String, u64)> {
        (walk.files.iter())
            .map(|f| (f.rel_path.clone(), f.size))
            .collect()
    }

    #[test]
    fn a_walk_told_the_changed_paths_finds_what_a_new_walk_finds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for folder in ["docs/old", "drafts", "build", ".obsidian", "moved"] {
            fs::create_dir_all(root.join(folder)).unwrap();
        }
        fs::write(root.join(".gitignore"), "drafts/\n*.tmp.md\n").unwrap();
        for file in [
            "a.md",
            "docs/b.md",
            "docs/old/c.md",
            "moved/d.md",
            "moved/e.md",
        ] {
            fs::write(root.join(file), "# x\n").unwrap();
        }
        let options = WalkOptions {
            exclude: vec!["build/**".into()],
            ..WalkOptions::default()
        };
        let known = walk(root, &options).unwrap();
        // Edited, created (kept, ignored, excluded, not markdown),
        // removed, and a folder moved away.
        fs::write(root.join("a.md"), "# x\n\nmore\n").unwrap();
        let created = [
            "docs/new.md",
            "drafts/f.md",
            "docs/g.tmp.md",
            "build/h.md",
            "docs/notes.txt",
        ];
        for file in created {
            fs::write(root.join(file), "# y\n").unwrap();
        }
        fs::remove_file(root.join("docs/old/c.md")).unwrap();
        let away = tempfile::tempdir().unwrap();
        fs::rename(root.join("moved"), away.path().join("moved")).unwrap();
        let mut told: Vec<PathBuf> = ["a.md", "docs/old/c.md", "moved"]
            .iter()
            .chain(&created)
            .map(|p| root.join(p))
            .collect();
        told.push(PathBuf::from("docs/new.md"));
        let fresh = walk(root, &options).unwrap();
        let updated = walk_told(root, &options, known, &told).unwrap().unwrap();
        assert_eq!(listed(&updated), listed(&fresh));
        assert_eq!(
            listed(&fresh),
            [
                ("a.md".into(), 10),
                ("docs/b.md".into(), 4),
                ("docs/new.md".into(), 4)
            ]
        );

        // What may change more than itself sends the run back to the walk.
        fs::create_dir_all(root.join("docs/more")).unwrap();
        fs::write(root.join("docs/.hidden.md"), "# h\n").unwrap();
        fs::write(root.join(".obsidian/i.md"), "# h\n").unwrap();
        for path in [
            "docs/more",
            ".gitignore",
            "docs/.memidxignore",
            "docs/.hidden.md",
            ".obsidian/i.md",
        ] {
            let known = walk(root, &options).unwrap();
            let told = [root.join(path)];
            assert!(
                walk_told(root, &options, known, &told).unwrap().is_none(),
                "{path}"
            );
        }
        let outside = [dir.path().parent().unwrap().join("elsewhere.md")];
        let known = walk(root, &options).unwrap();
        assert!(
            walk_told(root, &options, known, &outside)
                .unwrap()
                .is_none()
        );
        let (dotted, climbing) = (PathBuf::from("./a.md"), root.join("docs/../a.md"));
        for odd in [dotted, climbing] {
            let known = walk(root, &options).unwrap();
            let told = [odd.clone()];
            assert!(
                walk_told(root, &options, known, &told).unwrap().is_none(),
                "{odd:?}"
            );
        }
        let many: Vec<PathBuf> = (0..=MAX_TOLD)
            .map(|i| root.join(format!("n{i}.md")))
            .collect();
        let known = walk(root, &options).unwrap();
        assert!(walk_told(root, &options, known, &many).unwrap().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_swapped_for_a_file_or_reached_through_a_link_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("x/deep")).unwrap();
        fs::write(root.join("x/a.md"), "# a\n").unwrap();
        fs::write(root.join("x/deep/b.md"), "# b\n").unwrap();
        fs::write(outside.path().join("c.md"), "# c\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let options = WalkOptions::default();
        // An edit seen through a link (a watcher that follows links) is
        // not one the walk would list.
        let known = walk(root, &options).unwrap();
        let told = [root.join("link/c.md")];
        assert!(walk_told(root, &options, known, &told).unwrap().is_none());
        // A folder replaced by a file in one burst: its files are gone.
        let known = walk(root, &options).unwrap();
        let away = tempfile::tempdir().unwrap();
        fs::rename(root.join("x"), away.path().join("x")).unwrap();
        fs::write(root.join("x"), "not a folder").unwrap();
        let updated = walk_told(root, &options, known, &[root.join("x")])
            .unwrap()
            .unwrap();
        assert_eq!(listed(&updated), listed(&walk(root, &options).unwrap()));
        assert!(updated.files.is_empty());
    }

    #[test]
    fn finds_markdown_sorted_and_skips_hidden_and_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("b/c")).unwrap();
        fs::create_dir_all(root.join(".hidden")).unwrap();
        fs::create_dir_all(root.join(".memidx/gen-1")).unwrap();
        for p in [
            "z.md",
            "a.MARKDOWN",
            "b/c/d.md",
            "b/notes.txt",
            ".hidden/x.md",
            ".memidx/gen-1/y.md",
        ] {
            fs::write(root.join(p), "# x\n").unwrap();
        }
        let walk = walk(root, &WalkOptions::default()).unwrap();
        let names: Vec<_> = walk.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(names, ["a.MARKDOWN", "b/c/d.md", "z.md"]);
        // The hidden folder is named with its count; memidx's own is not.
        let skipped: Vec<String> = walk.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "skipped .hidden: hidden folder (its name starts with '.') with 1 markdown file; rename it to index it"
            ]
        );
        assert_eq!(walk.files[2].size, 4);
        // A large hidden folder is counted only so far.
        for n in 0..3 {
            fs::write(root.join(format!(".hidden/more-{n}.md")), "# x\n").unwrap();
        }
        let partly = hidden_notes(root, &root.join(".hidden"), 3).unwrap();
        assert_eq!(
            partly.reason,
            "hidden folder (its name starts with '.') with at least 2 markdown files; rename it to index them"
        );
        let whole = hidden_notes(root, &root.join(".hidden"), 10).unwrap();
        assert!(
            whole.reason.contains(" with 4 markdown files;"),
            "{}",
            whole.reason
        );
        fs::remove_dir_all(root.join(".hidden")).unwrap();
        fs::create_dir_all(root.join(".git/refs")).unwrap();
        fs::write(root.join(".git/refs/x.md"), "# x\n").unwrap();
        assert!(
            super::walk(root, &WalkOptions::default())
                .unwrap()
                .skipped
                .is_empty()
        );
        fs::write(root.join("b/.draft.md"), "# x\n").unwrap();
        let walk = super::walk(root, &WalkOptions::default()).unwrap();
        assert_eq!(walk.files.len(), 3);
        assert_eq!(walk.skipped.len(), 1);
        assert_eq!(walk.skipped[0].path, "b/.draft.md");
        assert!(walk.skipped[0].reason.starts_with("hidden"));
        assert!(walk.files[2].mtime_ns > 0);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_not_followed_so_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join("a/doc.md"), "x").unwrap();
        std::os::unix::fs::symlink(root, root.join("a/loop")).unwrap();
        std::os::unix::fs::symlink(root.join("a/doc.md"), root.join("link.md")).unwrap();
        let walk = walk(root, &WalkOptions::default()).unwrap();
        let names: Vec<_> = walk.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(names, ["a/doc.md"]);
    }

    fn names(root: &Path, options: &WalkOptions) -> Vec<String> {
        walk(root, options)
            .unwrap()
            .files
            .into_iter()
            .map(|f| f.rel_path)
            .collect()
    }

    #[test]
    fn ignore_files_apply_below_their_folder_and_deeper_rules_win() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for p in [
            "drafts/a.md",
            "docs/keep.md",
            "docs/secret.md",
            "docs/sub/secret.md",
            "docs/sub/x.md",
            "top.md",
        ] {
            fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            fs::write(root.join(p), "x").unwrap();
        }
        fs::write(root.join(".gitignore"), "drafts/\nsecret.md\n").unwrap();
        fs::write(root.join("docs/sub/.memidxignore"), "!secret.md\nx.md\n").unwrap();
        assert_eq!(
            names(root, &WalkOptions::default()),
            ["docs/keep.md", "docs/sub/secret.md", "top.md"]
        );
        let all = WalkOptions {
            no_ignore: true,
            ..Default::default()
        };
        assert_eq!(names(root, &all).len(), 6);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn names_that_are_not_utf8_are_skipped_by_name_not_merged() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join(OsStr::from_bytes(b"a\xff.md")), "x").unwrap();
        fs::write(root.join(OsStr::from_bytes(b"a\xfe.md")), "y").unwrap();
        fs::write(root.join("b.md"), "z").unwrap();
        let walk = walk(root, &WalkOptions::default()).unwrap();
        let names: Vec<_> = walk.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(names, ["b.md"]);
        assert_eq!(walk.skipped.len(), 2);
        assert_eq!(walk.skipped[0].path, "a\u{fffd}.md");
        assert!(walk.skipped[0].reason.contains("not valid UTF-8"));
    }

    #[test]
    fn include_and_exclude_globs_narrow_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for p in ["runbooks/a.md", "runbooks/old/b.md", "notes/c.md"] {
            fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            fs::write(root.join(p), "x").unwrap();
        }
        let include = WalkOptions {
            include: vec!["runbooks/**".into()],
            ..Default::default()
        };
        assert_eq!(
            names(root, &include),
            ["runbooks/a.md", "runbooks/old/b.md"]
        );
        let exclude = WalkOptions {
            exclude: vec!["**/old".into()],
            ..Default::default()
        };
        assert_eq!(names(root, &exclude), ["notes/c.md", "runbooks/a.md"]);
        let bad = WalkOptions {
            include: vec!["[".into()],
            ..Default::default()
        };
        assert!(
            walk(root, &bad)
                .unwrap_err()
                .to_string()
                .contains("invalid glob '['")
        );
    }
}
