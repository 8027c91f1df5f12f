//! `memidx mcp` over stdio against what a careless or hostile client
//! writes: every malformed line is answered (a client never waits
//! forever) and the session goes on; messages before the session starts
//! are ignored; thousands of requests written at once do not grow memory;
//! a closed stdout ends the server; a signal ends it once what it read is
//! answered.

use crate::common::Corpus;
use crate::common::mcp::{PROTOCOL, RawSession, rss_kib};

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn indexed() -> Corpus {
    let corpus = Corpus::fixtures();
    corpus.index();
    corpus
}

/// The error code of a response, and its id.
fn code_and_id(response: &Value) -> (Value, Value) {
    (response["error"]["code"].clone(), response["id"].clone())
}

#[test]
fn every_malformed_line_is_answered_and_the_session_goes_on() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    let mut answer = |line: &str| {
        session.send_line(line);
        code_and_id(&session.receive())
    };
    let parse_error = (json!(-32700), Value::Null);
    assert_eq!(
        answer(r#"{"jsonrpc": "2.0", "id": 7, "method": "pi"#),
        parse_error
    );
    let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
    assert_eq!(answer(&deep), parse_error);
    assert_eq!(
        answer(r#"{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": 5}}"#),
        (json!(-32602), json!(8))
    );
    assert_eq!(
        answer(r#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": ["search"]}"#),
        (json!(-32602), json!(9))
    );
    assert_eq!(
        answer(r#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}"#),
        (json!(-32600), Value::Null)
    );

    // A raw control character in a string, and invalid UTF-8.
    session.send_line("{\"jsonrpc\": \"2.0\", \"id\": 10, \"method\": \"p\u{1}\"}");
    assert_eq!(code_and_id(&session.receive()), parse_error);
    session.send_bytes(b"{\"jsonrpc\": \"2.0\", \"id\": 11, \"method\": \"\xff\"}");
    assert_eq!(code_and_id(&session.receive()), parse_error);

    // A lone surrogate escape, as JavaScript writes it: answered.
    session.send_line(
        r#"{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "gateway \ud800 timeout", "top_k": 1}}}"#,
    );
    let found = session.receive();
    assert_eq!(found["id"], 12);
    assert_eq!(found["result"]["isError"], false, "{found}");

    // Two messages on one line: both answered, in order.
    session.send_line(
        r#"{"jsonrpc": "2.0", "id": 13, "method": "ping"} {"jsonrpc": "2.0", "id": 14, "method": "ping"}"#,
    );
    assert_eq!(session.receive()["id"], 13);
    assert_eq!(session.receive()["id"], 14);

    // An id reused while its request is still being answered.
    session.send_line(&format!(
        "{}\n{}",
        json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call",
               "params": {"name": "reindex", "arguments": {"full": true}}}),
        json!({"jsonrpc": "2.0", "id": 15, "method": "ping"})
    ));
    let (first, second) = (session.receive(), session.receive());
    let (refused, reindexed) = match first.get("error") {
        Some(_) => (first, second),
        None => (second, first),
    };
    assert_eq!(
        code_and_id(&refused),
        (json!(-32600), json!(15)),
        "{refused}"
    );
    assert_eq!(reindexed["result"]["isError"], false, "{reindexed}");

    // A line over 16 MiB.
    let huge = format!(
        r#"{{"jsonrpc": "2.0", "id": 16, "method": "ping", "params": {{"x": "{}"}}}}"#,
        "a".repeat(17 << 20)
    );
    session.send_line(&huge);
    assert_eq!(
        code_and_id(&session.receive()),
        (json!(-32600), Value::Null)
    );

    // An unknown method is named, with what is served; a wrong type is
    // said in words.
    let unknown = session.request("bogus/method", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    let message = unknown["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("unknown method 'bogus/method'; memidx serves initialize, ping"),
        "{message}"
    );
    let typed = session.call("search", json!({"query": "x", "top_k": "ten"}));
    assert_eq!(
        typed["content"][0]["text"],
        "invalid argument 'top_k': invalid type: string \"ten\", expected a whole number, 0 or more"
    );

    // Lists memidx does not offer are empty, not errors.
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let listed = session.request(method, json!({}));
        let items = listed["result"].as_object().expect("a result").values();
        assert!(
            items.filter_map(Value::as_array).all(Vec::is_empty),
            "{method}: {listed}"
        );
    }

    // A query past what a search takes is a tool error, not a cost.
    let huge = session.call("search", json!({"query": "gateway ".repeat(20_000)}));
    assert_eq!(huge["isError"], true);
    assert_eq!(
        huge["content"][0]["text"],
        "the query is 160000 bytes long; at most 65536 are searched"
    );

    // And after all that, a search.
    let result = session.call("search", json!({"query": "INC-2023-Q4-011", "top_k": 1}));
    assert_eq!(
        result["structuredContent"]["results"][0]["chunk_id"],
        "incidents/2023/q4/billing-month-end-timeouts.md#1"
    );
    assert_eq!(session.finish(), Some(0));
}

#[test]
fn messages_before_the_session_starts_are_ignored_not_fatal() {
    let corpus = indexed();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("memidx"))
        .args(["mcp", "--index"])
        .arg(corpus.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let lines = [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 99, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "early", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for line in &lines {
        writeln!(stdin, "{line}").expect("write");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0));
    let answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)], "{answers:?}");
    assert_eq!(answers[1]["result"]["protocolVersion"], PROTOCOL);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr
            .matches("ignoring a message sent before the session started")
            .count(),
        2,
        "{stderr}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn twenty_thousand_requests_written_at_once_keep_memory_flat() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    session.call("search", json!({"query": "gateway", "top_k": 1}));
    let before = rss_kib(session.pid()).0;
    let requests: String = (0..20_000)
        .map(|i| {
            let message = if i % 10 == 0 {
                json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": {
                    "name": "search", "arguments": {"query": "gateway timeout", "top_k": 1,
                                                    "include_text": false}}})
            } else {
                json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/list"})
            };
            format!("{message}\n")
        })
        .collect();
    let mut stdin = session.take_stdin();
    let writer = std::thread::spawn(move || {
        stdin.write_all(requests.as_bytes()).expect("write");
        stdin
    });
    // Nothing is read for a while: the server may only queue what its
    // bound allows.
    std::thread::sleep(Duration::from_secs(2));
    let stalled = rss_kib(session.pid()).0;
    let started = Instant::now();
    let mut peak = stalled;
    let mut answered = std::collections::BTreeSet::new();
    for i in 0..20_000 {
        let answer = session.receive();
        assert!(answer.get("result").is_some(), "{answer}");
        answered.insert(answer["id"].as_u64().expect("an id"));
        if i % 1000 == 0 {
            peak = peak.max(rss_kib(session.pid()).0);
        }
    }
    assert_eq!(
        answered,
        (1000..21_000).collect(),
        "every request answered once"
    );
    let _stdin = writer.join().expect("writer");
    eprintln!(
        "RSS {before} kB before, {stalled} kB stalled, {peak} kB peak; answered in {:?}",
        started.elapsed()
    );
    assert!(
        peak < before + 64 * 1024,
        "memory grew from {before} kB to {peak} kB"
    );
}

