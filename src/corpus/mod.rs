//! The corpus side: finding markdown files and turning each into chunks.
//!
//! [`walk`] lists the files, [`read`] reads one safely (bounded, text only)
//! and gives its built-in metadata, [`front_matter`] reads its YAML
//! metadata, [`sections`] cuts its body at headings, [`chunk`] packs
//! sections into budgeted chunks; [`links`] finds the links of a text;
//! [`date`] gives each file its document date; [`note`] writes a new note
//! (`memidx remember`).

#[cfg(unix)]
pub mod beneath;
pub mod chunk;
pub mod date;
pub mod front_matter;
mod lines;
pub mod links;
pub mod note;
pub mod read;
pub mod sections;
pub mod walk;

use std::collections::BTreeMap;
use std::fmt;

/// Metadata: key → list of string values (a scalar becomes a one-element list), keys sorted.
pub type Metadata = BTreeMap<String, Vec<String>>;

/// A file (or folder) left out of the index, with the reason, so the run can
/// warn about it by name and go on with the rest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// Path relative to the indexed root (forward slashes), or the absolute
    /// path when the entry lies outside it.
    pub path: String,
    /// Why it was skipped, lowercase, e.g. `not valid UTF-8 (at byte 17)`.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped {}: {}", self.path, self.reason)
    }
}
