//! One embeddings request to an OpenAI-compatible endpoint, with the
//! retries its faults deserve: `POST {url}/embeddings` with `{"model",
//! "input"}`, answered by `{"data": [{"embedding", "index"}], "model"}`.
//!
//! A fault that may pass — the server unreachable, a timeout, 429 (after
//! its `Retry-After`), a 5xx — is tried again a bounded number of times,
//! waiting longer each time ([`Patience`]); one that will not — 401/403, a
//! 4xx, an answer that is not the embeddings asked for — fails at once.
//! Every error names the endpoint and never the key. The HTTP client is
//! `ureq` (see `Cargo.toml`).

use std::fmt;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

/// The most bytes of an answer read (a batch of large vectors as JSON text
/// is a few megabytes).
const ANSWER_LIMIT: u64 = 256 << 20;

/// How long connecting may take before the attempt counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The variable that sets how long one request may take, in seconds.
pub const TIMEOUT_ENV: &str = "MEMIDX_EMBED_TIMEOUT";

/// A bearer token, kept out of every `Debug` and error message.
#[derive(Clone)]
pub(super) struct Secret(String);

impl Secret {
    /// Wraps `key` (trimmed of surrounding white space, as a key file's
    /// final newline is not part of the key).
    pub(super) fn new(key: &str) -> Self {
        Self(key.trim().to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// How many times a fault that may pass is tried, and the longest wait
/// between tries.
#[derive(Debug, Clone, Copy)]
pub(super) struct Patience {
    /// Attempts in all (at least 1).
    pub(super) attempts: u32,
    /// The longest wait before another attempt; a `Retry-After` asking
    /// for more fails instead.
    pub(super) longest_wait: Duration,
    /// Whether an endpoint that cannot be reached, or does not answer in
    /// time, is tried again (an index run waits out a restart; a search
    /// says so at once).
    pub(super) retry_stalls: bool,
    /// How long one request may take, answer included, unless
    /// `MEMIDX_EMBED_TIMEOUT` (seconds) says otherwise.
    pub(super) timeout: Duration,
}

impl Patience {
    /// An index run's: a restarting or busy server is waited for (a
    /// refused connection about 15 s in all, a `Retry-After` up to a
    /// minute a try).
    pub(super) const RUN: Self = Self {
        attempts: 6,
        longest_wait: Duration::from_secs(60),
        retry_stalls: true,
        timeout: Duration::from_secs(120),
    };

    /// A search's: a busy server gets one more try soon; one that is down
    /// or stalls fails the search.
    pub(super) const QUERY: Self = Self {
        attempts: 2,
        longest_wait: Duration::from_secs(2),
        retry_stalls: false,
        timeout: Duration::from_secs(15),
    };
}

/// The endpoint: where it is, which model it is asked for, with which key.
#[derive(Debug, Clone)]
pub(super) struct Client {
    /// `{url}/embeddings`.
    target: String,
    model: String,
    key: Option<Secret>,
    patience: Patience,
    agent: ureq::Agent,
}

/// An answer: one vector per text asked for, in order.
#[derive(Debug)]
pub(super) struct Answer {
    /// The vectors, in the order of the texts.
    pub(super) vectors: Vec<Vec<f32>>,
    /// The model the endpoint says answered (empty when it does not say).
    pub(super) model: String,
    /// Time spent waiting on the network and the server, retries and
    /// their waits included.
    pub(super) waited: Duration,
}

/// A request's body.
#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [&'a str],
}

/// An answer's body (fields other servers add are ignored).
#[derive(Deserialize)]
struct Body {
    data: Vec<Item>,
    #[serde(default)]
    model: String,
}

/// One vector of an answer.
#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: Option<usize>,
}

/// What one attempt came to.
enum Attempt {
    Answered(Answer),
    /// Worth another try, after at least this long (a `Retry-After`).
    Passing(anyhow::Error, Option<Duration>),
    /// Too big for the endpoint at once: split and send again.
    TooLarge,
    Failed(anyhow::Error),
}

/// Why [`Client::embed`] gave no vectors.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The endpoint refused a request this large (HTTP 413).
    TooLarge,
    /// Anything else, said in full.
    Error(anyhow::Error),
}

impl From<anyhow::Error> for Refusal {
    fn from(err: anyhow::Error) -> Self {
        Self::Error(err)
    }
}

