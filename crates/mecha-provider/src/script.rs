//! The script format: model turns written down ahead of time, played by the
//! scripted provider and by the mock model server in `mecha-testkit`.
//!
//! ```json
//! {"turns": [
//!   {"text": "Let me look.", "tool_calls": [{"name": "fs_read", "input": {"path": "a"}}]},
//!   {"tool_calls": [{"name": "fs_read", "raw_arguments": "{not json"}]},
//!   {"text": "Done."}
//! ]}
//! ```

use std::path::Path;

use mecha_core::{Block, Message, StopReason};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ProviderError;

/// A whole script: the turns in the order they are played.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
}

/// One answer of the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// Reasoning streamed before the answer: Anthropic's `thinking` block
    /// (with a signature), the `reasoning` delta of OpenAI-compatible
    /// servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Encrypted reasoning (Anthropic's `redacted_thinking` block), after
    /// any thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted_thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// What the turn reports as spent; zero when unset (the mock server
    /// makes up small numbers instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptUsage>,
    /// Overrides the stop reason, e.g. `"max_tokens"`. Unset: `tool_use`
    /// when the turn has tool calls, else `end_turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Why the model stopped, in words: Anthropic's `stop_details`
    /// explanation or OpenAI's `refusal` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_detail: Option<String>,
    /// Ways a real server departs from the documented stream, for the mock
    /// model server to reproduce; the scripted provider ignores them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quirks: Vec<Quirk>,
}

/// A habit of a real server's stream that the mock model server can
/// reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quirk {
    /// OpenAI-compatible: reasoning arrives as `reasoning_content` (llama.cpp,
    /// DeepSeek) instead of `reasoning` (vLLM, ollama).
    ReasoningContent,
    /// OpenAI-compatible: every tool call arrives at index 0, each with its
    /// own id (some ollama versions, LiteLLM's ollama proxy).
    SameIndex,
    /// OpenAI-compatible: `function.arguments` is a JSON object, not a string.
    ArgumentsObject,
    /// OpenAI-compatible: a chunk carries `"choices": null`.
    NullChoices,
    /// Anthropic-compatible: a tool's input arrives whole in
    /// `content_block_start`, with no `input_json_delta`.
    InputInStart,
}

/// One tool call of a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    pub name: String,
    /// Generated (`call_<turn>_<n>`) when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// The argument text exactly as the model would send it, to simulate
    /// arguments that are not valid JSON. Excludes `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

/// Token counts a turn reports, in the provider-neutral sense of
/// [`mecha_core::Usage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScriptUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Script {
    /// Parses and checks a script.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let script: Script = serde_json::from_str(text).map_err(|e| e.to_string())?;
        script.check()?;
        Ok(script)
    }

    /// Reads a script file; the error names the file and what is wrong.
    pub fn load(path: &Path) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProviderError::NotConfigured(format!(
                "cannot read the model script {}: {e}",
                path.display()
            ))
        })?;
        Self::from_json(&text).map_err(|e| {
            ProviderError::NotConfigured(format!(
                "the model script {} is not valid: {e}",
                path.display()
            ))
        })
    }

    fn check(&self) -> Result<(), String> {
        for (t, turn) in self.turns.iter().enumerate() {
            for call in &turn.tool_calls {
                if call.input.is_some() && call.raw_arguments.is_some() {
                    return Err(format!(
                        "turn {}: tool call `{}` has both `input` and `raw_arguments`; keep one",
                        t + 1,
                        call.name
                    ));
                }
            }
        }
        Ok(())
    }
}

impl ScriptTurn {
    /// The turn that would answer with `message` again (for replaying a
    /// stored session): its thinking, its text and its calls with their ids
    /// and arguments (a call whose arguments did not parse is played with
    /// arguments that do not parse either: the error it got, which holds
    /// the raw text).
    pub fn from_message(message: &Message) -> Self {
        let mut turn = Self::default();
        let mut thinking = String::new();
        let mut text = String::new();
        for block in &message.content {
            match block {
                Block::Thinking { thinking: t, .. } => thinking.push_str(t),
                Block::Text { text: t } => text.push_str(t),
                Block::ToolUse(call) => turn.tool_calls.push(ScriptToolCall {
                    name: call.name.clone(),
                    id: Some(call.id.clone()),
                    input: call.input_error.is_none().then(|| call.input.clone()),
                    raw_arguments: call.input_error.clone(),
                }),
                Block::RedactedThinking { .. } | Block::ToolResult { .. } => {}
            }
        }
        turn.thinking = (!thinking.is_empty()).then_some(thinking);
        turn.text = (!text.is_empty()).then_some(text);
        turn
    }

