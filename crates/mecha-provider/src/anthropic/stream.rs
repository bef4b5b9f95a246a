//! Anthropic's streamed events folded into one [`Response`].
//!
//! Kept free of I/O so the mapping can be tested event by event.

use std::collections::BTreeMap;

use eventsource_stream::Event;
use mecha_core::{Block, Message, Role, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

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
        /// `{}` from the API, which streams the input as deltas; some
        /// compatible servers send it whole here instead.
        #[serde(default)]
        input: Option<Value>,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    /// Server tools and the like: not part of mecha's conversation.
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
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
    /// Why, in words: set with a `refusal`.
    #[serde(default)]
    stop_details: Option<StopDetails>,
}

#[derive(Debug, Deserialize)]
struct StopDetails {
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    explanation: Option<String>,
}

impl StopDetails {
    /// The explanation, else the category in words.
    fn readable(self) -> Option<String> {
        let present = |s: Option<String>| s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        present(self.explanation).or_else(|| {
            present(self.category).map(|c| format!("category: {}", c.replace('_', " ")))
        })
    }
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
        /// The input as `content_block_start` gave it.
        start_input: Option<Value>,
        /// The input as `input_json_delta`s streamed it; wins when any came.
        json: String,
    },
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    Redacted(String),
    Skipped,
}

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    blocks: BTreeMap<usize, Partial>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    stop_detail: Option<String>,
    /// Text or a tool call arrived: from here on a failure cannot be
    /// retried, because the caller has already seen part of this answer.
    /// Thinking does not count: it is not the answer, and a retry streams
    /// it afresh.
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
                let partial = match content_block {
                    StartBlock::Text { text } => {
                        self.content_seen = true;
                        if !text.is_empty() {
                            on_stream(Streamed::Text(&text));
                        }
                        Partial::Text(text)
                    }
                    StartBlock::ToolUse { id, name, input } => {
                        self.content_seen = true;
                        Partial::Tool {
                            id,
                            name,
                            start_input: input,
                            json: String::new(),
                        }
                    }
                    StartBlock::Thinking {
                        thinking,
                        signature,
                    } => {
                        if !thinking.is_empty() {
                            on_stream(Streamed::Thinking(&thinking));
                        }
                        Partial::Thinking {
                            thinking,
                            signature: signature.filter(|s| !s.is_empty()),
                        }
                    }
                    StartBlock::RedactedThinking { data } => {
                        on_stream(Streamed::RedactedThinking);
                        Partial::Redacted(data)
                    }
                    StartBlock::Other => Partial::Skipped,
                };
                self.blocks.insert(index, partial);
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                match (self.blocks.get_mut(&index), delta) {
                    (Some(Partial::Text(text)), Delta::Text { text: piece }) => {
                        self.content_seen = true;
                        on_stream(Streamed::Text(&piece));
                        text.push_str(&piece);
                    }
                    (Some(Partial::Tool { json, .. }), Delta::InputJson { partial_json }) => {
                        self.content_seen = true;
                        json.push_str(&partial_json);
                    }
                    (
                        Some(Partial::Thinking { thinking, .. }),
                        Delta::Thinking { thinking: piece },
                    ) => {
                        if !piece.is_empty() {
                            on_stream(Streamed::Thinking(&piece));
                        }
                        thinking.push_str(&piece);
                    }
                    (
                        Some(Partial::Thinking { signature, .. }),
                        Delta::Signature { signature: piece },
                    ) => {
                        signature.get_or_insert_with(String::new).push_str(&piece);
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
                if let Some(details) = delta.stop_details {
                    self.stop_detail = details.readable();
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
                Partial::Tool {
                    id,
                    name,
                    start_input,
                    json,
                } => {
                    let json = match start_input {
                        Some(input) if json.trim().is_empty() => input.to_string(),
                        _ => json,
                    };
                    let (input, input_error) = parse_arguments(&json);
                    content.push(Block::ToolUse(ToolCall {
                        id,
                        name,
                        input,
                        input_error,
                    }));
                }
                // Omitted thinking (summaries off) is an empty text with a
                // signature, and must go back all the same.
                Partial::Thinking {
                    thinking,
                    signature,
                } if !thinking.is_empty() || signature.is_some() => {
                    content.push(Block::Thinking {
                        thinking,
                        signature,
                    });
                }
                Partial::Redacted(data) => content.push(Block::RedactedThinking { data }),
                Partial::Text(_) | Partial::Thinking { .. } | Partial::Skipped => {}
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
            stop_detail: self.stop_detail,
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
mod tests;
