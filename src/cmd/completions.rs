//! `memidx completions SHELL`: shell completion scripts, generated from the
//! clap definition by `clap_complete` (the copies in `completions/` are
//! checked against this output by a test).

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

use super::Status;
use crate::cli::Cli;

/// Writes the completion script for `shell`.
pub fn run(shell: Shell, out: &mut dyn Write) -> Result<Status> {
    clap_complete::generate(shell, &mut Cli::command(), "memidx", out);
    Ok(Status::Success)
}
