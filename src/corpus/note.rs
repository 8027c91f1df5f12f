//! Writing a new note into the indexed folder (`memidx remember`): the one
//! kind of file memidx creates outside its index.
//!
//! A note is `FOLDER/YYYY-MM-DD-slug.md`: YAML front matter with `date`
//! (the time of writing, UTC), `title` and the caller's keys, then the text.
//! It never replaces a file: a taken name gets `-2`, `-3`, … and the note is
//! written to a hidden temporary file in the same folder, synced, and linked
//! into place only under a free name (`tempfile`'s `persist_noclobber`, a
//! hard link or `renameat2(RENAME_NOREPLACE)`), so a reader or a concurrent
//! index run sees either no note or the whole note. The folder must lie
//! inside the root, symbolic links resolved; missing folders are created.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use jiff::Timestamp;

/// The folder notes go to when the caller names none.
pub const DEFAULT_NOTES_DIR: &str = "memories";

/// Keys a note sets itself, or that every file has built in.
const RESERVED_KEYS: [&str; 4] = ["date", "title", "path", "dir"];

/// Most words of the text (or title) in a file name.
const SLUG_WORDS: usize = 6;

/// Most characters of a slug.
const SLUG_CHARS: usize = 60;

/// Most characters of a title taken from the text.
const TITLE_CHARS: usize = 80;

/// Most names tried before giving up (`-2` … `-999`).
const MAX_SUFFIX: usize = 999;

/// What to write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    /// The markdown text.
    pub text: String,
    /// The title; `None` takes the text's first line.
    pub title: Option<String>,
    /// Further front matter, `key=value`, in order.
    pub meta: Vec<(String, String)>,
}

/// Writes `note` into `folder` (relative to `root`, or absolute inside it)
/// at time `now`, refusing a file over `max_bytes`; returns the new file's
/// path relative to `root`, `/`-separated.
pub fn write(
    root: &Path,
    folder: &Path,
    note: &Note,
    now: Timestamp,
    max_bytes: u64,
) -> Result<String> {
    ensure!(
        !note.text.trim().is_empty(),
        "there is nothing to remember: the text is empty"
    );
    for (key, _) in &note.meta {
        check_key(key)?;
    }
    let title = match &note.title {
        Some(title) if title.trim().is_empty() => bail!("--title is empty"),
        Some(title) => one_line(title),
        None => title_of(&note.text),
    };
    let content = render(note, &title, now);
    ensure!(
        content.len() as u64 <= max_bytes,
        "the note would be {} bytes, over the {max_bytes}-byte limit (raise it with --max-file-size)",
        content.len()
    );
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot open the indexed folder {}", root.display()))?;
    let relative = inside(&root, folder)?;
    let dir = make_folder(&root, &relative)?;
    let day = now.strftime("%Y-%m-%d").to_string();
    let stem = format!("{day}-{}", slug(&title));
    let mut file = tempfile::Builder::new()
        .prefix(".memidx-note-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    file.write_all(content.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    for n in 1..=MAX_SUFFIX {
        let name = match n {
            1 => format!("{stem}.md"),
            n => format!("{stem}-{n}.md"),
        };
        match file.persist_noclobber(dir.join(&name)) {
            Ok(_) => {
                let mut parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                parts.push(name);
                return Ok(parts.join("/"));
            }
            Err(err) if err.error.kind() == std::io::ErrorKind::AlreadyExists => file = err.file,
            Err(err) => {
                return Err(err.error)
                    .with_context(|| format!("cannot write {}", dir.join(&name).display()));
            }
        }
    }
    bail!(
        "every name from {stem}.md to {stem}-{MAX_SUFFIX}.md is taken in {}",
        dir.display()
    )
}

