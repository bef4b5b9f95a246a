//! One configured server over its lifetime: its current connection, its
//! tool list, and the respawning after it dies.
//!
//! A dead server is restarted by the next call that needs it, never by a
//! timer, and the call that saw it die is never retried: it may already
//! have had its effect. Restarts back off (0, 1, 2, 4 .. 30 s) while the
//! server keeps dying without a call succeeding in between; a call that
//! arrives inside the back-off fails at once rather than waiting.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use mecha_core::{ToolCtx, ToolOutput};
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::config::McpServerConfig;
use crate::connection::{Connection, RequestError, Started, connect};
use crate::error::Failure;
use crate::handler::Signals;
use crate::hub::{ServerState, ServerStatus, ToolSummary};
use crate::result::render;
use crate::spawn::{SpawnOptions, lock};
use crate::tool::{ToolKind, ToolSpec, build_specs};

const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A call that keeps reporting progress may outlive `call_timeout_s`, but
/// not this many times over: progress proves the server alive, not that it
/// will ever finish, and a server stuck reporting "still working" must not
/// hold the turn forever. Ten times leaves real work (an index, a crawl, a
/// build: 20 minutes at the default 120 s) room to finish, and stays tied
/// to the one timeout the user already sets per server.
pub(crate) const PROGRESS_CAP_FACTOR: u32 = 10;

/// Why the server is not running, in words for a person.
#[derive(Debug, Clone)]
pub(crate) struct Down {
    pub reason: String,
    pub stderr_tail: Vec<String>,
    /// `reason` quotes the server (a handshake it refused, a listing that
    /// failed), so a message built from it is not mecha's alone.
    pub server_wrote: bool,
}

impl Down {
    /// A reason in mecha's own words.
    fn ours(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            stderr_tail: Vec::new(),
            server_wrote: false,
        }
    }

    /// A call's failure whose `message` is built from this reason.
    fn unreachable(&self, message: String) -> Unreachable {
        Unreachable {
            message,
            server_wrote: self.server_wrote,
        }
    }
}

impl From<Failure> for Down {
    fn from(f: Failure) -> Self {
        Self {
            reason: f.error.to_string(),
            stderr_tail: f.stderr_tail,
            server_wrote: f.error.quotes_the_server(),
        }
    }
}

/// Why a call never reached the server.
pub(crate) struct Unreachable {
    message: String,
    server_wrote: bool,
}

impl Unreachable {
    fn ours(message: String) -> Self {
        Self {
            message,
            server_wrote: false,
        }
    }

    /// A refusal when the words are all mecha's; when they quote the server,
    /// an error that taints (and is external) like the server's results.
    fn output(self, external: bool) -> ToolOutput {
        if self.server_wrote {
            ToolOutput {
                external,
                ..ToolOutput::err(self.message)
            }
        } else {
            ToolOutput::refusal(self.message)
        }
    }
}

type Attempt = Shared<BoxFuture<'static, Result<Arc<Connection>, Down>>>;

pub(crate) struct Server {
    pub config: McpServerConfig,
    opts: SpawnOptions,
    signals: Arc<Signals>,
    state: Mutex<State>,
}

struct State {
    conn: Option<Arc<Connection>>,
    tools: Arc<Vec<Arc<ToolSpec>>>,
    /// Bumped whenever `tools` changes.
    version: u64,
    down: Option<Down>,
    /// Deaths and failed starts since the last successful call.
    strikes: u32,
    next_attempt: Instant,
    attempt: Option<Attempt>,
    shut_down: bool,
}

enum Step {
    Ready(Arc<Connection>),
    Dead(Arc<Connection>),
    Wait(Attempt),
    Refuse(Unreachable),
}

