//! Shared by the integration tests: the fixture server, the reference npm
//! servers, and small helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_mcp::{McpHub, McpServerConfig, ServerState, ServerStatus, SpawnOptions};
pub use mecha_testkit::fixture_mcp;
use serde_json::Value;

/// A fixture server named `name`, started with `args`.
pub fn fixture_config(name: &str, args: &[&str]) -> McpServerConfig {
    let mut config = McpServerConfig::new(name, fixture_mcp().to_string_lossy());
    config.args = args.iter().map(|a| (*a).to_owned()).collect();
    config
}

/// Spawn options for `workspace` with a small, known parent environment.
pub fn opts(workspace: &Path) -> SpawnOptions {
    SpawnOptions::new(workspace).with_parent_env([
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", "/home/tester".to_owned()),
    ])
}

pub fn ctx(workspace: &Path) -> ToolCtx {
    ToolCtx::new(workspace, 1 << 20).expect("tool ctx")
}

pub fn tool(hub: &McpHub, name: &str) -> Arc<dyn Tool> {
    let tools = hub.tools();
    let names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    tools
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool `{name}` among {names:?}"))
}

pub async fn call(hub: &McpHub, name: &str, input: Value, workspace: &Path) -> ToolOutput {
    tool(hub, name)
        .call(input, &ctx(workspace))
        .await
        .expect("MCP tools never return Err")
}

pub fn status<'a>(statuses: &'a [ServerStatus], name: &str) -> &'a ServerStatus {
    statuses
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no status for `{name}`"))
}

/// The failure reason and stderr tail of a failed server; panics if ready.
pub fn failure(statuses: &[ServerStatus], name: &str) -> (String, Vec<String>) {
    match &status(statuses, name).state {
        ServerState::Failed {
            reason,
            stderr_tail,
        } => (reason.clone(), stderr_tail.clone()),
        ServerState::Ready { .. } => panic!("`{name}` is ready, expected a failure"),
    }
}

pub fn tool_names(hub: &McpHub) -> Vec<String> {
    hub.tools().iter().map(|t| t.name().to_owned()).collect()
}

/// Where the reference npm servers are installed, or `None` (with a notice)
/// when they are not and this is not CI. In CI a missing install fails.
pub fn npm_servers() -> Option<PathBuf> {
    let dir = std::env::var_os("MECHA_MCP_SERVERS_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers"),
        PathBuf::from,
    );
    let bin = dir.join("node_modules/.bin");
    let have_node = which("node").is_some();
    let have_servers = ["mcp-server-everything", "mcp-server-filesystem"]
        .iter()
        .all(|b| bin.join(b).exists());
    if have_node && have_servers {
        return Some(bin);
    }
    let what = if have_node {
        format!(
            "the reference MCP servers are not installed in {}; install them with: npm install \
             --prefix {} @modelcontextprotocol/server-everything \
             @modelcontextprotocol/server-filesystem (or point MECHA_MCP_SERVERS_DIR at an \
             install)",
            dir.display(),
            dir.display()
        )
    } else {
        "`node` is not on PATH; install Node.js (20 or newer) and npm".to_owned()
    };
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{what}");
    }
    eprintln!("SKIPPED: {what}");
    None
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether a process still exists (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z')
        })
        .unwrap_or(false)
}

/// Polls `cond` for up to thirty seconds: it returns as soon as `cond`
/// holds, so only a failing test pays for the generous bound.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if cond() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    cond()
}
