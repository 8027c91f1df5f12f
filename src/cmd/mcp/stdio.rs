//! `memidx mcp` over stdio: one session on stdin/stdout, on a
//! current-thread tokio runtime, with a transport of its own in place of
//! the SDK's line codec.
//!
//! What it adds, so that no client waits forever and nothing grows
//! without bound:
//! - every line is answered or read (`framing.rs`): parse errors get
//!   `-32700`, a line over [`MAX_LINE_BYTES`] gets `-32600` and is skipped,
//!   a request reusing the id of one still unanswered gets `-32600`;
//! - at most [`REQUESTS_IN_FLIGHT`] requests are unanswered at once: past
//!   that, stdin is not read until one is answered (backpressure), so a
//!   client writing thousands of requests at once does not grow memory;
//! - a notification or response before the session starts is ignored
//!   (with a notice), not the end of the server;
//! - when stdout breaks (the client closed it), the session ends at once,
//!   instead of running tools nobody will read;
//! - SIGTERM, SIGINT or SIGHUP stop it as the end of input does, once the
//!   requests read are answered (a `reindex` runs to its end, so no half
//!   made generation is left), at most [`STOP_GRACE`] later; exit 0.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use rmcp::ServiceExt;
use rmcp::model::ClientRequest;
use rmcp::service::{RoleServer, RxJsonRpcMessage, ServerInitializeError, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::framing::{self, INVALID_REQUEST, Piece};
use super::note::note;
use super::server::Server;
use super::wait_until;

/// The longest line read as a message: far above any tool call.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Requests read and not yet answered, at most.
pub const REQUESTS_IN_FLIGHT: usize = 64;

/// How long a stop by signal waits for the requests read to be answered.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Runs the MCP session on stdin/stdout until it ends.
pub fn serve(server: Server) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    let served = runtime.block_on(session(server));
    // A read of stdin may still be blocked (when stdout broke first): do
    // not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    served
}

async fn session(server: Server) -> Result<()> {
    // Cancelled when stdout breaks; the SDK's token is a child of it (the
    // SDK may cancel its own at the session's end without stopping the
    // writer, which still has answers to write).
    let stop = CancellationToken::new();
    let pending = Arc::new(Pending::default());
    let (to_sdk, inbox) = mpsc::channel(REQUESTS_IN_FLIGHT);
    let (outbox, to_write) = mpsc::channel(REQUESTS_IN_FLIGHT);
    let input = BufReader::with_capacity(64 * 1024, tokio::io::stdin());
    // Cancelled by a signal: stop reading, answer what was read, end.
    let quit = CancellationToken::new();
    #[cfg(unix)]
    tokio::spawn(on_signal(quit.clone()));
    let reader = read(input, to_sdk.clone(), outbox.clone(), pending.clone());
    let answering = pending.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = reader => {}
            () = quit.cancelled() => {
                if !answering.drained(STOP_GRACE).await {
                    note("stopped with requests still unanswered after the grace period");
                }
            }
        }
        // The SDK's input ends here: the session ends as at end of input.
        drop(to_sdk);
    });
    let writer = tokio::spawn(write(to_write, pending, stop.clone()));
    #[cfg(unix)]
    tokio::spawn(watch_stdout(stop.clone()));
    let transport = Stdio { inbox, outbox };
    let service = match server.serve_with_ct(transport, stop.child_token()).await {
        Ok(service) => service,
        // Input ended (or output broke) before a client said hello.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(err) if stop.is_cancelled() => {
            note(&format!("the session ended before it started: {err}"));
            return Ok(());
        }
        Err(err) => return Err(anyhow!("the MCP session did not start: {err}")),
    };
    let ended = service.waiting().await;
    // The answers already written out go out before the process ends.
    let _ = writer.await;
    ended.map_err(|err| anyhow!("the MCP session failed: {err}"))?;
    Ok(())
}

/// The SDK's side of the transport: messages read, messages to write.
struct Stdio {
    inbox: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    outbox: mpsc::Sender<Value>,
}

impl Transport<RoleServer> for Stdio {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outbox = self.outbox.clone();
        async move {
            let value = serde_json::to_value(&item).map_err(io::Error::other)?;
            outbox
                .send(value)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.inbox.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inbox.close();
        Ok(())
    }
}

/// The requests read and not yet answered, each holding one of
/// [`REQUESTS_IN_FLIGHT`] permits.
struct Pending {
    permits: Arc<Semaphore>,
    ids: Mutex<HashMap<String, OwnedSemaphorePermit>>,
}

impl Default for Pending {
    fn default() -> Self {
        Self {
            permits: Arc::new(Semaphore::new(REQUESTS_IN_FLIGHT)),
            ids: Mutex::new(HashMap::new()),
        }
    }
}

