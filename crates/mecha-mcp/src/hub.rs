//! The run's MCP servers together: started concurrently, their tools handed
//! to the caller as `Arc<dyn Tool>`, their health as statuses.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use mecha_core::{Capabilities, Registry, Tool};

use crate::config::{ConfigError, McpServerConfig};
use crate::server::Server;
use crate::spawn::{SpawnOptions, lock};
use crate::tool::McpTool;

/// How one server is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Connected; its tools are registered.
    Ready {
        /// The protocol version the server answered `initialize` with.
        protocol_version: String,
        /// `name version` from its `serverInfo`, if it sent one.
        server_info: Option<String>,
        /// How it is reached: `stdio`, `streamable HTTP` or `SSE`.
        transport: &'static str,
        tools: Vec<ToolSummary>,
    },
    /// Not running: never started, or died. Its tools are absent (or fail
    /// until a call restarts it).
    Failed {
        reason: String,
        /// The last lines it wrote to stderr, for programs; never printed,
        /// and never shown to the model (its stderr is a log, under
        /// `MECHA_LOG=debug`).
        stderr_tail: Vec<String>,
    },
}

/// The transport of a server mecha runs as its own child process.
pub(crate) const STDIO: &str = "stdio";

impl ServerState {
    /// Ready, and reached over the network rather than as a child process.
    pub fn is_remote(&self) -> bool {
        matches!(self, ServerState::Ready { transport, .. } if *transport != STDIO)
    }
}

/// One tool of a ready server, for `mecha tools` and `mecha mcp check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSummary {
    /// Model-visible.
    pub name: String,
    /// As the server lists it.
    pub raw_name: String,
    /// The server's words for it (or mecha's, when it gave none).
    pub description: String,
    pub read_only: bool,
    pub capabilities: Capabilities,
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            ServerState::Ready {
                protocol_version,
                tools,
                ..
            } => write!(
                f,
                "MCP server `{}`: ready, {} tool{} (protocol {protocol_version})",
                self.name,
                tools.len(),
                if tools.len() == 1 { "" } else { "s" }
            ),
            // The reason only: the server's stderr is its log, which reaches
            // a person through `MECHA_LOG=debug` (tagged with the server's
            // name), never printed straight to the terminal.
            ServerState::Failed { reason, .. } => {
                write!(f, "MCP server `{}` is unavailable: {reason}", self.name)
            }
        }
    }
}

/// Where a model-visible tool name comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOrigin {
    pub server: String,
    pub raw_name: String,
    pub prefixed: bool,
}

/// Two tools claim one name. Only `prefix_tools = false` can cause it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NameConflict {
    pub name: String,
    pub server: String,
    /// The other MCP server, or `None` for a tool already in the registry.
    pub other_server: Option<String>,
    message: String,
}

impl NameConflict {
    /// `server`'s tool `name` collides with a tool already registered, for
    /// a list that changed after start-up, when there is no start-up left
    /// to fail: the tool is left out and this is reported.
    pub fn with_registered(name: &str, server: &str) -> Self {
        conflict(name, server, None)
    }
}

enum Entry {
    Server(Arc<Server>),
    /// Refused before it could start (invalid config, `sandbox = true`).
    Refused(ServerStatus),
}

/// Every MCP server of a run.
///
/// A server process lives while the hub or any tool from it does, and is
/// killed with its whole process group when the last of them is dropped.
/// Call [`shutdown`](Self::shutdown) before exiting the process: a plain
/// `std::process::exit` runs no destructors.
pub struct McpHub {
    entries: Vec<Entry>,
    /// Each server's tool-list version as last handed out.
    seen: Mutex<Vec<u64>>,
}

impl fmt::Debug for McpHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.statuses()).finish()
    }
}

impl McpHub {
    /// Starts every server concurrently and waits for all of them, each for
    /// at most its `startup_timeout_s`: start-up costs the slowest server,
    /// not the sum. A server that fails is reported in
    /// [`statuses`](Self::statuses) and skipped; the others work.
    pub async fn start(
        configs: impl IntoIterator<Item = McpServerConfig>,
        opts: &SpawnOptions,
    ) -> Self {
        let mut names = HashSet::new();
        let entries: Vec<Entry> = configs
            .into_iter()
            .map(|config| {
                let refusal = match config.validate(opts.sandbox.is_some()) {
                    Err(e) => Some(e),
                    Ok(()) if !names.insert(config.name.clone()) => {
                        Some(ConfigError::DuplicateName {
                            name: config.name.clone(),
                        })
                    }
                    Ok(()) => None,
                };
                match refusal {
                    Some(e) => Entry::Refused(ServerStatus {
                        name: config.name,
                        state: ServerState::Failed {
                            reason: e.to_string(),
                            stderr_tail: Vec::new(),
                        },
                    }),
                    None => Entry::Server(Server::new(config, opts.clone())),
                }
            })
            .collect();
        let hub = Self {
            entries,
            seen: Mutex::new(Vec::new()),
        };
        futures::future::join_all(hub.servers().map(Server::start)).await;
        *lock(&hub.seen) = hub.versions();
        hub
    }

