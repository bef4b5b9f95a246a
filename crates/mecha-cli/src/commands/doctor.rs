//! `mecha doctor`: what could break a run, checked before one, each with
//! how to fix it. One line per check: `ok`, `warning` or `problem`; exits 1
//! when there is a problem. Every check is the one a run makes (config
//! loading, `mecha_provider::build`, `Sandbox::start`, the MCP hub's
//! start-up, the skill store's loading, hook compilation); nothing here
//! checks on its own. Talks to the model and the `[[search]]` backends
//! only with `--online`.

use std::path::Path;

use clap::Args;
use mecha_core::{FALLBACK_TURN_BUDGET, Message, Registry, ToolCtx};
use mecha_mcp::{McpHub, ServerState, SpawnOptions};
use mecha_provider::Request;
use mecha_sandbox::Sandbox;
use mecha_tools::BackendSpec;

use crate::Failure;
use crate::config::{ConfigError, Settings};
use crate::output::outln;
use crate::skills::{Selection, SkillFlags};
use crate::terminal::printable;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Also send the provider one tiny request, to see that it answers.
    #[arg(long)]
    online: bool,
}

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    Warning,
    Problem,
}

/// The lines so far, and whether any is a problem.
#[derive(Default)]
struct Report {
    problems: usize,
}

impl Report {
    fn line(&mut self, verdict: Verdict, check: &str, text: &str) {
        let label = match verdict {
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Problem => {
                self.problems += 1;
                "problem"
            }
        };
        // Server names, reasons and file contents are outside text.
        outln!("{label:<8} {check}: {}", printable(text));
    }
}

pub fn run(
    args: &DoctorArgs,
    loaded: Result<Settings, ConfigError>,
    workspace: &Path,
) -> Result<u8, Failure> {
    let mut report = Report::default();
    let settings = match loaded {
        Ok(settings) => settings,
        Err(e) => {
            report.line(
                Verdict::Problem,
                "config",
                &format!("{e}\n         fix it, then run `mecha doctor` again"),
            );
            report.line(
                Verdict::Warning,
                "other checks",
                "skipped: they need the configuration to load",
            );
            return Ok(1);
        }
    };
    config(&mut report, &settings);
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        provider(&mut report, &settings, args.online).await;
        let sandbox = sandbox(&mut report, &settings);
        let hub = mcp(&mut report, &settings, workspace, sandbox).await;
        search(&mut report, &settings, hub.as_ref(), workspace, args.online).await;
        if let Some(hub) = hub {
            hub.shutdown();
        }
    });
    runtime.shutdown_background();
    skills(&mut report, &settings);
    hooks(&mut report, &settings);
    checkpoints(&mut report, &settings)?;
    Ok(u8::from(report.problems > 0))
}

/// How much the workspace checkpoints take (they are kept until pruned),
/// and whether runs take them.
fn checkpoints(report: &mut Report, settings: &Settings) -> Result<(), Failure> {
    let store = crate::rewind::store()?;
    let (bytes, files) = store.size();
    let taken = match settings.checkpoint.enabled {
        true => "",
        false => " (off: runs take none, `[checkpoint] enabled = false`)",
    };
    report.line(
        Verdict::Ok,
        "checkpoints",
        &format!(
            "{} in {files} files at {}{taken}; free what no session needs with `mecha rewind \
             --prune`",
            mecha_core::human_size(bytes),
            store.root().display()
        ),
    );
    Ok(())
}

fn config(report: &mut Report, settings: &Settings) {
    let mut files = vec![shown(&settings.global_file)];
    if let Some(project) = &settings.project_file {
        files.push(shown(project));
    }
    report.line(Verdict::Ok, "config", &files.join(", "));
    for warning in &settings.warnings {
        report.line(Verdict::Warning, "config", warning);
    }
}

fn shown(path: &Path) -> String {
    match path.is_file() {
        true => format!("{} parses", path.display()),
        false => format!("{} (absent: defaults)", path.display()),
    }
}