impl Server {
    pub fn new(config: McpServerConfig, opts: SpawnOptions) -> Arc<Self> {
        Arc::new(Self {
            config,
            opts,
            signals: Arc::default(),
            state: Mutex::new(State {
                conn: None,
                tools: Arc::default(),
                version: 0,
                down: None,
                strikes: 0,
                next_attempt: Instant::now(),
                attempt: None,
                shut_down: false,
            }),
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The sandbox this server runs in, if one confines it.
    pub(crate) fn confinement(&self) -> Option<mecha_core::Confinement> {
        self.opts.confined(&self.config)
    }

    /// The first start. Its outcome is in [`status`](Self::status).
    pub async fn start(self: &Arc<Self>) {
        let began = Instant::now();
        let _ = self.connection().await;
        tracing::debug!(
            server = %self.config.name,
            elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            status = %self.status(),
            "MCP server start"
        );
    }

    pub fn tools(&self) -> Arc<Vec<Arc<ToolSpec>>> {
        Arc::clone(&lock(&self.state).tools)
    }

    pub fn version(&self) -> u64 {
        lock(&self.state).version
    }

    pub fn status(&self) -> ServerStatus {
        let st = lock(&self.state);
        let state = match (&st.conn, &st.down) {
            (Some(conn), _) => ServerState::Ready {
                protocol_version: conn.protocol_version.clone(),
                server_info: conn.server_info.clone(),
                transport: conn.transport,
                tools: st
                    .tools
                    .iter()
                    .map(|t| ToolSummary {
                        name: t.name.clone(),
                        raw_name: t.raw_name.clone(),
                        description: t.description.clone(),
                        read_only: t.read_only,
                        capabilities: t.capabilities,
                    })
                    .collect(),
            },
            (None, Some(down)) => ServerState::Failed {
                reason: down.reason.clone(),
                stderr_tail: down.stderr_tail.clone(),
            },
            (None, None) => ServerState::Failed {
                reason: if st.shut_down {
                    "shut down".into()
                } else {
                    "not started yet".into()
                },
                stderr_tail: Vec::new(),
            },
        };
        ServerStatus {
            name: self.config.name.clone(),
            state,
        }
    }

    /// Kills the server; later calls fail instead of respawning it.
    pub fn shutdown(&self) {
        let mut st = lock(&self.state);
        st.shut_down = true;
        if let Some(conn) = st.conn.take() {
            conn.kill();
        }
    }

    /// One `tools/call`, every failure turned into a result for the model.
    pub async fn call(
        self: &Arc<Self>,
        spec: &ToolSpec,
        arguments: Map<String, Value>,
        ctx: &ToolCtx,
    ) -> ToolOutput {
        let conn = match self.connection().await {
            Ok(conn) => conn,
            Err(unreachable) => return unreachable.output(spec.external),
        };
        let limit = Duration::from_secs(self.config.call_timeout_s);
        let cap = limit * PROGRESS_CAP_FACTOR;
        let server = &self.config.name;
        let mut output = self.answer(spec, arguments, ctx, &conn, (limit, cap)).await;
        // After every call of a confined server, as after every confined
        // command: nothing it wrote may be for git on the host to run.
        if self.config.sandbox {
            let swept = Arc::clone(&conn);
            let undone = tokio::task::spawn_blocking(move || swept.sweep())
                .await
                .unwrap_or_default();
            if !undone.is_empty() {
                output.content.push_str(&format!(
                    "\n[mecha undid what server `{server}` left for programs on the host to run \
                     later:\n- {}\n]",
                    undone.join("\n- ")
                ));
            }
            for line in conn.network_report() {
                output.content.push_str(&format!("\n[{line}]"));
            }
        }
        output
    }

    async fn answer(
        self: &Arc<Self>,
        spec: &ToolSpec,
        arguments: Map<String, Value>,
        ctx: &ToolCtx,
        conn: &Arc<Connection>,
        (limit, cap): (Duration, Duration),
    ) -> ToolOutput {
        let (server, tool) = (&self.config.name, &spec.name);
        let answer = match spec.kind {
            ToolKind::Call => {
                conn.call(&spec.raw_name, arguments, (limit, cap), ctx)
                    .await
            }
            ToolKind::ReadResource => match arguments.get("uri").and_then(Value::as_str) {
                Some(uri) => conn.read_resource(uri, limit).await,
                None => {
                    return ToolOutput::refusal(format!(
                        "`{tool}` needs `uri`: the resource's URI as a string, exactly as the \
                         server gave it"
                    ));
                }
            },
        };
        match answer {
            Ok(result) => {
                let reader = {
                    let mut st = lock(&self.state);
                    st.strikes = 0;
                    st.tools
                        .iter()
                        .find(|t| t.kind == ToolKind::ReadResource)
                        .map(|t| t.name.clone())
                };
                render(
                    &result,
                    spec.external,
                    reader.as_deref(),
                    ctx.sink(&spec.name, ctx.call_budget_bytes),
                )
            }
            Err(RequestError::Timeout(waited)) if waited >= cap => ToolOutput::refusal(format!(
                "MCP call failed: server `{server}` kept reporting progress on `{tool}` but did \
                 not finish within {} s ({PROGRESS_CAP_FACTOR} times its call_timeout_s), so \
                 mecha cancelled the request. The server is still running; ask for less, or \
                 use another tool.",
                cap.as_secs()
            )),
            Err(RequestError::Timeout(limit)) => ToolOutput::refusal(format!(
                "MCP call failed: server `{server}` did not answer `{tool}` within {} s, nor report \
                 progress, so mecha cancelled the request. The server is still running; ask for less, or use \
                 another tool.",
                limit.as_secs()
            )),
            Err(RequestError::Closed(_)) => {
                let down = self.bury(conn).await;
                down.unreachable(format!(
                    "MCP call failed: server `{server}` stopped during `{tool}`: {}. The call was \
                     not retried, because it may already have had its effect; mecha restarts \
                     the server on the next call to one of its tools.",
                    down.reason
                ))
                .output(spec.external)
            }
            // The server wrote these words: they taint like its results,
            // and are external when its results are.
            Err(RequestError::Refused { code, message }) => ToolOutput {
                external: spec.external,
                ..ToolOutput::err(format!(
                    "MCP call failed: server `{server}` refused `{tool}`: {message} (JSON-RPC \
                     error {code})"
                ))
            },
            Err(RequestError::Unexpected(detail)) => ToolOutput {
                external: spec.external,
                ..ToolOutput::err(format!(
                    "MCP call failed: server `{server}` answered `{tool}` with something that is \
                     not a tool result: {detail}"
                ))
            },
        }
    }

    /// Re-lists the tools if the server said they changed. A dead server
    /// re-lists when it is respawned instead.
    pub async fn refresh_if_stale(self: &Arc<Self>) {
        if !self.signals.tools_stale.swap(false, Ordering::SeqCst) {
            return;
        }
        let Some(conn) = lock(&self.state).conn.clone() else {
            return;
        };
        // Bounded as a whole, not per page: a turn boundary waits on this.
        let limit = Duration::from_secs(self.config.startup_timeout_s);
        let listed = tokio::time::timeout(limit, conn.list_tools(limit))
            .await
            .unwrap_or(Err(RequestError::Timeout(limit)));
        match listed {
            Ok(listed) => {
                let mut st = lock(&self.state);
                if st.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                    self.replace_tools(&mut st, &listed, conn.offers_resources);
                }
            }
            Err(RequestError::Closed(_)) => {
                self.bury(&conn).await;
            }
            Err(e) => tracing::warn!(
                server = %self.config.name,
                error = %e,
                "re-listing tools after tools/list_changed failed; keeping the old list"
            ),
        }
    }

    /// A live connection: the current one, or a freshly started one.
    async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, Unreachable> {
        loop {
            let step = self.next_step();
            match step {
                Step::Ready(conn) => return Ok(conn),
                Step::Dead(conn) => {
                    self.bury(&conn).await;
                }
                Step::Wait(attempt) => {
                    return attempt.await.map_err(|down| {
                        down.unreachable(format!(
                            "MCP call failed: server `{}` is not running and could not be \
                             restarted: {}",
                            self.config.name, down.reason
                        ))
                    });
                }
                Step::Refuse(message) => return Err(message),
            }
        }
    }

    fn next_step(self: &Arc<Self>) -> Step {
        let mut st = lock(&self.state);
        let name = &self.config.name;
        if st.shut_down {
            return Step::Refuse(Unreachable::ours(format!(
                "MCP call failed: server `{name}` has been shut down"
            )));
        }
        if let Some(conn) = &st.conn {
            return if conn.is_alive() {
                Step::Ready(Arc::clone(conn))
            } else {
                Step::Dead(Arc::clone(conn))
            };
        }
        if let Some(attempt) = &st.attempt {
            return Step::Wait(attempt.clone());
        }
        let now = Instant::now();
        if now < st.next_attempt {
            let wait = st.next_attempt - now;
            let down = st.down.clone().unwrap_or_else(|| Down::ours("it stopped"));
            return Step::Refuse(down.unreachable(format!(
                "MCP call failed: server `{name}` is not running ({}); mecha will try to \
                 restart it in {} s. Use another tool meanwhile, or try again later.",
                down.reason,
                wait.as_secs().max(1)
            )));
        }
        let server = Arc::clone(self);
        let task = tokio::spawn(async move {
            let started = connect(&server.config, &server.opts, Arc::clone(&server.signals)).await;
            server.finish_attempt(started)
        });
        let attempt = async move {
            task.await
                .unwrap_or_else(|e| Err(Down::ours(format!("the start-up task failed: {e}"))))
        }
        .boxed()
        .shared();
        st.attempt = Some(attempt.clone());
        Step::Wait(attempt)
    }

    fn finish_attempt(&self, started: Result<Started, Failure>) -> Result<Arc<Connection>, Down> {
        let mut st = lock(&self.state);
        st.attempt = None;
        match started {
            Ok(Started { connection, tools }) => {
                let conn = Arc::new(connection);
                if st.shut_down {
                    conn.kill();
                    return Err(Down::ours("shut down"));
                }
                self.replace_tools(&mut st, &tools, conn.offers_resources);
                st.conn = Some(Arc::clone(&conn));
                st.down = None;
                Ok(conn)
            }
            Err(failure) => {
                let down = Down::from(failure);
                tracing::debug!(server = %self.config.name, reason = %down.reason, "MCP server failed to start");
                self.strike(&mut st, down.clone());
                Err(down)
            }
        }
    }

    fn replace_tools(&self, st: &mut State, listed: &[Value], offers_resources: bool) {
        let specs: Vec<Arc<ToolSpec>> = build_specs(
            &self.config,
            listed,
            offers_resources,
            self.opts.confinement(&self.config),
        )
        .into_iter()
        .map(Arc::new)
        .collect();
        if *st.tools != specs {
            st.tools = Arc::new(specs);
            st.version += 1;
        }
    }

    /// Records that `conn` died (if it is still the current connection),
    /// with its exit status and stderr tail.
    async fn bury(&self, conn: &Arc<Connection>) -> Down {
        let (reason, stderr_tail) = conn.death().await;
        let down = Down {
            reason,
            stderr_tail,
            server_wrote: false,
        };
        let mut st = lock(&self.state);
        if st.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            st.conn = None;
            tracing::debug!(server = %self.config.name, reason = %down.reason, "MCP server stopped");
            self.strike(&mut st, down.clone());
        }
        down
    }

    fn strike(&self, st: &mut State, down: Down) {
        st.strikes = st.strikes.saturating_add(1);
        st.next_attempt = Instant::now() + backoff(st.strikes - 1);
        st.down = Some(down);
    }
}

/// 0 for the first restart, then 1, 2, 4 .. 30 s.
fn backoff(strikes_before: u32) -> Duration {
    match strikes_before {
        0 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 1).min(5)).min(MAX_BACKOFF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_thirty_seconds() {
        let secs: Vec<u64> = (0..8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 16, 30, 30]);
    }
}
