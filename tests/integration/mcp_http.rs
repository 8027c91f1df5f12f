//! `memidx mcp --http`: the Streamable HTTP transport's guards, checked
//! against the real binary with plain HTTP/1.1 over a `TcpStream` (no
//! client library between the test and the bytes the server sees), and a
//! load test from the official Python SDK (`tests/mcp_http_load.py`).
//!
//! The guards: the bearer token (401 with `WWW-Authenticate: Bearer` and
//! nothing else without the right one), foreign `Origin` and `Host`
//! headers (403), bodies over 4 MiB (413, and never read whole), paths
//! other than `/mcp` (404), the start-up refusals (no token off loopback,
//! a short token: exit 2), the read-only tool list, `get`'s path checks
//! (the same as over stdio), and a clean stop on SIGTERM and SIGINT.

use crate::common::Corpus;
use crate::common::mcp::{HttpServer, PROTOCOL, RawSession, client_report};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A token for the first server, and one of the same length for another.
const TOKEN: &str = "first-server-token-0123456789abcdef";
const OTHER_TOKEN: &str = "other-server-token-fedcba9876543210";

/// The incident whose identifier `INC-2023-Q4-011` ranks its chunk first.
const INCIDENT: &str = "incidents/2023/q4/billing-month-end-timeouts.md";

/// A token file holding `token`, in a folder of its own (kept alive by the
/// returned guard), outside the indexed folder.
fn token_file(token: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("token");
    std::fs::write(&path, format!("{token}\n")).expect("write the token");
    (dir, path)
}

/// An indexed copy of the fixtures.
fn indexed() -> Corpus {
    let corpus = Corpus::fixtures();
    corpus.index();
    corpus
}

/// An HTTP response: status, headers (names in lower case), body (chunked
/// transfer decoded).
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    /// Parses a whole HTTP/1.1 response.
    fn parse(raw: &[u8]) -> Self {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no end of head in {:?}", String::from_utf8_lossy(raw)));
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let rest = &raw[end + 4..];
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
        let body = if chunked {
            dechunk(rest)
        } else {
            rest.to_vec()
        };
        Self {
            status,
            headers,
            body,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC message in the body: plain JSON, or the last JSON
    /// `data:` line of an event stream.
    fn message(&self) -> Value {
        let text = self.text();
        if self
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
        {
            return serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .next_back()
            .unwrap_or_else(|| panic!("no JSON-RPC message in {self:?}: {text}"))
    }
}

/// Decodes a chunked body (as much of it as arrived).
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .unwrap_or_else(|_| panic!("bad chunk size {size_text:?}"));
        rest = &rest[eol + 2..];
        if size == 0 || rest.len() < size {
            body.extend_from_slice(&rest[..size.min(rest.len())]);
            break;
        }
        body.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
    body
}

/// One request on a connection of its own (`Connection: close`): the
/// reply, read to the server's end of the connection.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes()).expect("send the head");
    stream.write_all(body).expect("send the body");
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("read the reply to {method} {path}: {e}"));
    Reply::parse(&raw)
}

/// The headers every MCP POST carries.
const MCP_HEADERS: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// A raw MCP client over HTTP: its token and the session it was given.
struct Client {
    addr: String,
    token: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl Client {
    /// A client of `server` sending `token`.
    fn of(server: &HttpServer, token: Option<&str>) -> Self {
        Self {
            addr: server.dial(),
            token: token.map(str::to_string),
            session: None,
            next_id: 0,
        }
    }

    /// POSTs `body` to `/mcp` with the MCP headers, the token, the session
    /// and `extra` headers.
    fn post_raw(&self, body: &[u8], extra: &[(&str, &str)]) -> Reply {
        let bearer = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer));
        }
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id", session));
        }
        headers.extend_from_slice(extra);
        http(&self.addr, "POST", "/mcp", &headers, body)
    }

    fn post(&self, message: &Value, extra: &[(&str, &str)]) -> Reply {
        self.post_raw(message.to_string().as_bytes(), extra)
    }

    /// The `initialize` request (not sent).
    fn initialize_message() -> Value {
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                          "clientInfo": {"name": "memidx-http-tests", "version": "0"}}})
    }

    /// Initializes a session and sends `notifications/initialized`; the
    /// `initialize` result.
    fn initialize(&mut self) -> Value {
        let reply = self.post(&Self::initialize_message(), &[]);
        assert_eq!(reply.status, 200, "{}", reply.text());
        let session = reply
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id in {reply:?}"));
        self.session = Some(session.to_string());
        let init = reply.message();
        assert_eq!(init["result"]["protocolVersion"], PROTOCOL, "{init}");
        let initialized = self.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &[],
        );
        assert_eq!(initialized.status, 202, "{}", initialized.text());
        init["result"].clone()
    }

    /// Sends a request and returns the JSON-RPC response to it.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let reply = self.post(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            &[],
        );
        assert_eq!(reply.status, 200, "{method}: {}", reply.text());
        let response = reply.message();
        assert_eq!(response["id"], id, "{response}");
        response
    }

    /// Calls a tool; the `result` (a tool error included).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{tool}: {response}");
        response["result"].clone()
    }

    /// The chunk ids of a `search` for `query`, asserting it succeeded.
    fn search_ids(&mut self, query: &str) -> Vec<String> {
        let result = self.call("search", json!({"query": query, "top_k": 3}));
        assert_ne!(result["isError"], true, "{result}");
        crate::common::chunk_ids(&result["structuredContent"])
    }
}

