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

/// What memidx(1) says beyond the flags: exit status, environment, files.
const MAN_EXTRA: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
results printed (or the command did its work)
.TP
\fB1\fR
no results
.TP
\fB2\fR
a usage or runtime error, one line on stderr: \fBmemidx: \fR...
.SH ENVIRONMENT
.TP
\fBMEMIDX_INDEX\fR
the index to use when \fB\-\-index\fR is not given
.TP
\fBMEMIDX_MODEL\fR
the model folder to embed with when \fB\-\-model\fR is not given
.TP
\fBNO_COLOR\fR, \fBCLICOLOR_FORCE\fR
turn colour off, or on when not on a terminal
.SH FILES
.TP
\fIDIR\fB/.memidx/\fR
the index of \fIDIR\fR: \fBmeta.json\fR (the live generation and the settings), \fBgen\-N/\fR (the chunks, texts, vectors and lists), \fBLOCK\fR, \fBmemidx.tag\fR
.TP
\fB.memidxignore\fR
ignore rules like \fB.gitignore\fR, read in every folder
"#;

/// Writes a man page in roff: memidx(1) with its exit status,
/// environment and files, or, for `command`, memidx-COMMAND(1).
pub fn man(command: Option<&str>, out: &mut dyn Write) -> Result<Status> {
    let cli = Cli::command();
    let mut page = Vec::new();
    match command {
        None => {
            clap_mangen::Man::new(cli).render(&mut page)?;
            page.extend_from_slice(MAN_EXTRA.as_bytes());
        }
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
                anyhow::bail!(
                    "no subcommand '{name}'; the pages are for {}",
                    names.join(", ")
                );
            };
            let sub = sub
                .clone()
                .display_name(format!("memidx-{name}"))
                .bin_name(format!("memidx {name}"))
                .version(env!("CARGO_PKG_VERSION"));
            clap_mangen::Man::new(sub).render(&mut page)?;
        }
    }
    out.write_all(&page)?;
    Ok(Status::Success)
}
