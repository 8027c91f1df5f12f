//! The JSON request shape accepted by `memidx search --request`.
//!
//! ```json
//! {"query_id": "mem_req_99214", "search_text": "HTTP 504 gateway timeout",
//!  "top_k": 5, "hybrid_params": {"dense_weight": 0.6, "sparse_weight": 0.4, "rrf_k_constant": 60},
//!  "metadata_filter": {"environment": "production", "service": ["billing-service", "auth-service"]}}
//! ```
//! Every field but `search_text` is optional. Unknown fields and wrong types
//! are errors that name the field (`serde_path_to_error` supplies the path,
//! which plain `serde_json` errors lack).

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use serde::Deserialize;

use crate::fusion::FusionMethod;
use crate::output::one_line;

/// Largest search request read from a file or stdin (`--request`).
pub const MAX_REQUEST_BYTES: u64 = 16 << 20;

/// A search request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// Caller's id, echoed in the response.
    pub query_id: Option<String>,
    /// The query text.
    pub search_text: String,
    /// Number of results.
    pub top_k: Option<usize>,
    /// Fusion settings.
    pub hybrid_params: Option<HybridParams>,
    /// Metadata conditions: key → a value or a list of accepted values.
    pub metadata_filter: Option<BTreeMap<String, FilterValue>>,
    /// Budget on the results' text, in characters (see
    /// `output::TextBudget`).
    pub max_chars: Option<usize>,
    /// Bounds on the documents' dates.
    pub time_filter: Option<TimeFilterRequest>,
    /// At most this many results from one file (0: no limit).
    pub per_file: Option<usize>,
    /// Keep the results when no list matches the query with confidence.
    pub keep_all: Option<bool>,
}

/// The time bounds of a request, in the forms `--since`/`--until` take.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeFilterRequest {
    /// Oldest date accepted.
    pub since: Option<String>,
    /// Newest date accepted.
    pub until: Option<String>,
}

/// Fusion settings of a request.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HybridParams {
    /// Weight of the dense list.
    pub dense_weight: Option<f64>,
    /// Weight of the sparse list.
    pub sparse_weight: Option<f64>,
    /// Weight of the graph list.
    pub graph_weight: Option<f64>,
    /// The fusion method.
    pub fusion: Option<FusionMethod>,
    /// The RRF constant k.
    pub rrf_k_constant: Option<f64>,
    /// How many of its best chunks move the dense list's query (0: none).
    pub dense_feedback: Option<usize>,
    /// Weight of the recency list (above 0, it runs).
    pub recency_weight: Option<f64>,
}

/// One metadata condition's accepted value(s).
#[derive(Debug, Clone, PartialEq)]
pub enum FilterValue {
    /// A single accepted value.
    One(String),
    /// Any of these values (at least one: an empty list would match
    /// nothing, and dropping the condition instead would widen the search).
    Any(Vec<String>),
}

impl<'de> Deserialize<'de> for FilterValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The shapes a value may take, before the list is checked.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            One(String),
            Any(Vec<String>),
        }
        match Given::deserialize(deserializer)? {
            Given::One(value) => Ok(Self::One(value)),
            Given::Any(values) if values.is_empty() => Err(serde::de::Error::custom(
                "an empty list of values; give at least one value",
            )),
            Given::Any(values) => Ok(Self::Any(values)),
        }
    }
}

impl SearchRequest {
    /// Parses a request, naming the offending field on error.
    pub fn parse(json: &str) -> Result<Self> {
        let de = &mut serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(de).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            let not_json = inner.is_syntax() || inner.is_eof();
            let message = if not_json && path == "." {
                format!("the request is not valid JSON: {inner}")
            } else if not_json {
                format!("the request is not valid JSON in field '{path}': {inner}")
            } else if path == "." {
                format!("invalid request: {inner}")
            } else {
                format!("invalid request field '{path}': {inner}")
            };
            anyhow!(one_line(&message))
        })
    }

    /// The metadata filter as `(key, value)` pairs.
    pub fn filter_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        for (key, value) in self.metadata_filter.iter().flatten() {
            match value {
                FilterValue::One(v) => pairs.push((key.clone(), v.clone())),
                FilterValue::Any(vs) => pairs.extend(vs.iter().map(|v| (key.clone(), v.clone()))),
            }
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_design_example() {
        let r = SearchRequest::parse(
            r#"{"query_id": "mem_req_99214", "search_text": "HTTP 504 gateway timeout postgres connection pool",
                "top_k": 5, "hybrid_params": {"dense_weight": 0.6, "sparse_weight": 0.4, "rrf_k_constant": 60},
                "metadata_filter": {"environment": "production", "service": ["billing-service"]}}"#,
        )
        .unwrap();
        assert_eq!(r.hybrid_params.unwrap().graph_weight, None);
        assert_eq!(r.query_id.as_deref(), Some("mem_req_99214"));
        assert_eq!(r.top_k, Some(5));
        assert_eq!(r.hybrid_params.unwrap().rrf_k_constant, Some(60.0));
        assert_eq!(
            r.filter_pairs(),
            [
                ("environment".to_string(), "production".to_string()),
                ("service".to_string(), "billing-service".to_string())
            ]
        );
    }

    #[test]
    fn only_search_text_is_required() {
        let r = SearchRequest::parse(r#"{"search_text": "x"}"#).unwrap();
        assert_eq!((r.query_id, r.top_k, r.hybrid_params), (None, None, None));
        let err = SearchRequest::parse(r#"{"query_id": "a"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("search_text"), "{err}");
    }

    #[test]
    fn unknown_fields_and_wrong_types_name_the_field() {
        let err = SearchRequest::parse(r#"{"search_text": "x", "topk": 5}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("topk"), "{err}");
        let err = SearchRequest::parse(r#"{"search_text": "x", "top_k": "5"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("'top_k'"), "{err}");
        let err = SearchRequest::parse(
            r#"{"search_text": "x", "hybrid_params": {"rrf_k_constant": "a"}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("'hybrid_params.rrf_k_constant'"), "{err}");
        let err = SearchRequest::parse(r#"{"search_text": "x", "top_k": -1}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("'top_k'"), "{err}");
    }
}
