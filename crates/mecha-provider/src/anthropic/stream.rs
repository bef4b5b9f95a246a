//! Anthropic's streamed events folded into one [`Response`].
//!
//! Kept free of I/O so the mapping can be tested event by event.

use std::collections::BTreeMap;

use eventsource_stream::Event;
use mecha_core::{Block, Message, Role, StopReason, ToolCall, Usage};
use serde::Deserialize;

use crate::http::Attempt;
use crate::sse::{Flow, StreamDecoder, malformed};
use crate::tool_args::parse_arguments;
use crate::{ProviderError, Response, StreamSink, Streamed};

const API: &str = "the Anthropic API";

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {},
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: WireError,
    },
    /// Event types added after this was written are skipped, as the API
    /// versioning policy asks of clients.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// Thinking, server tools and the like: not part of mecha's conversation.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Every field optional: `message_delta` repeats only some of them, and each
/// one present is the running total, so it replaces the earlier value.
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

#[derive(Debug)]
enum Partial {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    Skipped,
}

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    blocks: BTreeMap<usize, Partial>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    /// Content arrived: from here on a failure cannot be retried, because
    /// the caller has already seen part of this answer.
    content_seen: bool,
}

impl StreamState {
    fn update_usage(&mut self, wire: &WireUsage) {
        let usage = &mut self.usage;
        for (field, value) in [
            (&mut usage.input_tokens, wire.input_tokens),
            (&mut usage.output_tokens, wire.output_tokens),
            (&mut usage.cache_read_tokens, wire.cache_read_input_tokens),
            (
                &mut usage.cache_write_tokens,
                wire.cache_creation_input_tokens,
            ),
        ] {
            if let Some(value) = value {
                *field = value;
            }
        }
    }

    /// An `error` event in a 200 stream: overloaded and friends are worth
    /// another try, but only while nothing of the answer was shown.
    fn stream_error(&self, error: WireError) -> Attempt {
        let what = format!("{} ({})", error.message, error.kind);
        let transient = matches!(
            error.kind.as_str(),
            "overloaded_error" | "api_error" | "rate_limit_error"
        );
        if transient && !self.content_seen {
            Attempt::Retry {
                reason: format!("reported {what}"),
                after: None,
            }
        } else if transient {
            Attempt::Fatal(ProviderError::Transport(format!(
                "the model's stream ended early: {API} failed mid-answer with {what}; try again"
            )))
        } else {
            Attempt::Fatal(ProviderError::Api(format!("{API} reported {what}")))
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    StopReason::from(reason.to_owned())
}

impl StreamDecoder for StreamState {
    fn handle(&mut self, event: &Event, on_stream: &mut StreamSink<'_>) -> Result<Flow, Attempt> {
        let wire: WireEvent =
            serde_json::from_str(&event.data).map_err(|e| malformed(API, event, &e))?;
        match wire {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.update_usage(&usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                self.content_seen = true;
                let partial = match content_block {
                    StartBlock::Text { text } => {
                        if !text.is_empty() {
                            on_stream(Streamed::Text(&text));
                        }
                        Partial::Text(text)
                    }
                    StartBlock::ToolUse { id, name } => Partial::Tool {
                        id,
                        name,
                        json: String::new(),
                    },
                    StartBlock::Other => Partial::Skipped,
                };
                self.blocks.insert(index, partial);
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                self.content_seen = true;
                match (self.blocks.get_mut(&index), delta) {
                    (Some(Partial::Text(text)), Delta::Text { text: piece }) => {
                        on_stream(Streamed::Text(&piece));
                        text.push_str(&piece);
                    }
                    (Some(Partial::Tool { json, .. }), Delta::InputJson { partial_json }) => {
                        json.push_str(&partial_json);
                    }
                    (Some(Partial::Skipped), _) | (_, Delta::Other) => {}
                    (_, _) => {
                        return Err(ProviderError::Transport(format!(
                            "{API} sent a delta for content block {index} that does not match \
                             the block it started: {}",
                            event.data
                        ))
                        .into());
                    }
                }
            }
            WireEvent::ContentBlockStop {} | WireEvent::Ping {} | WireEvent::Unknown => {}
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.update_usage(&usage);
                }
            }
            WireEvent::MessageStop {} => return Ok(Flow::Done),
            WireEvent::Error { error } => return Err(self.stream_error(error)),
        }
        Ok(Flow::Continue)
    }

