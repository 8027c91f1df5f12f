//! The server's notices: lines on stderr (a stdio client's log), since
//! stdout carries only protocol messages.

use std::io::Write;

/// A line on stderr (the client's log), its write errors ignored.
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "memidx mcp: {message}");
}