    /// A turn that only answers.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A turn that makes these calls and says nothing.
    pub fn calls(calls: Vec<ScriptToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::default()
        }
    }

    /// A turn that makes one call.
    pub fn call(name: impl Into<String>, input: Value) -> Self {
        Self::calls(vec![ScriptToolCall::new(name, input)])
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    pub fn with_usage(mut self, usage: ScriptUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = Some(thinking.into());
        self
    }

    pub fn with_quirk(mut self, quirk: Quirk) -> Self {
        self.quirks.push(quirk);
        self
    }

    /// The stop reason the turn ends with.
    pub fn effective_stop_reason(&self) -> StopReason {
        match &self.stop_reason {
            Some(reason) => reason.clone(),
            None if self.tool_calls.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolUse,
        }
    }
}

impl ScriptToolCall {
    pub fn new(name: impl Into<String>, input: Value) -> Self {
        Self {
            name: name.into(),
            input: Some(input),
            ..Self::default()
        }
    }

    /// A call whose argument text is sent as given, valid JSON or not.
    pub fn raw(name: impl Into<String>, raw_arguments: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            raw_arguments: Some(raw_arguments.into()),
            ..Self::default()
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The argument text as a model would stream it.
    pub fn arguments_text(&self) -> String {
        match (&self.raw_arguments, &self.input) {
            (Some(raw), _) => raw.clone(),
            (None, Some(input)) => input.to_string(),
            (None, None) => "{}".to_owned(),
        }
    }

    /// The given id, or the generated one for call `n` (from 1) of turn
    /// `turn` (from 1).
    pub fn id_or(&self, turn: usize, n: usize) -> String {
        self.id
            .clone()
            .unwrap_or_else(|| format!("call_{turn}_{n}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_the_documented_format() {
        let script = Script::from_json(
            r#"{"turns": [
                {"text": "hi", "tool_calls": [{"name": "fs_read", "input": {"path": "a"}, "id": "x"}]},
                {"tool_calls": [{"name": "fs_read", "raw_arguments": "{not json"}]},
                {"text": "done", "stop_reason": "max_tokens", "usage": {"input_tokens": 5}}
            ]}"#,
        );
        let script = script.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(script.turns.len(), 3);
        assert_eq!(script.turns[0].tool_calls[0].id_or(1, 1), "x");
        assert_eq!(
            script.turns[0].tool_calls[0].arguments_text(),
            r#"{"path":"a"}"#
        );
        assert_eq!(script.turns[1].tool_calls[0].id_or(2, 1), "call_2_1");
        assert_eq!(script.turns[1].tool_calls[0].arguments_text(), "{not json");
        assert_eq!(
            script.turns[2].effective_stop_reason(),
            StopReason::MaxTokens
        );
        assert_eq!(script.turns[1].effective_stop_reason(), StopReason::ToolUse);
        assert_eq!(script.turns[2].usage.map(|u| u.input_tokens), Some(5));
    }

    #[test]
    fn refuses_unknown_fields_and_double_arguments() {
        assert!(Script::from_json(r#"{"turns": [{"txt": "typo"}]}"#).is_err());
        let both = Script::from_json(
            r#"{"turns": [{"tool_calls": [{"name": "x", "input": {}, "raw_arguments": "{}"}]}]}"#,
        );
        assert!(both.unwrap_err().contains("both"));
        let round = ScriptTurn::call("x", json!({"a": 1}));
        let text = serde_json::to_string(&Script {
            turns: vec![round.clone()],
        });
        let back = Script::from_json(&text.unwrap_or_default());
        assert_eq!(back.map(|s| s.turns), Ok(vec![round]));
    }
}
