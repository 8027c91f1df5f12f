//! The MCP server handler: the tools it lists, and each call handed to
//! the one thread that owns what is open (the lists hold memory maps and
//! readers that are shared, not sent, between threads, so one thread
//! opens and uses them all). Every transport (stdio, Streamable HTTP)
//! serves clones of one `Server`: all sessions share the open index.

use std::sync::{Arc, mpsc};

use anyhow::{Context, Result, anyhow};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;
use tokio::sync::{Semaphore, oneshot};

use super::calls::{Served, State};
use super::tools::{INSTRUCTIONS, tools};
use memidx::retriever::ListSelection;

/// The server: its tools, and the thread that owns what is open (the
/// lists hold memory maps and readers that are shared, not sent, between
/// threads, so one thread opens and uses them all).
#[derive(Clone)]
pub struct Server {
    tools: Arc<Vec<Tool>>,
    calls: mpsc::Sender<Call>,
    /// Calls handed over and not yet answered, at most `CALLS_IN_FLIGHT`:
    /// a client that sends faster than the index thread answers waits
    /// here, so what is queued stays bounded.
    in_flight: Arc<Semaphore>,
}

/// How many tool calls may wait for the index thread at once, across all
/// sessions.
const CALLS_IN_FLIGHT: usize = 32;

/// One tool call handed to the index thread, with where to answer.
struct Call {
    name: String,
    arguments: Value,
    reply: oneshot::Sender<Option<Result<(Value, String)>>>,
}

impl Server {
    /// Starts the index thread, which opens the `served` indexes once (so a
    /// bad `--index` fails at start) and then answers calls in order.
    pub fn open(served: Vec<Served>, read_only: bool) -> Result<Self> {
        let (calls, inbox) = mpsc::channel::<Call>();
        let (opened, started) = mpsc::channel();
        let names: Vec<String> = served.iter().map(|s| s.name.clone()).collect();
        std::thread::Builder::new()
            .name("memidx-index".into())
            .spawn(move || {
                let all: Vec<usize> = (0..served.len()).collect();
                let mut state = State::new(served);
                state.refresh();
                let open = state.retriever(&ListSelection::default(), &all).map(|_| ());
                let ok = open.is_ok();
                let _ = opened.send(open);
                if !ok {
                    return;
                }
                for call in inbox {
                    let answer = state.call(read_only, &call.name, call.arguments);
                    let _ = call.reply.send(answer);
                }
            })
            .context("cannot start the index thread")?;
        started
            .recv()
            .context("the index thread stopped while opening the index")??;
        Ok(Self {
            tools: Arc::new(tools(read_only, &names)?),
            calls,
            in_flight: Arc::new(Semaphore::new(CALLS_IN_FLIGHT)),
        })
    }

    /// Runs tool `name` on the index thread: `None` for an unknown tool.
    /// The runtime's thread is not blocked meanwhile: other sessions, pings
    /// and cancellations go on while the index thread works.
    async fn call(&self, name: &str, arguments: Value) -> Option<Result<(Value, String)>> {
        let stopped = || Some(Err(anyhow!("the index thread stopped")));
        let Ok(_permit) = self.in_flight.acquire().await else {
            return stopped();
        };
        let (reply, answer) = oneshot::channel();
        let call = Call {
            name: name.to_string(),
            arguments,
            reply,
        };
        if self.calls.send(call).is_err() {
            return stopped();
        }
        answer.await.unwrap_or_else(|_| stopped())
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