    /// The tools of every server that is up, sorted by name. Marks the
    /// current lists as seen by [`take_changed`](Self::take_changed).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        *lock(&self.seen) = self.versions();
        self.build_tools()
    }

    /// For the loop, at a turn boundary: re-lists the tools of servers that
    /// sent `notifications/tools/list_changed`, and returns the whole new
    /// tool list if any server's list differs from the last one handed out
    /// (by [`tools`](Self::tools) or this), so the registry can be rebuilt.
    /// `None` (the common case) means keep the registry as it is: the
    /// prompt prefix stays byte-identical. A server restarted after a crash
    /// re-lists its tools too, and a change shows up here the same way.
    pub async fn take_changed(&self) -> Option<Vec<Arc<dyn Tool>>> {
        futures::future::join_all(self.servers().map(Server::refresh_if_stale)).await;
        let versions = self.versions();
        let mut seen = lock(&self.seen);
        if *seen == versions {
            return None;
        }
        *seen = versions;
        drop(seen);
        Some(self.build_tools())
    }

    /// Every configured server, in config order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Server(server) => server.status(),
                Entry::Refused(status) => status.clone(),
            })
            .collect()
    }

    /// Which server a model-visible tool name belongs to.
    pub fn origin(&self, tool_name: &str) -> Option<ToolOrigin> {
        self.servers().find_map(|server| {
            let tools = server.tools();
            let spec = tools.iter().find(|t| t.name == tool_name)?;
            Some(ToolOrigin {
                server: server.name().to_owned(),
                raw_name: spec.raw_name.clone(),
                prefixed: server.config.prefix_tools,
            })
        })
    }

    /// Registers every tool, or none: a name already in `registry`, or
    /// claimed by two servers, fails loudly naming both sides rather than
    /// shadowing one. Marks the lists as seen, like [`tools`](Self::tools).
    pub fn register_into(&self, registry: &mut Registry) -> Result<(), NameConflict> {
        *lock(&self.seen) = self.versions();
        let tools = self.server_tools();
        let mut claimed: BTreeMap<&str, &str> = BTreeMap::new();
        for (server, tool) in &tools {
            let name = tool.name();
            let other_server = match claimed.get(name) {
                Some(other) => Some((*other).to_owned()),
                None if registry.contains(name) => None,
                None => {
                    claimed.insert(name, server);
                    continue;
                }
            };
            return Err(conflict(name, server, other_server));
        }
        for (server, tool) in tools {
            // Checked above, so this cannot refuse.
            registry
                .register(tool)
                .map_err(|e| conflict(&e.name, &server, None))?;
        }
        for status in self.statuses() {
            if let ServerState::Failed { reason, .. } = status.state {
                let prefix = format!("{}__", status.name);
                registry.mark_absent(
                    prefix,
                    format!("MCP server `{}` is unavailable: {reason}", status.name),
                );
            }
        }
        Ok(())
    }

    /// Kills every server now; later calls to their tools fail.
    pub fn shutdown(&self) {
        for server in self.servers() {
            server.shutdown();
        }
    }

    fn servers(&self) -> impl Iterator<Item = &Arc<Server>> {
        self.entries.iter().filter_map(|entry| match entry {
            Entry::Server(server) => Some(server),
            Entry::Refused(_) => None,
        })
    }

    fn versions(&self) -> Vec<u64> {
        self.servers().map(|s| s.version()).collect()
    }

    fn build_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.server_tools()
            .into_iter()
            .map(|(_, tool)| tool)
            .collect()
    }

    /// Every tool with its server's name, sorted by tool name (stably, so
    /// two servers claiming one name come in config order).
    fn server_tools(&self) -> Vec<(String, Arc<dyn Tool>)> {
        let mut tools: Vec<(String, Arc<dyn Tool>)> = Vec::new();
        for server in self.servers() {
            for spec in server.tools().iter() {
                let tool: Arc<dyn Tool> = Arc::new(McpTool {
                    server: Arc::clone(server),
                    spec: Arc::clone(spec),
                });
                tools.push((server.name().to_owned(), tool));
            }
        }
        tools.sort_by(|a, b| a.1.name().cmp(b.1.name()));
        tools
    }
}

fn conflict(name: &str, server: &str, other_server: Option<String>) -> NameConflict {
    let message = match &other_server {
        Some(other) => format!(
            "MCP servers `{other}` and `{server}` both register a tool named `{name}`; set \
             `prefix_tools = true` on whichever has `prefix_tools = false`, so their tools are \
             told apart"
        ),
        None => format!(
            "MCP server `{server}` registers a tool named `{name}`, but a tool of that name is \
             already registered; `prefix_tools = false` promises distinct names, so set \
             `prefix_tools = true` for `{server}`, or take the other tool away"
        ),
    };
    NameConflict {
        name: name.to_owned(),
        server: server.to_owned(),
        other_server,
        message,
    }
}

/// `mecha mcp check`: starts one server, lists its tools, calls nothing,
/// and stops it again.
pub async fn check(config: McpServerConfig, opts: &SpawnOptions) -> ServerStatus {
    let hub = McpHub::start([config], opts).await;
    let status = hub.statuses().into_iter().next();
    hub.shutdown();
    status.unwrap_or_else(|| ServerStatus {
        name: String::new(),
        state: ServerState::Failed {
            reason: "no server to check".into(),
            stderr_tail: Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(transport: &'static str) -> ServerState {
        ServerState::Ready {
            protocol_version: "2025-06-18".into(),
            server_info: None,
            transport,
            tools: Vec::new(),
        }
    }

    #[test]
    fn a_server_reached_over_the_network_is_remote_and_a_child_process_is_not() {
        assert!(ready("streamable HTTP").is_remote());
        assert!(ready("SSE").is_remote());
        assert!(!ready(STDIO).is_remote());
        let failed = ServerState::Failed {
            reason: "gone".into(),
            stderr_tail: Vec::new(),
        };
        assert!(
            !failed.is_remote(),
            "a server that is not up is not counted"
        );
    }
}
