//! `mecha tools`: what a run would get, without needing a provider. It does
//! start the MCP servers, which makes it the smoke test for wiring one.

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use mecha_core::{Capabilities, Egress, Registry, Tool, first_sentence};
use mecha_mcp::{McpHub, ServerState};
use mecha_sandbox::{Check, Network, Sandbox};
use mecha_tools::{Compact, describe_chain};
use serde_json::json;

use crate::Failure;
use crate::config::Settings;
use crate::skills::SkillFlags;
use crate::terminal::printable;
use crate::wiring::{ServerStart, Toolbox, build_toolbox, register_subagents};

#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// Print exactly the tool list the model is sent.
    #[arg(long, conflicts_with = "json")]
    schema: bool,
    /// Print each tool's capabilities and read_only flag as JSON.
    #[arg(long)]
    json: bool,
    /// Keep only this tool (repeatable); narrows config, never widens it.
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
}

/// Says which tools an armed conversation refuses, after a listing that
/// marks them with [`ARMED_MARK`]. `mecha mcp check` ends with it too.
pub const ARMED_LEGEND: &str = "[refused once armed]: a send whose destination the model \
    picks (an open-world MCP tool is one whatever its arguments). mecha's interlock refuses it \
    once the conversation holds both private data and untrusted content, and the first call to \
    an open-world tool brings both; read-only local tools keep working.";

/// Marks a tool in a listing as refused in an armed conversation.
pub const ARMED_MARK: &str = "[refused once armed]";

/// An MCP tool of `server` whose own name or description reads like a send
/// while `caps` (what the run gives it) send nothing: the warning, with the
/// config that would make it a send. `entry_in` is the file holding the
/// server's `[[mcp]]` entry, when one does. `None` for any other tool.
pub fn send_warning(
    name: &str,
    raw_name: &str,
    description: &str,
    caps: Capabilities,
    server: &str,
    entry_in: Option<&Path>,
    settings: &Settings,
) -> Option<String> {
    if caps.egress != Egress::None {
        return None;
    }
    let word = mecha_mcp::send_word(raw_name, description)?;
    let mut warning = format!(
        "mecha: warning: `{name}` reads like a send (\"{word}\" in its name or description), but \
         its MCP server does not mark it open-world (openWorldHint), so mecha counts it as \
         sending nothing and the interlock never refuses it. If it can send data off this \
         machine, add to {}:\n  [tools.\"{name}\"]\n  force = {{ egress = \"chosen\" }}\n",
        settings.global_file.display()
    );
    if let Some(file) = entry_in {
        warning.push_str(&format!(
            "  or, for every tool of `{server}`, add to its [[mcp]] entry in {}:\n  force = {{ \
             egress = \"chosen\" }}\n",
            file.display()
        ));
    }
    Some(warning)
}

/// The file holding `server`'s `[[mcp]]` entry, if it came from one (not
/// from an `mcpServers` JSON file).
pub fn mcp_entry_file<'a>(settings: &'a Settings, server: &str) -> Option<&'a Path> {
    settings
        .mcp
        .iter()
        .any(|s| s.config.name == server && Path::new(&s.source) == settings.global_file)
        .then_some(settings.global_file.as_path())
}

/// The built-ins that depend on the session which `mecha run` with this
/// config gets: `compact`, when its conversation would compact (which
/// takes a provider that builds). `recall` and `ask_user` belong to
/// conversations and the screen.
fn session_tools(settings: &mut Settings) -> Vec<Arc<dyn Tool>> {
    let env = |name: &str| std::env::var(name).ok();
    let Ok(provider) = mecha_provider::build(&settings.provider, &env) else {
        return Vec::new();
    };
    settings.adopt_context_window(provider.context_window());
    let threshold =
        settings.compaction_threshold(provider.context_window(), provider.max_output_tokens());
    match threshold {
        Ok(Some(_)) => vec![Arc::new(Compact)],
        _ => Vec::new(),
    }
}

