//! OpenAI chat-completion chunks folded into one [`Response`].
//!
//! Kept free of I/O so the mapping can be tested chunk by chunk. Lenient
//! where compatible servers differ (missing ids or indexes, `stop` for a
//! turn with tool calls), strict where a difference would lose data.

use std::collections::BTreeMap;

use eventsource_stream::Event;
use mecha_core::{Block, Message, Role, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::http::{Attempt, error_message};
use crate::sse::{Flow, StreamDecoder, malformed};
use crate::tool_args::parse_arguments;
use crate::{ProviderError, Response, StreamSink, Streamed};

const API: &str = "the OpenAI-compatible API";

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
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
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
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

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
}

impl StreamState {
    fn add_call_delta(&mut self, position: usize, delta: CallDelta) {
        // Some servers leave out `index` and send each call whole: a new id
        // then means a new call, no id means more of the last one.
        let index = match delta.index {
            Some(index) => index,
            None if delta.id.is_some() => self
                .calls
                .keys()
                .next_back()
                .map_or(position, |last| last + 1),
            None => self.calls.keys().next_back().copied().unwrap_or(position),
        };
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name {
                call.name.push_str(&name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    /// Whether the answer is complete enough to use when the body ends
    /// without `[DONE]`.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }
}

pub(crate) fn ended_early(what: &str) -> ProviderError {
    ProviderError::Transport(format!(
        "the model's stream ended early: {API} {what}; try again"
    ))
}

impl StreamDecoder for StreamState {
    fn handle(&mut self, event: &Event, on_stream: &mut StreamSink<'_>) -> Result<Flow, Attempt> {
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
            return Err(ProviderError::Api(format!(
                "{API} failed mid-answer: {}",
                error_message(&serde_json::json!({ "error": error }).to_string())
            ))
            .into());
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
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    on_stream(Streamed::Text(&text));
                    self.text.push_str(&text);
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    self.add_call_delta(position, call);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Response {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        for (index, call) in self.calls {
            let (input, input_error) = parse_arguments(&call.arguments);
            let id = if call.id.is_empty() {
                format!("call_{index}")
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
        let message = Message {
            role: Role::Assistant,
            content,
        };
        let has_calls = message.tool_calls().next().is_some();
        let stop_reason = match self.finish_reason.as_deref() {
            // Some servers say `stop` even when the turn ends in tool calls.
            _ if has_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        Response {
            message,
            stop_reason,
            stop_detail: None,
            usage: self.usage,
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
mod tests {
    use super::*;
    use serde_json::json;

    fn data(text: &str) -> Event {
        Event {
            event: "message".into(),
            data: text.into(),
            id: String::new(),
            retry: None,
        }
    }

    fn run(chunks: &[&str]) -> (Result<Flow, Attempt>, StreamState, Vec<String>) {
        let mut state = StreamState::default();
        let mut pieces = Vec::new();
        let mut on_stream = |piece: Streamed<'_>| {
            if let Streamed::Text(t) = piece {
                pieces.push(t.to_owned());
            }
        };
        let mut flow = Ok(Flow::Continue);
        for c in chunks {
            flow = state.handle(&data(c), &mut on_stream);
            if !matches!(flow, Ok(Flow::Continue)) {
                break;
            }
        }
        (flow, state, pieces)
    }

    #[test]
    fn text_tool_calls_and_usage() {
        let (flow, state, pieces) = run(&[
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Read"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"ing."},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"fs_read","arguments":""}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"fs_list","arguments":"{}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":500,"completion_tokens":30,"total_tokens":530,"prompt_tokens_details":{"cached_tokens":384}}}"#,
            "[DONE]",
        ]);
        assert!(matches!(flow, Ok(Flow::Done)), "{flow:?}");
        assert_eq!(pieces, ["Read", "ing."]);
        let response = state.finish();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 116,
                output_tokens: 30,
                cache_read_tokens: 384,
                cache_write_tokens: 0
            }
        );
        let calls: Vec<_> = response.message.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("call_a", "fs_read")
        );
        assert_eq!(calls[0].input, json!({"path": "a"}));
        assert_eq!(calls[1].name, "fs_list");
        assert_eq!(response.message.text(), "Reading.");
    }

    #[test]
    fn done_without_finish_reason_is_an_early_end() {
        let (flow, _, _) = run(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
            "[DONE]",
        ]);
        match flow {
            Err(Attempt::Fatal(ProviderError::Transport(m))) => assert!(m.contains("ended early")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finish_reasons_map() {
        let stop = |reason: &str| {
            let chunk =
                format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#);
            let (_, state, _) = run(&[&chunk]);
            state.finish().stop_reason
        };
        assert_eq!(stop("stop"), StopReason::EndTurn);
        assert_eq!(stop("length"), StopReason::MaxTokens);
        assert_eq!(stop("content_filter"), StopReason::Refusal);
        assert_eq!(stop("tool_calls"), StopReason::ToolUse);
        assert_eq!(stop("weird"), StopReason::Other("weird".into()));
    }

    #[test]
    fn calls_without_index_or_id_and_stop_reason() {
        let (_, state, _) = run(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x1","function":{"name":"a","arguments":"{\"k\":1}"}},{"id":"x2","function":{"name":"b","arguments":"{nope"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"c","arguments":""}}]},"finish_reason":"stop"}]}"#,
        ]);
        let response = state.finish();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let calls: Vec<_> = response.message.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0].input, json!({"k": 1}));
        // The id-less delta continued the last call.
        assert_eq!(calls[1].name, "bc");
        assert!(
            calls[1]
                .input_error
                .as_deref()
                .unwrap_or("")
                .contains("{nope")
        );
    }

    #[test]
    fn error_chunk_and_malformed_chunk() {
        let (flow, _, _) = run(&[r#"{"error":{"message":"out of memory","type":"server_error"}}"#]);
        match flow {
            Err(Attempt::Fatal(ProviderError::Api(m))) => assert!(m.contains("out of memory")),
            other => panic!("{other:?}"),
        }
        let (flow, _, _) = run(&["{\"choices\": [tru"]);
        match flow {
            Err(Attempt::Fatal(ProviderError::Transport(m))) => assert!(m.contains("malformed")),
            other => panic!("{other:?}"),
        }
    }
}
