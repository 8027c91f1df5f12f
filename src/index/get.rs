//! Fetching what the index holds by name: a chunk by its id (text from the
//! index), or lines of an indexed file (read from disk, checked first).
//!
//! A line range is read only from a file that is in the index, inside the
//! indexed root, and still the file that was indexed:
//! - the path must be relative to the root (or absolute inside it) and
//!   have no `..` component;
//! - it must name a file of the live generation;
//! - the file's real path (links resolved) must lie inside the root's real
//!   path, so a link to a folder or a file outside is refused;
//! - it is opened without following a final link and without blocking on
//!   a FIFO, and must be a regular file;
//! - its size and modification time must be the ones recorded (and its
//!   content hash, when one is recorded); a file changed since indexing is
//!   refused, since its lines no longer match the index (its chunks are
//!   still served, by id, from the index).

use std::fmt;
use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{Result, bail};

use super::Index;
use super::set::IndexSet;
use crate::store::generation::{ChunkView, FileEntry};
use crate::store::parts::Parts;

/// What to fetch, as `memidx get` and the MCP `get` tool name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A chunk id, `path#n`.
    Chunk(String),
    /// An indexed file (relative to the root), optionally a line range.
    File {
        /// The path as given.
        path: String,
        /// The lines wanted, 1-based and inclusive; `None` for the whole file.
        lines: Option<LineRange>,
    },
}

/// Lines of a file: `from`, and through `to` (the end of the file when `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// First line, 1-based.
    pub from: u32,
    /// Last line, inclusive; `None` for the end of the file.
    pub to: Option<u32>,
}

/// The line ranges `memidx get` reads, for its usage errors.
pub const RANGE_FORMS: &str = "PATH:FROM (line FROM to the end), PATH:FROM- (the same) or \
     PATH:FROM-TO (lines FROM through TO), with line numbers from 1";

impl Target {
    /// Parses `ID`, `PATH`, `PATH:FROM`, `PATH:FROM-` or `PATH:FROM-TO`:
    /// text ending in `#` and digits is a chunk id, and a `:` followed by
    /// nothing or only digits, `-`, `+` and spaces is a line range, which
    /// must then be one of those forms (`a.md:`, `a.md:-1`, `a.md:+3` and
    /// `a.md:1-2-3` are usage errors, not paths). Any other text is a path.
    pub fn parse(text: &str) -> Result<Self> {
        if let Some((path, n)) = text.rsplit_once('#')
            && !path.is_empty()
            && is_digits(n)
        {
            return Ok(Self::Chunk(text.to_string()));
        }
        let Some((path, range)) = text.rsplit_once(':') else {
            return Ok(Self::whole(text));
        };
        if !is_range_like(range) {
            return Ok(Self::whole(text));
        }
        let (from, to) = match range.split_once('-') {
            Some((from, to)) => (from, Some(to).filter(|to| !to.is_empty())),
            None => (range, None),
        };
        if !is_digits(from) || !to.is_none_or(is_digits) {
            bail!("'{text}': the line range '{range}' is not one memidx reads; give {RANGE_FORMS}");
        }
        if path.is_empty() {
            bail!("'{text}' names no file before the line range; give {RANGE_FORMS}");
        }
        let lines = LineRange::new(parse_line(from)?, to.map(parse_line).transpose()?)?;
        Ok(Self::File {
            path: path.to_string(),
            lines: Some(lines),
        })
    }

    /// The whole file at `path`.
    fn whole(path: &str) -> Self {
        Self::File {
            path: path.to_string(),
            lines: None,
        }
    }
}

/// True when the text after a path's last `:` is meant as a line range:
/// empty, or only digits, signs and spaces.
fn is_range_like(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b' ' | b'\t'))
}

impl LineRange {
    /// A checked range: lines start at 1 and `to` is not before `from`.
    pub fn new(from: u32, to: Option<u32>) -> Result<Self> {
        if from == 0 {
            bail!("line numbers start at 1");
        }
        if let Some(to) = to
            && to < from
        {
            bail!("the line range {from}-{to} ends before it starts");
        }
        Ok(Self { from, to })
    }
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn parse_line(text: &str) -> Result<u32> {
    text.parse()
        .map_err(|_| anyhow::anyhow!("line number {text} is too large"))
}

/// The error for a chunk id or path the index does not hold (exit 1 on the
/// command line), as opposed to every other failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound(pub String);

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFound {}

/// The error for chunk id `id`, which `generation` does not hold: it names
/// the ids its file holds when the file is indexed (`a.md holds chunks #1
/// to #4`), else ends with `hint`, where ids come from.
pub fn chunk_not_found(parts: &Parts, id: &str, hint: &str) -> NotFound {
    let held = id.rsplit_once('#').and_then(|(path, _)| {
        let chunks = parts.chunks_of_file(parts.file_index(path)?).ok()?;
        Some(match chunks.len() {
            0 => format!("{path} holds no chunk"),
            1 => format!("{path} holds chunk #1 only"),
            n => format!("{path} holds chunks #1 to #{n}"),
        })
    });
    NotFound(format!(
        "no chunk '{id}' in the index; {}",
        held.as_deref().unwrap_or(hint)
    ))
}

/// What was fetched.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// A chunk, from the index.
    Chunk {
        /// The chunk (file entry, record, text).
        view: ChunkView,
        /// True when its file changed on disk since indexing.
        changed: bool,
    },
    /// Lines of an indexed file, read from disk.
    Lines {
        /// The file's index entry.
        file: FileEntry,
        /// First and last line returned, 1-based and inclusive.
        lines: (u32, u32),
        /// Number of lines in the file.
        total_lines: u32,
        /// The lines, each with its line ending.
        text: String,
    },
}

