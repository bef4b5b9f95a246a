//! What a run reports as it goes, for the front end to render (text on
//! stdout, activity on stderr, or one JSON object per event).

use mecha_core::{StopReason, Taint, Usage};
use serde::Serialize;
use serde_json::Value;

/// Which stage of the gate let a call through or refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStage {
    /// The call itself was malformed: unknown tool, bad arguments.
    Validation,
    Interlock,
    Hook,
    Rule,
    Approval,
}

/// The gate's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum GateVerdict {
    /// Approved; `stage` is what approved it (a rule, or the approver).
    Allowed { stage: GateStage },
    /// Refused by the person asked.
    Denied { stage: GateStage, reason: String },
    /// Refused by policy or because the call was malformed.
    Blocked { stage: GateStage, reason: String },
}

/// One thing that happened in a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A piece of the model's text, as it streams.
    Text { text: String },
    /// The model asked for a tool.
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    /// What the gate decided about it.
    Gate {
        id: String,
        name: String,
        decision: GateVerdict,
    },
    /// A result going back to the model.
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        bytes: usize,
        summary: String,
    },
    /// Tokens used by one model request.
    Usage { turn: u32, usage: Usage },
    /// The run is over.
    Final {
        text: String,
        stop_reason: Option<StopReason>,
        turns: u32,
        usage: Usage,
        taint: Taint,
    },
}

/// Receives events. Called from the loop's task; keep it quick.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}
