//! Turning settings into concrete tools, MCP servers, a provider and an
//! agent. The only place that names them: the toolbox here, the agent
//! around it in `agent.rs`.

mod agent;
mod protected;
mod servers;
mod subagents;

pub use agent::{Asking, Start, Started, build_agent};
pub use protected::spawn_options;
pub use servers::{ServerStart, Servers};
pub use subagents::register_subagents;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_agent::ToolRefresh;
use mecha_core::{Forced, ForcedCapabilities, Registry, Rules, Tool};
use mecha_mcp::{McpHub, NameConflict};
use mecha_sandbox::{HostEnv, Sandbox};
use mecha_skills::{Skill, SkillTool};

use crate::Failure;
use crate::config::{Settings, ToolFilter};
use crate::skills::{Selection, SkillFlags};
use crate::terminal::printable;

/// The tools of a run and the MCP servers behind some of them.
pub struct Toolbox {
    pub registry: Registry,
    /// The MCP servers behind some of those tools, if any are configured.
    pub servers: Option<Servers>,
    /// What survives narrowing, for tools announced later.
    pub filter: ToolFilter,
    /// The `[[rule]]`s, compiled, and checked against the tools.
    pub rules: Rules,
    /// What confines the shell and sandboxed servers; `None` is unconfined.
    pub sandbox: Option<Sandbox>,
    /// The store sorted out for this run: carried, withheld, failed.
    pub skills: Selection,
    /// The skill tool as registered (absent when no skill is carried), for
    /// asking what this run carries.
    pub skill_tool: Option<Arc<SkillTool>>,
    /// What config forces on tools, for tools announced later.
    pub forcing: Forcing,
    /// Every tool before narrowing (forced), which decides what a
    /// subagent's profile is as configured.
    pub unnarrowed: Registry,
    /// Each registered subagent's tools, as its child got them.
    pub children: BTreeMap<String, Vec<String>>,
    /// `[tools] defer_schemas_over_bytes`, `None` when schemas never wait.
    pub defer_over: Option<usize>,
}

impl Toolbox {
    /// The tools the first request sends without their schemas, if any.
    pub fn deferred(&self) -> Option<mecha_agent::Deferred> {
        mecha_agent::deferred(&self.registry, self.defer_over?)
    }
}

/// Capabilities config forces onto tools by name (`[tools.NAME] force`,
/// `distrust_workspace`), put on each tool as it joins the run: at start,
/// and again when an MCP server's list changes.
#[derive(Debug, Clone, Default)]
pub struct Forcing(BTreeMap<String, ForcedCapabilities>);

impl Forcing {
    /// What config forces on the tool of this name, if anything.
    pub fn of(&self, name: &str) -> Option<ForcedCapabilities> {
        self.0.get(name).copied()
    }

    pub(crate) fn apply(&self, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        match self.of(tool.name()) {
            Some(forced) => Forced::wrap(tool, forced),
            None => tool,
        }
    }

    /// `registry` with every tool forced as config says.
    fn registry(&self, registry: &Registry) -> Result<Registry, Failure> {
        let mut forced = registry.emptied();
        for tool in registry.iter() {
            forced
                .register(self.apply(Arc::clone(tool)))
                .map_err(|e| Failure::Run(anyhow::Error::new(e)))?;
        }
        Ok(forced)
    }
}

impl Toolbox {
    /// The skills the run carries: none when the skill tool did not survive
    /// narrowing (they are withheld then), or the model would be told of
    /// skills it cannot load.
    pub fn carried_skills(&self) -> &[Skill] {
        &self.skills.carried
    }

    /// The hub of the run's MCP servers, if any are configured.
    pub fn hub(&self) -> Option<&Arc<McpHub>> {
        self.servers.as_ref().map(|s| &s.hub)
    }

    /// Stops every MCP server now rather than whenever the last tool is
    /// dropped.
    pub fn shutdown(&self) {
        if let Some(servers) = &self.servers {
            servers.shutdown();
        }
    }
}

/// The machine as the sandbox sees it, with its sweep's record of the
/// repositories confined commands made kept in mecha's home (which every
/// job sees read-only), so that every mecha process's sweeps share it, and
/// this binary as the bridge an `allow_hosts` job reaches the proxy by.
pub fn host_env() -> HostEnv {
    let host = HostEnv::current().bridged_by_this_executable();
    match crate::config::mecha_home() {
        Ok(home) => host.keeping_records_in(home.join("sandbox")),
        Err(_) => host,
    }
}

/// The store of staged outbox items.
pub fn outbox_store() -> Result<mecha_unattended::outbox::OutboxStore, Failure> {
    Ok(mecha_unattended::outbox::OutboxStore::new(
        crate::config::mecha_home()?.join("outbox"),
    ))
}

