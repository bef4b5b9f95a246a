//! OpenAI chat-completion chunks folded into one [`Response`].
//!
//! Kept free of I/O so the mapping can be tested chunk by chunk. Lenient
//! where compatible servers differ (missing ids or indexes, `stop` for a
//! turn with tool calls, `"choices": null`), strict where a difference
//! would lose data.

use std::sync::Arc;

use eventsource_stream::Event;
use mecha_core::{Block, Message, Role, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::calls::{CallDelta, Calls};
use super::memory::{Memory, ReasoningField};
use crate::http::{Attempt, error_message};
use crate::sse::{Flow, StreamDecoder, malformed};
use crate::tool_args::parse_arguments;
use crate::{ProviderError, Response, StreamSink, Streamed};

const API: &str = "the OpenAI-compatible API";

#[derive(Debug, Deserialize)]
struct Chunk {
    /// Some servers send `null` rather than `[]` in the usage chunk.
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// vLLM and ollama stream the model's reasoning here...
    #[serde(default)]
    reasoning: Option<String>,
    /// ...llama.cpp and DeepSeek here (and vLLM, for a while, in both).
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenAI's words when the model refused, instead of `content`.
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    memory: Arc<Memory>,
    reasoning: String,
    text: String,
    refusal: String,
    calls: Calls,
    finish_reason: Option<String>,
    usage: Usage,
}

impl StreamState {
    pub fn new(memory: Arc<Memory>) -> Self {
        Self {
            memory,
            ..Self::default()
        }
    }

    fn add_delta(&mut self, delta: Delta, on_stream: &mut StreamSink<'_>) {
        // A server sending both fields sends the same text twice.
        let reasoning = match (delta.reasoning, delta.reasoning_content) {
            (Some(r), _) if !r.is_empty() => Some((ReasoningField::Reasoning, r)),
            (_, Some(r)) if !r.is_empty() => Some((ReasoningField::ReasoningContent, r)),
            _ => None,
        };
        if let Some((field, piece)) = reasoning {
            self.memory.saw_reasoning_in(field);
            on_stream(Streamed::Thinking(&piece));
            self.reasoning.push_str(&piece);
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            on_stream(Streamed::Text(&text));
            self.text.push_str(&text);
        }
        if let Some(refusal) = delta.refusal {
            self.refusal.push_str(&refusal);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.calls.add(call);
        }
    }

    /// Whether the answer is complete enough to use when the body ends
    /// without `[DONE]`.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn stop_reason(&self, has_calls: bool) -> StopReason {
        match self.finish_reason.as_deref() {
            // OpenAI says `stop` when the model refused in words.
            _ if !self.refusal.trim().is_empty() => StopReason::Refusal,
            // Before the check for calls: the last call may be cut short,
            // and must not be run as if whole.
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            // Some servers say `stop` even when the turn ends in tool calls.
            _ if has_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some(other) => StopReason::Other(other.to_owned()),
        }
    }
}

pub(crate) fn ended_early(what: &str) -> ProviderError {
    ProviderError::Transport(format!(
        "the model's stream ended early: {API} {what}; try again"
    ))
}

/// An error the server reported inside the stream: OpenAI's and vLLM's
/// `error` chunk, or llama.cpp's `error:` line.
fn failed_mid_answer(error: &Value) -> Attempt {
    ProviderError::Api(format!(
        "{API} failed mid-answer: {}",
        error_message(&serde_json::json!({ "error": error }).to_string())
    ))
    .into()
}

impl StreamDecoder for StreamState {
    fn handle(&mut self, event: &Event, on_stream: &mut StreamSink<'_>) -> Result<Flow, Attempt> {
        if event.event == crate::sse::ERROR_FIELD_EVENT {
            let error = serde_json::from_str(&event.data)
                .unwrap_or_else(|_| Value::String(event.data.clone()));
            return Err(failed_mid_answer(&error));
        }
        if event.data.trim() == "[DONE]" {
            return if self.finish_reason.is_some() {
                Ok(Flow::Done)
            } else {
                Err(ended_early("sent [DONE] without a finish_reason").into())
            };
        }
        let chunk: Chunk =
            serde_json::from_str(&event.data).map_err(|e| malformed(API, event, &e))?;
        if let Some(error) = chunk.error {
            return Err(failed_mid_answer(&error));
        }
        if let Some(usage) = chunk.usage {
            // Counted the Anthropic way: `input_tokens` are the uncached
            // ones, so the four fields add up to the whole prompt.
            let cached = usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0);
            self.usage = Usage {
                input_tokens: usage.prompt_tokens.saturating_sub(cached),
                output_tokens: usage.completion_tokens,
                cache_read_tokens: cached,
                cache_write_tokens: 0,
            };
        }
        // mecha asks for one choice; any other would be a second answer.
        let choices = chunk.choices.into_iter().flatten();
        for choice in choices.filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.add_delta(delta, on_stream);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Response {
        let stop_reason = self.stop_reason(!self.calls.is_empty());
        let StreamState {
            memory,
            reasoning,
            text,
            refusal,
            calls,
            usage,
            ..
        } = self;
        let mut content = Vec::new();
        // Signed by nothing: a compatible server only streams the text.
        if !reasoning.is_empty() {
            content.push(Block::Thinking {
                thinking: reasoning,
                signature: None,
            });
        }
        if !text.is_empty() {
            content.push(Block::Text { text });
        }
        for call in calls.into_vec() {
            let (input, input_error) = parse_arguments(&call.arguments);
            let id = if call.id.is_empty() {
                memory.new_call_id()
            } else {
                call.id
            };
            content.push(Block::ToolUse(ToolCall {
                id,
                name: call.name,
                input,
                input_error,
            }));
        }
        Response {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            stop_detail: Some(refusal).filter(|r| !r.trim().is_empty()),
            usage,
        }
    }

    fn at_end_of_body(self) -> Result<Response, ProviderError> {
        // A server that ends the body after the finish_reason without
        // `[DONE]` has still given the whole answer.
        if self.finished() {
            tracing::debug!("stream ended without [DONE] after a finish_reason");
            return Ok(self.finish());
        }
        Err(ended_early("closed it before a finish_reason"))
    }
}

#[cfg(test)]
mod tests;