impl Pending {
    fn ids(&self) -> std::sync::MutexGuard<'_, HashMap<String, OwnedSemaphorePermit>> {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits (at most `limit`) until every request read was answered;
    /// whether they all were.
    async fn drained(&self, limit: Duration) -> bool {
        wait_until(limit, || self.ids().is_empty()).await
    }

    /// Frees the slot of request `id` (answered or cancelled).
    fn release(&self, id: &Value) {
        self.ids().remove(&id.to_string());
    }
}

/// The id of a message as JSON (`Null` for none).
fn id_of<T: serde::Serialize>(id: &T) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
}

/// Reads stdin line by line until it ends, handing messages to the SDK and
/// errors to the writer.
async fn read(
    mut input: impl AsyncBufRead + Unpin,
    to_sdk: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    outbox: mpsc::Sender<Value>,
    pending: Arc<Pending>,
) {
    let mut line = Vec::new();
    let mut started = false;
    loop {
        line.clear();
        let piece = match read_line(&mut input, &mut line).await {
            Ok(Line::End) | Err(_) => return,
            Ok(Line::TooLong) => {
                let why = format!("invalid request: a message over {MAX_LINE_BYTES} bytes");
                vec![Piece::Reply(framing::error(
                    Value::Null,
                    INVALID_REQUEST,
                    &why,
                ))]
            }
            Ok(Line::Read) => framing::pieces(&line),
        };
        for piece in piece {
            let message = match piece {
                Piece::Reply(reply) => {
                    if outbox.send(reply).await.is_err() {
                        return;
                    }
                    continue;
                }
                Piece::Message(message) => message,
            };
            let forward = match message.as_ref() {
                RxJsonRpcMessage::<RoleServer>::Request(request) => {
                    let id = id_of(&request.id);
                    if pending.ids().contains_key(&id.to_string()) {
                        let why = "invalid request: a request with this id is still unanswered";
                        if outbox
                            .send(framing::error(id, INVALID_REQUEST, why))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        continue;
                    }
                    let Ok(permit) = pending.permits.clone().acquire_owned().await else {
                        return;
                    };
                    pending.ids().insert(id.to_string(), permit);
                    started |= !matches!(
                        request.request,
                        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_)
                    );
                    true
                }
                RxJsonRpcMessage::<RoleServer>::Notification(notification) => {
                    if let rmcp::model::ClientNotification::CancelledNotification(cancelled) =
                        &notification.notification
                    {
                        pending.release(&id_of(&cancelled.params.request_id));
                    }
                    started
                }
                _ => started,
            };
            if !forward {
                note("ignoring a message sent before the session started");
            } else if to_sdk.send(*message).await.is_err() {
                return;
            }
        }
    }
}

/// What reading one line gave.
enum Line {
    /// A line (without its newline) is in the buffer.
    Read,
    /// The line was longer than [`MAX_LINE_BYTES`]; it was skipped.
    TooLong,
    /// Input ended.
    End,
}

/// Reads one line into `line`, keeping at most [`MAX_LINE_BYTES`] of it.
async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> io::Result<Line> {
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Read,
            });
        }
        let (take, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at, true),
            None => (buffer.len(), false),
        };
        if too_long || line.len() + take > MAX_LINE_BYTES {
            too_long = true;
            line.clear();
        } else {
            line.extend_from_slice(&buffer[..take]);
        }
        input.consume(take + usize::from(done));
        if done {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

/// Writes each message as a line to stdout; freeing the slot of each
/// request it answers. A failed write ends the session.
async fn write(
    mut to_write: mpsc::Receiver<Value>,
    pending: Arc<Pending>,
    stop: CancellationToken,
) {
    let mut stdout = tokio::io::stdout();
    loop {
        let message = tokio::select! {
            message = to_write.recv() => match message {
                Some(message) => message,
                None => return,
            },
            () = stop.cancelled() => return,
        };
        let answers = message.get("result").is_some() || message.get("error").is_some();
        if answers && let Some(id) = message.get("id") {
            pending.release(id);
        }
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
            note("stdout is closed; ending the session");
            stop.cancel();
            return;
        }
    }
}

/// Cancels `quit` on SIGTERM, SIGINT or SIGHUP (a terminal closed, a
/// supervisor stopping the agent), saying so on stderr.
#[cfg(unix)]
async fn on_signal(quit: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
    note("stopping: answering the requests read");
    quit.cancel();
}

/// Ends the session when the reading end of stdout is closed, even while
/// nothing is being written (a pipe's writing end then reports an error).
#[cfg(unix)]
async fn watch_stdout(stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a zero timeout.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) };
        if ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            note("stdout is closed; ending the session");
            stop.cancel();
            return;
        }
    }
}
