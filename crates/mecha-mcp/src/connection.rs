//! One live session with a server: the process, and rmcp speaking the
//! protocol over its stdio. This module and `handler.rs` are the only ones
//! that name rmcp types.
//!
//! Tool listings and call results are read as raw JSON rather than through
//! rmcp's typed structs, so that one odd tool (no `inputSchema`, a content
//! block of an unknown type) costs that tool or that block, not the whole
//! answer.

use std::collections::HashSet;
use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use mecha_core::ToolCtx;
use rmcp::ServiceExt;
use rmcp::model::{CancelledNotificationParam, ClientRequest, CustomRequest, RequestId};
use rmcp::service::ClientInitializeError;
use rmcp::service::{
    Peer, PeerRequestOptions, RequestHandle, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Map, Value, json};

use crate::bounded::{BoundedLines, MAX_MESSAGE_BYTES};
use crate::config::McpServerConfig;
use crate::error::{Failure, StartError};
use crate::handler::{Handler, ProgressRoutes, Signals, Watched};
use crate::spawn::{ServerProcess, SpawnOptions, Spawned, spawn};

/// How long to wait for a dying server's exit status and last stderr lines.
const SETTLE: Duration = Duration::from_millis(500);
/// A hostile server could hand out cursors forever.
const MAX_PAGES: usize = 1000;

pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The server's process; `None` for a remote server (a `url`).
    process: Option<ServerProcess>,
    /// Where the server's progress reports for each running call go.
    progress: std::sync::Arc<ProgressRoutes>,
    /// The version the server answered `initialize` with.
    pub protocol_version: String,
    /// `name version` from the server's `serverInfo`.
    pub server_info: Option<String>,
    /// How it is reached: `stdio`, `streamable HTTP` or `SSE`.
    pub transport: &'static str,
    /// Its `initialize` answer declares the resources capability.
    pub offers_resources: bool,
}

impl Connection {
    /// See [`ServerProcess::sweep`].
    pub(crate) fn sweep(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(ServerProcess::sweep)
            .unwrap_or_default()
    }

    /// See [`ServerProcess::network_report`].
    pub(crate) fn network_report(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(ServerProcess::network_report)
            .unwrap_or_default()
    }
}

/// A connection and the tools it listed during start-up.
pub(crate) struct Started {
    pub connection: Connection,
    pub tools: Vec<Value>,
}

/// Spawns the server (or reaches a remote one: `remote.rs`), shakes hands
/// and lists its tools, all within `startup_timeout_s`.
pub(crate) async fn connect(
    config: &McpServerConfig,
    opts: &SpawnOptions,
    signals: std::sync::Arc<Signals>,
) -> Result<Started, Failure> {
    let progress = std::sync::Arc::<ProgressRoutes>::default();
    if config.url.is_some() {
        return crate::remote::connect(config, opts, progress, signals).await;
    }
    let handler = Handler::new(config.name.clone(), std::sync::Arc::clone(&progress));
    let Spawned {
        stdin,
        stdout,
        process,
    } = spawn(config, opts).map_err(Failure::bare)?;
    let limit = Duration::from_secs(config.startup_timeout_s);
    let transport = Watched::new(
        AsyncRwTransport::new_client(
            BoundedLines::new(stdout, MAX_MESSAGE_BYTES, config.name.clone()),
            stdin,
        ),
        config.name.clone(),
        signals,
    );
    let handshake = handshake(handler, transport);
    let error = match tokio::time::timeout(limit, handshake).await {
        Ok(Ok((service, tools))) => {
            return Ok(started(
                config,
                service,
                tools,
                Some(process),
                progress,
                crate::hub::STDIO,
            ));
        }
        Ok(Err((error, false))) => error,
        Ok(Err((error, true))) => match process.wait_exit(SETTLE).await {
            Some(status) => StartError::Exited {
                status: describe_exit(status),
            },
            None => error,
        },
        Err(_) => StartError::Timeout {
            secs: config.startup_timeout_s,
        },
    };
    process.kill();
    Err(Failure {
        error,
        stderr_tail: process.stderr_tail(SETTLE).await,
    })
}

/// A handshake's service and tools, or why it failed and whether the
/// transport closed under it.
pub(crate) type Handshaken =
    Result<(RunningService<RoleClient, Handler>, Vec<Value>), (StartError, bool)>;