/// Exits 1 when a configured MCP server failed, having printed the rest:
/// a script that checks its wiring must not read a half-working setup as
/// a working one.
pub fn run(args: ToolsArgs, mut settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    let runtime = crate::runtime()?;
    // The listing shows failed servers itself; the machine-readable forms
    // report them on stderr.
    let report = args.schema || args.json;
    let mut session_tools = session_tools(&mut settings);
    session_tools.extend(crate::wiring::outbox_tools(&settings, None));
    let mut toolbox = runtime.block_on(build_toolbox(
        &mut settings,
        &args.tools,
        &SkillFlags::default(),
        false,
        workspace,
        // Nothing here runs a shell command: bwrap is tried only if a
        // confined server starts.
        ServerStart {
            report,
            kept: None,
            check: Check::AtFirstJob,
        },
        session_tools,
    ))?;
    // Listed, never called: nothing connects them to a model here.
    if let Err(failure) = register_subagents(&mut toolbox, &settings.subagents, &|_| None) {
        toolbox.shutdown();
        return Err(failure);
    }
    warn_about_send_lookalikes(&toolbox, &settings);
    let text = if args.schema {
        schema(&toolbox.registry, &settings)
    } else if args.json {
        capabilities_json(&toolbox, &settings)
    } else {
        // Tool names, descriptions and failure reasons come from MCP
        // servers; JSON output escapes control characters itself.
        human(&toolbox, &settings, workspace).map(|text| printable(&text).into_owned())
    };
    let failed = toolbox.hub().is_some_and(|hub| {
        hub.statuses()
            .iter()
            .any(|s| matches!(s.state, ServerState::Failed { .. }))
    });
    toolbox.shutdown();
    let text = text.map_err(|e| Failure::Run(e.into()))?;
    crate::output::out(&text);
    Ok(u8::from(failed))
}

/// The first line: what confines what.
fn sandbox_line(sandbox: Option<&Sandbox>, settings: &Settings) -> String {
    let Some(sandbox) = sandbox else {
        return "sandbox: none (shell and MCP servers run unconfined, as you; set [sandbox] kind \
                = \"bwrap\" to confine them)\n"
            .to_owned();
    };
    let confined = settings.mcp.iter().filter(|s| s.config.sandbox).count();
    let servers = match confined {
        0 => String::new(),
        1 => " and 1 MCP server (sandbox = true)".to_owned(),
        n => format!(" and {n} MCP servers (sandbox = true)"),
    };
    format!(
        "sandbox: {}: shell commands{servers} run confined\n",
        sandbox.describe()
    )
}

/// [`send_warning`] for each MCP tool of the run, on stderr.
fn warn_about_send_lookalikes(toolbox: &Toolbox, settings: &Settings) {
    let Some(hub) = toolbox.hub() else { return };
    for tool in toolbox.registry.iter() {
        let Some(origin) = hub.origin(tool.name()) else {
            continue;
        };
        let warning = send_warning(
            tool.name(),
            &origin.raw_name,
            tool.description(),
            tool.capabilities(),
            &origin.server,
            mcp_entry_file(settings, &origin.server),
            settings,
        );
        if let Some(warning) = warning {
            crate::output::err(&printable(&warning));
        }
    }
}

/// The tool list exactly as the first request sends it: compact JSON,
/// sorted, deferred schemas left out.
fn schema(registry: &Registry, settings: &Settings) -> serde_json::Result<String> {
    let sent = mecha_agent::first_definitions(registry, settings.defer_schemas.over_bytes());
    serde_json::to_string(&sent).map(|text| text + "\n")
}

/// What deferral does to the listing's MCP tools, when it does anything.
fn deferred_line(deferred: &mecha_agent::Deferred, settings: &Settings) -> String {
    format!(
        "[deferred]: the MCP tools' schemas ({} tools, {} bytes) are over [tools] \
         defer_schemas_over_bytes = {}, so the model sees only their names and first sentences, \
         in `{}`, and loads a schema when it needs one.\n",
        deferred.names.len(),
        deferred.bytes,
        settings.defer_schemas,
        mecha_agent::TOOL_SEARCH,
    )
}

