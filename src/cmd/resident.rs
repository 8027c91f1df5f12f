//! The resident path: a `memidx mcp` server answers `search`, `explain` and
//! `get` for the CLI, which then skips opening the index and loading the
//! model.
//!
//! A server listens on a Unix socket in each index folder it serves,
//! owner-only ([`memidx::store::socket`]). A reading command ([`Reading`]) that finds one
//! there sends its arguments, folder, terminal width, whether to style its
//! output, and the indexes it resolved; the server runs the same command
//! with them ([`Reading::run`]) and sends back what it would have printed
//! and its exit code, which the process prints and exits with: the same
//! bytes as the in-process path. That path stays the fallback, taken
//! whenever the socket is absent, stale (no server behind it), owned by
//! another user or open to others, the server declines (it runs another
//! binary than the command, say an older one), or anything fails on the
//! way; `--no-server` forces it.
//!
//! The messages are postcard (already the index's encoding), each behind
//! its length.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::Reading;
use crate::config;
use memidx::store::socket::{self, Binary};

/// The largest message either side reads: a request is small, an answer
/// holds at most what a search prints.
const MAX_MESSAGE: u32 = 256 << 20;

/// How long the CLI waits for the server's answer before answering itself.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// What the CLI asks.
#[derive(Serialize, Deserialize)]
pub struct Request {
    /// Its arguments, after `memidx`.
    pub argv: Vec<String>,
    /// The folder it runs in.
    pub cwd: PathBuf,
    /// Its terminal's width, if it writes to one.
    pub width: Option<usize>,
    /// Whether its output is styled (colour on a terminal).
    pub styled: bool,
    /// The indexes it resolved (name, `.memidx` folder): the server's own
    /// environment (`MEMIDX_INDEX`) plays no part.
    pub indexes: Vec<(Option<String>, PathBuf)>,
    /// The binary it runs ([`Binary::this`]): a server runs the same, or
    /// declines (after an upgrade, its output may differ).
    pub binary: Binary,
}

/// What the server answers.
#[derive(Serialize, Deserialize)]
pub enum Reply {
    /// What the command printed, and its exit code.
    Answered {
        code: u8,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    /// The server will not answer this one (why): the CLI answers itself.
    Declined(String),
}

/// Asks a server that serves the first of `reading`'s indexes to answer it
/// (from `cwd`, `styled` or not, for a terminal `width` wide) and prints
/// its answer: the exit code, or `None` when this process must answer
/// itself.
pub fn ask(
    reading: &Reading,
    cwd: &Path,
    styled: bool,
    width: Option<usize>,
) -> Result<Option<u8>> {
    if !reading.may_ask() {
        return Ok(None);
    }
    let Some((request, socket)) = request(reading, cwd, styled, width) else {
        return Ok(None);
    };
    let Some(Reply::Answered {
        code,
        stdout,
        stderr,
    }) = exchange(&socket, &request)
    else {
        return Ok(None);
    };
    io::stdout().lock().write_all(&stdout)?;
    io::stdout().flush()?;
    let _ = io::stderr().write_all(&stderr);
    Ok(Some(code))
}

/// The request for `reading` and the socket to send it to, when a usable
/// one is there.
fn request(
    reading: &Reading,
    cwd: &Path,
    styled: bool,
    width: Option<usize>,
) -> Option<(Request, PathBuf)> {
    // Errors and skipped indexes are for the in-process path to say.
    let indexes = config::resolve_indexes(reading.location(), cwd).ok()?;
    if !indexes.skipped.is_empty() {
        return None;
    }
    let socket = socket::usable(&indexes.named.first()?.1)?;
    // Given to the server as `--index NAME=PATH`: only paths that say so.
    let plain = |dir: &Path| dir.to_str().is_some_and(|d| !d.contains('='));
    if !indexes.named.iter().all(|(_, dir)| plain(dir)) {
        return None;
    }
    let argv = std::env::args_os()
        .skip(1)
        .map(|arg| arg.into_string().ok())
        .collect::<Option<Vec<String>>>()?;
    let request = Request {
        argv,
        cwd: cwd.to_path_buf(),
        width,
        styled,
        indexes: indexes.named,
        binary: Binary::this()?,
    };
    Some((request, socket))
}

/// Sends `request` to `socket` and reads the reply; `None` on any failure
/// (no server behind the socket, a server that stopped or took too long).
fn exchange(socket: &Path, request: &Request) -> Option<Reply> {
    let mut stream = UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    send(&mut stream, request).ok()?;
    receive(&mut stream).ok()
}

/// Writes `message` to `stream`, behind its length.
fn send(stream: &mut impl Write, message: &impl Serialize) -> Result<()> {
    let bytes = postcard::to_stdvec(message)?;
    let len = u32::try_from(bytes.len())?;
    stream.write_all(&len.to_le_bytes())?;
    stream.write_all(&bytes)?;
    stream.flush()?;
    Ok(())
}

/// Reads one message from `stream`.
fn receive<T: for<'de> Deserialize<'de>>(stream: &mut impl Read) -> Result<T> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    anyhow::ensure!(len <= MAX_MESSAGE, "a message of {len} bytes");
    let mut bytes = vec![0u8; len as usize];
    stream.read_exact(&mut bytes)?;
    Ok(postcard::from_bytes(&bytes)?)
}

