//! The `memidx` binary: parse the command line, run, map the outcome to an
//! exit code (0 results, 1 no results, 2 usage or runtime error). A closed
//! stdout ends a run quietly (exit 0, as ripgrep does); a failing stderr is
//! ignored.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use cli::Cli;
use cmd::Status;
use memidx::output::one_line;

mod cli;
mod cmd;
mod config;

fn main() -> ExitCode {
    match cmd::run(Cli::parse()) {
        Ok(Status::Success) => ExitCode::SUCCESS,
        Ok(Status::NoResults) => ExitCode::from(1),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // Not `eprintln!`, which panics when stderr fails (`2>/dev/full`).
            let _ = writeln!(
                std::io::stderr(),
                "memidx: {}",
                one_line(&format!("{err:#}"))
            );
            ExitCode::from(2)
        }
    }
}

/// True when the reader of our output went away (`memidx search … | head`).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