/// Every tool the run keeps, every configured server with its status, and
/// the `[[search]]` chain.
fn capabilities_json(toolbox: &Toolbox, settings: &Settings) -> serde_json::Result<String> {
    let mut value = toolbox_json(toolbox);
    value["search"] = json!(search_chain(settings));
    serde_json::to_string_pretty(&value).map(|text| text + "\n")
}

/// `1. searxng http://localhost:8888/`, one line per `[[search]]` backend.
fn search_chain(settings: &Settings) -> Vec<String> {
    settings
        .search
        .as_ref()
        .map(|s| describe_chain(&s.backends))
        .unwrap_or_default()
}

/// The sandbox, the tools with their capabilities and the MCP servers with
/// their status: what `mecha tools --json` prints and a stream-json run's
/// `init` event carries.
pub fn toolbox_json(toolbox: &Toolbox) -> serde_json::Value {
    let deferred = toolbox.deferred().map(|d| d.names).unwrap_or_default();
    let tools: Vec<_> = toolbox
        .registry
        .iter()
        .map(|t| {
            let origin = toolbox.hub().and_then(|hub| hub.origin(t.name()));
            let child = toolbox.children.get(t.name());
            let source = match (&origin, child) {
                (Some(o), _) => format!("mcp:{}", o.server),
                (None, Some(_)) => "subagent".to_owned(),
                (None, None) => "builtin".to_owned(),
            };
            let mut entry = json!({
                "name": t.name(),
                "source": source,
                "read_only": t.read_only(),
                "capabilities": t.capabilities(),
                "refused_when_armed": t.capabilities().refused_when_armed(),
            });
            if let Some(origin) = origin {
                entry["raw_name"] = json!(origin.raw_name);
            }
            // What the child gets, from which its capabilities derive.
            if let Some(child) = child {
                entry["tools"] = json!(child);
            }
            // What config forced, so the widened capabilities explain themselves.
            if let Some(forced) = toolbox.forcing.of(t.name()) {
                entry["forced"] = json!(forced.capabilities());
            }
            // Sent as a name and a first sentence until `tool_search` loads it.
            if deferred.iter().any(|name| name == t.name()) {
                entry["deferred"] = json!(true);
            }
            entry
        })
        .collect();
    let servers: Vec<_> = toolbox
        .hub()
        .map(|hub| hub.statuses())
        .unwrap_or_default()
        .into_iter()
        .map(|status| match status.state {
            ServerState::Ready {
                protocol_version,
                server_info,
                tools,
                transport,
            } => json!({
                "name": status.name,
                "status": "ready",
                "transport": transport,
                "protocol_version": protocol_version,
                "server_info": server_info,
                "tools": tools.len(),
            }),
            ServerState::Failed { reason, .. } => json!({
                "name": status.name,
                "status": "failed",
                "reason": reason,
            }),
        })
        .collect();
    let sandbox = toolbox.sandbox.as_ref().map(|s| {
        let mut sandbox = json!({
            "kind": s.kind().as_str(),
            "network": *s.network() == Network::Full,
            "description": s.describe(),
        });
        if let Network::Hosts(list) = s.network() {
            sandbox["allow_hosts"] = json!(list.written().collect::<Vec<_>>());
        }
        sandbox
    });
    json!({"sandbox": sandbox, "tools": tools, "servers": servers})
}