impl Client {
    /// A client for `model` at `url` (the part before `/embeddings`, e.g.
    /// `http://127.0.0.1:7997/v1`), waiting out faults with `patience`.
    pub(super) fn new(
        url: &str,
        model: &str,
        key: Option<Secret>,
        patience: Patience,
    ) -> Result<Self> {
        let url = url.trim_end_matches('/');
        let Some((_, rest)) = url
            .split_once("://")
            .filter(|(scheme, _)| ["http", "https"].contains(scheme))
        else {
            bail!("the embedding endpoint '{url}' is not an http:// or https:// URL");
        };
        // The index records the URL and errors name it: no secret may ride in it.
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.contains('@') || rest.contains('?') || rest.contains('#') {
            bail!(
                "give the embedding endpoint's URL without a user, query or fragment (the index \
                 records it); the key goes in --embed-key-file FILE or MEMIDX_EMBED_KEY"
            );
        }
        let timeout = match std::env::var(TIMEOUT_ENV) {
            Ok(seconds) => match seconds.trim().parse::<f64>() {
                Ok(s) if s > 0.0 && Duration::try_from_secs_f64(s).is_ok() => {
                    Duration::from_secs_f64(s)
                }
                _ => bail!("{TIMEOUT_ENV} must be a number of seconds above 0, not '{seconds}'"),
            },
            Err(_) => patience.timeout,
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(timeout))
            .user_agent(concat!("memidx/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Self {
            target: format!("{url}/embeddings"),
            model: model.to_string(),
            key,
            patience,
            agent,
        })
    }

    /// `{url}/embeddings`, as errors name it.
    pub(super) fn target(&self) -> &str {
        &self.target
    }

    /// Embeds `texts` in one request (tried again as its patience allows):
    /// one vector per text, in order.
    pub(super) fn embed(&self, texts: &[&str]) -> Result<Answer, Refusal> {
        let patience = self.patience;
        let attempts = patience.attempts.max(1);
        let started = Instant::now();
        let mut wait = Duration::from_millis(500);
        for attempt in 1..=attempts {
            let (err, asked) = match self.attempt(texts) {
                Attempt::Answered(answer) => {
                    return Ok(Answer {
                        waited: started.elapsed(),
                        ..answer
                    });
                }
                Attempt::TooLarge => return Err(Refusal::TooLarge),
                Attempt::Failed(err) => return Err(err.into()),
                Attempt::Passing(err, asked) => (err, asked),
            };
            if attempt == attempts {
                return Err(err
                    .context(format!("gave up after {attempt} attempts"))
                    .into());
            }
            let pause = asked.unwrap_or(wait);
            if pause > patience.longest_wait {
                return Err(err
                    .context(format!(
                        "it asked to wait {:.0} s, more than the {:.0} s memidx waits",
                        pause.as_secs_f64(),
                        patience.longest_wait.as_secs_f64()
                    ))
                    .into());
            }
            std::thread::sleep(pause);
            wait = (wait * 2).min(patience.longest_wait);
        }
        unreachable!("the last attempt returns")
    }

    /// One request and what it came to.
    fn attempt(&self, texts: &[&str]) -> Attempt {
        let mut request = self.agent.post(&self.target);
        if let Some(Secret(key)) = &self.key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let sent = request.send_json(Request {
            model: &self.model,
            input: texts,
        });
        let mut response = match sent {
            Ok(response) => response,
            Err(err) => return self.transport_fault(err),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(retry_after);
        let body = match response
            .body_mut()
            .with_config()
            .limit(ANSWER_LIMIT)
            .read_to_vec()
        {
            Ok(body) => body,
            Err(err) => return self.transport_fault(err),
        };
        let said = || server_message(&body);
        let target = &self.target;
        match status {
            200..=299 => match parse(&body, texts.len()) {
                Ok(answer) => Attempt::Answered(answer),
                Err(err) => Attempt::Failed(err.context(format!(
                    "the embedding endpoint {target} answered with something other than \
                     the {} embeddings asked for",
                    texts.len()
                ))),
            },
            401 | 403 => Attempt::Failed(anyhow!(
                "the embedding endpoint {target} refused the key (HTTP {status}: {}); give \
                 the right one in MEMIDX_EMBED_KEY or with 'memidx index --embed-key-file FILE'",
                said()
            )),
            413 => Attempt::TooLarge,
            429 => Attempt::Passing(
                anyhow!(
                    "the embedding endpoint {target} is rate-limiting (HTTP 429: {})",
                    said()
                ),
                retry_after,
            ),
            500..=599 => Attempt::Passing(
                anyhow!(
                    "the embedding endpoint {target} failed (HTTP {status}: {})",
                    said()
                ),
                retry_after,
            ),
            _ => Attempt::Failed(anyhow!(
                "the embedding endpoint {target} refused the request for model '{}' \
                 (HTTP {status}: {})",
                self.model,
                said()
            )),
        }
    }

    /// What a failure to talk to the endpoint at all came to.
    fn transport_fault(&self, err: ureq::Error) -> Attempt {
        let target = &self.target;
        let stalled = |err: anyhow::Error| match self.patience.retry_stalls {
            true => Attempt::Passing(err, None),
            false => Attempt::Failed(err),
        };
        let unreachable = |why: String| {
            stalled(anyhow!(
                "cannot reach the embedding endpoint {target} ({why}); is its server running?"
            ))
        };
        match err {
            ureq::Error::Timeout(what) => stalled(anyhow!(
                "the embedding endpoint {target} did not answer in time ({what}; \
                 {TIMEOUT_ENV} sets the seconds)"
            )),
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
                unreachable(err.to_string())
            }
            ureq::Error::Io(io) if io.kind() == ErrorKind::ConnectionRefused => {
                unreachable("connection refused".to_string())
            }
            ureq::Error::Io(io) => Attempt::Passing(
                anyhow!("the connection to the embedding endpoint {target} broke ({io})"),
                None,
            ),
            ureq::Error::BodyExceedsLimit(limit) => Attempt::Failed(anyhow!(
                "the embedding endpoint {target} answered with more than {limit} bytes"
            )),
            other => Attempt::Failed(anyhow!(
                "the request to the embedding endpoint {target} failed: {other}"
            )),
        }
    }
}