/// Asserts `reply` is the bare 401: status, `WWW-Authenticate: Bearer`,
/// the one word, and no header or byte about the index or a session.
#[track_caller]
fn assert_bare_401(reply: &Reply, corpus: &Path, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {reply:?}");
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"), "{what}");
    assert_eq!(reply.text(), "unauthorized\n", "{what}");
    let mut names: Vec<&str> = reply.headers.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "connection",
            "content-length",
            "content-type",
            "date",
            "www-authenticate"
        ],
        "{what}: {reply:?}"
    );
    let everything = format!("{:?}{}", reply.headers, reply.text());
    for secret in [
        corpus.to_string_lossy().as_ref(),
        "memidx",
        "incident",
        "runbook",
    ] {
        assert!(
            !everything.to_lowercase().contains(&secret.to_lowercase()),
            "{what}: the 401 tells of {secret:?}: {everything}"
        );
    }
}

#[test]
fn without_the_right_token_every_request_gets_a_bare_401() {
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let (_keep_other, other_file) = token_file(OTHER_TOKEN);
    let server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let other = HttpServer::start(
        corpus.path(),
        &["--token-file", other_file.to_str().unwrap()],
    );
    assert!(
        server.stderr().contains("(bearer token required)"),
        "{}",
        server.stderr()
    );

    let init = Client::initialize_message().to_string();
    let no_token: Vec<(&str, &str)> = MCP_HEADERS.to_vec();
    let mut cases: Vec<(String, Vec<(&str, &str)>)> = vec![("no token".into(), no_token)];
    let wrong = [
        (
            "a wrong token",
            "Bearer wrong-token-0123456789abcdefghi".to_string(),
        ),
        ("another server's token", format!("Bearer {OTHER_TOKEN}")),
        (
            "the token cut short",
            format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
        ),
        ("the token and more", format!("Bearer {TOKEN}x")),
        ("the token without Bearer", TOKEN.to_string()),
        ("the token as Basic", format!("Basic {TOKEN}")),
        ("an empty bearer", "Bearer ".to_string()),
    ];
    for (what, value) in &wrong {
        let mut headers = MCP_HEADERS.to_vec();
        headers.push(("Authorization", value.as_str()));
        cases.push(((*what).into(), headers));
    }
    for (what, headers) in &cases {
        // The handshake, a session-less call, the event stream, a DELETE:
        // none gets past the token.
        let reply = http(&server.dial(), "POST", "/mcp", headers, init.as_bytes());
        assert_bare_401(&reply, corpus.path(), &format!("initialize with {what}"));
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "search", "arguments": {"query": "INC-2023-Q4-011"}}});
        let reply = http(
            &server.dial(),
            "POST",
            "/mcp",
            headers,
            call.to_string().as_bytes(),
        );
        assert_bare_401(&reply, corpus.path(), &format!("tools/call with {what}"));
        for method in ["GET", "DELETE"] {
            let reply = http(&server.dial(), method, "/mcp", headers, b"");
            assert_bare_401(&reply, corpus.path(), &format!("{method} with {what}"));
        }
    }

    // With the right token: the handshake, and a search.
    let mut client = Client::of(&server, Some(TOKEN));
    let result = client.initialize();
    assert_eq!(result["serverInfo"]["name"], "memidx", "{result}");
    assert_eq!(
        client.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
    // A session of this server is still nothing without the token.
    let mut stolen = Client::of(&server, None);
    stolen.session = client.session.clone();
    let reply = stolen.post(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}),
        &[],
    );
    assert_bare_401(&reply, corpus.path(), "a session id without the token");
    // The other server takes its own token, and not this one's.
    let mut own = Client::of(&other, Some(OTHER_TOKEN));
    own.initialize();
    assert_eq!(
        own.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
    let mut crossed = Client::of(&other, Some(TOKEN));
    crossed.session = own.session.clone();
    let reply = crossed.post(&Client::initialize_message(), &[]);
    assert_bare_401(&reply, corpus.path(), "this server's token on the other");
}

#[test]
fn only_mcp_is_served_every_other_path_is_404() {
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let bearer = format!("Bearer {TOKEN}");
    for path in [
        "/",
        "/mcp/",
        "/mcpx",
        "/MCP",
        "/mcp/../etc/passwd",
        "/index.md",
    ] {
        for headers in [vec![], vec![("Authorization", bearer.as_str())]] {
            let reply = http(&server.dial(), "GET", path, &headers, b"");
            assert_eq!(reply.status, 404, "{path}: {reply:?}");
            assert_eq!(
                reply.text(),
                "not found: the MCP endpoint is /mcp\n",
                "{path}"
            );
        }
    }
    // …and the endpoint itself is there.
    Client::of(&server, Some(TOKEN)).initialize();
}

