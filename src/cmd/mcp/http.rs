//! `memidx mcp --http ADDR`: the same server over MCP's Streamable HTTP
//! transport, at `/mcp`, for several agents, editors or a team sharing one
//! running memory.
//!
//! The SDK's `StreamableHttpService` speaks the protocol (sessions, SSE,
//! the `Host` and `Origin` checks against DNS rebinding, the body limit);
//! hyper serves it over HTTP/1.1. In front of it this module adds what the
//! SDK leaves to the server: the path, a bearer token (required off
//! loopback, compared in constant time with `subtle`), deadlines for
//! reading a request's head and body (a pause, and the whole body), a
//! POST's body checked to be a JSON-RPC message (else 400 with -32700 or
//! -32600, as JSON-RPC says), bounds on open connections (past them a 503
//! at once), sessions and event streams (`limits.rs`), and a
//! clean stop on Ctrl-C or SIGTERM (no new connections, calls in flight
//! answered, then exit 0). Every session is a clone of one `Server`, so
//! all share the open index and its bounds on calls at once.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use subtle::ConstantTimeEq;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::{TimeoutBody, TimeoutError};

use super::limits::{EVICTABLE_AFTER, MAX_SESSIONS, NoStream, Sessions, Streams};
use super::note::note;
use super::server::Server;
use super::wait_until;

/// The path the MCP endpoint answers at.
pub const ENDPOINT: &str = "/mcp";

/// The largest request body accepted (413 above it): far above any tool
/// call's arguments, far below what would strain the server.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a client may take to send a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request body may pause between two of its pieces.
const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a whole request body may take: a client trickling a byte now
/// and then (under [`BODY_IDLE_TIMEOUT`] each time) holds a connection no
/// longer than this. A [`MAX_BODY_BYTES`] body arrives in it at 140 KB/s.
const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// Connections served at once, per read a server runs at once
/// ([`super::server::reads_at_once`], two per core): 256 on two cores. A connection past
/// them is answered 503 at once and closed, never left waiting in silence;
/// idle and slow ones free their slot by the head and body deadlines.
const CONNECTIONS_PER_READ: usize = 64;

/// Connections per open event stream (GET) allowed: streams held open
/// take at most a quarter of the connections ([`limits::Streams`]).
const CONNECTIONS_PER_STREAM: usize = 4;

/// Connections served at once on this machine.
fn max_connections() -> usize {
    CONNECTIONS_PER_READ * super::server::reads_at_once()
}

/// How long a stop waits for calls in flight before it exits anyway.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// The shortest token accepted: a guessable secret guards nothing.
const MIN_TOKEN_LEN: usize = 16;

/// Where and how to serve: the address, and the bearer token if any.
#[derive(Debug)]
pub struct HttpOptions {
    /// The address to bind (`127.0.0.1:8765`; port 0 picks a free one).
    pub addr: SocketAddr,
    /// The file holding the bearer token clients must send.
    pub token_file: Option<PathBuf>,
}

impl HttpOptions {
    /// Checks the options before anything starts: an address off loopback
    /// needs a token, and a token file must hold a usable token.
    pub fn token(&self) -> Result<Option<String>> {
        let token = self
            .token_file
            .as_deref()
            .map(|path| crate::config::read_token(path, MIN_TOKEN_LEN))
            .transpose()?;
        if token.is_none() && !self.addr.ip().is_loopback() {
            bail!(
                "refusing to serve on {} without a token: an address off loopback is reachable \
                 from other machines; give --token-file FILE (a secret of at least {MIN_TOKEN_LEN} \
                 characters), or bind 127.0.0.1",
                self.addr
            );
        }
        Ok(token)
    }
}

/// Serves `server` over Streamable HTTP at `options.addr` until Ctrl-C or
/// SIGTERM, requiring `token` (from [`HttpOptions::token`]) when given.
pub fn serve(
    server: Server,
    options: &HttpOptions,
    token: Option<String>,
    what: &str,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("memidx-http")
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(options.addr)
            .await
            .with_context(|| format!("cannot listen on {}", options.addr))?;
        let local = listener.local_addr()?;
        let stop = CancellationToken::new();
        let manager = Arc::new(LocalSessionManager::default());
        let mcp = StreamableHttpService::new(
            move || Ok(server.clone()),
            manager.clone(),
            protocol_config(local, token.is_some(), stop.child_token()),
        );
        let gate = Arc::new(Gate {
            mcp,
            token,
            open_posts: Arc::new(AtomicUsize::new(0)),
            stopping: AtomicBool::new(false),
            sessions: Sessions::new(manager, MAX_SESSIONS),
            streams: Arc::new(Streams::default()),
        });
        let watcher = gate.clone();
        tokio::spawn(async move { watcher.sessions.give_back_ended().await });
        note(&format!(
            "serving {what} at http://{local}{ENDPOINT}{}",
            if gate.token.is_some() {
                " (bearer token required)"
            } else {
                ""
            }
        ));
        accept(listener, gate, stop).await;
        Ok(())
    })
}