/// The vectors of an answer's `body` to `asked` texts, in order.
fn parse(body: &[u8], asked: usize) -> Result<Answer> {
    let body: Body =
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(body))
            .map_err(|err| anyhow!("its body is not an embeddings answer: {err}"))?;
    if body.data.len() != asked {
        bail!("it gave {} vectors", body.data.len());
    }
    let mut vectors = vec![Vec::new(); asked];
    let mut seen = vec![false; asked];
    for (place, item) in body.data.into_iter().enumerate() {
        let index = item.index.unwrap_or(place);
        if index >= asked || std::mem::replace(&mut seen[index], true) {
            bail!("it gave index {index} twice or out of range");
        }
        if item.embedding.iter().any(|x| !x.is_finite()) {
            bail!("vector {index} holds a value that is not a finite number");
        }
        vectors[index] = item.embedding;
    }
    Ok(Answer {
        vectors,
        model: body.model,
        waited: Duration::ZERO,
    })
}

/// What the server said, from an error body (OpenAI's `error.message`,
/// FastAPI's `detail`, or the text itself), cut short.
fn server_message(body: &[u8]) -> String {
    let value: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let said = value
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("detail"))
                .or_else(|| v.get("message"))
        })
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    match said.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &said[..cut]),
        None if said.is_empty() => "no message".to_string(),
        None => said,
    }
}

/// A `Retry-After` header's wait: delay seconds, or an HTTP date.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = jiff::fmt::rfc2822::parse(value).ok()?;
    let wait = at.timestamp().duration_since(jiff::Timestamp::now());
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_gives_its_vectors_in_the_order_of_their_indexes() {
        let body = br#"{"object":"list","model":"m","data":[
            {"object":"embedding","index":1,"embedding":[3,4]},
            {"object":"embedding","index":0,"embedding":[1,0]}],"usage":{"total_tokens":2}}"#;
        let answer = parse(body, 2).unwrap();
        assert_eq!(answer.vectors, vec![vec![1.0, 0.0], vec![3.0, 4.0]]);
        assert_eq!(answer.model, "m");
    }

    #[test]
    fn an_answer_that_is_not_the_embeddings_asked_for_is_refused() {
        let refused = |body: &str, asked| parse(body.as_bytes(), asked).unwrap_err().to_string();
        assert!(refused(r#"{"data":[]}"#, 1).contains("0 vectors"));
        assert!(refused(r#"{"data":[{"index":0,"embedding":[1]}]}"#, 2).contains("1 vectors"));
        let twice = r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#;
        assert!(refused(twice, 2).contains("index 0 twice"));
        assert!(refused(r#"{"data":[{"index":0,"embedding":"AAAA"}]}"#, 1).contains("data"));
        assert!(refused("<html>bad gateway</html>", 1).contains("not an embeddings answer"));
    }

    #[test]
    fn a_servers_message_is_found_in_the_shapes_servers_use() {
        let openai =
            br#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#;
        assert_eq!(server_message(openai), "Incorrect API key provided");
        assert_eq!(
            server_message(br#"{"detail":"model not found"}"#),
            "model not found"
        );
        assert_eq!(server_message(b"  upstream\n down "), "upstream down");
        assert_eq!(server_message(b""), "no message");
        assert_eq!(
            server_message("x".repeat(400).as_bytes()).chars().count(),
            301
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("-1"), None);
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO),
            "a date gone by is no wait"
        );
        assert_eq!(retry_after("soon"), None);
    }

    #[test]
    fn a_key_never_shows_in_debug_output() {
        let key = Some(Secret::new("sk-123\n"));
        let client = Client::new("http://127.0.0.1:9/v1/", "m", key, Patience::QUERY).unwrap();
        assert!(!format!("{client:?}").contains("sk-123"));
        assert_eq!(client.target(), "http://127.0.0.1:9/v1/embeddings");
        assert!(Client::new("127.0.0.1:9", "m", None, Patience::RUN).is_err());
        for secret in [
            "http://u:sk-1@host/v1",
            "https://host/v1?key=sk-1",
            "http://host/v1#k",
        ] {
            let err = Client::new(secret, "m", None, Patience::RUN)
                .unwrap_err()
                .to_string();
            assert!(!err.contains("sk-1"), "{err}");
        }
    }
}
