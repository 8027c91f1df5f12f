//! The MCP server handler: the tools it lists, and each call run on
//! tokio's blocking threads against the shared [`State`]. Reads (`search`,
//! `get`, `explain`, `status`) run at once, as many as the machine has
//! cores ([`reads_at_once`]); writes (`reindex`, `remember`) run one at a
//! time, beside the reads, which answer from the generation they started
//! on. Every transport (stdio, Streamable HTTP) serves clones of one
//! `Server`: all sessions share the open index.

use std::sync::Arc;

use anyhow::{Result, anyhow};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::{Mutex, Semaphore};

use super::calls::{Access, Served, State};
use super::tools::{INSTRUCTIONS, tools};
use memidx::retriever::ListSelection;

/// The server: its tools, the shared state, and what bounds the calls
/// running on it.
#[derive(Clone)]
pub struct Server {
    tools: Arc<Vec<Tool>>,
    state: Arc<State>,
    read_only: bool,
    /// Reads running at once, at most [`reads_at_once`]: a call past that
    /// waits here (no thread held), so what runs stays bounded.
    reads: Arc<Semaphore>,
    /// Held by the one write running.
    writes: Arc<Mutex<()>>,
}

/// How many reads run at once: two per core. A search already spreads its
/// lists over the cores, but a call holds its turn through the parts that
/// leave them idle (waiting for the pool, writing its answer): at one per
/// core, 8 HTTP clients left 19 % of the CPU idle and reached 0.74–0.82×
/// the throughput of 8 stdio servers; at two, 0.94–1.02×, with a search's
/// p99 beside a re-index 2.0× its p99 alone (bench/mcp_load.py).
pub fn reads_at_once() -> usize {
    2 * std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

impl Server {
    /// Opens the `served` indexes' default retriever once, so a bad
    /// `--index` fails at start.
    pub fn open(served: Vec<Served>, read_only: bool) -> Result<Self> {
        let names: Vec<String> = served.iter().map(|s| s.name.clone()).collect();
        let all: Vec<usize> = (0..served.len()).collect();
        let state = State::new(served);
        state.refresh();
        state.retriever(&ListSelection::default(), &all)?;
        Ok(Self {
            tools: Arc::new(tools(read_only, &names)?),
            state: Arc::new(state),
            read_only,
            reads: Arc::new(Semaphore::new(reads_at_once())),
            writes: Arc::new(Mutex::new(())),
        })
    }

    /// Runs tool `name` on a blocking thread, once its turn came: `None`
    /// for an unknown tool. The runtime's threads are not blocked
    /// meanwhile: other sessions, pings and cancellations go on.
    async fn call(&self, name: &str, arguments: Value) -> Option<Result<(Value, String)>> {
        let access = State::access(self.read_only, name)?;
        // The turn is held until the call ends, on its thread.
        let turn: Box<dyn Send> = match access {
            Access::Read => match self.reads.clone().acquire_owned().await {
                Ok(permit) => Box::new(permit),
                Err(_) => return Some(Err(anyhow!("the server is stopping"))),
            },
            Access::Write => Box::new(self.writes.clone().lock_owned().await),
        };
        let (state, read_only, name) = (self.state.clone(), self.read_only, name.to_string());
        let ran = tokio::task::spawn_blocking(move || {
            let answer = state.call(read_only, &name, arguments);
            if access == Access::Write {
                crate::cmd::heap::give_back();
            }
            drop(turn);
            answer
        })
        .await;
        ran.unwrap_or_else(|panicked| Some(Err(anyhow!("the call failed: {panicked}"))))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memidx", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    // memidx offers no resources or prompts (and does not advertise them);
    // a host that asks anyway gets an empty list, the answer every client
    // takes, rather than an error it may show its user.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::default())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::default())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::default())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        match self.call(&request.name, arguments).await {
            None => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool '{}'; the tools are {}",
                    request.name,
                    self.tools
                        .iter()
                        .map(|t| t.name.as_ref())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            )),
            Some(Ok((structured, text))) => {
                let mut result = CallToolResult::structured(structured);
                result.content = vec![ContentBlock::text(text)];
                Ok(result.into())
            }
            Some(Err(err)) => Ok(CallToolResult::error(vec![ContentBlock::text(
                memidx::output::one_line(&format!("{err:#}")),
            )])
            .into()),
        }
    }
}
