//! `mecha mcp list` and `mecha mcp check NAME`: help for wiring a server.

use std::path::Path;

use clap::Subcommand;
use mecha_mcp::ServerState;
use mecha_sandbox::Sandbox;

use crate::Failure;
use crate::commands::tools::{ARMED_LEGEND, ARMED_MARK, mcp_entry_file, send_warning};
use crate::config::{ConfiguredServer, Settings};
use crate::output::{self, outln};
use crate::terminal::printable;

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// The configured servers and where each came from; starts nothing.
    List,
    /// Start one server, list its tools with their capabilities, call nothing.
    Check {
        /// The server's name.
        name: String,
    },
    /// Log in to a remote server with OAuth (in a browser) and keep its tokens.
    Login {
        /// The server's name.
        name: String,
        /// Print the address only; do not start a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget a remote server's OAuth tokens.
    Logout {
        /// The server's name.
        name: String,
    },
}

pub fn run(command: McpCommand, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    match command {
        McpCommand::List => {
            list(&settings);
            Ok(0)
        }
        McpCommand::Check { name } => check(&settings, &name, workspace),
        McpCommand::Login { name, no_browser } => {
            crate::commands::mcp_login::login(&settings, &name, !no_browser)
        }
        McpCommand::Logout { name } => crate::commands::mcp_login::logout(&name),
    }
}

fn list(settings: &Settings) {
    if settings.mcp.is_empty() {
        outln!(
            "no MCP servers configured; add an [[mcp]] entry to {}, or point mcp_files or \
             --mcp-file at an mcpServers JSON file",
            settings.global_file.display()
        );
        return;
    }
    for server in &settings.mcp {
        let c = &server.config;
        let mut command = c.command.clone();
        for arg in &c.args {
            command.push(' ');
            command.push_str(arg);
        }
        outln!("{}  ({})", c.name, server.source);
        match &c.url {
            Some(url) => {
                let transport = match c.transport.as_deref() {
                    Some("sse") => "SSE",
                    Some(_) => "streamable HTTP",
                    None => "streamable HTTP, or SSE if refused",
                };
                outln!("  remote, {transport}: {url}");
                if let Some(var) = &c.bearer_token_env {
                    outln!("  bearer token from ${var}");
                }
                if !c.headers.is_empty() {
                    let names: Vec<&str> = c.headers.keys().map(String::as_str).collect();
                    outln!("  headers: {}", names.join(", "));
                }
            }
            None => outln!("  command: {command}"),
        }
        if !c.prefix_tools {
            outln!("  tools keep their own names (prefix_tools = false)");
        }
        if c.sandbox {
            let network = c.network.unwrap_or(settings.sandbox.network);
            outln!(
                "  sandboxed ({})",
                if network { "network on" } else { "no network" }
            );
        }
        if !c.env_passthrough.is_empty() {
            outln!("  passes through: {}", c.env_passthrough.join(", "));
        }
        if !c.env.is_empty() {
            let names: Vec<&str> = c.env.keys().map(String::as_str).collect();
            outln!("  sets: {}", names.join(", "));
        }
    }
}

