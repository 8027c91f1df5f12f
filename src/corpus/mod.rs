//! The corpus side: finding markdown files and turning each into chunks.
//!
//! [`walk`] lists the files, [`read`] reads one safely, [`markdown`] reads front matter and heading
//! sections, [`chunk`] packs sections into budgeted chunks.

pub mod chunk;
pub mod markdown;
pub mod read;
pub mod walk;

use std::fmt;

/// A file (or folder) left out of the index, with the reason, so the run can
/// warn about it by name and go on with the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
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
