//! A loopback HTTP proxy in front of the real embedding server that
//! `.ci/run` starts, injecting one fault at a time into what passes
//! through: how the tests meet 401, 429, 5xx, 413, stalls, malformed
//! bodies, wrong dimensions and a model swapped mid-run from a server
//! that never misbehaves on purpose. Each connection carries one request
//! (the proxy answers `Connection: close`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// What the proxy does to a request.
#[derive(Debug, Clone)]
pub enum FaultKind {
    /// Answers with this status, a `Retry-After` when given, and an
    /// OpenAI-shaped error body.
    Status(u16, Option<&'static str>),
    /// Waits this long, then closes without an answer.
    Stall(Duration),
    /// Answers 200 with a body that is not JSON.
    Garbage,
    /// Forwards, and cuts every vector to this many components.
    Truncate(usize),
    /// Forwards, and negates every vector: another model of the same
    /// dimension.
    Negate,
    /// Refuses requests of more than this many texts with 413.
    LargerThan(usize),
}

/// A fault and the requests it applies to: it lets `after` requests
/// through, then injects itself into `times` requests.
#[derive(Debug, Clone)]
struct Fault {
    kind: FaultKind,
    after: usize,
    times: usize,
}

/// The proxy, serving until dropped (its port then refuses connections).
pub struct FaultProxy {
    port: u16,
    fault: Arc<Mutex<Option<Fault>>>,
    requests: Arc<AtomicUsize>,
    stopped: Arc<AtomicBool>,
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (`http://host:port/...`).
    pub fn start(upstream: &str) -> Self {
        Self::start_on(upstream, 0)
    }

    /// Starts a proxy to `upstream` on `port` (0: any free port).
    pub fn start_on(upstream: &str, port: u16) -> Self {
        let authority = upstream
            .strip_prefix("http://")
            .expect("an http:// upstream")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        // A port just given up may take a moment to bind again.
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(listener) => break listener,
                Err(_) if port != 0 && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(err) => panic!("cannot listen on port {port}: {err}"),
            }
        };
        let port = listener.local_addr().unwrap().port();
        let fault = Arc::new(Mutex::new(None::<Fault>));
        let requests = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        let (shared_fault, counted) = (Arc::clone(&fault), Arc::clone(&requests));
        let stop = Arc::clone(&stopped);
        let accepting = std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let (fault, counted, authority) = (
                    Arc::clone(&shared_fault),
                    Arc::clone(&counted),
                    authority.clone(),
                );
                std::thread::spawn(move || serve(stream, &authority, &fault, &counted));
            }
        });
        Self {
            port,
            fault,
            requests,
            stopped,
            accepting: Some(accepting),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL to give `--embed-url`: the upstream's, through the proxy.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Injects `kind` into `times` requests after the next `after`, and
    /// counts requests from zero again.
    pub fn inject(&self, kind: FaultKind, after: usize, times: usize) {
        *self.fault.lock().unwrap() = Some(Fault { kind, after, times });
        self.requests.store(0, Ordering::SeqCst);
    }

    /// Lets every request through again.
    pub fn heal(&self) {
        *self.fault.lock().unwrap() = None;
        self.requests.store(0, Ordering::SeqCst);
    }

    /// Requests seen since the last [`FaultProxy::inject`] or
    /// [`FaultProxy::heal`].
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    /// Closes the listener, and returns once it is closed: the thread
    /// sees the flag at its next connection, which this one is.
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

/// A request as read: its head's lines and its body.
struct Request {
    head: Vec<String>,
    body: Vec<u8>,
}

/// Serves one connection's request.
fn serve(stream: TcpStream, upstream: &str, fault: &Mutex<Option<Fault>>, counted: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let seen = counted.fetch_add(1, Ordering::SeqCst);
    let kind = fault.lock().unwrap().as_ref().and_then(|f| {
        (seen >= f.after && seen < f.after.saturating_add(f.times)).then(|| f.kind.clone())
    });
    let mut stream = stream;
    let texts = serde_json::from_slice::<Value>(&request.body)
        .ok()
        .and_then(|v| v["input"].as_array().map(Vec::len))
        .unwrap_or(0);
    let answer = match kind {
        Some(FaultKind::Status(status, retry_after)) => {
            error_answer(status, retry_after, "injected by the test proxy")
        }
        Some(FaultKind::Stall(time)) => {
            std::thread::sleep(time);
            return;
        }
        Some(FaultKind::Garbage) => answer(200, &[], b"<html>upstream garbage</html>"),
        Some(FaultKind::LargerThan(most)) if texts > most => {
            error_answer(413, None, "request entity too large")
        }
        Some(FaultKind::Truncate(dim)) => forward_changed(&request, upstream, |v| v.truncate(dim)),
        Some(FaultKind::Negate) => forward_changed(&request, upstream, |v| {
            for x in v.iter_mut() {
                *x = Value::from(-x.as_f64().unwrap());
            }
        }),
        Some(FaultKind::LargerThan(_)) | None => forward_changed(&request, upstream, |_| {}),
    };
    let _ = stream.write_all(&answer);
}

/// Reads a request's head and its `Content-Length` body.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end().to_string();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let length = content_length(&head);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { head, body })
}

/// The `Content-Length` among `head`'s lines (0 without one).
fn content_length(head: &[String]) -> usize {
    head.iter()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Sends `request` upstream and answers with its answer, each vector of a
/// successful one passed through `change`.
fn forward_changed(request: &Request, upstream: &str, change: impl Fn(&mut Vec<Value>)) -> Vec<u8> {
    let Ok(mut up) = TcpStream::connect(upstream) else {
        return error_answer(502, None, "the upstream server is down");
    };
    let mut sent = Vec::new();
    sent.extend_from_slice(request.head[0].as_bytes());
    sent.extend_from_slice(b"\r\n");
    for line in &request.head[1..] {
        let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
        if name != "connection" && name != "host" {
            sent.extend_from_slice(line.as_bytes());
            sent.extend_from_slice(b"\r\n");
        }
    }
    sent.extend_from_slice(format!("Host: {upstream}\r\nConnection: close\r\n\r\n").as_bytes());
    sent.extend_from_slice(&request.body);
    up.write_all(&sent).unwrap();
    let mut reader = BufReader::new(up);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(502);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let chunked = head
        .iter()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"));
    let body = if chunked {
        read_chunked(&mut reader)
    } else {
        let mut body = vec![0; content_length(&head)];
        reader.read_exact(&mut body).unwrap();
        body
    };
    if status != 200 {
        return answer(status, &[], &body);
    }
    let mut value: Value = serde_json::from_slice(&body).unwrap();
    for item in value["data"].as_array_mut().unwrap() {
        change(item["embedding"].as_array_mut().unwrap());
    }
    answer(200, &[], value.to_string().as_bytes())
}

/// A chunked body, decoded.
fn read_chunked(reader: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).unwrap();
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// An error answer with an OpenAI-shaped body.
fn error_answer(status: u16, retry_after: Option<&str>, message: &str) -> Vec<u8> {
    let headers: Vec<(&str, &str)> = retry_after
        .map(|r| ("Retry-After", r))
        .into_iter()
        .collect();
    let body = serde_json::json!({"error": {"message": message, "type": "test"}}).to_string();
    answer(status, &headers, body.as_bytes())
}

/// An HTTP/1.1 answer that closes the connection.
fn answer(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} Status\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}