#[test]
fn a_foreign_origin_or_host_is_refused_with_403() {
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let port = server.dial().rsplit(':').next().unwrap().to_string();
    let client = Client::of(&server, Some(TOKEN));
    let init = Client::initialize_message();
    for origin in [
        "http://evil.example".to_string(),
        "null".into(),
        format!("http://evil.example:{port}"),
        // The right host on another port is another origin.
        "http://127.0.0.1:1".into(),
        format!("https://127.0.0.1:{port}"),
    ] {
        let reply = client.post(&init, &[("Origin", &origin)]);
        assert_eq!(reply.status, 403, "Origin {origin}: {reply:?}");
        assert!(reply.header("mcp-session-id").is_none(), "{origin}");
        assert!(
            !reply.text().contains("memidx"),
            "{origin}: {}",
            reply.text()
        );
    }
    // A page on a rebound name sends its own Host.
    let reply = client.post(&init, &[("Host", &format!("evil.example:{port}"))]);
    assert_eq!(reply.status, 403, "a foreign Host: {reply:?}");
    // The server's own origins are welcome, and so is no Origin at all.
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let reply = client.post(&init, &[("Origin", &origin)]);
        assert_eq!(reply.status, 200, "Origin {origin}: {reply:?}");
        assert_eq!(
            reply.message()["result"]["serverInfo"]["name"],
            "memidx",
            "{origin}"
        );
    }
    // A session opened without an Origin cannot be used from a foreign one.
    let mut session = Client::of(&server, Some(TOKEN));
    session.initialize();
    let reply = session.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "INC-2023-Q4-011"}}}),
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(reply.status, 403, "{reply:?}");
    assert!(!reply.text().contains(INCIDENT), "{}", reply.text());
}

/// What sending a `total`-byte body in pieces after `head` came to: the
/// reply (if any arrived before the server closed) and the bytes of body
/// sent before the server answered, closed, or stopped reading.
fn send_huge(addr: &str, head: &str, total: usize, chunked: bool) -> (Option<Reply>, usize) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(head.as_bytes()).expect("send the head");
    let mut reader = stream.try_clone().expect("clone the stream");
    reader
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let answered = Arc::new(AtomicBool::new(false));
    let flag = answered.clone();
    // The reply is read as it comes, beside the writing: a server that
    // answers early and then resets the connection is still heard.
    let listener = std::thread::spawn(move || {
        let mut raw = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    raw.extend_from_slice(&buf[..n]);
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }
        flag.store(true, Ordering::SeqCst);
        raw
    });
    // A JSON-RPC request whose string argument never ends.
    let opening = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":""#;
    let piece = vec![b'a'; 1 << 20];
    let mut sent = 0;
    while sent < total && !answered.load(Ordering::SeqCst) {
        let data: &[u8] = if sent == 0 { opening } else { &piece };
        let data = &data[..data.len().min(total - sent)];
        let wrote = if chunked {
            stream
                .write_all(format!("{:x}\r\n", data.len()).as_bytes())
                .and_then(|()| stream.write_all(data))
                .and_then(|()| stream.write_all(b"\r\n"))
        } else {
            stream.write_all(data)
        };
        if wrote.is_err() {
            break;
        }
        sent += data.len();
    }
    if sent >= total && chunked {
        let _ = stream.write_all(b"0\r\n\r\n");
    }
    let _ = stream.shutdown(Shutdown::Write);
    let raw = listener.join().expect("reader thread");
    let reply = (!raw.is_empty()).then(|| Reply::parse(&raw));
    (reply, sent)
}

#[test]
fn a_100_mb_body_is_refused_with_413_and_never_held() {
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let mut client = Client::of(&server, Some(TOKEN));
    client.initialize();
    // Warm: the index open, the search path run once.
    assert_eq!(
        client.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
    let (before, _) = server.rss_kib();
    const TOTAL: usize = 100 * 1024 * 1024;
    let session = client.session.clone().unwrap();
    let head = |length: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\n{length}\r\n",
            addr = server.dial()
        )
    };

    // Declared up front: refused before a byte of the body is read.
    let started = Instant::now();
    let (reply, declared_sent) = send_huge(
        &server.dial(),
        &head(&format!("Content-Length: {TOTAL}\r\n")),
        TOTAL,
        false,
    );
    let declared_time = started.elapsed();
    let reply = reply.expect("an answer to the declared 100 MB");
    assert_eq!(reply.status, 413, "{reply:?}");
    assert_eq!(reply.text(), "request body over 4194304 bytes\n");
    assert!(
        declared_sent < TOTAL / 4,
        "{declared_sent} bytes were taken before the refusal"
    );

    // Chunked, no length: cut off once past the limit, while streaming.
    let started = Instant::now();
    let (reply, chunked_sent) = send_huge(
        &server.dial(),
        &head("Transfer-Encoding: chunked\r\n"),
        TOTAL,
        true,
    );
    let chunked_time = started.elapsed();
    if let Some(reply) = &reply {
        assert_eq!(reply.status, 413, "{reply:?}");
    }
    assert!(
        chunked_sent < TOTAL / 4,
        "{chunked_sent} bytes of a chunked body were taken before the server stopped it"
    );

    // Nothing of either was kept, nor held at once at any point.
    let (after, peak) = server.rss_kib();
    eprintln!(
        "100 MB bodies: RSS {before} KiB before, {after} KiB after, peak {peak} KiB; \
         declared: {declared_sent} bytes sent, {declared_time:?}; chunked: {chunked_sent} \
         bytes sent, {chunked_time:?}, answer {:?}",
        reply.as_ref().map(|r| r.status)
    );
    assert!(
        after < before + 24 * 1024,
        "RSS grew from {before} to {after} KiB"
    );
    assert!(
        peak < before + 40 * 1024,
        "RSS peaked at {peak} KiB (from {before} KiB)"
    );
    // The server, and the session, still answer.
    assert_eq!(
        client.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
}