/// The note's file content: front matter, a blank line, the text.
fn render(note: &Note, title: &str, now: Timestamp) -> String {
    // JSON strings are YAML double-quoted scalars: any title or value is
    // written as exactly what it was.
    let quoted = |v: &str| serde_json::to_string(v).expect("a string serializes");
    let mut out = format!(
        "---\ndate: {}\ntitle: {}\n",
        now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        quoted(title)
    );
    for (key, value) in &note.meta {
        out.push_str(&format!("{key}: {}\n", quoted(value)));
    }
    out.push_str("---\n\n");
    out.push_str(note.text.trim_end());
    out.push('\n');
    out
}

/// Refuses a front matter key that is reserved or could not be read back
/// as the same key.
fn check_key(key: &str) -> Result<()> {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
    ensure!(
        plain,
        "--meta key '{key}' must be letters, digits, '_', '-' or '.'"
    );
    ensure!(
        !RESERVED_KEYS.contains(&key),
        "--meta cannot set '{key}': remember sets date and title (use --title), and every file has path and dir"
    );
    Ok(())
}

/// `text` on one line: whitespace runs become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A title from the text's first non-empty line, heading marks dropped,
/// cut at a word within [`TITLE_CHARS`].
fn title_of(text: &str) -> String {
    let first = text
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let line = one_line(first);
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let mut cut = String::new();
    for word in line.split(' ') {
        if cut.chars().count() + word.chars().count() + 1 > TITLE_CHARS {
            break;
        }
        if !cut.is_empty() {
            cut.push(' ');
        }
        cut.push_str(word);
    }
    if cut.is_empty() {
        line.chars().take(TITLE_CHARS).collect()
    } else {
        cut
    }
}

/// The first words of `title`, lower-cased, letters and digits only,
/// joined by `-` (`note` when none is left).
fn slug(title: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(SLUG_WORDS)
        .map(str::to_lowercase)
        .collect();
    let mut slug = String::new();
    for word in words {
        if !slug.is_empty() && slug.chars().count() + word.chars().count() + 1 > SLUG_CHARS {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.extend(word.chars().take(SLUG_CHARS));
    }
    if slug.is_empty() {
        "note".to_string()
    } else {
        slug
    }
}

/// `folder` as a path relative to `root` (canonical), refused when it
/// would leave the root.
fn inside(root: &Path, folder: &Path) -> Result<PathBuf> {
    let relative = if folder.is_absolute() {
        let resolved = nearest_existing(folder)?;
        resolved
            .strip_prefix(root)
            .map(Path::to_path_buf)
            .map_err(|_| {
                anyhow::anyhow!(
                    "--dir {} is outside the indexed folder {}",
                    folder.display(),
                    root.display()
                )
            })?
    } else {
        folder.to_path_buf()
    };
    let mut clean = PathBuf::new();
    for part in relative.components() {
        match part {
            Component::Normal(name) => clean.push(name),
            Component::CurDir => {}
            _ => bail!(
                "--dir {} is outside the indexed folder {} (no '..')",
                folder.display(),
                root.display()
            ),
        }
    }
    let hidden = clean
        .components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
    ensure!(
        !hidden,
        "--dir {} is a hidden folder, which the index leaves out",
        folder.display()
    );
    Ok(clean)
}

/// `path` with its longest existing prefix resolved (links followed) and
/// the rest appended.
fn nearest_existing(path: &Path) -> Result<PathBuf> {
    let mut missing = Vec::new();
    let mut probe = path.to_path_buf();
    loop {
        if let Ok(resolved) = probe.canonicalize() {
            return Ok(missing.iter().rev().fold(resolved, |p, c| p.join(c)));
        }
        match (probe.file_name(), probe.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_os_string());
                probe = parent.to_path_buf();
            }
            _ => bail!("cannot resolve {}", path.display()),
        }
    }
}

