//! The user's policy programs: at the gate's hook stage, which sees every
//! call after the interlock and before the rules and the approver, and
//! around the loop (a call's result, a prompt, the model's stop, a
//! session's start). At the gate a hook can only narrow: refuse a call, or
//! demand a fresh human decision on it, never approve one past the later
//! stages. Around the loop it can add words for the model, refuse a
//! prompt, or send the model back to work; it never undoes a call or
//! changes what a result came from.

use async_trait::async_trait;
use mecha_core::{Tool, ToolOutput};
use serde::Serialize;
use serde_json::Value;

use crate::events::EventSink;

/// What the hooks said about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// No objection: the rules and the approver still decide.
    Pass,
    /// Refused, with the reason the model is given.
    Block(String),
    /// Only a fresh human decision may let it run (refused when nobody can
    /// answer, and `--yes` does not count), as for a `prompt` rule.
    Ask(String),
}

/// What the hooks said about a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptVerdict {
    /// Send it, with these words of context after it.
    Send { context: Vec<String> },
    /// Refused, for this reason (the user's to read; the model never sees
    /// the prompt).
    Block(String),
}

/// Why a session is starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSource {
    /// A new conversation.
    Startup,
    /// A stored one, picked up again.
    Resume,
}

impl SessionSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Resume => "resume",
        }
    }
}

/// The user's hooks. Each hook that runs is reported on `events` as an
/// [`Event::Hook`](crate::Event::Hook). Every event but `pre_tool` has a
/// default that does nothing, for a policy that only gates calls.
#[async_trait]
pub trait Hook: Send + Sync {
    /// Judges the call `call_id` to `tool` with `input`.
    async fn pre_tool(
        &self,
        tool: &dyn Tool,
        input: &Value,
        call_id: &str,
        events: &dyn EventSink,
    ) -> HookVerdict;

    /// Notes for the model about a call's result, which is already in: the
    /// call ran and stays run.
    async fn post_tool(
        &self,
        _tool: &dyn Tool,
        _input: &Value,
        _call_id: &str,
        _output: &ToolOutput,
        _events: &dyn EventSink,
    ) -> Vec<String> {
        Vec::new()
    }

    /// Judges a prompt before it enters the conversation.
    async fn user_prompt(&self, _prompt: &str, _events: &dyn EventSink) -> PromptVerdict {
        PromptVerdict::Send {
            context: Vec::new(),
        }
    }

    /// The model answered; `Some(reason)` sends it back to work.
    /// `sent_back`: a stop hook already did so during this prompt.
    async fn stop(
        &self,
        _answer: &str,
        _sent_back: bool,
        _events: &dyn EventSink,
    ) -> Option<String> {
        None
    }

    /// Context for the model at the start of a session, sent with its next
    /// prompt.
    async fn session_start(&self, _source: SessionSource, _events: &dyn EventSink) -> Vec<String> {
        Vec::new()
    }
}