/// Each `[[outbox]]` action as a tool that stages its calls, filed under
/// `session` (the run's stored session; its subagents share it).
pub fn outbox_tools(settings: &Settings, session: Option<&str>) -> Vec<Arc<dyn Tool>> {
    if settings.outbox.is_empty() {
        return Vec::new();
    }
    let Ok(store) = outbox_store() else {
        return Vec::new();
    };
    let store = Arc::new(store);
    settings
        .outbox
        .iter()
        .map(|action| {
            let tool = mecha_unattended::outbox::OutboxTool::new(
                action.clone(),
                Arc::clone(&store),
                session.map(str::to_owned),
            );
            Arc::new(tool) as Arc<dyn Tool>
        })
        .collect()
}

/// Every built-in (with `session_tools`, the built-ins that depend on the
/// session: `compact`, `recall`, and the terminal UI's `ask_user`) and every MCP tool (the servers start
/// concurrently, or are kept from the last conversation: see
/// [`Servers::start`]), narrowed by config and `flags`. A server that fails
/// is reported on stderr when `servers.report` is set, and its tools are
/// simply absent.
pub async fn build_toolbox(
    settings: &mut Settings,
    flags: &[String],
    skills: &SkillFlags,
    plan: bool,
    workspace: &Path,
    servers: ServerStart,
    session_tools: Vec<Arc<dyn Tool>>,
) -> Result<Toolbox, Failure> {
    // Checked against the machine before anything runs: a sandbox that
    // cannot be honoured stops the run rather than leaving it unconfined.
    let sandbox = Sandbox::start_checking(&settings.sandbox, host_env(), servers.check)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    settings.builtins.shell.sandbox = sandbox.clone();
    let mut registry = Registry::new();
    for tool in mecha_tools::builtin_tools(&settings.builtins)
        .into_iter()
        .chain(session_tools)
    {
        registry
            .register(tool)
            .map_err(|e| Failure::Run(anyhow::Error::new(e)))?;
    }
    // A skill that did not load is said at every start, by name and
    // reason: silently absent looks like a skill the model did not choose.
    let mut skills = Selection::load(&settings.skills, skills);
    if servers.report {
        for line in skills.report_lines() {
            crate::output::once(&printable(&line));
        }
    }
    let mut skill_tool =
        (!skills.carried.is_empty()).then(|| Arc::new(SkillTool::new(skills.carried.clone())));
    if let Some(tool) = &skill_tool {
        let tool: Arc<dyn Tool> = Arc::clone(tool) as Arc<dyn Tool>;
        registry
            .register(tool)
            .map_err(|e| Failure::Run(anyhow::Error::new(e)))?;
    }
    let options = protected::spawn_options(settings, workspace, sandbox.as_ref())?;
    let servers = Servers::start(settings, options, servers).await;
    if let Some(servers) = &servers {
        servers
            .hub
            .register_into(&mut registry)
            .map_err(|conflict| Failure::Usage(conflict.to_string()))?;
    }
    let forcing = Forcing(settings.forcing());
    register_web_tools(settings, &forcing, &mut registry)?;
    check_names(settings, flags, &registry)?;
    subagents::check_profiles(settings, &registry)?;
    let mut registry = forcing.registry(&registry)?;
    let unnarrowed = registry.clone();
    let rules = Rules::compile(&settings.rules).map_err(|e| Failure::Usage(e.to_string()))?;
    warn_unmatched_rules(settings, &rules, &registry);
    settings.apply_tool_flags(flags);
    let filter = settings.tool_filter(plan);
    registry.retain(|t| filter.keeps(t));
    if !registry.contains(SkillTool::NAME) {
        skills.without_skill_tool();
        skill_tool = None;
    }
    Ok(Toolbox {
        registry,
        servers,
        filter,
        rules,
        sandbox,
        forcing,
        skills,
        skill_tool,
        unnarrowed,
        children: BTreeMap::new(),
        defer_over: settings.defer_schemas.over_bytes(),
    })
}

/// The tools `[[search]]` brings.
const WEB_TOOLS: [&str; 2] = ["web_search", "web_open"];

/// `web_search` and `web_open`, when `[[search]]` names a backend. An
/// `mcp` backend calls its tool as config forces it, so what is forced on
/// the tool is forced on the search through it.
fn register_web_tools(
    settings: &Settings,
    forcing: &Forcing,
    registry: &mut Registry,
) -> Result<(), Failure> {
    let Some(search) = settings.search.clone() else {
        return Ok(());
    };
    let found = |name: &str| registry.get(name).map(|t| forcing.apply(Arc::clone(t)));
    let (web_search, web_open) =
        mecha_tools::web_tools(search, &found).map_err(|e| Failure::Run(anyhow::anyhow!(e)))?;
    for tool in [Arc::new(web_search) as Arc<dyn Tool>, Arc::new(web_open)] {
        registry
            .register(tool)
            .map_err(|e| Failure::Run(anyhow::Error::new(e)))?;
    }
    Ok(())
}