async fn provider(report: &mut Report, settings: &Settings, online: bool) {
    let env = |name: &str| std::env::var(name).ok();
    let provider = match mecha_provider::build(&settings.provider, &env) {
        Ok(provider) => provider,
        Err(e) => {
            report.line(Verdict::Problem, "provider", &e.to_string());
            return;
        }
    };
    let key = mecha_provider::resolve(&settings.provider, &env)
        .ok()
        .and_then(|r| r.key_env.map(|name| (name, r.key_set)));
    let key = match key {
        Some((name, true)) => format!("; key from {name} (set)"),
        Some((name, false)) => format!("; no key: {name} is not set"),
        None => String::new(),
    };
    let described = format!("{}{key}", provider.describe());
    if !online {
        report.line(
            Verdict::Ok,
            "provider",
            &format!("{described} (not contacted: --online sends one tiny request)"),
        );
        return;
    }
    let messages = [Message::user_text("Reply with the single word: ok")];
    let request = Request {
        system: "",
        tools: &[],
        messages: &messages,
        era: None,
    };
    match provider.complete(request, &mut |_| {}).await {
        Ok(response) => report.line(
            Verdict::Ok,
            "provider",
            &format!(
                "{described}; answered ({} tokens in, {} out)",
                response.usage.input_tokens, response.usage.output_tokens
            ),
        ),
        Err(e) => report.line(Verdict::Problem, "provider", &format!("{described}: {e}")),
    }
}

/// The sandbox as a run starts it (for bwrap, one confined `true`).
fn sandbox(report: &mut Report, settings: &Settings) -> Option<Sandbox> {
    if settings.sandbox.kind.is_none() {
        report.line(
            Verdict::Ok,
            "sandbox",
            "none configured: shell commands run unconfined ([sandbox] kind turns it on)",
        );
        return None;
    }
    match Sandbox::start(&settings.sandbox, crate::wiring::host_env()) {
        Ok(sandbox) => {
            let described = sandbox.as_ref().map(Sandbox::describe).unwrap_or_default();
            report.line(Verdict::Ok, "sandbox", &format!("{described} works"));
            sandbox
        }
        Err(e) => {
            report.line(Verdict::Problem, "sandbox", &e.to_string());
            None
        }
    }
}

/// Every server started as a run starts them, with the hub's time limit;
/// the hub is handed back still running, for the search check's `mcp`
/// backends.
async fn mcp(
    report: &mut Report,
    settings: &Settings,
    workspace: &Path,
    sandbox: Option<Sandbox>,
) -> Option<McpHub> {
    if settings.mcp.is_empty() {
        report.line(Verdict::Ok, "mcp", "no servers configured");
        return None;
    }
    let options = match crate::wiring::spawn_options(settings, workspace, sandbox.as_ref()) {
        Ok(options) => options,
        Err(failure) => {
            report.line(Verdict::Problem, "mcp", &failure.to_string());
            return None;
        }
    };
    unconfined_in_workspace(report, settings, &options);
    let hub = McpHub::start(settings.mcp.iter().map(|s| s.config.clone()), &options).await;
    for status in hub.statuses() {
        let source = settings
            .mcp
            .iter()
            .find(|s| s.config.name == status.name)
            .map_or("", |s| s.source.as_str());
        match &status.state {
            ServerState::Ready { tools, .. } => report.line(
                Verdict::Ok,
                "mcp",
                &format!(
                    "`{}` ({source}) started: {} tools",
                    status.name,
                    tools.len()
                ),
            ),
            ServerState::Failed { stderr_tail, .. } => {
                let last = match stderr_tail.last() {
                    Some(line) => format!("; the last line it wrote to stderr: `{line}`"),
                    None => String::new(),
                };
                report.line(
                    Verdict::Problem,
                    "mcp",
                    &format!(
                        "{status} (configured in {source}{last}; `mecha mcp check {}` quotes \
                         more of its stderr)",
                        status.name
                    ),
                );
            }
        }
    }
    Some(hub)
}