/// The server's side: the listener on one index folder's socket.
#[cfg(feature = "mcp")]
pub mod server {
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use anyhow::{Context, Result};
    use clap::Parser;

    use super::{ANSWER_TIMEOUT, Binary, Reply, Request, receive, send, socket};
    use crate::cli::Cli;
    use crate::cmd::{Reading, exit_code};

    /// Connections answered at once; one more is closed unanswered (its
    /// CLI answers itself).
    const AT_ONCE: usize = 64;

    /// How long a connection may take to send its request.
    const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

    /// A socket being listened on; dropping it stops listening and removes
    /// the socket.
    pub struct Listening {
        path: PathBuf,
        stop: Arc<AtomicBool>,
    }

    /// Listens on the socket of the index folder `index_dir`
    /// ([`socket::listen`]), answering on threads of its own. `Ok(None)`
    /// when another server answers there already, or when what holds the
    /// name is no socket.
    pub fn listen(index_dir: &Path) -> Result<Option<Listening>> {
        let Some(socket::Listening { listener, path }) = socket::listen(index_dir)? else {
            return Ok(None);
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        // Told once: the file this server started from.
        let binary = Binary::this();
        std::thread::Builder::new()
            .name("memidx-socket".into())
            .spawn(move || accept(&listener, binary, &stopping))
            .context("cannot start the socket's thread")?;
        Ok(Some(Listening { path, stop }))
    }

    impl Drop for Listening {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            // Wakes the accepting thread, which sees the stop.
            let _ = UnixStream::connect(&self.path);
            socket::remove(&self.path);
        }
    }

    /// Answers each connection on a thread of its own until stopped, for
    /// commands that run `binary`, this server's.
    fn accept(listener: &UnixListener, binary: Option<Binary>, stop: &AtomicBool) {
        let open = Arc::new(AtomicUsize::new(0));
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let Some(turn) = Turn::take(&open) else {
                continue;
            };
            let spawned = std::thread::Builder::new()
                .name("memidx-socket-call".into())
                .spawn(move || {
                    answer_connection(stream, binary);
                    drop(turn);
                });
            if spawned.is_err() {
                // The stream went with the closure: the CLI answers itself.
                continue;
            }
        }
    }

    /// One of the [`AT_ONCE`] connections answered at once, given back when
    /// dropped (also when its answer panicked).
    struct Turn(Arc<AtomicUsize>);

    impl Turn {
        fn take(open: &Arc<AtomicUsize>) -> Option<Self> {
            let turn = Self(open.clone());
            (open.fetch_add(1, Ordering::SeqCst) < AT_ONCE).then_some(turn)
        }
    }

    impl Drop for Turn {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Reads one request from `stream` and answers it, if it comes from a
    /// command that runs `binary`.
    fn answer_connection(mut stream: UnixStream, binary: Option<Binary>) {
        let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
        let _ = stream.set_write_timeout(Some(ANSWER_TIMEOUT));
        let Ok(request) = receive::<Request>(&mut stream) else {
            return;
        };
        let reply = match binary == Some(request.binary) {
            true => answer(request),
            false => Reply::Declined("the server runs another memidx binary".into()),
        };
        let _ = send(&mut stream, &reply);
    }

    /// Runs the command `request` carries as its process would have.
    fn answer(request: Request) -> Reply {
        let argv = std::iter::once("memidx".to_string()).chain(request.argv);
        let Ok(cli) = Cli::try_parse_from(argv) else {
            return Reply::Declined("the arguments do not parse here".into());
        };
        let Ok(mut reading) = Reading::take(cli.command) else {
            return Reply::Declined("not a command the server answers".into());
        };
        if !reading.may_ask() {
            return Reply::Declined("the command asks to be answered in its process".into());
        }
        let location = reading.location_mut();
        location.skip_missing = false;
        location.index = (request.indexes.iter())
            .map(|(name, dir)| match name {
                Some(name) => PathBuf::from(format!("{name}={}", dir.display())),
                None => dir.clone(),
            })
            .collect();
        let choice = match request.styled {
            true => anstream::ColorChoice::Always,
            false => anstream::ColorChoice::Never,
        };
        let mut out = anstream::AutoStream::new(Vec::new(), choice);
        let mut err = Vec::new();
        let ran = reading.run(
            &request.cwd,
            request.width,
            &mut std::io::empty(),
            &mut out,
            &mut err,
        );
        let code = exit_code(ran, &mut err);
        Reply::Answered {
            code,
            stdout: out.into_inner(),
            stderr: err,
        }
    }
}
