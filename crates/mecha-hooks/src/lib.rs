//! Hooks: the user's policy programs at the gate and around the loop,
//! speaking the JSON contract Claude Code's (and Codex's) hook scripts
//! already use.
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
pub use config::{DEFAULT_TIMEOUT_S, HookConfig, HookError, HookErrors, HookEvent, OnError};

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
    /// What it adds for the model: `additionalContext`, or (user_prompt
    /// and session_start) plain text on stdout.
    pub context: Option<String>,
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
    /// Every hook's context for the model, in config order.
    pub contexts: Vec<String>,
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
    /// Checks every `[[hook]]`; `config_dir` anchors relative commands. Any
    /// hook that cannot be used fails the set.
    pub fn compile(configs: &[HookConfig], config_dir: &Path) -> Result<Self, HookErrors> {
        let mut hooks = Vec::with_capacity(configs.len());
        let mut errors = Vec::new();
        for (i, config) in configs.iter().enumerate() {
            match Hook::compile(i + 1, config, config_dir) {
                Ok(hook) => hooks.push(hook),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(Self { hooks })
        } else {
            Err(HookErrors {
                errors,
                usable: Self { hooks },
            })
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The programs the hooks run, as resolved: they run unconfined, so
    /// the caller keeps them from every writer a model drives.
    pub fn programs(&self) -> impl Iterator<Item = &Path> {
        self.hooks.iter().map(|hook| hook.program.as_path())
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

    /// Whether any hook runs at `event`: the loop asks before it builds a
    /// payload.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// Runs every pre_tool hook whose matcher matches `tool`, concurrently.
    pub async fn pre_tool(
        &self,
        at: &HookContext,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
    ) -> Verdicts {
        let payload = Payload {
            tool_name: Some(tool),
            tool_input: Some(input),
            tool_use_id: Some(tool_use_id),
            ..Payload::new(at, HookEvent::PreTool)
        };
        self.fire(HookEvent::PreTool, Some(tool), &payload, &at.cwd)
            .await
    }

    /// Runs the post_tool hooks matching `tool` on the call's result
    /// (`response`: `content` and `is_error`).
    pub async fn post_tool(
        &self,
        at: &HookContext,
        tool: &str,
        input: &Value,
        tool_use_id: &str,
        response: &Value,
    ) -> Verdicts {
        let payload = Payload {
            tool_name: Some(tool),
            tool_input: Some(input),
            tool_response: Some(response),
            tool_use_id: Some(tool_use_id),
            ..Payload::new(at, HookEvent::PostTool)
        };
        self.fire(HookEvent::PostTool, Some(tool), &payload, &at.cwd)
            .await
    }

    /// Runs the user_prompt hooks on a prompt before it is sent.
    pub async fn user_prompt(&self, at: &HookContext, prompt: &str) -> Verdicts {
        let payload = Payload {
            prompt: Some(prompt),
            ..Payload::new(at, HookEvent::UserPrompt)
        };
        self.fire(HookEvent::UserPrompt, None, &payload, &at.cwd)
            .await
    }

    /// Runs the stop hooks when the model has answered; `stop_hook_active`
    /// says a stop hook already sent it back during this prompt.
    pub async fn stop(
        &self,
        at: &HookContext,
        stop_hook_active: bool,
        last_assistant_message: &str,
    ) -> Verdicts {
        let payload = Payload {
            stop_hook_active: Some(stop_hook_active),
            last_assistant_message: Some(last_assistant_message),
            ..Payload::new(at, HookEvent::Stop)
        };
        self.fire(HookEvent::Stop, None, &payload, &at.cwd).await
    }

    /// Runs the session_start hooks; `source` is `startup` for a new
    /// session, `resume` for one picked up again.
    pub async fn session_start(&self, at: &HookContext, source: &str) -> Verdicts {
        let payload = Payload {
            source: Some(source),
            ..Payload::new(at, HookEvent::SessionStart)
        };
        self.fire(HookEvent::SessionStart, None, &payload, &at.cwd)
            .await
    }

    /// Runs every hook of `event` (that matches `tool`, for the tool
    /// events) concurrently on `payload`.
    async fn fire(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        payload: &Payload<'_>,
        cwd: &Path,
    ) -> Verdicts {
        // Serializing strings and `Value`s cannot fail. The newline is for
        // scripts that `read` a line.
        let mut payload = serde_json::to_vec(payload).unwrap_or_default();
        payload.push(b'\n');
        let runs = self
            .hooks
            .iter()
            .filter(|h| h.event == event && tool.is_none_or(|t| h.matches(t)))
            .map(|h| run::run(h, &payload, cwd));
        combine(futures::future::join_all(runs).await)
    }
}

/// What a hook reads on stdin. A struct, so the fields go out in Claude
/// Code's order (scripts that match on the text rather than parse it still
/// work); each event fills its own fields and the rest are left out.
#[derive(Serialize)]
struct Payload<'a> {
    session_id: &'a str,
    cwd: String,
    permission_mode: &'a str,
    hook_event_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_input: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_response: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_use_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_hook_active: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_assistant_message: Option<&'a str>,
}

impl<'a> Payload<'a> {
    fn new(at: &'a HookContext, event: HookEvent) -> Self {
        Self {
            session_id: &at.session_id,
            cwd: at.cwd.to_string_lossy().into_owned(),
            permission_mode: &at.permission_mode,
            hook_event_name: event.wire_name(),
            source: None,
            prompt: None,
            tool_name: None,
            tool_input: None,
            tool_response: None,
            tool_use_id: None,
            stop_hook_active: None,
            last_assistant_message: None,
        }
    }
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
    let contexts = each.iter().filter_map(|r| r.context.clone()).collect();
    Verdicts {
        decision,
        system_messages,
        contexts,
        each,
    }
}