#[test]
fn get_refuses_paths_out_of_the_folder_as_over_stdio() {
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    let mut client = Client::of(&server, None);
    client.initialize();
    let mut stdio = RawSession::start(corpus.path(), &[]);
    let paths = [
        "../x",
        "../../../../etc/passwd",
        "runbooks/../../x",
        "/etc/passwd",
        "notes/../../../etc/hostname",
    ];
    for path in paths {
        let over_http = client.call("get", json!({"path": path}));
        let over_stdio = stdio.call("get", json!({"path": path}));
        assert_eq!(over_http["isError"], true, "{path}: {over_http}");
        assert!(
            over_http.get("structuredContent").is_none(),
            "{path}: {over_http}"
        );
        assert_eq!(over_http, over_stdio, "{path}");
    }
    let refused = client.call("get", json!({"path": "../x"}));
    assert_eq!(
        refused["content"][0]["text"],
        "refused: the path '../x' contains '..'; give a path inside the indexed folder"
    );
    // An indexed file inside is served, to both.
    let inside = client.call("get", json!({"path": INCIDENT, "from": 1, "to": 2}));
    assert_ne!(inside["isError"], true, "{inside}");
    assert_eq!(
        inside,
        stdio.call("get", json!({"path": INCIDENT, "from": 1, "to": 2}))
    );
    assert_eq!(stdio.finish(), Some(0));
}

#[test]
fn an_address_off_loopback_needs_a_token_of_16_characters() {
    let corpus = indexed();
    let refused = |args: &[&str], says: &[&str]| {
        let output = corpus
            .memidx()
            .args(["mcp", "--index", "."])
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        for word in says {
            assert!(
                stderr.contains(word),
                "{args:?} should say {word:?}: {stderr}"
            );
        }
        assert!(!stderr.contains("serving"), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    };
    refused(&["--http", "0.0.0.0:0"], &["--token-file", "0.0.0.0:0"]);
    refused(&["--http", "[::]:0"], &["--token-file"]);

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let short = write("short", "fifteen-chars-x\n");
    let spaced = write("spaced", "twenty chars with spaces\n");
    let empty = write("empty", "\n");
    let missing = dir.path().join("missing").to_str().unwrap().to_string();
    for bind in ["127.0.0.1:0", "0.0.0.0:0"] {
        for file in [&short, &spaced, &empty] {
            refused(
                &["--http", bind, "--token-file", file],
                &["at least 16 characters"],
            );
        }
        refused(
            &["--http", bind, "--token-file", &missing],
            &["the token file", "cannot be read"],
        );
    }
    // A FIFO is refused at once, not waited on.
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    refused(
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            fifo.to_str().unwrap(),
        ],
        &["is a FIFO, not a regular file"],
    );
    // A token file is for --http only.
    refused(&["--token-file", &short], &["required"]);

    // Exactly 16 characters will do, off loopback too; the token is then
    // required (reached here on loopback).
    let sixteen = write("sixteen", "sixteen-chars-ok\n");
    let server = HttpServer::start_at("0.0.0.0:0", corpus.path(), &["--token-file", &sixteen]);
    assert!(server.addr.starts_with("0.0.0.0:"), "{}", server.addr);
    let reply = Client::of(&server, None).post(&Client::initialize_message(), &[]);
    assert_bare_401(&reply, corpus.path(), "no token off loopback");
    let mut client = Client::of(&server, Some("sixteen-chars-ok"));
    client.initialize();
    assert_eq!(
        client.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
}

/// The names of the tools a server lists.
fn tool_names(client: &mut Client) -> Vec<String> {
    client.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn read_only_over_http_offers_and_runs_no_writing_tool() {
    let corpus = indexed();
    let writing = HttpServer::start(corpus.path(), &[]);
    let mut client = Client::of(&writing, None);
    client.initialize();
    assert_eq!(
        tool_names(&mut client),
        ["search", "get", "explain", "status", "reindex", "remember"]
    );

    let server = HttpServer::start(corpus.path(), &["--read-only"]);
    assert!(
        server.stderr().contains("(read-only) at http://"),
        "{}",
        server.stderr()
    );
    let mut client = Client::of(&server, None);
    client.initialize();
    assert_eq!(
        tool_names(&mut client),
        ["search", "get", "explain", "status"]
    );
    let files = |dir: &Path| -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() && !path.ends_with(memidx::store::INDEX_DIR_NAME) {
                    stack.push(path);
                } else {
                    found.push(path);
                }
            }
        }
        found.sort();
        found
    };
    let before = files(corpus.path());
    let generation = client.call("status", json!({}))["structuredContent"]["generation"].clone();
    for (tool, arguments) in [
        ("reindex", json!({"full": true})),
        (
            "remember",
            json!({"text": "a note that must not be written"}),
        ),
    ] {
        let response = client.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(response["error"]["code"], -32602, "{tool}: {response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("unknown tool '{tool}'")),
            "{message}"
        );
    }
    assert_eq!(files(corpus.path()), before, "a read-only server wrote");
    assert_eq!(
        client.call("status", json!({}))["structuredContent"]["generation"],
        generation
    );
}

