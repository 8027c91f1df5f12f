//! The address of a collection: `milvus://HOST:PORT/COLLECTION` (plain
//! gRPC) or `milvus+tls://HOST:PORT/COLLECTION` (TLS), with the token from
//! `MILVUS_TOKEN` handed in by the binary.

use anyhow::{Result, bail, ensure};

/// A Milvus collection and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `HOST:PORT`.
    pub authority: String,
    /// The collection's name.
    pub collection: String,
    /// Whether to connect with TLS.
    pub tls: bool,
    /// The token (`user:password` or an API key), if any.
    pub token: Option<String>,
}

/// Longest collection name Milvus accepts.
const MAX_NAME: usize = 255;

impl Target {
    /// Parses `uri`; `token` comes from the environment (`MILVUS_TOKEN`).
    pub fn parse(uri: &str, token: Option<String>) -> Result<Self> {
        let (tls, rest) = if let Some(rest) = uri.strip_prefix("milvus://") {
            (false, rest)
        } else if let Some(rest) = uri.strip_prefix("milvus+tls://") {
            (true, rest)
        } else {
            bail!(
                "'{uri}' is not a Milvus address; write milvus://HOST:PORT/COLLECTION (or milvus+tls://… for TLS)"
            );
        };
        let Some((authority, collection)) = rest.split_once('/') else {
            bail!("'{uri}' names no collection; write milvus://HOST:PORT/COLLECTION");
        };
        let port = authority.rsplit_once(':').map(|(_, port)| port);
        ensure!(
            !authority.is_empty() && port.is_some_and(|p| p.parse::<u16>().is_ok()),
            "'{uri}' needs a host and a port, as in milvus://127.0.0.1:19530/{collection}"
        );
        let mut chars = collection.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && collection.len() <= MAX_NAME;
        ensure!(
            valid,
            "'{collection}' is not a Milvus collection name: a letter or '_', then letters, digits and '_' (at most {MAX_NAME})"
        );
        Ok(Self {
            authority: authority.to_string(),
            collection: collection.to_string(),
            tls,
            token: token.filter(|t| !t.is_empty()),
        })
    }

    /// The URI the SDK connects to.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }
}

impl std::fmt::Display for Target {
    /// The address as given (never the token).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "milvus+tls" } else { "milvus" };
        write!(f, "{scheme}://{}/{}", self.authority, self.collection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_tls_addresses_and_refuses_bad_ones() {
        let plain = Target::parse("milvus://127.0.0.1:19530/notes", None).unwrap();
        assert_eq!(plain.endpoint(), "http://127.0.0.1:19530");
        assert_eq!(plain.to_string(), "milvus://127.0.0.1:19530/notes");
        let tls =
            Target::parse("milvus+tls://db.example:443/team_notes", Some("k".into())).unwrap();
        assert_eq!(tls.endpoint(), "https://db.example:443");
        assert_eq!(tls.token.as_deref(), Some("k"));
        for bad in [
            "http://h:1/c",
            "milvus://h:1",
            "milvus://h/c",
            "milvus://h:x/c",
            "milvus://h:1/9c",
            "milvus://h:1/a-b",
        ] {
            assert!(Target::parse(bad, None).is_err(), "{bad}");
        }
    }
}
