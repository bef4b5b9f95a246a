//! MCP servers as mecha tools. Each `[[mcp]]` server is started over stdio
//! (JSON-RPC 2.0, one message per line, protocol 2025-06-18 asked for and
//! older versions accepted), and every tool it lists becomes an ordinary
//! `Arc<dyn mecha_core::Tool>`, so the loop never learns where a tool came
//! from.
//!
//! What this crate owns:
//! - spawning: a bare command resolved against mecha's own PATH, an
//!   environment built from an allowlist (never inherited), the run's
//!   workspace as working directory, a process group killed whole when mecha
//!   is done, stderr drained into `tracing` (debug, tagged with the server);
//! - naming (`<server>__<tool>`, made safe for the model APIs) and the
//!   capabilities a tool's annotations and the config's `force` give it;
//! - failure handling: one broken server is a status, not a failed run; a
//!   transport failure mid-call is a result the model can route around, and
//!   the next call respawns the server; `tools/list_changed` reaches the
//!   loop through [`McpHub::take_changed`];
//! - reading the `mcpServers` JSON other clients use.
//!
//! What it deliberately does not do: serve sampling, roots or elicitation
//! to servers (each is declined with a JSON-RPC error); speak HTTP; confine
//! a server (`sandbox = true` is refused until a sandbox backend exists);
//! fit results to the output budget (the loop does that); retry a failed
//! call (it may already have had its effect). rmcp speaks the protocol, but
//! none of its types leave this crate.

mod bounded;
mod config;
mod connection;
mod error;
mod handler;
mod hub;
mod import;
mod naming;
mod oauth;
mod oauth_login;
mod remote;
mod result;
mod send_words;
mod server;
mod spawn;
mod sse;
mod stderr_log;
mod tool;

pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT_S, DEFAULT_STARTUP_TIMEOUT_S, MAX_SERVER_NAME_LEN,
    McpServerConfig, suggest_server_name, validate_all,
};
pub use error::StartError;
pub use hub::{McpHub, NameConflict, ServerState, ServerStatus, ToolOrigin, ToolSummary, check};
pub use import::{
    ImportError, ImportedServers, SkippedServer, parse_mcp_servers_json, read_mcp_servers_json,
};
pub use naming::MAX_TOOL_NAME_LEN;
pub use oauth::{AuthState, auth_state, credentials_file};
pub use oauth_login::{Login, logout};
pub use send_words::send_word;
pub use spawn::{BASE_ENV, SpawnOptions, server_env, unconfined_programs};
