//! Writing a new note into the indexed folder (`memidx remember`): the one
//! kind of file memidx creates outside its index.
//!
//! A note is `FOLDER/YYYY-MM-DD-slug.md`: YAML front matter with `date`
//! (the time of writing, UTC), `title` and the caller's keys, then the text.
//! It never replaces a file: a taken name gets `-2`, `-3`, … and the note is
//! written to a hidden temporary file in the same folder, synced, and linked
//! into place only under a free name (a hard link, which never replaces a
//! file), so a reader or a concurrent index run sees either no note or the
//! whole note, and the hidden file is removed on every path. The folder
//! must lie inside the root and name no symbolic link; missing folders are
//! created. On Unix every step goes through folder handles opened one by
//! one without following links (`beneath.rs`), so swapping a folder for a
//! link while a note is written cannot carry it out of the root.
//! The note is created like a file an editor saves: mode `0666` less the
//! umask.
//!
//! Everything is checked before anything is written: the front matter is
//! read back with the indexer's own parser and must give every key and value
//! exactly as given, the note must make at least one chunk, and the walk
//! must read the folder (no ignore, exclude or include rule, no hidden
//! folder leaves it out).

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use jiff::Timestamp;

#[cfg(unix)]
use super::beneath;
use super::chunk::{ChunkOptions, parse_file};
use super::front_matter::{double_quoted, parse_front_matter};
use super::walk::{WalkOptions, is_markdown, would_keep};

/// The folder notes go to when the caller names none.
pub const DEFAULT_NOTES_DIR: &str = "memories";

/// Keys a note sets itself, or that every file has built in.
const RESERVED_KEYS: [&str; 4] = ["date", "title", "path", "dir"];

/// Most words of the text (or title) in a file name.
const SLUG_WORDS: usize = 6;

/// Most characters of a slug.
const SLUG_CHARS: usize = 60;

/// Most bytes of a slug: with the date, a `-999` suffix and `.md`, a name
/// stays far below the 255 bytes most file systems allow.
const SLUG_BYTES: usize = 200;

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

/// Where a note goes and what it may be: the indexed folder, the index
/// folder (which no note may go into), the walk's rules (a note goes only
/// where the index reads), and the largest note.
#[derive(Debug, Clone, Copy)]
pub struct Destination<'a> {
    /// The indexed folder.
    pub root: &'a Path,
    /// The index folder, which memidx rewrites and prunes: a note inside it
    /// would be left out of the index, then deleted with its generation.
    pub index_dir: &'a Path,
    /// The walk's options: a folder they leave out takes no note.
    pub walk: &'a WalkOptions,
    /// The largest note written, in bytes.
    pub max_bytes: u64,
}

/// Writes `note` into `folder` (relative to the root, or absolute inside
/// it) at time `now`; returns the new file's path relative to the root,
/// `/`-separated.
pub fn write(to: Destination<'_>, folder: &Path, note: &Note, now: Timestamp) -> Result<String> {
    let Destination {
        root,
        index_dir,
        walk,
        max_bytes,
    } = to;
    let (title, content) = checked_content(note, now)?;
    ensure!(
        content.len() as u64 <= max_bytes,
        "the note would be {} bytes, over the {max_bytes}-byte limit on an indexed file (on the command line, 'memidx remember --max-file-size' raises it)",
        content.len()
    );
    let given = root;
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot open the indexed folder {}", root.display()))?;
    let relative = inside(given, &root, folder)?;
    let index = index_dir
        .canonicalize()
        .unwrap_or_else(|_| index_dir.to_path_buf());
    ensure!(
        !root.join(&relative).starts_with(&index),
        "--dir {} is inside the index folder {}, which memidx rewrites and prunes; choose another --dir",
        folder.display(),
        index.display()
    );
    let day = now.strftime("%Y-%m-%d").to_string();
    let stem = format!("{day}-{}", slug(&title));
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let would_be = [&parts[..], &[format!("{stem}.md")]].concat().join("/");
    ensure!(
        would_keep(&root, &would_be, walk)?,
        "--dir {} is left out of the index (a hidden folder, an --exclude or --include pattern, or an ignore file rules it out), so a note there would never be found; nothing was written; choose another --dir",
        folder.display()
    );
    parts.push(place(&root, &relative, &stem, content.as_bytes())?);
    Ok(parts.join("/"))
}