/// The handshake and the first `tools/list` over `transport`. Each early
/// failure says whether the transport closed under it: for a process, the
/// exit status then explains more than the closed pipe does.
pub(crate) async fn handshake<T>(handler: Handler, transport: T) -> Handshaken
where
    T: rmcp::transport::Transport<RoleClient> + Send + 'static,
    T::Error: std::error::Error + Send + Sync + 'static,
{
    let service = handler.serve(transport).await.map_err(|e| {
        let closed = matches!(
            e,
            ClientInitializeError::ConnectionClosed(_)
                | ClientInitializeError::TransportError { .. }
        );
        let error = StartError::Handshake {
            detail: e.to_string(),
        };
        (error, closed)
    })?;
    let tools = list_tools(service.peer(), None).await.map_err(|e| {
        let closed = matches!(e, RequestError::Closed(_));
        let error = StartError::ListTools {
            detail: e.to_string(),
        };
        (error, closed)
    })?;
    Ok((service, tools))
}

/// A connection that shook hands, with what the server said of itself.
pub(crate) fn started(
    config: &McpServerConfig,
    service: RunningService<RoleClient, Handler>,
    tools: Vec<Value>,
    process: Option<ServerProcess>,
    progress: std::sync::Arc<ProgressRoutes>,
    transport: &'static str,
) -> Started {
    let info = service.peer_info();
    let protocol_version = info
        .as_ref()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    // A server may send an empty version; then the name alone.
    let server_info = info
        .as_ref()
        .and_then(|i| i.server_info.as_ref())
        .map(|s| format!("{} {}", s.name, s.version).trim().to_owned());
    let offers_resources = info
        .as_ref()
        .is_some_and(|i| i.capabilities.resources.is_some());
    tracing::debug!(
        server = %config.name,
        protocol = %protocol_version,
        tools = tools.len(),
        "MCP server ready"
    );
    Started {
        connection: Connection {
            service,
            process,
            progress,
            protocol_version,
            server_info,
            offers_resources,
            transport,
        },
        tools,
    }
}

impl Connection {
    /// Whether requests can still reach the server.
    pub fn is_alive(&self) -> bool {
        !self.service.peer().is_transport_closed()
            && self
                .process
                .as_ref()
                .is_none_or(|p| p.exit_status().is_none())
    }

    /// `tools/call`, cancelled (`notifications/cancelled`) once `idle`
    /// passes with neither an answer nor a progress report (rmcp resets the
    /// deadline on each report for the request's `progressToken`), and once
    /// `cap` passes in all, reports or not. The reports' words go to `ctx`'s
    /// progress sink meanwhile.
    pub async fn call(
        &self,
        raw_name: &str,
        arguments: Map<String, Value>,
        (idle, cap): (Duration, Duration),
        ctx: &ToolCtx,
    ) -> Result<Value, RequestError> {
        let params = json!({"name": raw_name, "arguments": arguments});
        let options = PeerRequestOptions::with_timeout(idle)
            .reset_timeout_on_progress()
            .with_max_total_timeout(cap);
        let peer = self.service.peer();
        let handle = send(peer, "tools/call", Some(params), options).await?;
        // The token is known once the request is queued; a report that
        // beats this waits in the routes for it.
        let _route = self.progress.open(handle.progress_token.clone(), ctx);
        answer(peer, handle).await
    }

    /// `resources/read`, cancelled after `limit`, its answer in the shape of
    /// a tool result (each of its `contents` an embedded resource), so it is
    /// rendered like one.
    pub async fn read_resource(&self, uri: &str, limit: Duration) -> Result<Value, RequestError> {
        let params = json!({ "uri": uri });
        let answer = request(
            self.service.peer(),
            "resources/read",
            Some(params),
            Some(limit),
        )
        .await?;
        let Some(contents) = answer.get("contents").and_then(Value::as_array) else {
            return Err(RequestError::Unexpected(
                "its resources/read answer has no `contents` array".into(),
            ));
        };
        let content: Vec<Value> = contents
            .iter()
            .map(|resource| json!({"type": "resource", "resource": resource}))
            .collect();
        Ok(json!({ "content": content }))
    }

    /// Every page of `tools/list`, each page within `limit`.
    pub async fn list_tools(&self, limit: Duration) -> Result<Vec<Value>, RequestError> {
        list_tools(self.service.peer(), Some(limit)).await
    }