/// Each `[[search]]` backend: its key and its MCP tool present, and with
/// `--online` one query ("mecha doctor") to every backend, not only the
/// first, so a broken fallback shows before it is needed.
async fn search(
    report: &mut Report,
    settings: &Settings,
    hub: Option<&McpHub>,
    workspace: &Path,
    online: bool,
) {
    let Some(config) = &settings.search else {
        report.line(
            Verdict::Ok,
            "search",
            "no [[search]] backend: web_search and web_open are absent",
        );
        return;
    };
    let mut registry = Registry::new();
    if let Some(hub) = hub {
        // A name conflict is the mcp check's to report; the tools that
        // did register are still found.
        let _ = hub.register_into(&mut registry);
    }
    for (i, entry) in config.backends.iter().enumerate() {
        let (n, backend) = (i + 1, &entry.spec);
        let key = backend.key_variable();
        if let Some(variable) = key.filter(|v| std::env::var_os(v).is_none_or(|k| k.is_empty())) {
            report.line(
                Verdict::Problem,
                "search",
                &format!("{n}. {backend}: ${variable} is not set; export the API key there"),
            );
        }
        if let BackendSpec::Mcp { tool } = backend
            && !registry.contains(tool)
        {
            report.line(
                Verdict::Problem,
                "search",
                &format!(
                    "{n}. {backend}: no MCP server offers `{tool}`; check the name against \
                     `mecha tools`"
                ),
            );
        }
    }
    if !online {
        let chain = mecha_tools::describe_chain(&config.backends).join(", ");
        report.line(
            Verdict::Ok,
            "search",
            &format!("{chain} (not contacted: --online sends each one query)"),
        );
        return;
    }
    let found = |name: &str| registry.get(name).cloned();
    let (web_search, _) = match mecha_tools::web_tools(config.clone(), &found) {
        Ok(tools) => tools,
        Err(e) => {
            report.line(Verdict::Problem, "search", &e);
            return;
        }
    };
    let ctx = match ToolCtx::new(workspace, FALLBACK_TURN_BUDGET) {
        Ok(ctx) => ctx,
        Err(e) => {
            report.line(Verdict::Problem, "search", &format!("no tool context: {e}"));
            return;
        }
    };
    for (i, (backend, verdict)) in web_search
        .probe("mecha doctor", &ctx)
        .await
        .into_iter()
        .enumerate()
    {
        match verdict {
            Ok(n) => report.line(
                Verdict::Ok,
                "search",
                &format!("{}. {backend}: answered with {n} results", i + 1),
            ),
            Err(why) => report.line(
                Verdict::Problem,
                "search",
                &format!("{}. {backend}: {why}", i + 1),
            ),
        }
    }
}

/// A server that runs unconfined from a program or script in the
/// workspace runs, at its next start, whatever a command changed there.
/// mecha keeps those files read-only to its own writers, but not to the
/// user's editor or to a build step, and not to code the program loads by
/// other means (a module next to it).
fn unconfined_in_workspace(report: &mut Report, settings: &Settings, options: &SpawnOptions) {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let workspace = canonical(&options.workspace);
    for server in &settings.mcp {
        let inside: Vec<String> = mecha_mcp::unconfined_programs(&server.config, options)
            .into_iter()
            .filter(|path| canonical(path).starts_with(&workspace))
            .map(|path| path.display().to_string())
            .collect();
        if !inside.is_empty() {
            report.line(
                Verdict::Warning,
                "mcp",
                &format!(
                    "`{}` runs unconfined from the workspace ({}): mecha keeps these read-only to \
                     its tools and the sandbox, but code they load from beside them is not covered; \
                     install the server outside the workspace, or set `sandbox = true` for it",
                    server.config.name,
                    inside.join(", ")
                ),
            );
        }
    }
}

fn skills(report: &mut Report, settings: &Settings) {
    let mut selection = Selection::load(&settings.skills, &SkillFlags::default());
    selection.narrow_to_tools(&settings.tool_filter(false));
    if let Some(why) = &selection.unreadable {
        report.line(Verdict::Problem, "skills", why);
        return;
    }
    report.line(
        Verdict::Ok,
        "skills",
        &format!(
            "{} loaded from {}, {} carried",
            selection.carried.len() + selection.withheld.len(),
            settings.skills.dir.display(),
            selection.carried.len()
        ),
    );
    for (skill, why) in &selection.withheld {
        report.line(
            Verdict::Ok,
            "skills",
            &format!("`{}` is withheld: {why}", skill.name),
        );
    }
    for failure in &selection.failures {
        report.line(Verdict::Problem, "skills", &failure.to_string());
    }
    for warning in &selection.warnings {
        report.line(Verdict::Warning, "skills", warning);
    }
}

/// Each hook that a run would refuse is a problem; the rest are checked.
fn hooks(report: &mut Report, settings: &Settings) {
    let problems = settings.hooks.problems();
    for problem in &problems {
        report.line(Verdict::Problem, "hooks", problem);
    }
    let hooks = settings.hooks.usable().describe();
    if hooks.is_empty() && problems.is_empty() {
        report.line(Verdict::Ok, "hooks", "none configured");
    }
    for hook in hooks {
        report.line(
            Verdict::Ok,
            "hooks",
            &format!(
                "{} matcher={}: {} exists and is executable",
                hook.event, hook.matcher, hook.command
            ),
        );
    }
}
