//! `mecha hooks`: the configured hooks, and `mecha hooks test`, which runs
//! the matching ones on a sample so a guard can be tried without a model.

use std::path::Path;

use clap::{Args, Subcommand};
use mecha_hooks::{Decision, HookContext, HookEvent, HookRun, Verdicts};

use crate::Failure;
use crate::config::Settings;
use crate::terminal::printable;

#[derive(Args, Debug)]
pub struct HooksArgs {
    #[command(subcommand)]
    command: Option<HooksCommand>,
}

#[derive(Subcommand, Debug)]
enum HooksCommand {
    /// Run the hooks an event would run, on a sample; exits 1 when they
    /// block or ask.
    Test(TestArgs),
}

#[derive(Args, Debug)]
struct TestArgs {
    /// The event (only pre_tool can be tried so far).
    event: String,
    /// The tool name the matchers see.
    #[arg(long, value_name = "NAME")]
    tool: String,
    /// The tool's input, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    input: String,
}

pub fn run(args: HooksArgs, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    match args.command {
        None => {
            crate::output::out(&printable(&list(&settings)));
            Ok(0)
        }
        Some(HooksCommand::Test(test)) => try_hooks(test, &settings, workspace),
    }
}

fn list(settings: &Settings) -> String {
    let lines = settings.hooks.describe();
    if lines.is_empty() {
        return format!(
            "no hooks configured (add [[hook]] tables to {})\n",
            settings.global_file.display()
        );
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn try_hooks(args: TestArgs, settings: &Settings, workspace: &Path) -> Result<u8, Failure> {
    let event: HookEvent = serde_json::from_value(serde_json::Value::String(args.event.clone()))
        .map_err(|_| {
            Failure::Usage(format!(
                "unknown hook event `{}`: use pre_tool, post_tool, user_prompt, stop or \
                 session_start",
                args.event
            ))
        })?;
    if event != HookEvent::PreTool {
        return Err(Failure::Usage(format!(
            "`mecha hooks test` can run pre_tool hooks only so far, not {event}"
        )));
    }
    let input: serde_json::Value = serde_json::from_str(&args.input).map_err(|e| {
        Failure::Usage(format!(
            "--input is not JSON ({e}); pass the tool's input as an object, e.g. \
             '{{\"command\": \"ls\"}}'"
        ))
    })?;
    let at = HookContext {
        session_id: "test".to_owned(),
        cwd: workspace.to_path_buf(),
        permission_mode: settings.permission_mode.as_str().to_owned(),
    };
    let runtime = crate::runtime()?;
    let verdicts = runtime.block_on(settings.hooks.pre_tool(&at, &args.tool, &input, "test"));
    crate::output::out(&printable(&report(&verdicts, &args.tool)));
    Ok(u8::from(verdicts.decision != Decision::Pass))
}

fn report(verdicts: &Verdicts, tool: &str) -> String {
    let mut out = String::new();
    if verdicts.each.is_empty() {
        out.push_str(&format!("no pre_tool hook matches tool `{tool}`\n"));
    }
    for run in &verdicts.each {
        out.push_str(&one(run));
    }
    for message in &verdicts.system_messages {
        out.push_str(&format!("message: {message}\n"));
    }
    out.push_str(&format!("decision: {}\n", shown(&verdicts.decision)));
    out
}

fn one(run: &HookRun) -> String {
    let mut line = format!(
        "hook {}: {} ({} ms)\n",
        run.command,
        shown(&run.decision),
        run.elapsed.as_millis()
    );
    if let Some(failure) = &run.failure {
        line.push_str(&format!("  it failed: {failure}\n"));
    }
    line
}

fn shown(decision: &Decision) -> String {
    match decision {
        Decision::Pass => "pass (no objection)".to_owned(),
        Decision::Block(reason) => format!("block: {reason}"),
        Decision::Ask(reason) => format!("ask: {reason}"),
    }
}