/// The SDK's protocol settings: loopback `Host` names only on loopback
/// (DNS-rebinding protection), browser `Origin`s only from the server's own
/// address, and the body limit.
fn protocol_config(
    local: SocketAddr,
    with_token: bool,
    stop: CancellationToken,
) -> StreamableHttpServerConfig {
    let port = local.port();
    let mut origins = vec![format!("http://{local}")];
    let config = if local.ip().is_loopback() {
        origins.push(format!("http://localhost:{port}"));
        let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
        hosts.push(local.ip().to_string());
        StreamableHttpServerConfig::default().with_allowed_hosts(hosts)
    } else {
        // Reached by names this server cannot know; the token, which a
        // rebinding page does not have, guards it instead.
        debug_assert!(with_token);
        StreamableHttpServerConfig::default().disable_allowed_hosts()
    };
    config
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(stop)
}

/// What every request passes before the SDK sees it.
struct Gate {
    mcp: StreamableHttpService<Server, LocalSessionManager>,
    token: Option<String>,
    /// POSTs whose answer is not yet all sent: a stop waits for them.
    open_posts: Arc<AtomicUsize>,
    /// Set when a stop began: new requests are refused.
    stopping: AtomicBool,
    /// The sessions open, capped.
    sessions: Sessions,
    /// The event streams open, capped.
    streams: Arc<Streams>,
}

/// One open POST, counted in [`Gate::open_posts`] until dropped with the
/// answer's body (after its last byte was sent, or the client left).
struct OpenPost(Arc<AtomicUsize>);

impl OpenPost {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for OpenPost {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The body type the SDK answers with, and so every answer.
type Body = BoxBody<Bytes, Infallible>;

impl Gate {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if self.stopping.load(Ordering::SeqCst) {
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
        }
        if request.uri().path() != ENDPOINT {
            return plain(
                StatusCode::NOT_FOUND,
                &format!("not found: the MCP endpoint is {ENDPOINT}"),
            );
        }
        if !self.authorized(&request) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized");
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        // Refused before reading a byte of the body when the client says
        // up front that it is too large.
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body over {MAX_BODY_BYTES} bytes"),
            );
        }
        let session = (request.headers().get(SESSION_HEADER))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match (request.method(), &session) {
            (&Method::DELETE, Some(id)) => self.sessions.closed(id),
            (_, Some(id)) => self.sessions.used(id),
            _ => {}
        }
        let stream = match (request.method(), &session) {
            (&Method::GET, Some(id)) => {
                let cap = max_connections() / CONNECTIONS_PER_STREAM;
                match self.streams.take(id, cap) {
                    Ok(stream) => Some(stream),
                    Err(NoStream::SessionHasOne) => {
                        return plain(
                            StatusCode::CONFLICT,
                            "this session has an event stream open already",
                        );
                    }
                    Err(NoStream::Full) => {
                        return busy(&format!("{cap} event streams are open, the most at once"));
                    }
                }
            }
            _ => None,
        };
        let open = (request.method() == Method::POST).then(|| OpenPost::new(&self.open_posts));
        let request = match request.method() == Method::POST {
            // A POST's body is read whole here, within its deadlines, and
            // checked to be a JSON-RPC message: the SDK answers anything
            // else with 415 and plain text, where JSON-RPC says 400 with
            // -32700 (not JSON) or -32600 (not a message).
            true => {
                let (parts, body) = request.into_parts();
                let bytes = match read_body(body).await {
                    Ok(bytes) => bytes,
                    Err(response) => return response,
                };
                if is_json(&parts.headers)
                    && let Some(refusal) = not_a_message(&bytes)
                {
                    return refusal;
                }
                // A new session (refused once the body is read, so that
                // the connection serves on).
                if session.is_none() && !self.sessions.room_for_one().await {
                    return busy(&format!(
                        "{MAX_SESSIONS} sessions are open, none idle over {EVICTABLE_AFTER:?}; \
                         close one (DELETE) or try again later"
                    ));
                }
                Request::from_parts(
                    parts,
                    Full::new(bytes).map_err(|never| match never {}).boxed(),
                )
            }
            false => request.map(|body| TimeoutBody::new(BODY_IDLE_TIMEOUT, body).boxed()),
        };
        let response = self.mcp.handle(request).await;
        if let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            self.sessions.given(id);
        }
        match (open, stream) {
            (None, None) => response,
            // The count drops with the body, once the answer is all sent
            // (or the stream ends, or the client left).
            held => response.map(|body| {
                body.map_frame(move |frame| {
                    let _ = &held;
                    frame
                })
                .boxed()
            }),
        }
    }

    /// Refuses new requests, then waits (at most `limit`) until every
    /// POST being answered has been answered; whether they all were.
    async fn drain(&self, limit: Duration) -> bool {
        self.stopping.store(true, Ordering::SeqCst);
        wait_until(limit, || self.open_posts.load(Ordering::SeqCst) == 0).await
    }

    /// Whether the request carries the token (always, without one). The
    /// scheme's name is read without regard to case, as HTTP says.
    fn authorized(&self, request: &Request<Incoming>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let sent = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or("", |(_, credentials)| credentials.trim_start());
        // Constant time in the token's content; only its length can leak.
        sent.as_bytes().ct_eq(token.as_bytes()).into()
    }
}