/// A `[[rule]]` whose `tool` matches no tool (before narrowing: a rule for
/// a disabled tool is no typo) is most likely misspelt, and a misspelt
/// forbid protects nothing. Warned about, like `[tools]` names.
fn warn_unmatched_rules(settings: &Settings, rules: &Rules, registry: &Registry) {
    let names: Vec<&str> = registry.names().chain(profile_names(settings)).collect();
    for pattern in rules.unmatched_tools(&names) {
        if of_a_server(settings, pattern) {
            crate::output::warning(&format!(
                "a [[rule]] names `{pattern}`, which its MCP server did not offer"
            ));
        } else {
            crate::output::warning(&format!(
                "a [[rule]] names `{pattern}`, which matches no tool; check the spelling (the \
                 tools are: {})",
                names.join(", ")
            ));
        }
    }
}

/// The `[[subagent]]` profiles, which become tools only once the others
/// are narrowed, and count as tools for every check of names before.
fn profile_names(settings: &Settings) -> impl Iterator<Item = &str> {
    settings.subagents.iter().map(|p| p.name())
}

/// Whether `name` is in the namespace of a configured MCP server.
fn of_a_server(settings: &Settings, name: &str) -> bool {
    settings
        .mcp
        .iter()
        .any(|s| name.starts_with(&format!("{}__", s.config.name)))
}

/// `--tool` must name a tool that exists (or belongs to a configured MCP
/// server that did not start); names in config that match nothing are
/// worth a warning, so a typo does not pass for a deliberate narrowing.
fn check_names(settings: &Settings, flags: &[String], registry: &Registry) -> Result<(), Failure> {
    // The skill tool is registered only when a skill is carried; its name
    // is no typo when none is.
    let exists = |name: &str| {
        registry.contains(name)
            || name == SkillTool::NAME
            || profile_names(settings).any(|p| p == name)
    };
    let of_a_server = |name: &str| of_a_server(settings, name);
    let known = || {
        registry
            .names()
            .chain(profile_names(settings))
            .chain([SkillTool::NAME])
    };
    let meant = |name: &str| match mecha_core::closest(name, known()) {
        _ if WEB_TOOLS.contains(&name) && settings.search.is_none() => {
            " (web_search and web_open exist only when a [[search]] backend is configured in \
             config.toml)"
                .to_owned()
        }
        Some(meant) => format!(" (did you mean `{meant}`?)"),
        None => String::new(),
    };
    let typos: Vec<String> = flags
        .iter()
        .filter(|n| !exists(n) && !of_a_server(n))
        .map(|n| format!("{n}{}", meant(n)))
        .collect();
    if !typos.is_empty() {
        let known: Vec<&str> = registry.names().chain(profile_names(settings)).collect();
        return Err(Failure::Usage(format!(
            "--tool names no such tool: {}; the tools are: {}",
            typos.join(", "),
            known.join(", ")
        )));
    }
    // A misspelt `force` distrusts nothing, so it is named too.
    for name in settings.forced.keys().filter(|n| !exists(n)) {
        let why = if of_a_server(name) {
            "its MCP server did not offer it".to_owned()
        } else {
            format!(
                "there is no tool of that name; check the spelling{}",
                meant(name)
            )
        };
        crate::output::warning(&format!(
            "[tools.{name}] forces capabilities on `{name}`, which is not \
             available: {why}"
        ));
    }
    let configured = settings
        .tools_enabled
        .iter()
        .flatten()
        .chain(&settings.tools_disabled)
        .chain(flags);
    for name in configured.filter(|n| !exists(n)) {
        if of_a_server(name) {
            crate::output::warning(&format!(
                "`{name}` is not available: its MCP server did not offer it"
            ));
        } else {
            crate::output::warning(&format!(
                "[tools] names `{name}`, which is no tool; check the \
                 spelling{}",
                meant(name)
            ));
        }
    }
    Ok(())
}

/// Replaces the MCP tools when a server says its list changed, keeping the
/// run's narrowing.
struct McpRefresh {
    hub: Arc<McpHub>,
    filter: ToolFilter,
    forcing: Forcing,
    /// The MCP tool names in the registry now.
    current: Mutex<BTreeSet<String>>,
}

#[async_trait]
impl ToolRefresh for McpRefresh {
    async fn refresh(&self, registry: &Registry) -> Option<Registry> {
        let tools = self.hub.take_changed().await?;
        let Ok(mut current) = self.current.lock() else {
            return None;
        };
        let mut next = registry.clone();
        next.retain(|t| !current.contains(t.name()));
        let mut names = BTreeSet::new();
        // Forced first: a forced destructive is not read-only, which a
        // planning run's filter asks.
        let tools = tools.into_iter().map(|t| self.forcing.apply(t));
        for tool in tools.filter(|t| self.filter.keeps(t.as_ref())) {
            let name = tool.name().to_owned();
            match next.register(tool) {
                Ok(()) => {
                    names.insert(name);
                }
                // Reported like a server that failed to start: a tool that
                // is silently absent looks like the server's own doing.
                Err(e) => {
                    let server = self.hub.origin(&e.name).map(|o| o.server);
                    let conflict =
                        NameConflict::with_registered(&e.name, server.as_deref().unwrap_or("?"));
                    eprintln!("mecha: the changed tool list is not taken in whole: {conflict}");
                }
            }
        }
        *current = names;
        Some(next)
    }
}