    /// Why the server went away, for people: its exit status, and the last
    /// lines of its stderr.
    pub async fn death(&self) -> (String, Vec<String>) {
        let Some(process) = &self.process else {
            return ("it closed the connection".to_owned(), Vec::new());
        };
        let status = process.wait_exit(SETTLE).await;
        process.kill();
        let tail = process.stderr_tail(SETTLE).await;
        let reason = match status {
            Some(status) => format!("it exited ({})", describe_exit(status)),
            None => "it closed the connection".to_owned(),
        };
        (reason, tail)
    }

    /// Kills the server now, rather than when the last handle drops.
    pub fn kill(&self) {
        match &self.process {
            Some(process) => process.kill(),
            None => self.service.cancellation_token().cancel(),
        }
    }
}

/// A request that did not produce a result.
#[derive(Debug, Clone)]
pub(crate) enum RequestError {
    /// No answer within the limit; the request was cancelled.
    Timeout(Duration),
    /// The transport is gone: the server exited or closed its pipes.
    Closed(String),
    /// The server answered with a JSON-RPC error.
    Refused { code: i32, message: String },
    /// An answer that is not what the protocol promises.
    Unexpected(String),
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(d) => write!(f, "no answer within {} s", d.as_secs()),
            Self::Closed(detail) => write!(f, "the connection closed ({detail})"),
            Self::Refused { code, message } => write!(f, "{message} (JSON-RPC error {code})"),
            Self::Unexpected(detail) => f.write_str(detail),
        }
    }
}

impl From<ServiceError> for RequestError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::McpError(data) => Self::Refused {
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::Timeout { timeout } => Self::Timeout(timeout),
            ServiceError::TransportClosed
            | ServiceError::TransportSend(_)
            | ServiceError::Cancelled { .. } => Self::Closed(e.to_string()),
            other => Self::Unexpected(other.to_string()),
        }
    }
}

async fn list_tools(
    peer: &Peer<RoleClient>,
    limit: Option<Duration>,
) -> Result<Vec<Value>, RequestError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut cursors = HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let page = request(peer, "tools/list", params, limit).await?;
        let Some(items) = page.get("tools").and_then(Value::as_array) else {
            return Err(RequestError::Unexpected(
                "its tools/list answer has no `tools` array".into(),
            ));
        };
        tools.extend(items.iter().cloned());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => {
                if !cursors.insert(next.to_owned()) {
                    return Err(RequestError::Unexpected(format!(
                        "tools/list handed out the cursor `{next}` twice"
                    )));
                }
                cursor = Some(next.to_owned());
            }
            _ => return Ok(tools),
        }
    }
    Err(RequestError::Unexpected(format!(
        "tools/list went on for more than {MAX_PAGES} pages"
    )))
}

/// Sends one request and returns its result as raw JSON.
async fn request(
    peer: &Peer<RoleClient>,
    method: &str,
    params: Option<Value>,
    limit: Option<Duration>,
) -> Result<Value, RequestError> {
    let options = match limit {
        Some(limit) => PeerRequestOptions::with_timeout(limit),
        None => PeerRequestOptions::no_options(),
    };
    let handle = send(peer, method, params, options).await?;
    answer(peer, handle).await
}

async fn send(
    peer: &Peer<RoleClient>,
    method: &str,
    params: Option<Value>,
    options: PeerRequestOptions,
) -> Result<RequestHandle<RoleClient>, RequestError> {
    let request = ClientRequest::CustomRequest(CustomRequest::new(method, params));
    Ok(peer.send_request_with_option(request, options).await?)
}

/// Waits for a sent request's result, as raw JSON.
async fn answer(
    peer: &Peer<RoleClient>,
    handle: RequestHandle<RoleClient>,
) -> Result<Value, RequestError> {
    let mut guard = CancelOnDrop {
        peer,
        id: Some(handle.id.clone()),
    };
    // On its own timeout, `await_response` sends notifications/cancelled.
    let result = handle.await_response().await;
    guard.id = None;
    // The untagged result type decodes into whichever variant fits; turning
    // it back into JSON gives the fields whatever variant that was.
    serde_json::to_value(result?).map_err(|e| RequestError::Unexpected(e.to_string()))
}

/// Cancels a request whose caller stopped waiting (the loop dropped the
/// call), so the server can stop working on it.
struct CancelOnDrop<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = Some("mecha stopped waiting for the result".to_owned());
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                .await;
        });
    }
}

fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}