    fn finish(self) -> Response {
        let mut content = Vec::new();
        for partial in self.blocks.into_values() {
            match partial {
                Partial::Text(text) if !text.is_empty() => content.push(Block::Text { text }),
                Partial::Tool { id, name, json } => {
                    let (input, input_error) = parse_arguments(&json);
                    content.push(Block::ToolUse(ToolCall {
                        id,
                        name,
                        input,
                        input_error,
                    }));
                }
                Partial::Text(_) | Partial::Skipped => {}
            }
        }
        let message = Message {
            role: Role::Assistant,
            content,
        };
        let stop_reason = self.stop_reason.unwrap_or_else(|| {
            if message.tool_calls().next().is_some() {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        });
        Response {
            message,
            stop_reason,
            stop_detail: None,
            usage: self.usage,
        }
    }

    fn at_end_of_body(self) -> Result<Response, ProviderError> {
        Err(ProviderError::Transport(
            "the model's stream ended early: the Anthropic API closed it before `message_stop`; \
             try again"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(data: serde_json::Value) -> Event {
        Event {
            event: data["type"].as_str().unwrap_or("message").to_owned(),
            data: data.to_string(),
            id: String::new(),
            retry: None,
        }
    }

    fn run(events: &[serde_json::Value]) -> (Result<Flow, Attempt>, StreamState, String) {
        let mut state = StreamState::default();
        let mut text = String::new();
        let mut on_stream = |piece: Streamed<'_>| {
            if let Streamed::Text(t) = piece {
                text.push_str(t);
            }
        };
        let mut flow = Ok(Flow::Continue);
        for e in events {
            flow = state.handle(&event(e.clone()), &mut on_stream);
            if !matches!(flow, Ok(Flow::Continue)) {
                break;
            }
        }
        (flow, state, text)
    }

    #[test]
    fn text_and_tool_use_with_usage() {
        let (flow, state, text) = run(&[
            json!({"type": "message_start", "message": {"id": "m", "usage": {
                "input_tokens": 12, "output_tokens": 1,
                "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block":
                {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                   "usage": {"output_tokens": 55}}),
            json!({"type": "message_stop"}),
        ]);
        assert!(matches!(flow, Ok(Flow::Done)));
        assert_eq!(text, "Let me look.");
        let response = state.finish();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 55,
                cache_read_tokens: 300,
                cache_write_tokens: 40,
            }
        );
        assert_eq!(
            response.message.content,
            vec![
                Block::Text {
                    text: "Let me look.".into()
                },
                Block::ToolUse(ToolCall {
                    id: "toolu_1".into(),
                    name: "fs_read".into(),
                    input: json!({"path": "a"}),
                    input_error: None,
                }),
            ]
        );
    }

    #[test]
    fn bad_tool_json_becomes_input_error() {
        let (_, state, _) = run(&[
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": "t", "name": "x", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{nope"}}),
            json!({"type": "message_stop"}),
        ]);
        let response = state.finish();
        let call = response.message.tool_calls().next().cloned();
        let call = call.unwrap_or_else(|| panic!("no call in {response:?}"));
        assert_eq!(call.input, json!({}));
        assert!(call.input_error.unwrap_or_default().contains("{nope"));
    }

    #[test]
    fn stop_reasons_map() {
        assert_eq!(stop_reason("end_turn"), StopReason::EndTurn);
        assert_eq!(stop_reason("max_tokens"), StopReason::MaxTokens);
        assert_eq!(stop_reason("stop_sequence"), StopReason::StopSequence);
        assert_eq!(stop_reason("refusal"), StopReason::Refusal);
        assert_eq!(
            stop_reason("pause_turn"),
            StopReason::Other("pause_turn".into())
        );
    }

    #[test]
    fn overloaded_before_content_retries_after_content_fails() {
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let (flow, _, _) = run(&[json!({"type": "ping"}), overloaded.clone()]);
        assert!(matches!(flow, Err(Attempt::Retry { .. })), "{flow:?}");

        let (flow, _, _) = run(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            overloaded,
        ]);
        match flow {
            Err(Attempt::Fatal(ProviderError::Transport(m))) => assert!(m.contains("ended early")),
            other => panic!("{other:?}"),
        }

        let invalid =
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}});
        let (flow, _, _) = run(&[invalid]);
        assert!(matches!(flow, Err(Attempt::Fatal(ProviderError::Api(_)))));
    }

    #[test]
    fn malformed_data_names_the_event() {
        let mut state = StreamState::default();
        let bad = Event {
            event: "content_block_delta".into(),
            data: "{not json".into(),
            id: String::new(),
            retry: None,
        };
        match state.handle(&bad, &mut |_| {}) {
            Err(Attempt::Fatal(ProviderError::Transport(m))) => {
                assert!(m.contains("malformed `content_block_delta`"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_events_and_blocks_are_skipped() {
        let (flow, state, text) = run(&[
            json!({"type": "brand_new_event", "x": 1}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            json!({"type": "message_stop"}),
        ]);
        assert!(matches!(flow, Ok(Flow::Done)));
        assert_eq!(text, "");
        let response = state.finish();
        assert!(response.message.content.is_empty());
        assert_eq!(response.stop_reason, StopReason::EndTurn);
    }
}
