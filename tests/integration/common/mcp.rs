//! Helpers for the MCP tests: a raw stdio session with `memidx mcp` (for
//! what an SDK will not send, and for calls whose results are checked by
//! validators rather than by an SDK), a `memidx mcp --http` server, the
//! checks that a JSON Schema reads the same under draft-07 and 2020-12,
//! and the answers every SDK's session report must hold.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The protocol revision the raw sessions ask for.
pub const PROTOCOL: &str = "2025-06-18";

/// `memidx mcp ARGS…` on pipes, initialized.
pub struct RawSession {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    next_id: u64,
}

impl RawSession {
    /// Starts `memidx mcp --index DIR EXTRA…` and completes the handshake.
    pub fn start(dir: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("memidx"))
            .args(["mcp", "--index"])
            .arg(dir)
            .args(extra)
            .current_dir(dir)
            .env_remove("MEMIDX_INDEX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start memidx mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        let mut session = Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = session.request(
            "initialize",
            json!({"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "memidx-tests", "version": "0"}}),
        );
        assert_eq!(init["result"]["protocolVersion"], PROTOCOL, "{init}");
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    /// Writes one message as a line.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Writes `line` and a newline as they are.
    pub fn send_line(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    /// Writes `bytes` and a newline as they are (UTF-8 or not).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.write_all(b"\n").expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// The next message the server writes.
    pub fn receive(&mut self) -> Value {
        let mut line = String::new();
        let stdout = self.stdout.as_mut().expect("stdout open");
        let read = stdout.read_line(&mut line).expect("read the server");
        assert!(read > 0, "the server closed its output");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Sends a request and returns the response to it.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.receive();
        assert_eq!(response["id"], id, "{response}");
        response
    }

    /// Calls a tool; the `result` of the response (a tool error included).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{tool}: {response}");
        response["result"].clone()
    }

    /// The tools the server lists.
    pub fn tools(&mut self) -> Vec<Value> {
        let listed = self.request("tools/list", json!({}));
        listed["result"]["tools"].as_array().expect("tools").clone()
    }

    /// Closes the server's input and returns its exit code.
    pub fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().expect("wait").code()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's input, to write from elsewhere (or close).
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin open")
    }

    /// The server's output, to read from elsewhere (or close).
    pub fn take_stdout(&mut self) -> BufReader<ChildStdout> {
        self.stdout.take().expect("stdout open")
    }

    /// The exit code once the server ends within `limit`, else `None`.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<Option<i32>> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status.code());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Keywords whose meaning differs between draft-07 and 2020-12 (or that one
/// of them does not know), which a schema read by both must not use.
const NOT_PORTABLE: &[&str] = &[
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "minContains",
    "maxContains",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "contentSchema",
    "definitions",
    // An annotation or an assertion depending on the validator and its
    // options, whichever the draft.
    "format",
];

/// What may stand beside `$ref`: draft-07 ignores every sibling of a
/// `$ref`, so only annotations, which change no verdict, are allowed.
const REF_SIBLINGS: &[&str] = &[
    "$ref",
    "title",
    "description",
    "$comment",
    "default",
    "examples",
];

/// The places in `schema` that a draft-07 and a 2020-12 validator would
/// read differently, as `pointer: why`.
pub fn not_portable(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, String::new(), &mut found);
    found
}

fn walk(schema: &Value, path: String, found: &mut Vec<String>) {
    match schema {
        Value::Object(object) => {
            for keyword in NOT_PORTABLE {
                if object.contains_key(*keyword) {
                    found.push(format!("{path}: {keyword}"));
                }
            }
            if let Some(items) = object.get("items").filter(|i| !i.is_object()) {
                found.push(format!("{path}: items is {items}, not a schema"));
            }
            if object.contains_key("$ref") {
                for key in object
                    .keys()
                    .filter(|k| !REF_SIBLINGS.contains(&k.as_str()))
                {
                    found.push(format!("{path}: {key} beside $ref"));
                }
            }
            for (key, value) in object {
                // Property names and enum values are data, not keywords.
                if key == "enum" || key == "const" || key == "default" || key == "examples" {
                    continue;
                }
                let inner = format!("{path}/{key}");
                if key == "properties" || key == "$defs" || key == "patternProperties" {
                    for (name, sub) in value.as_object().into_iter().flatten() {
                        walk(sub, format!("{inner}/{name}"), found);
                    }
                } else {
                    walk(value, inner, found);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}/{i}"), found);
            }
        }
        _ => {}
    }
}

/// A draft-07 and a 2020-12 validator of `schema` (the draft forced, whatever
/// its `$schema` says), after checking it against both meta-schemas.
pub fn both_drafts(schema: &Value, what: &str) -> [(&'static str, jsonschema::Validator); 2] {
    let portable = not_portable(schema);
    assert!(
        portable.is_empty(),
        "{what} is read differently by draft-07 and 2020-12: {portable:?}"
    );
    if let Err(e) = jsonschema::draft7::meta::validator().validate(schema) {
        panic!("{what} breaks the draft-07 meta-schema: {e}");
    }
    if let Err(e) = jsonschema::draft202012::meta::validator().validate(schema) {
        panic!("{what} breaks the 2020-12 meta-schema: {e}");
    }
    let build = |draft| {
        jsonschema::options()
            .with_draft(draft)
            .build(schema)
            .unwrap_or_else(|e| panic!("{what} does not compile as {draft:?}: {e}"))
    };
    [
        ("draft-07", build(jsonschema::Draft::Draft7)),
        ("2020-12", build(jsonschema::Draft::Draft202012)),
    ]
}

/// Asserts that `instance` is valid under both drafts of `schema`.
pub fn assert_valid_in_both(schema: &Value, instance: &Value, what: &str) {
    for (draft, validator) in both_drafts(schema, what) {
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{}: {e}", e.instance_path().as_str()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what} ({draft}): {errors:?}\n{instance:#}"
        );
    }
}

/// `memidx mcp --http ADDR --index DIR EXTRA…`, killed when dropped; its
/// stderr (after the line naming the URL) collected by a thread.
pub struct HttpServer {
    child: Child,
    /// `host:port`, as the URL it printed names it.
    pub addr: String,
    /// Its stderr after the first line, collected by a thread.
    stderr: Arc<Mutex<String>>,
    drain: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Serves `dir` on a free loopback port.
    pub fn start(dir: &Path, extra: &[&str]) -> Self {
        Self::start_at("127.0.0.1:0", dir, extra)
    }

