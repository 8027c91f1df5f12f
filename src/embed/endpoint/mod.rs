//! A model served by an OpenAI-compatible embeddings endpoint (`memidx
//! index --embed-url URL --embed-model NAME`): OpenAI, Azure, Ollama's and
//! LM Studio's compatible APIs, infinity, vLLM, text-embeddings-inference.
//!
//! The endpoint has no files to fingerprint, so its answers to fixed probe
//! texts are the model's identity ([`probe`]). An index run probes at the
//! start (an endpoint that cannot answer fails the run before anything is
//! written) and again before it commits (a server that swapped its model
//! mid-run fails the run); a search probes with its first query, in the
//! same request, and refuses an endpoint that now answers as another
//! model. An index run's batches go out as requests of a few dozen texts,
//! a few in flight at once; every vector is scaled to unit length here, as
//! a server need not.
//!
//! The key comes from a file (`--embed-key-file`, whose path the index
//! records) or from [`KEY_ENV`]; it is never recorded or printed.

mod http;
mod probe;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use self::http::{Client, Patience, Refusal, Secret};
use self::probe::{PROBES, Signs};
use super::{Embedder, EmbedderInfo, ModelKind};

pub use http::TIMEOUT_ENV;

/// The variable that gives the endpoint's key when no key file does.
pub const KEY_ENV: &str = "MEMIDX_EMBED_KEY";

/// The most texts one request carries.
const REQUEST_TEXTS: usize = 32;

/// The most bytes of text one request carries (a request of long chunks
/// holds fewer texts), well under what hosted APIs accept.
const REQUEST_CHARS: usize = 96 * 1024;

/// Requests an index run keeps in flight at once.
const IN_FLIGHT: usize = 4;

/// Where a model is served, and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL before `/embeddings`, e.g. `http://127.0.0.1:7997/v1`.
    pub url: String,
    /// The model name each request asks for.
    pub model: String,
    /// The file holding the key, when one is given (else [`KEY_ENV`]).
    pub key_file: Option<PathBuf>,
}

impl Endpoint {
    /// The key: the key file's content when there is one, else
    /// [`KEY_ENV`]'s value, else none.
    fn key(&self) -> Result<Option<Secret>> {
        if let Some(file) = &self.key_file {
            let key = std::fs::read_to_string(file).with_context(|| {
                format!("cannot read the embedding key file {}", file.display())
            })?;
            ensure!(
                !key.trim().is_empty(),
                "the embedding key file {} is empty",
                file.display()
            );
            return Ok(Some(Secret::new(&key)));
        }
        Ok(std::env::var(KEY_ENV)
            .ok()
            .filter(|key| !key.trim().is_empty())
            .map(|key| Secret::new(&key)))
    }

    /// The command that indexes `DIR` with this endpoint from scratch.
    fn rebuild_command(&self) -> String {
        format!(
            "memidx index --full --embed-url {} --embed-model {} DIR",
            self.url, self.model
        )
    }
}

/// What an index records of the endpoint that embedded it (never the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointRecord {
    /// The URL before `/embeddings`.
    pub url: String,
    /// The model name requests ask for.
    pub model: String,
    /// The key file given at indexing (absolute), read again by searches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// The signs of the model's vectors for the probe texts, hexadecimal
    /// ([`probe`]).
    pub probe_signs: String,
}

impl EndpointRecord {
    /// Whether `a` and `b` reach the model the same way (URL, name, key
    /// file), whatever its answers: a run that moves the endpoint is not
    /// up to date, though it re-embeds nothing.
    pub fn same_place(a: Option<&Self>, b: Option<&Self>) -> bool {
        fn place(r: &EndpointRecord) -> (&str, &str, Option<&str>) {
            (&r.url, &r.model, r.key_file.as_deref())
        }
        a.map(place) == b.map(place)
    }

    /// The endpoint this record describes.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            url: self.url.clone(),
            model: self.model.clone(),
            key_file: self.key_file.as_ref().map(PathBuf::from),
        }
    }
}

/// An endpoint's vectors for some texts, in order, and the time spent
/// waiting on it.
type Vectors = (Vec<Vec<f32>>, Duration);