fn human(toolbox: &Toolbox, settings: &Settings, workspace: &Path) -> serde_json::Result<String> {
    let mut out = sandbox_line(toolbox.sandbox.as_ref(), settings);
    let hub = toolbox.hub().map(|hub| hub.as_ref());
    let is_builtin = |t: &&std::sync::Arc<dyn Tool>| {
        hub.is_none_or(|h| h.origin(t.name()).is_none()) && !toolbox.children.contains_key(t.name())
    };
    let builtins: Vec<_> = toolbox.registry.iter().filter(is_builtin).collect();
    let width = toolbox.registry.names().map(str::len).max().unwrap_or(0);
    let deferred = toolbox.deferred();
    let listed = Listed {
        width,
        deferred: deferred.as_ref().map(|d| d.names.as_slice()).unwrap_or(&[]),
    };
    out.push_str(&format!("built-in ({}):\n", builtins.len()));
    for tool in builtins {
        out.push_str(&listed.line(tool.as_ref()));
    }
    if let Some(hub) = hub {
        out.push_str(&servers(hub, &toolbox.registry, settings, &listed));
    }
    if let Some(deferred) = &deferred {
        out.push_str(&deferred_line(deferred, settings));
    }
    let chain = search_chain(settings);
    if !chain.is_empty() {
        out.push_str("web_search asks, in order (the first that answers wins):\n");
        for backend in chain {
            out.push_str(&format!("  {backend}\n"));
        }
    }
    out.push_str(&subagents(toolbox, &listed));
    if toolbox
        .registry
        .iter()
        .any(|t| t.capabilities().refused_when_armed())
    {
        out.push_str(ARMED_LEGEND);
        out.push('\n');
    }
    // What the system prompt would carry besides mecha's own text.
    let instructions = crate::instructions::find(workspace, &settings.instructions_files);
    out.push_str(&instructions.summary());
    out.push('\n');
    let present = |p: &Path| if p.exists() { "" } else { " (absent)" };
    out.push_str(&format!(
        "config: {}{}\n",
        settings.global_file.display(),
        present(&settings.global_file)
    ));
    if let Some(project) = &settings.project_file {
        out.push_str(&format!("narrowed by {}\n", project.display()));
    }
    Ok(out)
}

/// Each server, where it was configured, its state, and its tools that the
/// run keeps.
fn servers(hub: &McpHub, registry: &Registry, settings: &Settings, listed: &Listed) -> String {
    let mut out = String::new();
    for (status, configured) in hub.statuses().iter().zip(&settings.mcp) {
        match &status.state {
            ServerState::Ready {
                tools, transport, ..
            } => {
                let remote = configured
                    .config
                    .url
                    .as_ref()
                    .map(|url| format!("remote at {url} ({transport}), "))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "MCP server `{}` ({}): {remote}ready, {} tool{}\n",
                    status.name,
                    configured.source,
                    tools.len(),
                    if tools.len() == 1 { "" } else { "s" }
                ));
                for summary in tools {
                    if let Some(tool) = registry.get(&summary.name) {
                        out.push_str(&listed.line(tool.as_ref()));
                    }
                }
            }
            ServerState::Failed { .. } => {
                out.push_str(&format!(
                    "{status}\n  (configured in {})\n",
                    configured.source
                ));
            }
        }
    }
    out
}

/// Each subagent the run keeps, with the tools its child gets.
fn subagents(toolbox: &Toolbox, listed: &Listed) -> String {
    let width = listed.width;
    if toolbox.children.is_empty() {
        return String::new();
    }
    let mut out = format!("subagents ({}):\n", toolbox.children.len());
    for (name, tools) in &toolbox.children {
        let Some(tool) = toolbox.registry.get(name) else {
            continue;
        };
        out.push_str(&listed.line(tool.as_ref()));
        let given = match tools.is_empty() {
            true => "no tools".to_owned(),
            false => tools.join(", "),
        };
        out.push_str(&format!("  {:width$}    tools: {given}\n", ""));
    }
    out
}

/// How the listing's lines are laid out and marked.
struct Listed<'a> {
    width: usize,
    /// The tools whose schemas the first request leaves out.
    deferred: &'a [String],
}

impl Listed<'_> {
    fn line(&self, tool: &dyn Tool) -> String {
        let mut mark = String::new();
        if self.deferred.iter().any(|d| d == tool.name()) {
            mark.push_str("[deferred] ");
        }
        if tool.capabilities().refused_when_armed() {
            mark.push_str(ARMED_MARK);
            mark.push(' ');
        }
        format!(
            "  {:width$}  {mark}{}\n",
            tool.name(),
            first_sentence(tool.description()),
            width = self.width,
        )
    }
}
