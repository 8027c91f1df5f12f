//! The `memidx` binary: parse the command line, run, map the outcome to an
//! exit code (0 results, 1 no results, 2 usage or runtime error:
//! [`cmd::exit_code`]). A closed stdout ends a run quietly (exit 0, as
//! ripgrep does); a failing stderr is ignored.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use cli::Cli;

mod cli;
mod cmd;
mod config;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    ExitCode::from(cmd::exit_code(cmd::run(cli), &mut std::io::stderr()))
}

/// Prints what clap found wrong with the command line as one line,
/// `memidx: …` like every other error (its message and tip, then where the
/// usage is), and exits 2; `--help` and `--version` print as clap prints
/// them.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
    }
    let text = err.render().to_string();
    // The error and tip lines, each error with the indented lines that
    // follow it (the missing arguments clap lists under "were not
    // provided:") joined onto it; the usage block and the rest are left out.
    let mut parts: Vec<String> = Vec::new();
    let mut listing = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(part) = trimmed.strip_prefix("error: ") {
            parts.push(part.to_string());
            listing = true;
        } else if let Some(tip) = trimmed.strip_prefix("tip: ") {
            parts.push(closest_first(err).unwrap_or_else(|| tip.to_string()));
            listing = false;
        } else if listing && line.starts_with(' ') && !trimmed.is_empty() {
            let last = parts.last_mut().expect("an error line came first");
            // `[possible values: …]` reads as a parenthesis after the error.
            match trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
                Some(note) => {
                    last.push_str(" (");
                    last.push_str(note);
                    last.push(')');
                }
                None => {
                    last.push_str(if last.ends_with(':') { " " } else { ", " });
                    last.push_str(trimmed);
                }
            }
        } else {
            listing = false;
        }
    }
    // The subcommand the user named, if any, is where the usage is.
    let usage = std::env::args()
        .nth(1)
        .filter(|name| Cli::command().find_subcommand(name).is_some())
        .map_or_else(|| "memidx".to_string(), |name| format!("memidx {name}"));
    let _ = writeln!(
        std::io::stderr(),
        "memidx: {}; see '{usage} --help'",
        parts.join("; ")
    );
    ExitCode::from(2)
}

/// clap's tip for a mistyped subcommand with its suggestions, the closest
/// to what was typed first (clap lists them closest last: `serach` gave
/// 'graph', 'search'); `None` for any other error. `strsim` measures.
fn closest_first(err: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(typed)) = err.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    let Some(ContextValue::Strings(suggested)) = err.get(ContextKind::SuggestedSubcommand) else {
        return None;
    };
    let mut suggested = suggested.clone();
    suggested.sort_by(|a, b| {
        let closeness = |s: &String| strsim::jaro_winkler(typed, s);
        closeness(b).total_cmp(&closeness(a))
    });
    let quoted: Vec<String> = suggested.iter().map(|s| format!("'{s}'")).collect();
    Some(match quoted.as_slice() {
        [one] => format!("a similar subcommand exists: {one}"),
        _ => format!("some similar subcommands exist: {}", quoted.join(", ")),
    })
}