/// An embedder that asks an endpoint.
#[derive(Debug)]
pub struct EndpointEmbedder {
    endpoint: Endpoint,
    client: Client,
    info: EmbedderInfo,
    record: EndpointRecord,
    /// The model's signs for the probes, as recorded or measured.
    signs: Signs,
    /// Whether this process has seen the endpoint answer the probes as
    /// [`EndpointEmbedder::signs`] say.
    probed: AtomicBool,
    /// The model name the endpoint's first answer gave: a later answer
    /// naming another means the server changed models.
    answered_as: OnceLock<String>,
}

impl EndpointEmbedder {
    /// Connects an index run to `endpoint`: probes it now, so that a run
    /// that cannot embed fails before it writes anything. `known` is what
    /// the index recorded of its model before: its fingerprint is kept
    /// while the endpoint answers as that model did (a moved URL or
    /// another name for the same model re-embeds nothing).
    pub fn connect(
        endpoint: &Endpoint,
        known: Option<(&EndpointRecord, &EmbedderInfo)>,
    ) -> Result<Self> {
        let client = Client::new(
            &endpoint.url,
            &endpoint.model,
            endpoint.key()?,
            Patience::RUN,
        )?;
        let mut embedder = Self {
            endpoint: endpoint.clone(),
            client,
            info: EmbedderInfo {
                id: endpoint.model.clone(),
                dim: 0,
                fingerprint: String::new(),
            },
            record: EndpointRecord {
                url: endpoint.url.clone(),
                model: endpoint.model.clone(),
                key_file: endpoint.key_file.as_ref().map(|f| absolute(f)),
                probe_signs: String::new(),
            },
            signs: Signs::of(&[]),
            probed: AtomicBool::new(true),
            answered_as: OnceLock::new(),
        };
        let (vectors, _) = embedder.ask(&PROBES)?;
        let dim = vectors.first().map_or(0, Vec::len);
        ensure!(
            dim > 0 && vectors.iter().all(|v| v.len() == dim),
            "the embedding endpoint {} answered the probe texts with vectors of {:?} dimensions",
            embedder.client.target(),
            vectors.iter().map(Vec::len).collect::<Vec<_>>()
        );
        let signs = Signs::of(&vectors);
        let same = |(record, info): &(&EndpointRecord, &EmbedderInfo)| {
            info.dim == dim
                && Signs::from_hex(&record.probe_signs, dim)
                    .is_ok_and(|known| known.same_model(&signs))
        };
        embedder.info = match known {
            // The same model: the identity its vectors were stored under.
            Some(known) if same(&known) => known.1.clone(),
            // Another model than the index's, maybe under the same name.
            Some(_) => EmbedderInfo {
                id: endpoint.model.clone(),
                dim,
                fingerprint: probe::fingerprint(&endpoint.model, dim, Some(&signs)),
            },
            None => EmbedderInfo {
                id: endpoint.model.clone(),
                dim,
                fingerprint: probe::fingerprint(&endpoint.model, dim, None),
            },
        };
        embedder.record.probe_signs = signs.to_hex();
        embedder.signs = signs;
        Ok(embedder)
    }

    /// Whether this embedder asks `endpoint`.
    pub fn serves(&self, endpoint: &Endpoint) -> bool {
        self.endpoint == *endpoint
    }

    /// The embedder of an index built through an endpoint, for its
    /// searches: nothing is sent until the first query, which carries the
    /// probes.
    pub fn recorded(record: &EndpointRecord, info: &EmbedderInfo) -> Result<Self> {
        let endpoint = record.endpoint();
        let key = endpoint.key()?;
        Ok(Self {
            client: Client::new(&endpoint.url, &endpoint.model, key, Patience::QUERY)?,
            endpoint,
            info: info.clone(),
            record: record.clone(),
            signs: Signs::from_hex(&record.probe_signs, info.dim)
                .context("the index's record of its embedding endpoint is damaged")?,
            probed: AtomicBool::new(false),
            answered_as: OnceLock::new(),
        })
    }

