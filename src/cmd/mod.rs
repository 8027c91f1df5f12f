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
#[cfg(unix)]
pub mod resident;
pub mod search;
pub mod status;
pub mod watch;

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};
use memidx::embed::{self, Residency};

use crate::cli::{Cli, ColorWhen, Command, ExplainArgs, GetArgs, IndexesLocation, SearchArgs};
use crate::config::{self, EvalConfig, ExplainConfig, SearchConfig};
use memidx::index::get::NotFound;
use memidx::output::one_line;

/// How a command ended, mapped to the exit code by the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Work done, results printed (exit 0).
    Success,
    /// A search or explain found nothing (exit 1, like grep).
    NoResults,
    /// A server answered for this process, its output written: exit with
    /// its code.
    Relayed(u8),
}

/// The commands that only read indexes and print: a server may answer
/// them for a process ([`resident`]).
pub enum Reading {
    /// `memidx search`.
    Search(SearchArgs),
    /// `memidx explain`.
    Explain(ExplainArgs),
    /// `memidx get`.
    Get(GetArgs),
}

impl Reading {
    /// `command` as a reading command, or back when it is another.
    pub fn take(command: Command) -> Result<Self, Box<Command>> {
        match command {
            Command::Search(args) => Ok(Self::Search(args)),
            Command::Explain(args) => Ok(Self::Explain(args)),
            Command::Get(args) => Ok(Self::Get(args)),
            other => Err(Box::new(other)),
        }
    }

    /// Where its indexes are.
    pub fn location(&self) -> &IndexesLocation {
        match self {
            Self::Search(args) => &args.retrieval.location,
            Self::Explain(args) => &args.retrieval.location,
            Self::Get(args) => &args.location,
        }
    }

    /// Where its indexes are, to change.
    pub fn location_mut(&mut self) -> &mut IndexesLocation {
        match self {
            Self::Search(args) => &mut args.retrieval.location,
            Self::Explain(args) => &mut args.retrieval.location,
            Self::Get(args) => &mut args.location,
        }
    }

    /// Whether a server may answer it: not when told otherwise
    /// (`--no-server`), nor when it reads stdin (`--request -`) or a
    /// Milvus collection (`--backend`, whose token is this process's).
    pub fn may_ask(&self) -> bool {
        let retrieval = match self {
            Self::Search(args) if args.request.as_deref() == Some(Path::new("-")) => return false,
            Self::Search(args) => &args.retrieval,
            Self::Explain(args) => &args.retrieval,
            Self::Get(args) => return !args.server.no_server,
        };
        !retrieval.server.no_server && retrieval.backend.is_none()
    }

    /// Runs it from `cwd` in a terminal `width` wide, reading `stdin`,
    /// printing to `out` and notices to `err`.
    pub fn run(
        self,
        cwd: &Path,
        width: Option<usize>,
        stdin: &mut dyn io::Read,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<Status> {
        match self {
            Self::Search(args) => {
                let config = SearchConfig::from_args(&args, cwd, stdin)?;
                search::run(&config, cwd, out, err, width)
            }
            Self::Explain(args) => {
                explain::run(&ExplainConfig::from_args(&args, cwd)?, cwd, out, err)
            }
            Self::Get(args) => {
                let request = get::GetRequest {
                    indexes: config::resolve_indexes(&args.location, cwd)?,
                    target: args.target,
                    max_chars: args
                        .max_chars
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                    json: args.json,
                };
                get::run(&request, cwd, out, err)
            }
        }
    }
}

/// The exit code of a command that ended with `result`, its error (if any)
/// printed on `err` as one line: 0 results, 1 none (or an id the index does
/// not hold, like grep), 2 any failure; a closed stdout is a quiet 0.
pub fn exit_code(result: Result<Status>, err: &mut dyn Write) -> u8 {
    match result {
        Ok(Status::Success) => 0,
        Ok(Status::NoResults) => 1,
        Ok(Status::Relayed(code)) => code,
        Err(failed) if is_broken_pipe(&failed) => 0,
        Err(failed) => {
            let _ = writeln!(err, "memidx: {}", one_line(&format!("{failed:#}")));
            match failed.downcast_ref::<NotFound>() {
                Some(_) => 1,
                None => 2,
            }
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
    let width = terminal_size::terminal_size().map(|(w, _)| usize::from(w.0));
    let command = match Reading::take(command) {
        Ok(reading) => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            // A server that serves the index answers with the same bytes;
            // the styles are decided here, where the terminal is.
            let styled = match color {
                anstream::ColorChoice::Auto => anstream::AutoStream::choice(&io::stdout()),
                chosen => chosen,
            } != anstream::ColorChoice::Never;
            #[cfg(unix)]
            if let Some(code) = resident::ask(&reading, &cwd, styled, width)? {
                return Ok(Status::Relayed(code));
            }
            // A search embeds its query and exits: its transformer need
            // not copy what it reads a few rows of (see `embed::Residency`).
            embed::set_residency(Residency::Mapped);
            backend::answer_once();
            let mut out = io::BufWriter::new(anstream::AutoStream::new(io::stdout().lock(), color));
            let status =
                reading.run(&cwd, width, &mut io::stdin().lock(), &mut out, &mut Stderr)?;
            out.flush()?;
            return Ok(status);
        }
        Err(command) => *command,
    };
    // Printers write styled text; the stream drops the styles when colour is
    // off, NO_COLOR is set, or stdout is not a terminal.
    let mut out = io::BufWriter::new(anstream::AutoStream::new(io::stdout().lock(), color));
    let status = match command {
        Command::Index(args) => {
            let options = config::index_options(&args);
            if args.watch {
                watch::run(&options, args.quiet, &mut out, &mut Stderr)
            } else {
                index::run(&options, args.quiet, &mut out, &mut Stderr)
            }
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
        // Served above, before stdout was locked.
        #[cfg(feature = "mcp")]
        Command::Mcp(_) => Ok(Status::Success),
        // Answered above, by a server or in this process (`Reading`).
        Command::Search(_) | Command::Explain(_) | Command::Get(_) => Ok(Status::Success),
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