#[test]
fn sigterm_or_sigint_stops_the_server_with_exit_0_even_with_a_stream_open() {
    let corpus = indexed();
    for signal in ["TERM", "INT"] {
        let (_keep, file) = token_file(TOKEN);
        let mut server =
            HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
        let mut client = Client::of(&server, Some(TOKEN));
        client.initialize();
        assert_eq!(
            client.search_ids("INC-2023-Q4-011")[0],
            format!("{INCIDENT}#1")
        );
        // The session's event stream (GET), open while the server stops.
        let mut stream = TcpStream::connect(server.dial()).expect("connect");
        let session = client.session.clone().unwrap();
        write!(
            stream,
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\r\n",
            server.dial()
        )
        .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut head = [0u8; 12];
        stream
            .read_exact(&mut head)
            .expect("the stream's status line");
        assert_eq!(&head, b"HTTP/1.1 200", "the event stream did not open");
        let reader = std::thread::spawn(move || {
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        });

        let started = Instant::now();
        let code = server.signal(signal);
        let took = started.elapsed();
        assert_eq!(code, Some(0), "SIG{signal}: {}", server.stderr());
        let stderr = server.stderr();
        assert!(
            stderr.contains("stopping: answering the calls in flight"),
            "SIG{signal}: {stderr}"
        );
        assert!(!stderr.contains("unanswered"), "SIG{signal}: {stderr}");
        // The open stream ended with the server; it did not hold the stop
        // for the grace period.
        assert!(took < Duration::from_secs(10), "SIG{signal} took {took:?}");
        reader.join().expect("the stream's reader");
        assert!(
            TcpStream::connect(server.dial()).is_err(),
            "still listening after SIG{signal}"
        );
        eprintln!("SIG{signal}: stopped with exit 0 in {took:?}");
    }
}

#[test]
fn calls_in_flight_at_sigterm_are_answered_whole() {
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let mut server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let mut client = Client::of(&server, Some(TOKEN));
    client.initialize();
    let addr = server.dial();
    let session = client.session.clone().unwrap();

    // Four clients calling in a loop, each call on a connection of its own,
    // until the server is gone.
    let answered = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..4)
        .map(|n| {
            let (addr, session) = (addr.clone(), session.clone());
            let (answered, stop) = (answered.clone(), stop.clone());
            std::thread::spawn(move || {
                // Every exchange that got a status line: (status, id, body).
                let mut replies = Vec::new();
                let mut id = 1000 * (n + 1);
                while !stop.load(Ordering::SeqCst) {
                    id += 1;
                    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "search",
                                   "arguments": {"query": "connection pool exhausted",
                                                 "filter": {"environment": "production"}}}});
                    // Refused, reset, or closed before answering: not taken.
                    let Ok(raw) = exchange(&addr, &session, call.to_string().as_bytes()) else {
                        continue;
                    };
                    if raw.is_empty() {
                        continue;
                    }
                    let reply = Reply::parse(&raw);
                    // 503 once stopping: refused, not taken.
                    if reply.status == 503 {
                        assert_eq!(reply.text(), "the server is stopping\n");
                        continue;
                    }
                    answered.fetch_add(1, Ordering::SeqCst);
                    replies.push((reply, id));
                }
                replies
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while answered.load(Ordering::SeqCst) < 20 {
        assert!(Instant::now() < deadline, "the calls are not answered");
        std::thread::sleep(Duration::from_millis(5));
    }
    let code = server.signal("TERM");
    stop.store(true, Ordering::SeqCst);
    let replies: Vec<_> = callers
        .into_iter()
        .flat_map(|c| c.join().expect("caller"))
        .collect();
    assert_eq!(code, Some(0), "{}", server.stderr());
    // Every call the server took was answered whole: a search result for
    // its id, not an empty or cut stream.
    let cut: Vec<String> = replies
        .iter()
        .filter(|(reply, id)| {
            let text = reply.text();
            let message = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .next_back();
            !(reply.status == 200
                && message.is_some_and(|m| {
                    m["id"] == *id
                        && m["result"]["structuredContent"]["results"]
                            .as_array()
                            .is_some_and(|r| !r.is_empty())
                }))
        })
        .map(|(reply, id)| format!("call {id}: {} {:?}", reply.status, reply.text()))
        .collect();
    eprintln!(
        "SIGTERM under load: {} calls took, {} not answered whole",
        replies.len(),
        cut.len()
    );
    assert!(
        cut.is_empty(),
        "{} of {} calls the server took were not answered whole:\n{}",
        cut.len(),
        replies.len(),
        cut.join("\n")
    );
}

#[test]
fn a_reindex_in_flight_at_sigterm_is_finished_and_answered() {
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let mut server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let mut client = Client::of(&server, Some(TOKEN));
    client.initialize();
    let generation = client.call("status", json!({}))["structuredContent"]["generation"]
        .as_u64()
        .unwrap();
    // A full re-index (every file re-read and embedded) takes a while;
    // SIGTERM comes while it runs.
    let (addr, session) = (server.dial(), client.session.clone().unwrap());
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "reindex", "arguments": {"full": true}}});
    let caller = std::thread::spawn(move || exchange(&addr, &session, call.to_string().as_bytes()));
    std::thread::sleep(Duration::from_millis(60));
    let started = Instant::now();
    let code = server.signal("TERM");
    let took = started.elapsed();
    let raw = caller.join().expect("caller").expect("the exchange");
    assert_eq!(code, Some(0), "{}", server.stderr());
    let reply = Reply::parse(&raw);
    let text = reply.text();
    eprintln!(
        "reindex at SIGTERM: stopped in {took:?}; reply {} {text:?}",
        reply.status
    );
    let answered = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .next_back()
        .map(|m| m["result"]["structuredContent"]["generation"].clone());
    // The generation live now, and the generation folders on disk.
    let live = corpus.json(&["status", "--json"])["generation"]
        .as_u64()
        .unwrap();
    let mut folders: Vec<u64> = std::fs::read_dir(corpus.path().join(".memidx"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_prefix("gen-").and_then(|n| n.parse().ok())
        })
        .collect();
    folders.sort_unstable();
    let facts = format!(
        "answer {answered:?} (reply {} {text:?}); live generation {live} (was {generation}); \
         generation folders {folders:?}",
        reply.status
    );
    // The call was answered with the generation it made, which is live,
    // with nothing half-made beside it.
    assert_eq!(answered, Some(json!(generation + 1)), "{facts}");
    assert_eq!(live, generation + 1, "{facts}");
    assert!(folders.iter().all(|&g| g <= live), "{facts}");
}