/// Fetches `target` from `index`: a chunk's text from the index, or lines
/// of an indexed file after the checks in the module documentation.
pub fn fetch(index: &Index, target: &Target) -> Result<Fetched> {
    match target {
        Target::Chunk(id) => {
            let parts = index.parts();
            let Some(ord) = parts.find(id) else {
                return Err(
                    chunk_not_found(parts, id, "chunk ids come from search (chunk_id)").into(),
                );
            };
            let view = parts.chunk(ord)?;
            let changed = !stamp_matches(index.root(), &view.file);
            Ok(Fetched::Chunk { view, changed })
        }
        Target::File { path, lines } => read_lines(index, path, *lines),
    }
}

/// Fetches what `typed` names (a chunk id, or a path with lines, as
/// [`Target::parse`] reads them) from `indexes`: with several, it starts
/// with an index's name and `:` (`notes:db.md#3`), and the file is named
/// so in what is fetched; an unknown name is [`NotFound`].
pub fn fetch_shown(indexes: &IndexSet, typed: &str) -> Result<Fetched> {
    let (member, rest) = (indexes.split_shown(typed)).map_err(|err| NotFound(err.to_string()))?;
    let mut fetched = fetch(indexes.members()[member].index(), &Target::parse(rest)?)?;
    let file = fetched.file_mut();
    file.path = indexes.shown_path(member, &file.path);
    Ok(fetched)
}

impl Fetched {
    /// The entry of the file it comes from (its path is renamed when
    /// several indexes show their names).
    pub fn file_mut(&mut self) -> &mut FileEntry {
        match self {
            Self::Chunk { view, .. } => &mut view.file,
            Self::Lines { file, .. } => file,
        }
    }
}

/// True when `file` under `root` still has the size and modification time
/// recorded when it was indexed.
pub fn stamp_matches(root: &Path, file: &FileEntry) -> bool {
    std::fs::metadata(root.join(&file.path))
        .ok()
        .is_some_and(|m| (m.len(), mtime_ns(&m)) == (file.stamp.size, file.stamp.mtime_ns))
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The indexed path `given` names: relative to the root with `/`
/// separators, or an error saying why it is refused.
fn relative_path(root: &Path, given: &str) -> Result<String> {
    let path = Path::new(given);
    if path.components().any(|c| c == Component::ParentDir) {
        bail!("refused: the path '{given}' contains '..'; give a path inside the indexed folder");
    }
    if given.ends_with('/') || given.ends_with(std::path::MAIN_SEPARATOR) {
        bail!("'{given}' ends in a separator, as a folder does; give an indexed file's path");
    }
    let relative = if path.is_absolute() {
        let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        match path
            .strip_prefix(root)
            .or_else(|_| path.strip_prefix(&real_root))
        {
            Ok(inside) => inside.to_path_buf(),
            Err(_) => bail!(
                "refused: the absolute path '{given}' is outside the indexed folder {}",
                root.display()
            ),
        }
    } else {
        PathBuf::from(path)
    };
    let parts: Vec<String> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        bail!("refused: '{given}' names no file");
    }
    Ok(parts.join("/"))
}

/// The indexed file at `path` (relative, `/` separators).
fn indexed_file(index: &Index, path: &str) -> Result<FileEntry> {
    let parts = index.parts();
    if let Some(file) = parts.file_index(path) {
        return parts.file(file);
    }
    Err(NotFound(format!(
        "'{path}' is not an indexed file; paths are relative to the indexed folder (search results' source)"
    ))
    .into())
}

/// Reads `lines` of the indexed file `given`, after every check.
fn read_lines(index: &Index, given: &str, lines: Option<LineRange>) -> Result<Fetched> {
    let root = index.root();
    let path = relative_path(root, given)?;
    let file = indexed_file(index, &path)?;
    let bytes = read_indexed(root, &file)?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let total_lines = all.len() as u32;
    let range = lines.unwrap_or(LineRange { from: 1, to: None });
    if range.from > total_lines.max(1) {
        bail!(
            "'{path}' has {total_lines} lines; line {} is past its end",
            range.from
        );
    }
    let last = range.to.unwrap_or(total_lines).min(total_lines);
    let first = range.from;
    let text = all
        .get(first as usize - 1..last as usize)
        .unwrap_or_default()
        .concat();
    Ok(Fetched::Lines {
        file,
        lines: (first, last.max(first)),
        total_lines,
        text,
    })
}

