//! `memidx completions SHELL` and `memidx man`: shell completion scripts
//! (`clap_complete`) and the man page (`clap_mangen`), generated from the
//! clap definition; the copies in `completions/` and `man/` are checked
//! against this output by a test (`scripts/update-generated.sh` rewrites them).

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

use super::Status;
use crate::cli::Cli;

/// Writes the completion script for `shell`. The script is made in memory
/// first: `clap_complete` panics when its writer fails, and a closed pipe
/// (`memidx completions bash | head -1`) must end the run quietly instead.
pub fn run(shell: Shell, out: &mut dyn Write) -> Result<Status> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "memidx", &mut script);
    out.write_all(&script)?;
    Ok(Status::Success)
}

/// Writes the man page in roff.
pub fn man(out: &mut dyn Write) -> Result<Status> {
    clap_mangen::Man::new(Cli::command()).render(out)?;
    Ok(Status::Success)
}
