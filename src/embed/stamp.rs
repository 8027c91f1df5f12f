//! What a model folder's files look like on disk — size, modification and
//! change times, inode — so that a process can tell they are the ones it,
//! or the run that wrote an index, already read and hashed.
//!
//! A search loads the model an index was built with and must know it is
//! the same model: hashing every byte of a transformer's weights costs a
//! tenth of a one-shot search. The index records the stamp its run took
//! *before* hashing ([`ModelFiles`], in the manifest) beside the
//! fingerprint; a search whose stamp is equal takes the recorded
//! fingerprint instead of hashing. A file rewritten since changes its
//! change time (which, unlike the modification time, no user can set
//! back); a stamp is recorded only when every file had been still for a
//! while ([`FolderStamp::settled`]), so that a rewrite within the file
//! system's timestamp granularity of the stamp cannot go unseen (git's
//! "racy" entries, handled the same way).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The files either kind of model folder is read from.
const MODEL_FILES: [&str; 6] = [
    "config.json",
    "tokenizer.json",
    "model.safetensors",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "modules.json",
];

/// How long every file must have been unchanged when a stamp is taken for
/// the stamp to vouch for the files (far more than any file system's
/// timestamp granularity).
pub(super) const STILL_FOR: Duration = Duration::from_secs(2);

/// The stamps of a model folder's files that exist, by name: recorded in
/// an index's manifest beside the model's fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelFiles(BTreeMap<String, FileStamp>);

/// One file as the file system describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileStamp {
    /// Size in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the epoch.
    pub modified_ns: i64,
    /// Status change time, nanoseconds since the epoch.
    pub changed_ns: i64,
    /// Inode number.
    pub inode: u64,
}

/// A model folder as it is now: its canonical path and its files' stamps.
#[derive(Debug)]
pub(super) struct FolderStamp {
    pub(super) dir: PathBuf,
    pub(super) files: ModelFiles,
    /// Whether every file had been unchanged for [`STILL_FOR`] when the
    /// stamp was taken: only then may an index record it.
    pub(super) settled: bool,
}

impl PartialEq for FolderStamp {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir && self.files == other.files
    }
}

impl FolderStamp {
    /// `None` when the folder cannot be resolved or a file's times cannot
    /// be read (then nothing is reused).
    pub(super) fn of(dir: &Path) -> Option<Self> {
        let dir = dir.canonicalize().ok()?;
        let now = nanos(SystemTime::now())?;
        let mut files = BTreeMap::new();
        for name in MODEL_FILES {
            if let Ok(meta) = std::fs::metadata(dir.join(name)) {
                files.insert(name.to_string(), file_stamp(&meta)?);
            }
        }
        let still = i64::try_from(STILL_FOR.as_nanos()).ok()?;
        let settled = files
            .values()
            .all(|f| f.changed_ns.max(f.modified_ns) < now - still);
        Some(Self {
            dir,
            files: ModelFiles(files),
            settled,
        })
    }
}

/// Nanoseconds since the epoch.
fn nanos(time: SystemTime) -> Option<i64> {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_nanos()).ok()
}

#[cfg(unix)]
fn file_stamp(meta: &std::fs::Metadata) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    Some(FileStamp {
        len: meta.len(),
        modified_ns: meta.mtime().checked_mul(1_000_000_000)? + meta.mtime_nsec(),
        changed_ns: meta.ctime().checked_mul(1_000_000_000)? + meta.ctime_nsec(),
        inode: meta.ino(),
    })
}

/// Without a change time and an inode, no stamp vouches for a file.
#[cfg(not(unix))]
fn file_stamp(_meta: &std::fs::Metadata) -> Option<FileStamp> {
    None
}
