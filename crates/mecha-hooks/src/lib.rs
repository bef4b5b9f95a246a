//! Hooks: the user's policy programs at the gate, speaking the JSON
//! contract Claude Code's (and Codex's) hook scripts already use.
//!
//! A hook only narrows: `deny` or exit 2 blocks, `ask` wants a fresh human
//! decision, and `allow` is "no objection" (the rules and the approver
//! still run). A hook that breaks follows its `on_error`, which blocks by
//! default: a guard that fails must not open the gate.

mod config;
mod run;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use config::Hook;
pub use config::{DEFAULT_TIMEOUT_S, HookConfig, HookError, HookEvent, OnError};

/// The hooks of a run, checked: every matcher compiled, every command found.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    hooks: Vec<Hook>,
}

/// Where and for whom a hook runs.
#[derive(Debug, Clone)]
pub struct HookContext {
    pub session_id: String,
    /// The workspace: the hook's working directory and `MECHA_PROJECT_DIR`.
    pub cwd: PathBuf,
    pub permission_mode: String,
}

/// What the hooks of one event decided together, or one hook alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No objection (which is not an approval).
    Pass,
    /// Refused, with the reason the model is told.
    Block(String),
    /// A person must decide afresh, for this reason.
    Ask(String),
}

/// One hook's run.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// As configured, to name the hook.
    pub command: String,
    pub decision: Decision,
    /// Its `systemMessage`, for the user.
    pub system_message: Option<String>,
    /// What went wrong, when it broke (crash, timeout, bad output); then
    /// `decision` is what its `on_error` made of it.
    pub failure: Option<String>,
    pub elapsed: Duration,
}

/// The verdicts of every hook that ran for one event.
#[derive(Debug, Clone)]
pub struct Verdicts {
    /// Combined: any `Block` wins, then any `Ask`, else `Pass`.
    pub decision: Decision,
    pub system_messages: Vec<String>,
    /// In config order.
    pub each: Vec<HookRun>,
}

/// A configured hook as `mecha hooks` lists it.
#[derive(Debug, Clone)]
pub struct HookLine {
    pub event: HookEvent,
    /// `*` when it matches every tool.
    pub matcher: String,
    pub command: String,
    pub timeout_s: u64,
    pub on_error: OnError,
}

impl fmt::Display for HookLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}  matcher={}  command={}  timeout={}s  on_error={}",
            self.event, self.matcher, self.command, self.timeout_s, self.on_error
        )
    }
}

impl HookSet {
    /// Checks every `[[hook]]`; `config_dir` anchors relative commands.
    pub fn compile(configs: &[HookConfig], config_dir: &Path) -> Result<Self, HookError> {
        let hooks = configs
            .iter()
            .enumerate()
            .map(|(i, config)| Hook::compile(i + 1, config, config_dir))
            .collect::<Result<_, _>>()?;
        Ok(Self { hooks })
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    pub fn describe(&self) -> Vec<HookLine> {
        self.hooks
            .iter()
            .map(|h| HookLine {
                event: h.event,
                matcher: h
                    .matcher
                    .as_ref()
                    .map_or_else(|| "*".to_owned(), |(m, _)| m.clone()),
                command: h.command.clone(),
                timeout_s: h.timeout.as_secs(),
                on_error: h.on_error,
            })
            .collect()
    }

    /// Runs every pre_tool hook whose matcher matches `tool`, concurrently.
    pub async fn pre_tool(
        &self,
        at: &HookContext,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Verdicts {
        // A struct, so the fields go out in Claude Code's order: scripts
        // that match on the text rather than parse it still work.
        let payload = PreToolPayload {
            session_id: &at.session_id,
            cwd: &at.cwd.to_string_lossy(),
            permission_mode: &at.permission_mode,
            hook_event_name: HookEvent::PreTool.wire_name(),
            tool_name: tool,
            tool_input: input,
            tool_use_id,
        };
        // Serializing strings and a `Value` cannot fail. The newline is
        // for scripts that `read` a line.
        let mut payload = serde_json::to_vec(&payload).unwrap_or_default();
        payload.push(b'\n');
        let runs = self
            .hooks
            .iter()
            .filter(|h| h.event == HookEvent::PreTool && h.matches(tool))
            .map(|h| run::run(h, &payload, &at.cwd));
        combine(futures::future::join_all(runs).await)
    }
}

/// What a pre_tool hook reads on stdin.
#[derive(Serialize)]
struct PreToolPayload<'a> {
    session_id: &'a str,
    cwd: &'a str,
    permission_mode: &'a str,
    hook_event_name: &'a str,
    tool_name: &'a str,
    tool_input: &'a Value,
    tool_use_id: &'a str,
}

/// Any refusal wins over a question, and a question over no objection;
/// the first hook in config order gives the reason.
fn combine(each: Vec<HookRun>) -> Verdicts {
    let first =
        |want: fn(&Decision) -> bool| each.iter().map(|r| &r.decision).find(|d| want(d)).cloned();
    let decision = first(|d| matches!(d, Decision::Block(_)))
        .or_else(|| first(|d| matches!(d, Decision::Ask(_))))
        .unwrap_or(Decision::Pass);
    let system_messages = each
        .iter()
        .filter_map(|r| r.system_message.clone())
        .collect();
    Verdicts {
        decision,
        system_messages,
        each,
    }
}