/// The server configured as `name`, or a usage error naming those that are.
pub fn configured<'a>(settings: &'a Settings, name: &str) -> Result<&'a ConfiguredServer, Failure> {
    let Some(server) = settings.mcp.iter().find(|s| s.config.name == name) else {
        let names: Vec<&str> = settings
            .mcp
            .iter()
            .map(|s| s.config.name.as_str())
            .collect();
        return Err(Failure::Usage(format!(
            "no MCP server is named `{name}`; configured: {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    };
    Ok(server)
}

fn check(settings: &Settings, name: &str, workspace: &Path) -> Result<u8, Failure> {
    let server = configured(settings, name)?;
    // A `sandbox = true` server is checked the way a run would start it.
    let sandbox = Sandbox::start(&settings.sandbox, crate::wiring::host_env())
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let options = crate::wiring::spawn_options(settings, workspace, sandbox.as_ref())?;
    let runtime = crate::runtime()?;
    let status = runtime.block_on(mecha_mcp::check(server.config.clone(), &options));
    // Everything below but the capability flags is the server's to write.
    let mut out = format!("{status}\n");
    let code = match status.state {
        ServerState::Ready {
            server_info,
            tools,
            transport,
            ..
        } => {
            if let Some(info) = server_info {
                out.push_str(&format!("server: {info}\n"));
            }
            out.push_str(&transport_line(&server.config, Some(transport)));
            // What a run would give each tool: `[tools.NAME] force` too.
            let forcing = settings.forcing();
            let caps_of = |t: &mecha_mcp::ToolSummary| match forcing.get(&t.name) {
                Some(forced) => t.capabilities.union(forced.capabilities()),
                None => t.capabilities,
            };
            let armed = tools.iter().any(|t| caps_of(t).refused_when_armed());
            for tool in &tools {
                let caps = caps_of(tool);
                out.push_str(&format!(
                    "  {}  (raw `{}`){}  private={} untrusted={} egress={} destructive={}{}\n",
                    tool.name,
                    tool.raw_name,
                    if tool.read_only { " read-only" } else { "" },
                    caps.private_data,
                    caps.untrusted_input,
                    caps.egress.as_str(),
                    caps.destructive,
                    if caps.refused_when_armed() {
                        format!("  {ARMED_MARK}")
                    } else {
                        String::new()
                    }
                ));
            }
            if armed {
                out.push_str(ARMED_LEGEND);
                out.push('\n');
            }
            for tool in &tools {
                let entry_in = mcp_entry_file(settings, name);
                let warning = send_warning(
                    &tool.name,
                    &tool.raw_name,
                    &tool.description,
                    caps_of(tool),
                    name,
                    entry_in,
                    settings,
                );
                if let Some(warning) = warning {
                    output::err(&printable(&warning));
                }
            }
            0
        }
        ServerState::Failed { stderr_tail, .. } => {
            if server.config.url.is_some() {
                out.push_str(&transport_line(&server.config, None));
            }
            out.push_str(&stderr_evidence(name, &stderr_tail));
            1
        }
    };
    output::out(&printable(&out));
    Ok(code)
}

/// How `mecha mcp check` says the server is reached (`used`: the
/// transport it answered on), and with what credentials.
fn transport_line(config: &mecha_mcp::McpServerConfig, used: Option<&str>) -> String {
    let Some(url) = &config.url else {
        return "transport: stdio (a process mecha runs)\n".to_owned();
    };
    let transport = match (used, config.transport.as_deref()) {
        (Some(used), _) => used,
        (None, Some("sse")) => "SSE",
        (None, Some(_)) => "streamable HTTP",
        (None, None) => "streamable HTTP, then SSE",
    };
    let dir = crate::commands::mcp_login::credentials_dir().ok();
    let auth = mecha_mcp::auth_state(config, dir.as_deref());
    format!("transport: {transport} to {url}\nauth: {auth}\n")
}

/// How many of a failed server's last stderr lines `mecha mcp check`
/// quotes: why a program stopped is nearly always in its last words, and
/// the log has the rest.
const STDERR_QUOTED: usize = 10;

/// What a server that did not start last wrote to stderr (its log, quoted
/// here because it is what says why), and how to see everything. The
/// caller makes it printable.
fn stderr_evidence(name: &str, tail: &[String]) -> String {
    let log = format!(
        "`MECHA_LOG=debug mecha mcp check {name}` logs all it writes, and mecha's side of the \
         start-up"
    );
    if tail.is_empty() {
        return format!("it wrote nothing to stderr; {log}\n");
    }
    let quoted = tail
        .get(tail.len().saturating_sub(STDERR_QUOTED)..)
        .unwrap_or(tail);
    let mut out = format!(
        "the last {} it wrote to stderr:\n",
        match quoted.len() {
            1 => "line".to_owned(),
            n => format!("{n} lines"),
        }
    );
    for line in quoted {
        out.push_str(&format!("  | {line}\n"));
    }
    out.push_str(&format!("{log}\n"));
    out
}
