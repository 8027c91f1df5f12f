//! One module per subcommand. Each turns typed settings into results and
//! hands them to a printer; [`run`] dispatches and reports how it went.

pub mod backend;
pub mod completions;
pub mod eval;
pub mod explain;
pub mod get;
pub mod graph;
pub mod heap;
pub mod index;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod push;
pub mod remember;
pub mod search;
pub mod status;
pub mod watch;

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};
use memidx::embed::{self, Residency};
use memidx::output::here::Here;

use crate::cli::{Cli, ColorWhen, Command};
use crate::config::{self, EvalConfig, ExplainConfig, SearchConfig};

/// How a command ended, mapped to the exit code by the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Work done, results printed (exit 0).
    Success,
    /// A search or explain found nothing (exit 1, like grep).
    NoResults,
}

/// Standard error for warnings and notices, its write errors ignored: a
/// full or closed stderr (`2>/dev/full`) must neither fail nor stop a run.
struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().flush();
        Ok(())
    }
}

/// Runs a parsed command line, printing to stdout and stderr (a failing
/// stderr is ignored).
pub fn run(cli: Cli) -> Result<Status> {
    let color = match cli.color {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    };
    // The MCP server owns stdout for protocol messages: nothing else may
    // hold it (or its lock).
    let command = match cli.command {
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            let http = args.http.map(|addr| mcp::HttpOptions {
                addr,
                token_file: args.token_file,
            });
            return mcp::run(
                &config::resolve_indexes(&args.location, &cwd)?,
                args.read_only,
                args.watch,
                http.as_ref(),
            );
        }
        command => command,
    };
    // Printers write styled text; the stream drops the styles when colour is
    // off, NO_COLOR is set, or stdout is not a terminal.
    let mut out = io::BufWriter::new(anstream::AutoStream::new(io::stdout().lock(), color));
    let width = terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
    let status = match command {
        Command::Index(args) => {
            let options = config::index_options(&args);
            if args.watch {
                watch::run(&options, args.quiet, &mut out, &mut Stderr)
            } else {
                index::run(&options, args.quiet, &mut out, &mut Stderr)
            }
        }
        Command::Search(args) => {
            // A search embeds its query and exits: its transformer need not
            // copy what it reads a few rows of (see `embed::Residency`).
            embed::set_residency(Residency::Mapped);
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            let config = SearchConfig::from_args(&args, &cwd, io::stdin().lock())?;
            search::run(&config, &mut out, &mut Stderr, width)
        }
        Command::Explain(args) => {
            embed::set_residency(Residency::Mapped);
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            explain::run(
                &ExplainConfig::from_args(&args, &cwd)?,
                &mut out,
                &mut Stderr,
            )
        }
        Command::Get(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            let request = get::GetRequest {
                indexes: config::resolve_indexes(&args.location, &cwd)?,
                target: args.target,
                max_chars: args
                    .max_chars
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                json: args.json,
            };
            get::run(&request, &mut out, &mut Stderr)
        }
        Command::Remember(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            remember::run(&args, &cwd, io::stdin().lock(), &mut out)
        }
        Command::Status(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            let index_dir = config::resolve_index_dir(&args.location, &cwd)?;
            status::run(&index_dir, args.verify, args.json, &mut out, &mut Stderr)
        }
        Command::Eval(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            eval::run(&EvalConfig::from_args(&args, &cwd)?, &mut out, &mut Stderr)
        }
        Command::Graph(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            let request = graph::GraphRequest {
                index_dir: config::resolve_index_dir(&args.location, &cwd)?,
                view: args.view,
                limit: args.limit,
                json: args.json,
            };
            graph::run(&request, &mut out)
        }
        Command::Push(args) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            let index_dir = config::resolve_index_dir(&args.location, &cwd)?;
            push::run(&index_dir, &args.uri, args.quiet, &mut out)
        }
        Command::Completions(args) => completions::run(args.shell, &mut out),
        #[cfg(feature = "mcp")]
        // Served above, before stdout was locked.
        Command::Mcp(_) => Ok(Status::Success),
        Command::Man(args) => completions::man(args.command.as_deref(), &mut out),
    }?;
    out.flush()?;
    Ok(status)
}

/// Prints on `err` the indexes `--skip-missing` skipped and what a search
/// over several indexes left out, one line each.
fn print_notices(err: &mut dyn Write, skipped: &[String], notices: &[String]) -> Result<()> {
    for line in skipped.iter().chain(notices) {
        writeln!(err, "memidx: {}", memidx::output::one_line(line))?;
    }
    Ok(())
}

/// Where this process stands under the indexed `root`, for the paths a
/// terminal shows and reads (root-relative where the current folder cannot
/// be read or lies outside the root).
fn here(root: &Path) -> Here {
    std::env::current_dir().map_or_else(|_| Here::default(), |cwd| Here::new(root, &cwd))
}