#[test]
fn a_closed_stdout_ends_the_server() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    let pid = session.pid();
    drop(session.take_stdout());
    let started = Instant::now();
    let code = session.wait_for_exit(Duration::from_secs(10));
    assert!(
        code.is_some(),
        "memidx mcp (pid {pid}) still runs with its stdout closed"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Every file of the live generation (first generation of a fresh index).
fn generation_files(corpus: &Corpus) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![corpus.path().join(".memidx/gen-1")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A search over the tool, and whether it was a tool error (its text).
fn search_outcome(session: &mut RawSession) -> Result<Value, String> {
    let result = session.call(
        "search",
        json!({"query": "INC-2023-Q4-011 gateway timeout", "top_k": 5}),
    );
    match result["isError"].as_bool() {
        Some(false) => Ok(result["structuredContent"].clone()),
        _ => Err(result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()),
    }
}

#[test]
fn files_truncated_under_a_running_server_are_named_not_fatal() {
    let corpus = indexed();
    let files = generation_files(&corpus);
    assert!(files.len() > 15, "{files:?}");
    let mut session = RawSession::start(corpus.path(), &[]);
    let healthy = search_outcome(&mut session).expect("a search");
    let mut named = 0;
    for file in &files {
        let original = std::fs::read(file).expect("read");
        // Truncated in place, as `cp` over it does before it writes.
        std::fs::write(file, &original[..original.len() / 2]).expect("truncate");
        match search_outcome(&mut session) {
            Err(text) => {
                assert!(!text.is_empty());
                named += 1;
            }
            Ok(answer) => assert_eq!(answer, healthy, "{}", file.display()),
        }
        // Whole again: the next call answers as before.
        std::fs::write(file, &original).expect("restore");
        assert_eq!(
            search_outcome(&mut session),
            Ok(healthy.clone()),
            "{}",
            file.display()
        );
    }
    eprintln!("{named} of {} truncated files named", files.len());
    assert!(named > files.len() / 2, "{named} of {}", files.len());
    assert_eq!(session.finish(), Some(0), "the server lived through it all");
}

#[test]
fn a_running_server_refuses_the_damage_a_fresh_command_refuses() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    let healthy = search_outcome(&mut session).expect("a search");
    let mut refused = 0;
    for file in generation_files(&corpus) {
        let original = std::fs::read(&file).expect("read");
        if original.is_empty() {
            continue;
        }
        for at in [original.len() / 3, original.len() - 1] {
            let mut damaged = original.clone();
            damaged[at] ^= 0xFF;
            std::fs::write(&file, &damaged).expect("damage");
            let cli = corpus
                .memidx()
                .args([
                    "search",
                    "INC-2023-Q4-011 gateway timeout",
                    "-k",
                    "5",
                    "--json",
                ])
                .output()
                .expect("run");
            let served = search_outcome(&mut session);
            let what = format!("{} byte {at}", file.display());
            match cli.status.code() {
                Some(2) => {
                    assert!(
                        served.is_err(),
                        "{what}: the CLI refuses it, the server served it"
                    );
                    refused += 1;
                }
                _ => {
                    // Not read by a search (or not damage to it): the
                    // server may answer, but never with altered results.
                    if let Ok(answer) = &served {
                        assert_eq!(answer, &healthy, "{what}");
                    }
                }
            }
            std::fs::write(&file, &original).expect("restore");
        }
    }
    eprintln!("{refused} damaged files refused by both");
    assert!(refused > 10, "{refused}");
    assert_eq!(search_outcome(&mut session), Ok(healthy));
    assert_eq!(session.finish(), Some(0));
}

#[test]
fn every_protocol_revision_the_official_clients_use_is_spoken() {
    let corpus = indexed();
    // What each `initialize` asks for, and what the server answers: every
    // revision it knows as asked; one it does not know gets its latest
    // (2026-07-28 has no `initialize`: its clients probe with
    // `server/discover`, which the TypeScript SDK 2.x test exercises).
    let cases = [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ];
    for (asked, answered) in cases {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("memidx"))
            .args(["mcp", "--index"])
            .arg(corpus.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start");
        let mut stdin = child.stdin.take().expect("stdin");
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": asked, "capabilities": {},
                "clientInfo": {"name": "versions", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "search", "arguments": {"query": "INC-2023-Q4-011", "top_k": 1}}}),
        ] {
            writeln!(stdin, "{message}").expect("write");
        }
        drop(stdin);
        let output = child.wait_with_output().expect("wait");
        let answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        assert_eq!(answers[0]["result"]["protocolVersion"], answered, "{asked}");
        assert_eq!(
            answers[1]["result"]["structuredContent"]["results"][0]["chunk_id"],
            "incidents/2023/q4/billing-month-end-timeouts.md#1",
            "{asked}"
        );
    }
}

