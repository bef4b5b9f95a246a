//! `mecha hooks`: the configured hooks, and `mecha hooks test`, which runs
//! the matching ones on a sample so a guard can be tried without a model.

use std::path::Path;
use std::sync::Mutex;

use clap::{Args, Subcommand};
use mecha_agent::{Event, EventSink};
use mecha_hooks::{Decision, HookContext, HookEvent};
use serde_json::{Value, json};

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
    /// The event: pre_tool, post_tool, user_prompt, stop or session_start.
    event: String,
    /// The tool name the matchers see (pre_tool, post_tool).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// The tool's input, a JSON object (pre_tool, post_tool).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    input: String,
    /// The call's result, as the model would get it (post_tool).
    #[arg(long, value_name = "TEXT", default_value = "")]
    response: String,
    /// The prompt (user_prompt).
    #[arg(long, value_name = "TEXT", default_value = "")]
    prompt: String,
    /// The model's answer (stop).
    #[arg(long, value_name = "TEXT", default_value = "")]
    answer: String,
    /// Why the session starts (session_start): startup or resume.
    #[arg(long, value_name = "SOURCE", default_value = "startup")]
    source: String,
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
    let lines = settings.hooks.usable().describe();
    if lines.is_empty() && !settings.hooks.problems().is_empty() {
        return "no hook can run: each is named in a warning, with its fix\n".to_owned();
    }
    if lines.is_empty() {
        return format!(
            "no hooks configured (add [[hook]] tables to {})\n",
            settings.global_file.display()
        );
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn try_hooks(args: TestArgs, settings: &Settings, workspace: &Path) -> Result<u8, Failure> {
    let event: HookEvent =
        serde_json::from_value(Value::String(args.event.clone())).map_err(|_| {
            Failure::Usage(format!(
                "unknown hook event `{}`: use pre_tool, post_tool, user_prompt, stop or \
             session_start",
                args.event
            ))
        })?;
    let at = HookContext {
        session_id: "test".to_owned(),
        cwd: workspace.to_path_buf(),
        permission_mode: settings.permission_mode.as_str().to_owned(),
    };
    let set = settings.hooks.usable();
    let runtime = crate::runtime()?;
    let (verdicts, call) = match event {
        HookEvent::PreTool | HookEvent::PostTool => {
            let Some(tool) = args.tool.as_deref() else {
                return Err(Failure::Usage(format!(
                    "{event} hooks judge a tool call: name the tool with --tool NAME"
                )));
            };
            let input = tool_input(&args.input)?;
            let verdicts = if event == HookEvent::PreTool {
                runtime.block_on(set.pre_tool(&at, tool, &input, "test"))
            } else {
                let response = json!({"content": args.response, "is_error": false});
                runtime.block_on(set.post_tool(&at, tool, &input, "test", &response))
            };
            (verdicts, Some(tool))
        }
        HookEvent::UserPrompt => (runtime.block_on(set.user_prompt(&at, &args.prompt)), None),
        HookEvent::Stop => (runtime.block_on(set.stop(&at, false, &args.answer)), None),
        HookEvent::SessionStart => {
            if !matches!(args.source.as_str(), "startup" | "resume") {
                return Err(Failure::Usage(format!(
                    "--source `{}`: a session starts at startup or resume",
                    args.source
                )));
            }
            (runtime.block_on(set.session_start(&at, &args.source)), None)
        }
    };
    let lines = Lines::default();
    crate::hooks::report(&lines, event, call.map(|tool| (tool, "test")), &verdicts);
    let mut out = String::new();
    if verdicts.each.is_empty() {
        let matching = call
            .map(|t| format!(" matches tool `{t}`"))
            .unwrap_or_default();
        out.push_str(&format!("no {event} hook{matching}\n"));
    }
    for line in lines.0.lock().map(|l| l.clone()).unwrap_or_default() {
        out.push_str(&format!("{line}\n"));
    }
    for context in &verdicts.contexts {
        out.push_str(&format!("context for the model:\n{context}\n"));
    }
    out.push_str(&format!("decision: {}\n", shown(&verdicts.decision)));
    crate::output::out(&printable(&out));
    Ok(u8::from(verdicts.decision != Decision::Pass))
}

fn tool_input(text: &str) -> Result<Value, Failure> {
    serde_json::from_str(text).map_err(|e| {
        Failure::Usage(format!(
            "--input is not JSON ({e}); pass the tool's input as an object, e.g. \
             '{{\"command\": \"ls\"}}'"
        ))
    })
}

/// Each hook's line, as a run would show it.
#[derive(Default)]
struct Lines(Mutex<Vec<String>>);

impl EventSink for Lines {
    fn emit(&self, event: Event) {
        if let (Some(line), Ok(mut lines)) = (event.hook_line(), self.0.lock()) {
            lines.push(line);
        }
    }
}

fn shown(decision: &Decision) -> String {
    match decision {
        Decision::Pass => "pass (no objection)".to_owned(),
        Decision::Block(reason) => format!("block: {reason}"),
        Decision::Ask(reason) => format!("ask: {reason}"),
    }
}