/// `written` (a note just written) and the markdown files beside it, not
/// hidden, changed in the last `within`: the notes other `remember` calls
/// wrote meanwhile, which a run indexes with its own (the run holding the
/// lock indexes the waiting calls' notes, and they find them indexed). A
/// file unchanged since the last run is found so and skipped.
pub fn written_beside(written: &Path, within: std::time::Duration) -> Vec<PathBuf> {
    let mut told = vec![written.to_path_buf()];
    let Some(entries) = written.parent().and_then(|dir| std::fs::read_dir(dir).ok()) else {
        return told;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        let recent = (entry.metadata().ok())
            .filter(|meta| meta.is_file())
            .and_then(|meta| meta.modified().ok())
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|age| age <= within);
        if recent && !hidden && is_markdown(&path) && path != written {
            told.push(path);
        }
    }
    told
}

/// The names a note with file stem `stem` may take, in order.
fn names(stem: &str) -> impl Iterator<Item = String> + '_ {
    (1..=MAX_SUFFIX).map(move |n| match n {
        1 => format!("{stem}.md"),
        n => format!("{stem}-{n}.md"),
    })
}

/// Writes `content` as a new note in `relative` (created as needed) under
/// the first free name of `stem`, through folder handles opened one by one
/// without following links ([`beneath`]): a folder swapped for a link while
/// the note is written cannot carry it outside `root`. Returns the name.
#[cfg(unix)]
fn place(root: &Path, relative: &Path, stem: &str, content: &[u8]) -> Result<String> {
    use std::ffi::OsStr;
    let mut folder = beneath::Folder::open(root)
        .with_context(|| format!("cannot open the indexed folder {}", root.display()))?;
    let mut dir = root.to_path_buf();
    for part in relative.components() {
        dir.push(part);
        folder = match folder.child(part.as_os_str()) {
            Ok(child) => child,
            Err(beneath::Step::Link) => return Err(link_refused(root, &dir)),
            Err(beneath::Step::NotAFolder) => bail!("{} is not a folder", dir.display()),
            Err(beneath::Step::Io(err)) => {
                return Err(err).with_context(|| format!("cannot open {}", dir.display()));
            }
        };
    }
    let temp = format!(".memidx-note-{}-{}.tmp", std::process::id(), unique());
    let temp = OsStr::new(&temp);
    let written = folder.create_new(temp).and_then(|mut file| {
        file.write_all(content)?;
        file.sync_all()
    });
    let placed = written
        .with_context(|| format!("cannot write in {}", dir.display()))
        .and_then(|()| {
            for name in names(stem) {
                let linked = folder
                    .link_new(temp, OsStr::new(&name))
                    .with_context(|| format!("cannot write {}", dir.join(&name).display()))?;
                if linked {
                    return Ok(name);
                }
            }
            bail!(
                "every name from {stem}.md to {stem}-{MAX_SUFFIX}.md is taken in {}",
                dir.display()
            )
        });
    // The hidden file goes on every path; the note, if linked, stays.
    let _ = folder.remove(temp);
    placed
}

/// A number no other note being written by this process at the same time
/// has (with the process id, a name no concurrent `remember` takes).
#[cfg(unix)]
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos().into());
    nanos ^ (NEXT.fetch_add(1, Ordering::Relaxed) << 32)
}