/// One MCP POST of `body` on a connection of its own, for the SIGTERM test:
/// the raw reply (empty if the server closed without one), or the error
/// of a refused or reset connection.
fn exchange(addr: &str, session: &str, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(raw)
}

#[test]
fn eight_sdk_sessions_under_ten_reindexes_fail_no_call_and_mix_no_generations() {
    let Some(python) = crate::mcp::mcp_python() else {
        return;
    };
    let corpus = indexed();
    let (_keep, file) = token_file(TOKEN);
    let mut server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let (at_start, _) = server.rss_kib();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_http_load.py");
    let started = Instant::now();
    let mut load = Command::new(python)
        .arg(script)
        .arg(server.url())
        .arg(TOKEN)
        .arg(assert_cmd::cargo::cargo_bin("memidx"))
        .arg(corpus.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the load script");
    let mut stdin = load.stdin.take().unwrap();
    let stdout = BufReader::new(load.stdout.take().unwrap());
    let mut stderr = load.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let (mut after_100, mut at_end, mut report) = (None, None, None);
    for line in stdout.lines() {
        let line = line.expect("the script's output");
        match line.as_str() {
            // The script waits for a line on stdin while the RSS is read.
            "checkpoint after-100" => {
                after_100 = Some(server.rss_kib().0);
                writeln!(stdin, "go").unwrap();
            }
            "checkpoint end" => {
                at_end = Some(server.rss_kib().0);
                writeln!(stdin, "go").unwrap();
            }
            _ => report = Some(line),
        }
    }
    let status = load.wait().expect("wait for the script");
    let elapsed = started.elapsed();
    let errors = errors.join().unwrap();
    assert!(status.success(), "the load script failed:\n{errors}");
    let report: Value = serde_json::from_str(&report.expect("a report"))
        .unwrap_or_else(|e| panic!("{e}; stderr:\n{errors}"));
    let (after_100, at_end) = (
        after_100.expect("checkpoint after 100 calls"),
        at_end.expect("checkpoint at the end"),
    );
    eprintln!(
        "load: {report:#}\nRSS {at_start} KiB at start, {after_100} KiB after 100 calls, \
         {at_end} KiB at the end; {elapsed:?} in all"
    );

    assert_eq!(report["calls"], 8 * 250, "{report}");
    assert_eq!(report["failed"], 0, "{report:#}");
    assert_eq!(report["inconsistent"], 0, "{report:#}");
    // Ten runs, one generation each, every one of them seen answering, and
    // the BM25 check exercised both ways.
    let generations: Vec<u64> = report["generations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_u64().unwrap())
        .collect();
    assert_eq!(generations.len(), 11, "{report}");
    let seen: Vec<u64> = report["levels_seen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_u64().unwrap())
        .collect();
    assert!(
        seen.iter().all(|g| generations.contains(g))
            && seen.first() == generations.first()
            && seen.last() == generations.last()
            && seen.len() >= 6,
        "answers came from {seen:?}, the runs made {generations:?}"
    );
    assert!(report["marker_hits"].as_u64().unwrap() > 0, "{report}");
    assert!(report["marker_misses"].as_u64().unwrap() > 0, "{report}");
    assert!(
        at_end * 5 <= after_100 * 6,
        "RSS grew from {after_100} KiB after 100 calls to {at_end} KiB at the end"
    );
    assert_eq!(server.signal("TERM"), Some(0), "{}", server.stderr());
}

/// The chunks a sparse search for `word` finds (none when no chunk has it).
fn sparse_ids(client: &mut Client, word: &str) -> Vec<String> {
    let result = client.call("search", json!({"query": word, "mode": "sparse"}));
    assert_ne!(result["isError"], true, "{result}");
    crate::common::chunk_ids(&result["structuredContent"])
}

#[test]
fn with_watch_every_session_sees_what_is_written_meanwhile() {
    let corpus = indexed();
    let mut server = HttpServer::start(corpus.path(), &["--watch"]);
    let mut first = Client::of(&server, None);
    let mut second = Client::of(&server, None);
    first.initialize();
    second.initialize();
    assert!(sparse_ids(&mut first, "zebrafinch").is_empty());
    std::fs::write(
        corpus.path().join("notes/watched.md"),
        "# Watched\n\nThe zebrafinch ledger was rotated.\n",
    )
    .expect("write");
    let deadline = Instant::now() + Duration::from_secs(30);
    while sparse_ids(&mut first, "zebrafinch").is_empty() {
        assert!(Instant::now() < deadline, "{}", server.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        sparse_ids(&mut first, "zebrafinch")[0],
        "notes/watched.md#1"
    );
    assert_eq!(
        sparse_ids(&mut second, "zebrafinch")[0],
        "notes/watched.md#1"
    );
    assert_eq!(server.signal("TERM"), Some(0), "{}", server.stderr());
}

/// Reads from `stream` until the server closes it (or answers and then
/// closes it); how long that took, and what it sent.
fn until_closed(mut stream: TcpStream) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(40)))
        .expect("timeout");
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    (started.elapsed(), got)
}

#[test]
fn a_stalled_client_is_cut_off_and_holds_nothing() {
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    let addr = server.dial();
    // A head never finished, and a body that stops halfway.
    let mut head = TcpStream::connect(&addr).expect("connect");
    head.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("write");
    let mut body = TcpStream::connect(&addr).expect("connect");
    body.write_all(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\""
        )
        .as_bytes(),
    )
    .expect("write");
    let stalled = [
        std::thread::spawn(move || until_closed(head)),
        std::thread::spawn(move || until_closed(body)),
    ];
    // Meanwhile everyone else is served.
    let mut client = Client::of(&server, None);
    client.initialize();
    assert_eq!(
        client.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
    for (which, waiter) in ["head", "body"].into_iter().zip(stalled) {
        let (took, sent) = waiter.join().expect("reader");
        let text = String::from_utf8_lossy(&sent);
        assert!(
            took < Duration::from_secs(20),
            "the stalled {which} held its connection {took:?}"
        );
        // Closed, or answered with an error status and then closed.
        assert!(
            sent.is_empty() || text.starts_with("HTTP/1.1 4"),
            "{which}: {text}"
        );
    }
}

/// Sends `sent` to `addr` at once, then `trickled` one byte every two
/// seconds (never pausing long enough for an idle timeout) until the server
/// closes the connection; how long it held it, and what it answered.
fn trickle(addr: &str, sent: String, trickled: &'static [u8]) -> (Duration, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(sent.as_bytes()).expect("write");
    let mut writer = stream.try_clone().expect("clone");
    std::thread::spawn(move || {
        for byte in trickled.chunks(1) {
            std::thread::sleep(Duration::from_secs(2));
            if writer.write_all(byte).is_err() {
                return;
            }
        }
    });
    until_closed(stream)
}

#[test]
fn a_head_or_a_body_trickled_in_is_cut_at_its_deadline() {
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    let addr = server.dial();
    let (head_addr, body_addr) = (addr.clone(), addr.clone());
    // Header lines a byte at a time (cut 10 s after the head began), and a
    // body of 100 bytes a byte at a time (cut 30 s after it began).
    let head = std::thread::spawn(move || {
        trickle(
            &head_addr,
            "POST /mcp HTTP/1.1\r\n".into(),
            b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        )
    });
    let body = std::thread::spawn(move || {
        trickle(
            &body_addr,
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {body_addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n"
            ),
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}                                                    ",
        )
    });
    // Meanwhile everyone else is served.
    let mut client = Client::of(&server, None);
    client.initialize();
    assert_eq!(
        client.search_ids("INC-2023-Q4-011")[0],
        format!("{INCIDENT}#1")
    );
    let (took, sent) = head.join().expect("head");
    assert!(
        took < Duration::from_secs(16),
        "the trickled head held its connection {took:?}"
    );
    let text = String::from_utf8_lossy(&sent);
    assert!(
        sent.is_empty() || text.starts_with("HTTP/1.1 4"),
        "head: {text}"
    );
    let (took, sent) = body.join().expect("body");
    assert!(
        took < Duration::from_secs(36),
        "the trickled body held its connection {took:?}"
    );
    let text = String::from_utf8_lossy(&sent);
    assert!(text.starts_with("HTTP/1.1 408"), "body: {text}");
    // Not the pause timeout: a byte came every 2 s.
    assert!(took >= Duration::from_secs(29), "cut after {took:?}");
    // And the server serves on.
    assert!(!client.search_ids("replication lag").is_empty());
}

