//! One Milvus client on a small tokio runtime of its own, called blocking:
//! the engine is synchronous (lists run on rayon's pool), and each call here
//! waits for its answer.

use std::future::Future;
use std::time::Duration;

use anyhow::{Context, Result};
use milvus::v2::prelude::{ClientV2, ConnectConfig};

use super::Target;

/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// A connected client.
pub struct Connection {
    runtime: tokio::runtime::Runtime,
    client: ClientV2,
    target: Target,
}

impl Connection {
    /// Connects to `target`'s server (not yet to its collection).
    pub fn open(target: &Target) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("cannot start the Milvus client's runtime")?;
        let mut config = ConnectConfig::new()
            .uri(target.endpoint())
            .connect_timeout(CONNECT_TIMEOUT)
            .rpc_timeout(CALL_TIMEOUT);
        if let Some(token) = &target.token {
            config = config.token(token.clone());
        }
        let client = runtime
            .block_on(ClientV2::new(&config))
            .map_err(|e| flat(&e))
            .with_context(|| {
                format!(
                    "cannot reach Milvus at {}; is the server running there?",
                    target.authority
                )
            })?;
        Ok(Self {
            runtime,
            client,
            target: target.clone(),
        })
    }

    /// Runs one call of the client to its end.
    pub fn call<'a, T, F>(&'a self, what: &str, call: impl FnOnce(&'a ClientV2) -> F) -> Result<T>
    where
        F: Future<Output = milvus::v2::error::Result<T>>,
    {
        self.runtime
            .block_on(call(&self.client))
            .map_err(|e| flat(&e))
            .with_context(|| format!("Milvus at {} failed to {what}", self.target.authority))
    }

    /// The collection this connection serves.
    pub fn target(&self) -> &Target {
        &self.target
    }
}

/// The SDK's error on one line (gRPC statuses carry line breaks).
fn flat(err: &milvus::v2::error::Error) -> anyhow::Error {
    anyhow::anyhow!(
        err.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    )
}