    /// Embeds `texts` (the probes first, the first time a search's
    /// embedder is used): unit vectors, flat, and the time spent waiting
    /// on the endpoint.
    fn embed_checked(&self, texts: &[String]) -> Result<(Vec<f32>, Duration)> {
        let probing = !self.probed.load(Ordering::Acquire);
        let probes: &[&str] = if probing { &PROBES } else { &[] };
        let asked: Vec<&str> = probes
            .iter()
            .copied()
            .chain(texts.iter().map(String::as_str))
            .collect();
        let (mut vectors, waited) = self.ask(&asked)?;
        if probing {
            let answers: Vec<Vec<f32>> = vectors.drain(..PROBES.len()).collect();
            self.check_probes(&answers, "now answers")?;
            self.probed.store(true, Ordering::Release);
        }
        let mut flat = Vec::with_capacity(vectors.len() * self.info.dim);
        for mut vector in vectors {
            super::normalize(&mut vector);
            flat.extend_from_slice(&vector);
        }
        Ok((flat, waited))
    }

    /// Fails unless `answers` to the probes are the recorded model's.
    fn check_probes(&self, answers: &[Vec<f32>], how: &str) -> Result<()> {
        let signs = Signs::of(answers);
        if !self.signs.same_model(&signs) {
            bail!(
                "the embedding endpoint {} {how} as a model other than the '{}' the index \
                 was embedded with ({:.0} % of the probe texts' signs agree); index again \
                 with '{}'",
                self.client.target(),
                self.endpoint.model,
                100.0 * self.signs.agreement(&signs),
                self.endpoint.rebuild_command()
            );
        }
        Ok(())
    }

    /// The endpoint's vectors for `texts`, in order, as it gave them, and
    /// the time spent waiting on it. Texts of like length share a request,
    /// as a server pads each batch to its longest text.
    fn ask(&self, texts: &[&str]) -> Result<Vectors> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let by_length: Vec<&str> = order.iter().map(|&i| texts[i]).collect();
        let (vectors, waited) = self.ask_in_requests(&by_length)?;
        let mut placed = vec![Vec::new(); texts.len()];
        for (vector, &i) in vectors.into_iter().zip(&order) {
            placed[i] = vector;
        }
        Ok((placed, waited))
    }

    /// The endpoint's vectors for `texts`, in order, and the time spent
    /// waiting on it: requests of at most [`REQUEST_TEXTS`] texts and
    /// [`REQUEST_CHARS`] characters, up to [`IN_FLIGHT`] at once.
    fn ask_in_requests(&self, texts: &[&str]) -> Result<Vectors> {
        let requests = requests(texts);
        if let [_] = requests.as_slice() {
            return self.ask_one(texts);
        }
        let answers: Vec<Mutex<Option<Result<Vectors>>>> =
            requests.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..IN_FLIGHT.min(requests.len()) {
                scope.spawn(|| {
                    while !failed.load(Ordering::Relaxed) {
                        let at = next.fetch_add(1, Ordering::Relaxed);
                        let Some(range) = requests.get(at) else { break };
                        let answer = self.ask_one(&texts[range.clone()]);
                        failed.fetch_or(answer.is_err(), Ordering::Relaxed);
                        *answers[at].lock().unwrap_or_else(|e| e.into_inner()) = Some(answer);
                    }
                });
            }
        });
        let mut vectors = Vec::with_capacity(texts.len());
        let mut waited = Duration::ZERO;
        for answer in answers {
            let answer = answer.into_inner().unwrap_or_else(|e| e.into_inner());
            // A request never sent follows one that failed, met first.
            let (part, wait) = answer.context("a request was not sent")??;
            vectors.extend(part);
            waited += wait;
        }
        Ok((vectors, waited))
    }

    /// One request's vectors (halved and sent again while the endpoint
    /// finds it too large), checked for the model's dimension and name.
    fn ask_one(&self, texts: &[&str]) -> Result<Vectors> {
        let answer = match self.client.embed(texts) {
            Ok(answer) => answer,
            Err(Refusal::Error(err)) => return Err(err),
            Err(Refusal::TooLarge) if texts.len() > 1 => {
                let (first, second) = texts.split_at(texts.len() / 2);
                let (mut vectors, waited) = self.ask_one(first)?;
                let (rest, more) = self.ask_one(second)?;
                vectors.extend(rest);
                return Ok((vectors, waited + more));
            }
            Err(Refusal::TooLarge) => bail!(
                "the embedding endpoint {} refuses a single text of {} characters as too \
                 large (HTTP 413); index with smaller chunks ('--chunk-tokens N')",
                self.client.target(),
                texts[0].chars().count()
            ),
        };
        let target = self.client.target();
        if self.info.dim > 0
            && let Some(wrong) = answer.vectors.iter().find(|v| v.len() != self.info.dim)
        {
            bail!(
                "the embedding endpoint {target} answered with vectors of {} dimensions, where \
                 its model '{}' gave {}; if it serves another model now, index again with '{}'",
                wrong.len(),
                self.endpoint.model,
                self.info.dim,
                self.endpoint.rebuild_command()
            );
        }
        if !answer.model.is_empty() {
            let first = self.answered_as.get_or_init(|| answer.model.clone());
            ensure!(
                *first == answer.model,
                "the embedding endpoint {target} changed its model from '{first}' to '{}' \
                 while memidx was using it",
                answer.model
            );
        }
        Ok((answer.vectors, answer.waited))
    }
}

