//! Which folder memidx may write into and delete from: only one it made.
//!
//! An indexing run replaces `meta.json` and removes old `gen-N` folders,
//! temporary files and cached vectors, so it must never run in a folder that
//! holds someone else's files (`--index ~/thesis` would otherwise delete a
//! `gen-1/` there). A folder is memidx's when it carries the tag file
//! [`TAG_FILE`], written when memidx creates the folder or finds it empty;
//! an index written before the tag existed is recognised by its `meta.json`
//! and tagged. Any other folder that is not empty is refused, untouched.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::{MANIFEST_FILE, atomic};

/// The file that marks a folder as a memidx index.
pub const TAG_FILE: &str = "memidx.tag";

/// What the tag file says to a person who opens it.
const TAG_TEXT: &str = "This folder is a memidx index. memidx creates, replaces and deletes the files in it;\nkeep nothing else here.\n";

/// The fields every memidx manifest has had, to recognise an untagged index.
#[derive(Deserialize)]
struct ManifestProbe {
    #[serde(rename = "format_version")]
    _format_version: u32,
    #[serde(rename = "generation")]
    _generation: u64,
    #[serde(rename = "tool_version")]
    _tool_version: String,
}

/// The file that keeps an index out of git (`git status` would list every
/// generation file of an index inside a repository).
pub const GITIGNORE_FILE: &str = ".gitignore";

/// Makes sure `index_dir` is memidx's to write: creates and tags it when it
/// does not exist or is empty, tags an index that predates the tag, and
/// refuses (touching nothing) a file or a non-empty folder of other files.
/// A folder it claims gets a `.gitignore` of `*`, as tools' caches do.
pub fn claim(index_dir: &Path) -> Result<()> {
    claim_folder(index_dir)?;
    let ignore = index_dir.join(GITIGNORE_FILE);
    if fs::symlink_metadata(&ignore).is_err() {
        fs::write(&ignore, "# memidx index: keep it out of git\n*\n")
            .with_context(|| format!("cannot write {}", ignore.display()))?;
    }
    Ok(())
}

fn claim_folder(index_dir: &Path) -> Result<()> {
    match fs::metadata(index_dir) {
        Err(err) if err.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(index_dir)
                .with_context(|| format!("cannot create {}", index_dir.display()))?;
            return tag(index_dir);
        }
        Err(err) => {
            return Err(err).with_context(|| format!("cannot read {}", index_dir.display()));
        }
        Ok(meta) if !meta.is_dir() => bail!(
            "{} is a file, not an index folder; move it away or keep the index elsewhere",
            index_dir.display()
        ),
        Ok(_) => {}
    }
    if is_tagged(index_dir) {
        return Ok(());
    }
    let mut entries =
        fs::read_dir(index_dir).with_context(|| format!("cannot read {}", index_dir.display()))?;
    // Empty, or holding only memidx's own temporaries (the tag of a first
    // run of an older build, killed before it renamed the tag into place).
    let unclaimed = entries.all(|e| {
        e.is_ok_and(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(atomic::TEMP_PREFIX)
                && e.file_type().is_ok_and(|t| t.is_file())
        })
    });
    if unclaimed || holds_a_manifest(index_dir) {
        return tag(index_dir);
    }
    bail!(
        "{} is not a memidx index and is not empty; memidx writes only into a new or empty folder, or an index it made, so nothing was changed: keep the index in another folder",
        index_dir.display()
    )
}

/// True when `dir` is an index folder: it carries the tag file, or a
/// manifest (an index from before the tag).
pub fn is_index(dir: &Path) -> bool {
    is_tagged(dir) || holds_a_manifest(dir)
}

/// True when `index_dir` carries the tag file.
fn is_tagged(index_dir: &Path) -> bool {
    fs::symlink_metadata(index_dir.join(TAG_FILE)).is_ok_and(|m| m.is_file())
}

/// True when `index_dir/meta.json` is a regular file shaped like a memidx
/// manifest (any format version).
fn holds_a_manifest(index_dir: &Path) -> bool {
    let path = index_dir.join(MANIFEST_FILE);
    let small_file = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() < 1 << 30);
    small_file
        && fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<ManifestProbe>(&bytes).ok())
            .is_some()
}

/// Writes the tag file into `index_dir`. Not through a temporary file: a
/// run killed mid-way must not leave the folder holding only a temporary
/// (not empty, not tagged: refused next time), and a half-written tag is
/// still a tag.
fn tag(index_dir: &Path) -> Result<()> {
    atomic::write_synced(&index_dir.join(TAG_FILE), TAG_TEXT.as_bytes())?;
    atomic::sync_dir(index_dir)
        .with_context(|| format!("cannot sync folder {}", index_dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_or_empty_folder_is_created_and_tagged() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("a/b");
        claim(&new).unwrap();
        assert!(is_tagged(&new));
        let empty = dir.path().join("empty");
        fs::create_dir(&empty).unwrap();
        claim(&empty).unwrap();
        assert!(is_tagged(&empty));
        claim(&empty).unwrap();
        let killed = dir.path().join("killed");
        fs::create_dir(&killed).unwrap();
        fs::write(killed.join(".tmp-aRWpmC"), TAG_TEXT).unwrap();
        claim(&killed).unwrap();
        assert!(is_tagged(&killed));
        assert_eq!(
            fs::read_to_string(killed.join(GITIGNORE_FILE)).unwrap(),
            "# memidx index: keep it out of git\n*\n"
        );
    }

    #[test]
    fn a_folder_of_other_files_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("gen-1")).unwrap();
        fs::write(dir.path().join("gen-1/thesis.txt"), "x").unwrap();
        fs::write(dir.path().join(MANIFEST_FILE), "{\"mine\": true}").unwrap();
        let err = claim(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("is not a memidx index and is not empty"),
            "{err}"
        );
        assert!(!is_tagged(dir.path()));
        assert_eq!(fs::read(dir.path().join("gen-1/thesis.txt")).unwrap(), b"x");
    }

    #[test]
    fn an_index_from_before_the_tag_is_recognised_by_its_manifest() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(MANIFEST_FILE),
            r#"{"format_version": 16, "generation": 3, "tool_version": "0.1.0", "more": 1}"#,
        )
        .unwrap();
        claim(dir.path()).unwrap();
        assert!(is_tagged(dir.path()));
    }

    #[test]
    fn a_file_in_place_of_the_folder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".memidx");
        fs::write(&file, "x").unwrap();
        let err = claim(&file).unwrap_err().to_string();
        assert!(err.contains("is a file, not an index folder"), "{err}");
    }
}