/// The bytes of the indexed `file`, read only when its real path is inside
/// the root's, it opens (no final link followed, no FIFO waited on) as a
/// regular file, and it is the file that was indexed.
fn read_indexed(root: &Path, file: &FileEntry) -> Result<Vec<u8>> {
    let shown = &file.path;
    let real_root = std::fs::canonicalize(root).map_err(|e| {
        anyhow::anyhow!("the indexed folder {} cannot be read: {e}", root.display())
    })?;
    let joined = root.join(shown);
    let unreadable = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!(
            "'{shown}' was deleted since indexing; run 'memidx index' (or get its chunks by id)"
        ),
        _ => anyhow::anyhow!("'{shown}' cannot be read: {e}"),
    };
    let real = std::fs::canonicalize(&joined).map_err(unreadable)?;
    if !real.starts_with(&real_root) {
        bail!("refused: '{shown}' leads outside the indexed folder through a symbolic link");
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let opened = options.open(&joined).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return anyhow::anyhow!("refused: '{shown}' is a symbolic link; not followed");
        }
        unreadable(e)
    })?;
    let meta = opened.metadata()?;
    if !meta.is_file() {
        bail!("refused: '{shown}' is not a regular file");
    }
    let changed = || {
        anyhow::anyhow!(
            "'{shown}' changed since indexing, so its lines no longer match the index; run 'memidx index' (or get its chunks by id)"
        )
    };
    if (meta.len(), mtime_ns(&meta)) != (file.stamp.size, file.stamp.mtime_ns) {
        return Err(changed());
    }
    let mut bytes = Vec::new();
    opened.take(file.stamp.size + 1).read_to_end(&mut bytes)?;
    let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes));
    if bytes.len() as u64 != file.stamp.size
        || !(file.stamp.hash.is_empty() || file.stamp.hash == hash)
    {
        return Err(changed());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_chunk_ids_paths_and_line_ranges() {
        assert_eq!(
            Target::parse("notes/a.md#3").unwrap(),
            Target::Chunk("notes/a.md#3".into())
        );
        assert_eq!(
            Target::parse("notes/a.md").unwrap(),
            Target::File {
                path: "notes/a.md".into(),
                lines: None
            }
        );
        assert_eq!(
            Target::parse("notes/a.md:4-9").unwrap(),
            Target::File {
                path: "notes/a.md".into(),
                lines: Some(LineRange {
                    from: 4,
                    to: Some(9)
                })
            }
        );
        assert_eq!(
            Target::parse("a.md:7").unwrap(),
            Target::File {
                path: "a.md".into(),
                lines: Some(LineRange { from: 7, to: None })
            }
        );
        assert_eq!(
            Target::parse("a.md:7-").unwrap(),
            Target::File {
                path: "a.md".into(),
                lines: Some(LineRange { from: 7, to: None })
            }
        );
        for bad in [
            "a.md:",
            "a.md:-1",
            "a.md:+3",
            "a.md:-",
            "a.md:1-2-3",
            "a.md:1--2",
            "a.md:1 -3",
            "a.md:-1-3",
            "a.md::",
        ] {
            let err = Target::parse(bad).unwrap_err().to_string();
            assert!(err.contains("is not one memidx reads"), "{bad}: {err}");
            assert!(err.contains(RANGE_FORMS), "{bad}: {err}");
        }
        let err = Target::parse(":3").unwrap_err().to_string();
        assert!(err.contains("names no file"), "{err}");
        assert!(Target::parse("a.md:0").is_err());
        assert!(Target::parse("a.md:9-4").is_err());
        // Not a range or an id: the whole text is a path.
        for path in ["a#b.md:x", "10:30 standup.md", "notes/a.md:1.5", "a.md"] {
            assert_eq!(Target::parse(path).unwrap(), Target::whole(path), "{path}");
        }
    }

    #[test]
    fn paths_with_dot_dot_or_outside_the_root_are_refused() {
        let root = Path::new("/data/notes");
        assert_eq!(relative_path(root, "./a/b.md").unwrap(), "a/b.md");
        assert_eq!(relative_path(root, "/data/notes/a.md").unwrap(), "a.md");
        let err = relative_path(root, "a/../../etc/passwd").unwrap_err();
        assert!(err.to_string().contains("'..'"), "{err}");
        let err = relative_path(root, "/etc/passwd").unwrap_err();
        assert!(
            err.to_string().contains("outside the indexed folder"),
            "{err}"
        );
    }
}
