//! Finding the markdown files under a root folder.
//!
//! Uses `walkdir` (the walker ripgrep's and fd's authors maintain) with
//! symlinks not followed, so symlink loops and links that point outside the
//! root can neither trap nor widen the walk. Hidden folders (a name starting
//! with `.`, which includes `.memidx` and `.git`) are pruned. Entries come
//! back sorted by path so that every run sees the same order.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use walkdir::WalkDir;

use super::Skipped;

/// File name extensions (compared case-insensitively) that count as markdown.
pub const MARKDOWN_EXTENSIONS: [&str; 2] = ["md", "markdown"];

/// A markdown file found by the walk, with the stamp used to detect changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Path relative to the root, with `/` separators on every platform; this
    /// is the `path` of chunk ids and of the `path` metadata key.
    pub rel_path: String,
    /// Path to open.
    pub abs_path: PathBuf,
    /// Size in bytes when walked.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (0 if unknown).
    pub mtime_ns: i128,
}

/// Everything the walk found: the files to read, and what it could not enter.
#[derive(Debug, Default)]
pub struct Walk {
    /// Markdown files, sorted by `rel_path`.
    pub files: Vec<SourceFile>,
    /// Unreadable folders or entries, named for a warning.
    pub skipped: Vec<Skipped>,
}

/// Lists the markdown files under `root`.
///
/// Errors on entries (a folder without read permission, a file that vanished)
/// are collected in [`Walk::skipped`]; they never abort the walk.
pub fn walk(root: &Path) -> Walk {
    let mut out = Walk::default();
    let entries = WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_hidden(e.file_name()));
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
        let rel_path = display_rel(root, entry.path());
        match entry.metadata() {
            Ok(meta) => out.files.push(SourceFile {
                rel_path,
                abs_path: entry.into_path(),
                size: meta.len(),
                mtime_ns: meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128),
            }),
            Err(err) => out.skipped.push(Skipped {
                path: rel_path,
                reason: err.to_string().to_lowercase(),
            }),
        }
    }
    out.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    out
}

/// True for names that start with a dot (`.git`, `.obsidian`, `.memidx`).
fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| n.starts_with('.'))
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

/// `path` relative to `root` with `/` separators (the path itself if it is
/// not under `root`).
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
        let walk = walk(root);
        let names: Vec<_> = walk.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(names, ["a.MARKDOWN", "b/c/d.md", "z.md"]);
        assert!(walk.skipped.is_empty());
        assert_eq!(walk.files[2].size, 4);
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
        let walk = walk(root);
        let names: Vec<_> = walk.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(names, ["a/doc.md"]);
    }
}