/// The ranges of `texts` each request carries.
fn requests(texts: &[&str]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let (mut start, mut chars) = (0, 0);
    for (i, text) in texts.iter().enumerate() {
        let full = i - start == REQUEST_TEXTS || (i > start && chars + text.len() > REQUEST_CHARS);
        if full {
            ranges.push(start..i);
            (start, chars) = (i, 0);
        }
        chars += text.len();
    }
    if start < texts.len() {
        ranges.push(start..texts.len());
    }
    ranges
}

/// `file` as an absolute path (as given when it cannot be resolved).
fn absolute(file: &Path) -> String {
    std::path::absolute(file)
        .unwrap_or_else(|_| file.to_path_buf())
        .display()
        .to_string()
}

impl Embedder for EndpointEmbedder {
    fn info(&self) -> &EmbedderInfo {
        &self.info
    }

    fn kind(&self) -> ModelKind {
        ModelKind::Transformer
    }

    /// The endpoint does not say which texts its model cut.
    fn embed_counting_cuts(&self, texts: &[String]) -> Result<(Vec<f32>, Option<usize>)> {
        Ok((self.embed_checked(texts)?.0, None))
    }

    fn embed_timed(&self, texts: &[String]) -> Result<(Vec<f32>, Option<Duration>)> {
        let (flat, waited) = self.embed_checked(texts)?;
        Ok((flat, Some(waited)))
    }

    fn window(&self) -> Option<usize> {
        None
    }

    fn cuts(&self, _text: &str) -> Option<bool> {
        None
    }

    fn endpoint(&self) -> Option<&EndpointRecord> {
        Some(&self.record)
    }

    fn confirm_unchanged(&self) -> Result<()> {
        let (answers, _) = self.ask(&PROBES)?;
        self.check_probes(&answers, "answered at the end of the run")
            .context("the endpoint's model changed during the run; nothing was written")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_hold_a_few_dozen_texts_and_a_bounded_number_of_characters() {
        let short = vec!["a"; 70];
        assert_eq!(requests(&short), vec![0..32, 32..64, 64..70]);
        let long = "x".repeat(REQUEST_CHARS / 2 + 1);
        let texts = vec![long.as_str(); 3];
        assert_eq!(requests(&texts), vec![0..1, 1..2, 2..3]);
        let huge = "x".repeat(REQUEST_CHARS * 2);
        assert_eq!(requests(&[huge.as_str(), "a"]), vec![0..1, 1..2]);
        assert!(requests(&[]).is_empty());
    }

    #[test]
    fn the_key_comes_from_its_file_and_an_empty_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "sk-test\n").unwrap();
        let endpoint = Endpoint {
            url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            key_file: Some(file.clone()),
        };
        assert!(endpoint.key().unwrap().is_some());
        std::fs::write(&file, "\n").unwrap();
        assert!(endpoint.key().unwrap_err().to_string().contains("is empty"));
        let missing = Endpoint {
            key_file: Some(dir.path().join("absent")),
            ..endpoint
        };
        assert!(
            missing
                .key()
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
    }
}
