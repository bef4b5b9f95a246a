//! What the mock answers to one request.

use mecha_provider::script::{Script, ScriptTurn};

/// One scripted answer. Each request to a model endpoint takes the next
/// reply, whichever API it was sent to, and gets it in that API's format.
#[derive(Debug, Clone, PartialEq)]
pub enum MockReply {
    /// A full model turn, streamed: text split over several deltas, tool
    /// arguments split mid-JSON, stop reason, usage.
    Turn(ScriptTurn),
    /// An error status, with a `retry-after` header (seconds) if set and
    /// the API's error body (made up from the status unless given).
    Status {
        code: u16,
        retry_after: Option<u64>,
        body: Option<String>,
    },
    /// The turn's stream without its final events; then the connection is
    /// closed mid-body.
    CutStream(ScriptTurn),
    /// A stream with one event whose data is not JSON.
    Malformed,
    /// Response headers, then silence until the mock is dropped.
    Stall,
    /// 401 with the API's authentication error.
    Unauthorized,
    /// A 200 stream that reports an error in-band before any content, e.g.
    /// Anthropic's `overloaded_error`.
    ErrorEvent { kind: String, message: String },
    /// A 200 stream whose only event is an older llama.cpp's error line,
    /// `error: {"code":500,"message":..,"type":"server_error"}`: an SSE
    /// field that is not `data`.
    LlamaCppError { message: String },
    /// Anthropic: a 200 stream that streams this thinking, then reports
    /// `overloaded_error` in-band before any of the answer (the
    /// OpenAI-compatible API gets the bare error event).
    OverloadedInThinking(String),
}

impl MockReply {
    /// A turn that only answers with text.
    pub fn text(text: impl Into<String>) -> Self {
        MockReply::Turn(ScriptTurn::text(text))
    }

    /// An error status without `retry-after`.
    pub fn status(code: u16) -> Self {
        MockReply::Status {
            code,
            retry_after: None,
            body: None,
        }
    }

    /// An error status with `retry-after: <seconds>`.
    pub fn status_retry_after(code: u16, seconds: u64) -> Self {
        MockReply::Status {
            code,
            retry_after: Some(seconds),
            body: None,
        }
    }

    /// Anthropic's in-band overload error.
    pub fn overloaded() -> Self {
        MockReply::ErrorEvent {
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        }
    }

    /// Every turn of a script, in order.
    pub fn from_script(script: Script) -> Vec<Self> {
        script.turns.into_iter().map(MockReply::Turn).collect()
    }
}

impl From<ScriptTurn> for MockReply {
    fn from(turn: ScriptTurn) -> Self {
        MockReply::Turn(turn)
    }
}