/// A POST's whole body, or the answer when it cannot be had: 408 when it
/// pauses over [`BODY_IDLE_TIMEOUT`] or takes over [`BODY_DEADLINE`], 413
/// over [`MAX_BODY_BYTES`], 400 when the connection fails mid-way.
async fn read_body(body: Incoming) -> Result<Bytes, Response<Body>> {
    let limited = Limited::new(TimeoutBody::new(BODY_IDLE_TIMEOUT, body), MAX_BODY_BYTES);
    let slow = || {
        plain(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body paused over {BODY_IDLE_TIMEOUT:?} or took over {BODY_DEADLINE:?}"
            ),
        )
    };
    match tokio::time::timeout(BODY_DEADLINE, limited.collect()).await {
        Err(_) => Err(slow()),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(err)) if err.is::<TimeoutError>() => Err(slow()),
        Ok(Err(err)) if err.is::<LengthLimitError>() => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request body over {MAX_BODY_BYTES} bytes"),
        )),
        Ok(Err(err)) => Err(plain(
            StatusCode::BAD_REQUEST,
            &format!("cannot read the request body: {err}"),
        )),
    }
}

/// Whether the request says its body is JSON (`application/json`, any
/// parameters): the bodies [`not_a_message`] judges; the SDK answers
/// others 415.
fn is_json(headers: &hyper::HeaderMap) -> bool {
    (headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())).is_some_and(|value| {
        let essence = value.split(';').next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("application/json")
    })
}

/// A JSON-RPC error answer (400, id null) when `body` is not JSON
/// (-32700) or not a JSON-RPC message a client sends (-32600).
fn not_a_message(body: &[u8]) -> Option<Response<Body>> {
    let (code, message) = match serde_json::from_slice::<serde_json::Value>(body) {
        Err(err) => (-32700, format!("Parse error: {err}")),
        Ok(value) => match serde_json::from_value::<ClientJsonRpcMessage>(value) {
            Ok(_) => return None,
            Err(err) => (-32600, format!("Invalid Request: {err}")),
        },
    };
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    let mut response = Response::new(Full::new(Bytes::from(error.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    (response.headers_mut()).insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Some(response)
}

/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// A 503 saying the server is at a limit (`why`), to try again in a second.
fn busy(why: &str) -> Response<Body> {
    let mut response = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!("the server is busy: {why}"),
    );
    (response.headers_mut()).insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// A short plain-text answer.
fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Accepts connections until a stop signal, then lets the open ones
/// finish what they are answering.
async fn accept(listener: TcpListener, gate: Arc<Gate>, stop: CancellationToken) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(max_connections()));
    let signal = stop_signal();
    tokio::pin!(signal);
    loop {
        let (mut stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Out of file descriptors and the like: try again shortly.
                Err(err) => {
                    note(&format!("cannot accept a connection: {err}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        // Past the cap a connection is told so at once and closed, rather
        // than left waiting in the kernel's backlog.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(async move {
                let answer = tokio::time::timeout(Duration::from_secs(1), async {
                    stream.write_all(full().as_bytes()).await?;
                    stream.shutdown().await
                });
                let _ = answer.await;
            });
            continue;
        };
        // Answers go out as written, not held back for Nagle's algorithm
        // (which with the client's delayed ACK costs 40 ms a call).
        let _ = stream.set_nodelay(true);
        let gate = gate.clone();
        let service = hyper::service::service_fn(move |request| {
            let gate = gate.clone();
            async move { Ok::<_, Infallible>(gate.handle(request).await) }
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = watched.await;
            drop(slot);
        });
    }
    drop(listener);
    note("stopping: answering the calls in flight");
    // Every call being answered is answered whole (a `reindex` or
    // `remember` runs to its end); only then do the sessions and their
    // open event streams end, and the connections close.
    let drained = gate.drain(STOP_GRACE).await;
    stop.cancel();
    let closed = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
    if !drained || closed.is_err() {
        note("stopped with calls still unanswered after the grace period");
    }
}

/// The whole answer to a connection past [`max_connections`].
fn full() -> String {
    let why = "the server is busy: every connection is in use; try again soon\n";
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{why}",
        why.len()
    )
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async {
                match terminate.as_mut() {
                    Some(s) => { s.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
