//! The conversation as mecha keeps it, independent of any model API. The
//! providers translate it to and from their wire formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Image;

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message: a role and its blocks, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    /// A user message of plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse(call) => Some(call),
            _ => None,
        })
    }

    /// Whether the message says nothing a person or the model could use: no
    /// text and no tool call (thinking alone does not count). An API refuses
    /// an assistant message with no content, so the loop never keeps one.
    pub fn is_empty_answer(&self) -> bool {
        self.content.iter().all(|b| match b {
            Block::Text { text } => text.trim().is_empty(),
            Block::ToolUse(_) | Block::ToolResult { .. } => false,
            Block::Thinking { .. } | Block::RedactedThinking { .. } => true,
        })
    }

    /// All text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse(ToolCall),
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
        /// Images the result carries besides its text, for a provider to
        /// send the way its API takes them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// The model's reasoning before it answered. `signature` is the opaque
    /// token an API that checks thinking (Anthropic's) needs to accept the
    /// block back; servers that only stream reasoning text leave it unset.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the API encrypted; only sent back, never shown.
    RedactedThinking {
        data: String,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments; `{}` when they did not parse.
    pub input: Value,
    /// Set when the model's arguments were not valid JSON: the parse error
    /// and the raw text, so the loop can hand the model something to fix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_error: Option<String>,
}

/// Why the model stopped. Spelt as Anthropic's API spells it, which is
/// also how mecha's JSON output and scripts write it; a reason mecha does
/// not know keeps its own name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
    /// The answer filled the model's context window: cut, like `MaxTokens`.
    ModelContextWindowExceeded,
    Other(String),
}

impl StopReason {
    /// The name of the reason.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
            StopReason::ModelContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(other) => other,
        }
    }
}

impl From<String> for StopReason {
    fn from(name: String) -> Self {
        match name.as_str() {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" => StopReason::Refusal,
            "model_context_window_exceeded" => StopReason::ModelContextWindowExceeded,
            _ => StopReason::Other(name),
        }
    }
}

impl From<StopReason> for String {
    fn from(reason: StopReason) -> Self {
        match reason {
            StopReason::Other(other) => other,
            known => known.as_str().to_owned(),
        }
    }
}

impl StopReason {
    /// Whether the model was cut off by a limit rather than finishing: its
    /// last block (text or a tool call) may be incomplete.
    pub fn is_cut(&self) -> bool {
        matches!(
            self,
            StopReason::MaxTokens | StopReason::ModelContextWindowExceeded
        )
    }
}

/// Tokens a request cost, as the API reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another request's usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// What one request's usage says the context holds once its reply is
    /// in it: everything read, cached or not, and the reply.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + self.output_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_are_plain_names_both_ways() {
        for name in [
            "end_turn",
            "tool_use",
            "max_tokens",
            "stop_sequence",
            "refusal",
            "model_context_window_exceeded",
            "pause_turn",
        ] {
            let reason = StopReason::from(name.to_owned());
            assert_eq!(reason.as_str(), name);
            let json = serde_json::to_value(&reason).unwrap_or_default();
            assert_eq!(json, serde_json::json!(name));
            let back: Result<StopReason, _> = serde_json::from_value(json);
            assert_eq!(back.ok(), Some(reason));
        }
        assert_eq!(
            StopReason::from("pause_turn".to_owned()),
            StopReason::Other("pause_turn".into())
        );
    }
}