#[test]
fn searches_beside_a_reindex_keep_their_generation_and_remembers_at_once_all_land() {
    let Some(python) = crate::mcp::mcp_python() else {
        return;
    };
    let corpus = Corpus::fixtures_with_bulk(1500);
    let (_keep, file) = token_file(TOKEN);
    let server = HttpServer::start(corpus.path(), &["--token-file", file.to_str().unwrap()]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_concurrent.py");
    let report = client_report(
        Command::new(python)
            .arg(script)
            .arg(server.url())
            .arg(TOKEN)
            .arg("replication lag"),
    );
    let before = report["before"].as_u64().unwrap();
    // The re-index made the next generation, and no call failed.
    assert_eq!(report["reindex"], before + 1, "{report}");
    assert_eq!(report["failures"], json!([]), "{report}");
    // Searches were answered while it ran (they no longer wait behind it),
    // each with results, from the generation they started on.
    let during = report["during"].as_array().unwrap();
    assert!(!during.is_empty(), "{report}");
    assert!(during.iter().all(|n| n.as_u64() == Some(5)), "{report}");
    // `status` gives the old generation until the new one is live (the
    // last may come after the switch, before the answer reached the
    // client), never an older one, never going back.
    let statuses: Vec<u64> = (report["statuses"].as_array().unwrap().iter())
        .map(|g| g.as_u64().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&before), "{report}");
    assert!(statuses.windows(2).all(|w| w[0] <= w[1]), "{report}");
    assert!(
        statuses.iter().all(|&g| g == before || g == before + 1),
        "{report}"
    );
    // The first call after it answers from the new one.
    assert_eq!(
        report["after"],
        json!({"results": 5, "generation": before + 1}),
        "{report}"
    );
    // Fifty `remember` calls at once: every note indexed, and found.
    assert_eq!(report["remembered"], 50, "{report}");
    assert_eq!(report["found"], 50, "{report}");
}