/// [`place`] where there are no folder handles: the folders are checked
/// by path, then the note is persisted without replacing a file.
#[cfg(not(unix))]
fn place(root: &Path, relative: &Path, stem: &str, content: &[u8]) -> Result<String> {
    let dir = make_folder(root, relative)?;
    let mut file = tempfile::Builder::new()
        .prefix(".memidx-note-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    file.write_all(content)
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    for name in names(stem) {
        match file.persist_noclobber(dir.join(&name)) {
            Ok(_) => return Ok(name),
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

/// The error for a symbolic link at `dir` on the way to the notes' folder.
fn link_refused(root: &Path, dir: &Path) -> anyhow::Error {
    let leads_outside = dir
        .canonicalize()
        .map_or(true, |resolved| !resolved.starts_with(root));
    if leads_outside {
        anyhow::anyhow!(
            "{} leads outside the indexed folder {} (a symbolic link)",
            dir.display(),
            root.display()
        )
    } else {
        anyhow::anyhow!(
            "{} is a symbolic link, which the index does not follow: \
             name the folder it points to as --dir",
            dir.display()
        )
    }
}

/// The note's title and file content, refused unless the content is a note
/// the index reads as given: no NUL, unique and plain keys, a title, front
/// matter that reads back exactly, and at least one chunk.
fn checked_content(note: &Note, now: Timestamp) -> Result<(String, String)> {
    ensure!(
        !note.text.trim().is_empty(),
        "there is nothing to remember: the text is empty"
    );
    if let Some(at) = note.text.find('\0') {
        bail!(
            "the text contains a NUL byte (at byte {at}), which makes the index read the note as binary"
        );
    }
    ensure!(
        !only_front_matter(&note.text),
        "the text is only a front matter block, which leaves the note nothing to index; \
         give its keys with --meta and write the text after them"
    );
    for (n, (key, _)) in note.meta.iter().enumerate() {
        check_key(key)?;
        ensure!(
            !note.meta[..n].iter().any(|(earlier, _)| earlier == key),
            "--meta sets '{key}' twice: give each key once"
        );
    }
    let title = match &note.title {
        Some(title) if title.trim().is_empty() => bail!("--title is empty"),
        Some(title) => one_line(title),
        None => title_of(&note.text),
    };
    let content = render(note, &title, now);
    let parsed = parse_file(&content, &ChunkOptions::default());
    let metadata = &parsed.front_matter.metadata;
    if let Some(error) = parsed.front_matter.error {
        bail!("the note's front matter would not read back ({error}); nothing was written");
    }
    let expected = std::iter::once(("title", title.as_str()))
        .chain(note.meta.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for (key, value) in expected {
        let read = metadata.get(key).map(Vec::as_slice);
        ensure!(
            read == Some(&[value.to_string()][..]),
            "the note's front matter would not read back '{key}' as given; nothing was written"
        );
    }
    ensure!(
        !parsed.chunks.is_empty(),
        "the text has nothing the index keeps (no paragraph, list, code or other block), \
         so the note would make no chunk; nothing was written"
    );
    Ok((title, content))
}

/// Whether `text` is a front matter block (`---` … `---`) and nothing else
/// but blank lines.
fn only_front_matter(text: &str) -> bool {
    let front_matter = parse_front_matter(text);
    front_matter.body_start > 0
        && text
            .get(front_matter.body_start..)
            .is_some_and(|rest| rest.trim().is_empty())
}

/// The note's file content: front matter, a blank line, the text. The
/// title and values are YAML double-quoted scalars (see [`double_quoted`]),
/// and so are keys a YAML reader could take for something else than their
/// text (see [`plain_key`]), so `null`, `0x10` or a control character read
/// back as the text they are.
fn render(note: &Note, title: &str, now: Timestamp) -> String {
    let mut out = format!(
        "---\ndate: {}\ntitle: {}\n",
        now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        double_quoted(title)
    );
    for (key, value) in &note.meta {
        let key = if plain_key(key) {
            key.clone()
        } else {
            double_quoted(key)
        };
        out.push_str(&format!("{key}: {}\n", double_quoted(value)));
    }
    out.push_str("---\n\n");
    out.push_str(note.text.trim_end());
    out.push('\n');
    out
}

/// Whether `key` reads back as itself unquoted: ASCII letters, digits, `_`
/// and `-`, starting with a letter, and no word YAML 1.1 or 1.2 reads as
/// null or a boolean (`null`, `true`, `yes`, `off`, …).
fn plain_key(key: &str) -> bool {
    const WORDS: [&str; 11] = [
        "null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf",
    ];
    key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        && !WORDS.contains(&key.to_ascii_lowercase().as_str())
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
/// joined by `-`, within [`SLUG_CHARS`] characters and [`SLUG_BYTES`] bytes
/// (`note` when none is left).
fn slug(title: &str) -> String {
    let words = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(SLUG_WORDS)
        .map(str::to_lowercase);
    let fits = |slug: &str, extra: &str| {
        slug.chars().count() + extra.chars().count() <= SLUG_CHARS
            && slug.len() + extra.len() <= SLUG_BYTES
    };
    let mut slug = String::new();
    for word in words {
        if slug.is_empty() {
            // A first word too long is cut, at a character.
            for c in word.chars() {
                if !fits(&slug, c.encode_utf8(&mut [0; 4])) {
                    break;
                }
                slug.push(c);
            }
        } else if fits(&slug, &format!("-{word}")) {
            slug.push('-');
            slug.push_str(&word);
        } else {
            break;
        }
    }
    if slug.is_empty() {
        "note".to_string()
    } else {
        slug
    }
}

/// `folder` as a path relative to `root` (canonical; `given` as the caller
/// named it), refused when it would leave the root. An absolute `folder`
/// under either form of the root is taken as written, so that its links
/// are seen (and refused) as the other folders' are; otherwise its links
/// are resolved to find where it is.
fn inside(given: &Path, root: &Path, folder: &Path) -> Result<PathBuf> {
    let relative = if !folder.is_absolute() {
        folder.to_path_buf()
    } else if let Some(relative) = [given, root]
        .into_iter()
        .find_map(|root| folder.strip_prefix(root).ok())
    {
        relative.to_path_buf()
    } else {
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
/// each existing part is a folder and not a symbolic link (the index does
/// not follow links, so a note behind one would be indexed under another
/// path, or not at all); returns the folder.
#[cfg(not(unix))]
fn make_folder(root: &Path, relative: &Path) -> Result<PathBuf> {
    let mut dir = root.to_path_buf();
    for part in relative.components() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(link_refused(root, &dir)),
            Ok(meta) => ensure!(meta.is_dir(), "{} is not a folder", dir.display()),
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
    use std::time::Duration;

    fn at() -> Timestamp {
        "2024-02-07T10:30:00Z".parse().unwrap()
    }

    /// Notes into `root` (its index in `root/.memidx`), at most `max_bytes`.
    fn to(root: &Path, max_bytes: u64) -> Destination<'_> {
        Destination {
            root,
            index_dir: Path::new(INDEX_OF_TESTS),
            walk: &WALK_OF_TESTS,
            max_bytes,
        }
    }

    /// The walk's defaults: ignore files read, no patterns.
    static WALK_OF_TESTS: WalkOptions = WalkOptions {
        no_ignore: false,
        include: Vec::new(),
        exclude: Vec::new(),
    };

    #[test]
    fn a_run_is_told_the_fresh_notes_beside_the_one_written() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["written.md", "other.md", ".hidden.md", "notes.txt"] {
            std::fs::write(dir.path().join(name), "# A note\n").unwrap();
        }
        let mut told = written_beside(&dir.path().join("written.md"), Duration::from_secs(60));
        told[1..].sort();
        assert_eq!(
            told,
            [dir.path().join("written.md"), dir.path().join("other.md")]
        );
        // Older than the window: the note alone.
        let told = written_beside(&dir.path().join("written.md"), Duration::ZERO);
        assert_eq!(told, [dir.path().join("written.md")]);
    }

    /// An index folder none of these tests' roots holds.
    const INDEX_OF_TESTS: &str = "/nonexistent/.memidx";

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
        let first = write(to(root.path(), 1 << 20), Path::new("memories"), &n, at()).unwrap();
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
        let second = write(to(root.path(), 1 << 20), Path::new("memories"), &n, at()).unwrap();
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
        let path = write(to(root.path(), 1 << 20), Path::new("a/b"), &titled, at()).unwrap();
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
            write(to(root.path(), max), folder, n, at())
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
            std::fs::create_dir(root.path().join("real")).unwrap();
            std::os::unix::fs::symlink("real", root.path().join("alias")).unwrap();
            assert!(refused(Path::new("alias"), &note("x"), 100).contains("is a symbolic link"));
        }
        let index = root.path().join("idx");
        std::fs::create_dir(&index).unwrap();
        let into_index = Destination {
            index_dir: &index,
            ..to(root.path(), 100)
        };
        let err = write(into_index, Path::new("idx/gen-1"), &note("x"), at()).unwrap_err();
        assert!(err.to_string().contains("inside the index folder"), "{err}");
        assert!(!index.join("gen-1").exists());
        let inside = root.path().join("in");
        let ok = write(to(root.path(), 100), &inside, &note("x"), at()).unwrap();
        assert_eq!(ok, "in/2024-02-07-x.md");
        assert_eq!(slug("!!!"), "note");
        // Cut by bytes too, at a character: 50 four-byte characters.
        assert_eq!(slug(&"\u{1d400}".repeat(80)), "\u{1d400}".repeat(50));
        assert!(plain_key("service-name_2") && !plain_key("Null") && !plain_key("0x10"));
    }
}
