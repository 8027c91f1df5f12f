//! Paths as seen from where the user stands.
//!
//! The index names files relative to its root (`projects/api/orders.md`).
//! In a terminal, ripgrep and fd print paths relative to the current
//! folder, so that a printed path opens from there; memidx's human output
//! does the same, and `get` reads a path typed there. JSON, MCP and chunk
//! ids keep root-relative paths: they are identifiers, not directions.
//! Pure path arithmetic: nothing here reads the disk.

use std::borrow::Cow;
use std::path::{Component, Path};

/// The current folder as a path below the indexed root: empty at the root
/// and outside it (where root-relative paths are shown, as before).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Here {
    below_root: Vec<String>,
}

impl Here {
    /// Where `cwd` stands under `root` (both absolute, as the system gives
    /// them).
    pub fn new(root: &Path, cwd: &Path) -> Self {
        let below_root = cwd
            .strip_prefix(root)
            .map(|rel| {
                rel.components()
                    .filter_map(|c| match c {
                        Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self { below_root }
    }

    /// A root-relative `source` as a path from here: `orders.md` in
    /// `projects/api`, `../../notes/db.md` from there to `notes/db.md`.
    pub fn show<'a>(&self, source: &'a str) -> Cow<'a, str> {
        if self.below_root.is_empty() {
            return Cow::Borrowed(source);
        }
        let parts: Vec<&str> = source.split('/').collect();
        let common = self
            .below_root
            .iter()
            .zip(&parts[..parts.len() - 1])
            .take_while(|(a, b)| a == *b)
            .count();
        let up = self.below_root.len() - common;
        let mut shown: Vec<&str> = vec![".."; up];
        shown.extend(&parts[common..]);
        Cow::Owned(shown.join("/"))
    }

    /// A path typed here as the root-relative path the index names it by,
    /// or `None` when it leaves the root (or is absolute).
    pub fn resolve(&self, typed: &str) -> Option<String> {
        let mut parts: Vec<&str> = self.below_root.iter().map(String::as_str).collect();
        for part in typed.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop()?;
                }
                name => parts.push(name),
            }
        }
        (!typed.starts_with('/') && !parts.is_empty()).then(|| parts.join("/"))
    }

    /// True at the root or outside it, where paths show as the index names
    /// them.
    pub fn is_root(&self) -> bool {
        self.below_root.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here(cwd: &str) -> Here {
        Here::new(Path::new("/notes"), Path::new(cwd))
    }

    #[test]
    fn paths_show_from_the_current_folder() {
        assert_eq!(here("/notes").show("a/b.md"), "a/b.md");
        assert_eq!(here("/elsewhere").show("a/b.md"), "a/b.md");
        assert_eq!(here("/notes/a").show("a/b.md"), "b.md");
        assert_eq!(here("/notes/a/c").show("a/b.md"), "../b.md");
        assert_eq!(here("/notes/x/y").show("a/b.md"), "../../a/b.md");
        assert_eq!(here("/notes/a").show("top.md"), "../top.md");
        // A folder named like the file is not a prefix of it.
        assert_eq!(here("/notes/b.md").show("b.md"), "../b.md");
    }

    #[test]
    fn typed_paths_resolve_from_the_current_folder() {
        assert_eq!(here("/notes/a").resolve("b.md").as_deref(), Some("a/b.md"));
        assert_eq!(
            here("/notes/a").resolve("../top.md").as_deref(),
            Some("top.md")
        );
        assert_eq!(
            here("/notes/a").resolve("./c/../b.md").as_deref(),
            Some("a/b.md")
        );
        assert_eq!(here("/notes").resolve("../out.md"), None);
        assert_eq!(here("/notes/a").resolve("/etc/passwd"), None);
        // What show prints, resolve reads back.
        for cwd in ["/notes", "/notes/a", "/notes/a/c", "/notes/x/y"] {
            let h = here(cwd);
            assert_eq!(
                h.resolve(&h.show("a/b.md")).as_deref(),
                Some("a/b.md"),
                "{cwd}"
            );
        }
    }
}