    /// Serves `dir` at `bind`, and waits for the line naming the URL.
    pub fn start_at(bind: &str, dir: &Path, extra: &[&str]) -> Self {
        let index = dir.to_str().expect("UTF-8");
        Self::serve(bind, dir, &[&["--index", index][..], extra].concat())
    }

    /// Serves the indexes `args` name (`--index …`, with any other flags)
    /// from `dir` on a free loopback port, and waits for the line naming
    /// the URL.
    pub fn serve(bind: &str, dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("memidx"))
            .args(["mcp", "--http", bind])
            .args(args)
            .current_dir(dir)
            .env_remove("MEMIDX_INDEX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start memidx mcp --http");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr
            .read_line(&mut line)
            .expect("read the server's stderr");
        let Some(url) = line
            .split_whitespace()
            .find_map(|word| word.strip_prefix("http://"))
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no URL in the server's first line {line:?}");
        };
        assert!(
            line.starts_with("memidx mcp: serving ") && url.ends_with("/mcp"),
            "{line:?}"
        );
        let addr = url.trim_end_matches("/mcp").to_string();
        let collected = Arc::new(Mutex::new(line.clone()));
        let sink = collected.clone();
        let drain = std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Self {
            child,
            addr,
            stderr: collected,
            drain: Some(drain),
        }
    }

    /// The server's address as a client dials it: a wildcard bind is
    /// reached on loopback.
    pub fn dial(&self) -> String {
        self.addr
            .replace("0.0.0.0:", "127.0.0.1:")
            .replace("[::]:", "[::1]:")
    }

    /// The endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.dial())
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's resident set and its peak so far, in KiB.
    pub fn rss_kib(&self) -> (u64, u64) {
        rss_kib(self.child.id())
    }

    /// Sends `signal` (TERM, INT) and returns the exit code (`None` when
    /// killed by a signal), waiting at most 40 s (the server's grace period
    /// for calls in flight is 30 s).
    pub fn signal(&mut self, signal: &str) -> Option<i32> {
        let sent = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -s {signal} failed");
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                if let Some(drain) = self.drain.take() {
                    drain.join().expect("stderr thread");
                }
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "the server did not stop within 40 s of SIG{signal}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The resident set of process `pid` and its peak so far, in KiB.
pub fn rss_kib(pid: u32) -> (u64, u64) {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/PID/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Runs a client script (`command`, all set) and returns the one JSON
/// report it prints, asserting it succeeded.
pub fn client_report(command: &mut Command) -> Value {
    let output = command.output().expect("run the MCP client");
    assert!(
        output.status.success(),
        "the client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON");
    eprintln!("{report:#}");
    report
}

/// The assertions every real-client session report shares, whichever the
/// SDK (`tests/mcp_client.py`, `tests/mcp_ts/client.mjs`) and transport:
/// what the server said of itself and its tools, and the exact answers to
/// the calls both scripts make on a fresh copy of the fixtures.
pub fn assert_shared_answers(report: &Value) {
    let incident = "incidents/2023/q4/billing-month-end-timeouts.md";
    assert_eq!(report["server"], "memidx");
    assert_eq!(report["has_instructions"], true);
    let tools = &report["tools"];
    let hints = |read_only: bool, idempotent: bool| {
        json!({"readOnlyHint": read_only, "destructiveHint": false,
               "idempotentHint": idempotent, "openWorldHint": false})
    };
    for (tool, required, annotations) in [
        ("search", json!(["query"]), hints(true, true)),
        ("get", json!([]), hints(true, true)),
        ("explain", json!(["query"]), hints(true, true)),
        ("status", json!([]), hints(true, true)),
        ("reindex", json!([]), hints(false, true)),
        ("remember", json!(["text"]), hints(false, false)),
    ] {
        assert_eq!(tools[tool]["required"], required, "{tool}");
        assert_eq!(tools[tool]["annotations"], annotations, "{tool}");
        assert_eq!(tools[tool]["has_output_schema"], true, "{tool}");
    }

    assert_eq!(
        report["identifier_ids"],
        json!([
            format!("{incident}#1"),
            "incidents/2023/q3/payments-webhook-backlog.md#1",
            "incidents/2024/q1/search-staging-empty-results.md#1"
        ])
    );
    assert_eq!(report["search_flags"], json!([false, 0]));
    // 503 + 374 = 877 characters fit 1000; the third (440) would not.
    assert_eq!(
        report["budget"],
        json!({"ids": [format!("{incident}#1"), "incidents/2023/q3/payments-webhook-backlog.md#1"],
               "truncated": true, "omitted": 3, "chars": 877})
    );
    assert_eq!(report["bare_has_text"], false);
    assert_eq!(report["get_chunk_equals_search"], true);
    assert_eq!(
        report["get_lines"],
        json!({"lines": [13, 15], "total_lines": 75,
               "text": "## Summary\n\nIncident INC-2023-Q4-011. On 30 November 2023, between 23:12 and 00:47 UTC, the production\n"})
    );
    assert_eq!(
        report["explain_ids"],
        json!([
            format!("{incident}#1"),
            "incidents/2023/q3/payments-webhook-backlog.md#1"
        ])
    );
    assert_eq!(report["explain_one"], json!([format!("{incident}#1")]));
    assert_eq!(
        report["status_before"],
        json!({"generation": 1, "changed": []})
    );

    // Wrong argument types are tool errors; the session goes on.
    let bad_type = report["bad_type"].as_str().expect("bad_type");
    assert!(
        bad_type.starts_with("invalid argument 'top_k'"),
        "{bad_type}"
    );
    let unknown_field = report["unknown_field"].as_str().expect("unknown_field");
    assert!(unknown_field.contains("colour"), "{unknown_field}");

    // The index run beside the server made generation 2, which answers;
    // reindex in the session made 3.
    assert_eq!(
        report["after_index"],
        json!({"ids": [format!("{incident}#6")], "generation": 2})
    );
    assert_eq!(
        report["after_reindex"],
        json!({"generation": 3, "up_to_date": false, "ids": ["notes/zz-added.md#1"]})
    );
    // Time bounds apply before ranking; every result is dated within them.
    assert_eq!(
        report["dated"],
        json!([[
            "notes/payments-gateway-rollback-2024-02.md",
            "2024-02-07T00:00:00Z"
        ]])
    );
    assert_eq!(
        report["dated_ranks"],
        json!(["dense", "file", "recency", "sparse"])
    );
    assert_eq!(
        report["remembered"],
        json!({"path_tail": "numbat-rotation.md", "ids_match": true, "service": ["billing-service"]})
    );
}