#[test]
fn an_empty_list_of_filter_values_is_an_error_not_a_wider_search() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    for filter in [json!({"environment": []}), json!({"no-such-key": []})] {
        let result = session.call("search", json!({"query": "gateway", "filter": filter}));
        assert_eq!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("an empty list of values; give at least one value"),
            "{text}"
        );
    }
    assert_eq!(session.finish(), Some(0));
}

#[test]
fn per_file_folds_a_file_s_results_for_an_agent_too() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    let sources = |result: &Value| -> Vec<String> {
        result["structuredContent"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["source"].as_str().unwrap().to_string())
            .collect()
    };
    let all = session.call("search", json!({"query": "drain a node", "per_file": 0}));
    let drain = "runbooks/kubernetes/node-drain.md";
    let unfolded = sources(&all).iter().filter(|s| *s == drain).count();
    assert!(unfolded > 1, "{all}");
    let one = session.call("search", json!({"query": "drain a node", "per_file": 1}));
    let folded = sources(&one);
    assert_eq!(folded.iter().filter(|s| *s == drain).count(), 1, "{one}");
    let mut distinct = folded.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), folded.len(), "{one}");
    let text = one["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(" in this file; per_file 0 shows them]"),
        "{text}"
    );
    let by_meaning = session.call("search", json!({"query": "outage", "top_k": 1}));
    let text = by_meaning["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "[no result holds a word of the query: these are ranked by meaning alone]\n\n1. "
        ),
        "{text}"
    );
    // Nothing matches: no results, and the text says why and what keeps them.
    let nonsense = session.call("search", json!({"query": "xyzzyplugh", "top_k": 1}));
    assert_eq!(
        nonsense["structuredContent"]["results"],
        json!([]),
        "{nonsense}"
    );
    let text = nonsense["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("no results\n[nothing matches the query with confidence (")
            && text.contains("keep_all: true shows the closest chunks anyway]"),
        "{text}"
    );
    let kept = session.call(
        "search",
        json!({"query": "xyzzyplugh", "top_k": 1, "keep_all": true}),
    );
    assert_eq!(
        kept["structuredContent"]["results"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let bad = session.call("search", json!({"query": "drain a node", "per_file": -1}));
    assert_eq!(bad["isError"], true, "{bad}");
    assert_eq!(session.finish(), Some(0));
}

#[test]
fn tools_list_fits_a_model_s_context_and_its_output_schemas_carry_no_prose() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    let listed = session.request("tools/list", json!({}));
    let bytes = listed.to_string().len();
    assert!(bytes < 25_500, "tools/list is {bytes} bytes");
    // The schema files document every field; what a client validates with
    // does not repeat it on every tools/list. Nor does it write a type as a
    // list, which schema dialects of one type a schema reject (the MCP
    // Inspector's --strict check warns of each).
    fn documented(schema: &Value, at: &str, out: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map {
                    let nested = format!("{at}/{key}");
                    let prose = (key == "description" || key == "title") && value.is_string();
                    if prose || (key == "type" && value.is_array()) {
                        out.push(nested.clone());
                    }
                    documented(value, &nested, out);
                }
            }
            Value::Array(list) => {
                for (i, value) in list.iter().enumerate() {
                    documented(value, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(tools.len() >= 5, "{listed}");
    for tool in tools {
        // A title where the current protocol puts it, as in the annotations.
        assert!(tool["title"].is_string(), "{tool}");
        assert_eq!(tool["title"], tool["annotations"]["title"], "{tool}");
        let mut prose = Vec::new();
        documented(&tool["outputSchema"], "", &mut prose);
        assert_eq!(prose, Vec::<String>::new(), "{}", tool["name"]);
        // The search tool's output schema still closes its objects and
        // names its fields.
        if tool["name"] == "search" {
            let result = &tool["outputSchema"]["$defs"]["result"];
            assert_eq!(result["additionalProperties"], false, "{result}");
            assert!(result["properties"]["coverage"].is_object(), "{result}");
        }
    }
    assert_eq!(session.finish(), Some(0));
}

#[test]
fn get_reads_a_path_s_line_range_as_the_command_line_does() {
    let corpus = indexed();
    let mut session = RawSession::start(corpus.path(), &[]);
    let file = "runbooks/databases/postgres-replication.md";
    let lines = |result: &Value| result["structuredContent"]["lines"].clone();
    let ranged = session.call("get", json!({"path": format!("{file}:39-43")}));
    let explicit = session.call("get", json!({"path": file, "from": 39, "to": 43}));
    assert_eq!(lines(&ranged), json!([39, 43]), "{ranged}");
    assert_eq!(ranged["structuredContent"], explicit["structuredContent"]);
    // A chunk id given as a path is the chunk.
    let chunk = session.call("get", json!({"path": format!("{file}#2")}));
    assert_eq!(
        chunk["structuredContent"]["chunk_id"],
        format!("{file}#2"),
        "{chunk}"
    );
    // A path ending as a folder's is refused, not read as the file.
    let folder = session.call("get", json!({"path": format!("{file}/")}));
    assert_eq!(folder["isError"], true, "{folder}");
    let text = folder["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("ends in a separator"), "{text}");
    assert_eq!(session.finish(), Some(0));
}

#[test]
fn sigterm_sigint_or_sighup_end_the_session_once_the_requests_read_are_answered() {
    // Enough notes that a full re-index is still running when the signal
    // comes.
    let corpus = Corpus::fixtures_with_bulk(1500);
    let index = corpus.path().join(".memidx");
    for signal in ["TERM", "INT", "HUP"] {
        let generation = |dir: &std::path::Path| -> u64 {
            let meta: Value =
                serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
            meta["generation"].as_u64().unwrap()
        };
        let before = generation(&index);
        let mut session = RawSession::start(&index, &[]);
        let call = |id: u64, tool: &str, arguments: Value| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})
        };
        session.send(&call(1, "reindex", json!({"full": true})));
        for id in 2..=4 {
            session.send(&call(id, "search", json!({"query": "replication lag"})));
        }
        // The requests are read before the signal comes, the re-index
        // still running.
        std::thread::sleep(Duration::from_millis(100));
        let sent = Command::new("kill")
            .args(["-s", signal, &session.pid().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let mut answered = Vec::new();
        let mut stdout = session.take_stdout();
        let mut line = String::new();
        while std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() > 0 {
            let message: Value = serde_json::from_str(&line).unwrap();
            assert!(message.get("result").is_some(), "SIG{signal}: {message}");
            assert_ne!(message["result"]["isError"], true, "SIG{signal}: {message}");
            answered.push(message["id"].as_u64().unwrap());
            line.clear();
        }
        answered.sort_unstable();
        assert_eq!(answered, [1, 2, 3, 4], "SIG{signal}");
        assert_eq!(
            session.wait_for_exit(Duration::from_secs(40)),
            Some(Some(0)),
            "SIG{signal}"
        );
        // The re-index ran to its end: its generation is live, and no
        // folder of an unfinished one is left beside it.
        let live = generation(&index);
        assert_eq!(live, before + 1, "SIG{signal}");
        let folders: Vec<u64> = std::fs::read_dir(&index)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                name.strip_prefix("gen-").and_then(|n| n.parse().ok())
            })
            .collect();
        assert!(
            folders.iter().all(|&g| g <= live),
            "SIG{signal}: {folders:?}"
        );
    }
}