/// Creates `relative` under `root` one folder at a time, checking that
/// each existing part (links followed) stays inside the root and is a
/// folder; returns the folder.
fn make_folder(root: &Path, relative: &Path) -> Result<PathBuf> {
    let mut dir = root.to_path_buf();
    for part in relative.components() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(_) => {
                let resolved = dir
                    .canonicalize()
                    .with_context(|| format!("cannot open {}", dir.display()))?;
                ensure!(
                    resolved.starts_with(root),
                    "{} leads outside the indexed folder {} (a symbolic link)",
                    dir.display(),
                    root.display()
                );
                ensure!(resolved.is_dir(), "{} is not a folder", dir.display());
                dir = resolved;
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            Err(err) => {
                return Err(err).with_context(|| format!("cannot open {}", dir.display()));
            }
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Timestamp {
        "2024-02-07T10:30:00Z".parse().unwrap()
    }

    fn note(text: &str) -> Note {
        Note {
            text: text.into(),
            ..Note::default()
        }
    }

    #[test]
    fn a_note_gets_a_dated_slug_front_matter_and_never_a_taken_name() {
        let root = tempfile::tempdir().unwrap();
        let mut n = note("# Rolled back payments-gateway v2.14!\n\nCanary missed it.\n");
        n.meta = vec![("service".into(), "payments \"gw\"".into())];
        let first = write(root.path(), Path::new("memories"), &n, at(), 1 << 20).unwrap();
        assert_eq!(
            first,
            "memories/2024-02-07-rolled-back-payments-gateway-v2-14.md"
        );
        let written = std::fs::read_to_string(root.path().join(&first)).unwrap();
        assert_eq!(
            written,
            "---\ndate: 2024-02-07T10:30:00Z\ntitle: \"Rolled back payments-gateway v2.14!\"\n\
             service: \"payments \\\"gw\\\"\"\n---\n\n# Rolled back payments-gateway v2.14!\n\nCanary missed it.\n"
        );
        let second = write(root.path(), Path::new("memories"), &n, at(), 1 << 20).unwrap();
        assert_eq!(
            second,
            "memories/2024-02-07-rolled-back-payments-gateway-v2-14-2.md"
        );
        assert_eq!(
            std::fs::read_to_string(root.path().join(&first)).unwrap(),
            written
        );
        let titled = Note {
            title: Some("Ünïcode   title".into()),
            ..note("x")
        };
        let path = write(root.path(), Path::new("a/b"), &titled, at(), 1 << 20).unwrap();
        assert_eq!(path, "a/b/2024-02-07-ünïcode-title.md");
        let names: Vec<String> = std::fs::read_dir(root.path().join("memories"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file is left: {names:?}");
    }

    #[test]
    fn bad_notes_and_folders_outside_the_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let refused = |folder: &Path, n: &Note, max: u64| {
            write(root.path(), folder, n, at(), max)
                .unwrap_err()
                .to_string()
        };
        let m = Path::new("memories");
        assert!(refused(m, &note(" \n"), 100).contains("nothing to remember"));
        assert!(refused(m, &note("long text"), 10).contains("over the 10-byte limit"));
        let bad_key = Note {
            meta: vec![("a: b".into(), "x".into())],
            ..note("x")
        };
        assert!(refused(m, &bad_key, 100).contains("--meta key 'a: b'"));
        let reserved = Note {
            meta: vec![("date".into(), "x".into())],
            ..note("x")
        };
        assert!(refused(m, &reserved, 100).contains("cannot set 'date'"));
        assert!(refused(Path::new("../x"), &note("x"), 100).contains("outside"));
        assert!(refused(outside.path(), &note("x"), 100).contains("outside"));
        assert!(refused(Path::new(".hidden"), &note("x"), 100).contains("hidden"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
            assert!(refused(Path::new("link/sub"), &note("x"), 100).contains("leads outside"));
            assert!(!outside.path().join("sub").exists());
        }
        let inside = root.path().join("in");
        let ok = write(root.path(), &inside, &note("x"), at(), 100).unwrap();
        assert_eq!(ok, "in/2024-02-07-x.md");
        assert_eq!(slug("!!!"), "note");
    }
}