#[test]
fn a_body_that_is_not_a_json_rpc_message_gets_a_json_rpc_error_and_the_server_serves_on() {
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    let mut session = Client::of(&server, None);
    session.initialize();
    for (body, code, says) in [
        (
            &br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "#[..],
            -32700,
            "Parse error: ",
        ),
        (b"[1, 2", -32700, "Parse error: "),
        (br#"{"foo": 1}"#, -32600, "Invalid Request: "),
        (
            br#"{"jsonrpc": "2.0", "id": 1}"#,
            -32600,
            "Invalid Request: ",
        ),
    ] {
        let reply = session.post_raw(body, &[]);
        let shown = String::from_utf8_lossy(body);
        assert_eq!(reply.status, 400, "{shown}: {reply:?}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "{shown}"
        );
        let error: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(error["jsonrpc"], "2.0", "{error}");
        assert_eq!(error["id"], Value::Null, "{error}");
        assert_eq!(error["error"]["code"], code, "{shown}: {error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(says), "{shown}: {message}");
    }
    // The session serves on.
    assert!(!session.search_ids("replication lag").is_empty());
}

#[test]
fn a_full_server_answers_503_at_once_and_serves_again_when_connections_close() {
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    // Silent connections past the server's cap (128 per core, at least two
    // cores): the server serves its cap and tells the rest at once, with
    // 503, instead of leaving them waiting.
    let cap = 128 * std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let silent: Vec<TcpStream> = (0..cap + 20)
        .map(|_| TcpStream::connect(server.dial()).unwrap())
        .collect();
    let told: Vec<Reply> = (silent.iter().rev().take(20))
        .filter_map(|stream| {
            let mut stream = stream.try_clone().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw).ok()?;
            (!raw.is_empty()).then(|| Reply::parse(&raw))
        })
        .collect();
    assert!(told.len() >= 10, "{} of the last 20 were told", told.len());
    for full in &told {
        assert_eq!(full.status, 503, "{full:?}");
        assert_eq!(full.header("retry-after"), Some("1"), "{full:?}");
        assert!(
            full.text().contains("every connection is in use"),
            "{full:?}"
        );
    }
    drop(silent);
    // Their slots come back: a client is served again.
    let started = Instant::now();
    loop {
        let mut session = Client::of(&server, None);
        let reply = session.post(&Client::initialize_message(), &[]);
        if reply.status == 200 {
            session.session = reply.header("mcp-session-id").map(str::to_string);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{reply:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_session_holds_one_event_stream_and_sessions_are_capped() {
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    let mut session = Client::of(&server, None);
    session.initialize();
    let id = session.session.clone().unwrap();
    // The first GET stream stays open; a second of the same session is refused.
    let mut stream = TcpStream::connect(server.dial()).unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {id}\r\n\r\n",
        server.dial()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut first = [0u8; 12];
    let n = stream.read(&mut first).unwrap();
    assert_eq!(
        &first[..n],
        b"HTTP/1.1 200",
        "{:?}",
        String::from_utf8_lossy(&first[..n])
    );
    let again = http(
        &server.dial(),
        "GET",
        "/mcp",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &id)],
        b"",
    );
    assert_eq!(again.status, 409, "{again:?}");
    assert_eq!(
        again.text(),
        "this session has an event stream open already\n"
    );
    // Once it closes, the session may open another.
    drop(stream);
    let started = Instant::now();
    loop {
        let mut stream = TcpStream::connect(server.dial()).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let n = stream.read(&mut first).unwrap();
        if &first[..n] == b"HTTP/1.1 200" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            &first[..n]
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Sessions: a thousand at once, then a clear refusal (none is idle long
    // enough to be closed for a new one), and memory stays bounded.
    let (before, _) = server.rss_kib();
    let mut opened = 1;
    let refusal = loop {
        let reply = Client::of(&server, None).post(&Client::initialize_message(), &[]);
        if reply.status != 200 {
            break reply;
        }
        opened += 1;
        assert!(opened <= 1000, "session {opened} was opened");
    };
    assert_eq!(opened, 1000);
    assert_eq!(refusal.status, 503, "{refusal:?}");
    assert!(
        refusal
            .text()
            .contains("1000 sessions are open, none idle over 60s"),
        "{}",
        refusal.text()
    );
    let (after, peak) = server.rss_kib();
    eprintln!("1000 sessions: RSS {before} KiB before, {after} KiB after, peak {peak} KiB");
    assert!(peak < 150 * 1024, "peak RSS {peak} KiB");
    // The sessions open still answer.
    assert!(!session.search_ids("replication lag").is_empty());
}

#[test]
fn a_hundred_sdk_clients_at_once_are_all_answered() {
    let Some(python) = crate::mcp::mcp_python() else {
        return;
    };
    let corpus = indexed();
    let server = HttpServer::start(corpus.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_many.py");
    let report = client_report(
        Command::new(python)
            .arg(script)
            .arg(server.url())
            .args(["100", "6"]),
    );
    // Each keeps a connection or two of its own: none starves, none fails.
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["answered"], 600, "{report}");
}
