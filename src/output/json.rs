//! The JSON printer: one document per command, at full float precision
//! (`serde_json` writes the shortest string that reads back to the same
//! float), so output is byte-identical for the same index and query.
//! Write errors come back as the `io::Error` they are (not wrapped in a
//! `serde_json::Error`, which hides it from the error chain), so a closed
//! pipe is recognised as one.

use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;

/// Writes `value` as one pretty-printed JSON document and a newline.
pub fn print<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// Writes each item as one compact JSON line (JSON Lines).
pub fn print_lines<T: Serialize>(out: &mut dyn Write, items: &[T]) -> Result<()> {
    for item in items {
        serde_json::to_writer(&mut *out, item).map_err(io::Error::from)?;
        writeln!(out)?;
    }
    Ok(())
}
