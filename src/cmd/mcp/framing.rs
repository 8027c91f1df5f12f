//! Lines of stdin to JSON-RPC messages, and what to answer when a line is
//! not one: the stdio transport's reading half, without I/O (`stdio.rs`
//! does the reading and writing).
//!
//! The SDK's own line codec ignores a line it cannot parse, so a client
//! that sent truncated JSON, invalid UTF-8, or a lone surrogate escape
//! (valid JSON grammar that JavaScript emits, which `serde_json` refuses)
//! waits forever. Here every such line gets JSON-RPC's answer (`-32700`
//! with id null, `-32600` for what is JSON but no request, `-32602` for a
//! known method whose params have the wrong shape); two messages on one
//! line are both read; a lone surrogate becomes U+FFFD so the request
//! is answered.

use rmcp::model::ClientRequest;
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use serde_json::{Value, json};

/// JSON-RPC's code for text that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for a method's params of the wrong shape.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's code for a method the server does not have.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// The client requests of the protocol: one of these whose params do not
/// parse is invalid params, not an unknown method.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// What memidx answers, for the error naming an unknown method.
const SERVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// One piece of a line: a message for the server, or the error to answer.
#[derive(Debug)]
pub enum Piece {
    /// A message the SDK reads (boxed: it is ten times an error's size).
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// An error response to write back at once.
    Reply(Value),
}

/// The pieces of one line (without its newline): each JSON value on it in
/// turn, then a parse error if it ends in something that is not JSON.
pub fn pieces(line: &[u8]) -> Vec<Piece> {
    let Ok(text) = std::str::from_utf8(line) else {
        return vec![Piece::Reply(error(
            Value::Null,
            PARSE_ERROR,
            "parse error: the message is not UTF-8 text",
        ))];
    };
    let text = replace_lone_surrogates(text);
    let mut out = Vec::new();
    let mut values = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    for value in values.by_ref() {
        match value {
            Ok(value) => out.push(message(value)),
            Err(err) => {
                out.push(Piece::Reply(error(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {err}"),
                )));
                break;
            }
        }
    }
    out
}

/// A JSON value as a message for the SDK, or the error it deserves.
fn message(value: Value) -> Piece {
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let invalid = |why: &str| Piece::Reply(error(id.clone(), INVALID_REQUEST, why));
    let Some(object) = value.as_object() else {
        return invalid("invalid request: a message is a JSON object");
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("invalid request: jsonrpc must be \"2.0\"");
    }
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Piece::Reply(error(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: an id is a string or a number",
        ));
    }
    let method = object.get("method").cloned();
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(RxJsonRpcMessage::<RoleServer>::Request(request))
            if matches!(request.request, ClientRequest::CustomRequest(_))
                && KNOWN_METHODS.contains(&request.request.method()) =>
        {
            let method = request.request.method().to_string();
            Piece::Reply(error(
                id,
                INVALID_PARAMS,
                &format!("invalid params: the params of {method} do not have its shape"),
            ))
        }
        Ok(RxJsonRpcMessage::<RoleServer>::Request(request))
            if matches!(request.request, ClientRequest::CustomRequest(_)) =>
        {
            let method = request.request.method().to_string();
            Piece::Reply(error(
                id,
                METHOD_NOT_FOUND,
                &format!(
                    "unknown method '{method}'; memidx serves {}",
                    SERVED_METHODS.join(", ")
                ),
            ))
        }
        Ok(message) => Piece::Message(Box::new(message)),
        Err(_) => match method {
            Some(Value::String(method)) if KNOWN_METHODS.contains(&method.as_str()) => {
                Piece::Reply(error(
                    id,
                    INVALID_PARAMS,
                    &format!("invalid params: the params of {method} do not have its shape"),
                ))
            }
            Some(Value::String(_)) | None => invalid("invalid request: not a JSON-RPC message"),
            Some(_) => invalid("invalid request: method must be a string"),
        },
    }
}

/// A JSON-RPC error response.
pub fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// `text` with each `\uXXXX` escape of an unpaired surrogate replaced by
/// `\uFFFD`, so that `serde_json` reads it (borrowed when there is none).
fn replace_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    let bytes = text.as_bytes();
    let surrogate_at = |i: usize| -> Option<u16> {
        let hex = text.get(i + 2..i + 6)?;
        (bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
            .filter(|unit| (0xD800..0xE000).contains(unit))
    };
    let mut out: Option<String> = None;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match surrogate_at(i) {
            Some(0xD800..0xDC00) if surrogate_at(i + 6).is_some_and(|low| low >= 0xDC00) => {
                i += 12;
            }
            Some(_) => {
                let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                out.push_str(&text[copied..i]);
                out.push_str("\\uFFFD");
                i += 6;
                copied = i;
            }
            // Any other escape: skip the backslash and the character after
            // it, so `\\u…` (an escaped backslash) is not read as an escape.
            None => i += 2,
        }
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            out.into()
        }
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(line: &str) -> Vec<Value> {
        pieces(line.as_bytes())
            .into_iter()
            .map(|p| match p {
                Piece::Reply(v) => v,
                Piece::Message(m) => serde_json::to_value(m).expect("json"),
            })
            .collect()
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        assert_eq!(replace_lone_surrogates(r#""a\ud800b""#), r#""a\uFFFDb""#);
        assert_eq!(replace_lone_surrogates(r#""\udc00""#), r#""\uFFFD""#);
        assert_eq!(
            replace_lone_surrogates(r#""\ud83d\ude00""#),
            r#""\ud83d\ude00""#
        );
        assert_eq!(replace_lone_surrogates(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(
            replace_lone_surrogates(r#""\ud800\ud800""#),
            r#""\uFFFD\uFFFD""#
        );
    }

    #[test]
    fn every_bad_line_gets_an_answer() {
        let code = |line: &str| replies(line)[0]["error"]["code"].clone();
        assert_eq!(
            code("{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth"),
            PARSE_ERROR
        );
        assert_eq!(replies("{\"id\": 1")[0]["id"], Value::Null);
        assert_eq!(code("[1, 2]"), INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}}"#),
            INVALID_PARAMS
        );
        assert_eq!(
            code(r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": []}"#),
            INVALID_PARAMS
        );
        assert_eq!(
            code(r#"{"jsonrpc": "2.0", "id": 4, "method": 7}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc": "1.0", "id": 4, "method": "ping"}"#),
            INVALID_REQUEST
        );
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(code(&deep), PARSE_ERROR);
        let utf8 = pieces(b"{\"a\": \"\xff\"}");
        assert!(matches!(&utf8[0], Piece::Reply(v) if v["error"]["code"] == PARSE_ERROR));
    }

    #[test]
    fn two_messages_on_one_line_are_both_read() {
        let line = r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"} {"jsonrpc": "2.0", "id": 2, "method": "ping"}"#;
        let ids: Vec<Value> = replies(line).iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids, [json!(1), json!(2)]);
        assert!(pieces(b"   ").is_empty());
    }
}
