//! The conversation as mecha keeps it, independent of any model API. The
//! providers translate it to and from their wire formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
}
