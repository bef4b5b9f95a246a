//! What scripts read. `--output-format json` prints the run's result object
//! once, at the end; `stream-json` prints an `init` event once the run is
//! wired, every event as it happens, and the same result object last. The
//! result object is built in one place, here, from the run's events, for
//! both formats. Their shapes are checked in: docs/schema/.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use mecha_agent::{Event, EventSink, GateVerdict};
use serde_json::{Value, json};

use crate::output;
use crate::wiring::Toolbox;

/// What is known once a run is wired, before its first request.
pub struct RunStart<'a> {
    /// The model requests name; `None` when no model API is behind the run
    /// (a replay).
    pub model: Option<&'a str>,
    /// The id of the session file the run is stored in, if it is stored.
    pub session_id: Option<&'a str>,
    pub workspace: &'a Path,
    pub toolbox: &'a Toolbox,
}

/// Where a run's events go, told also when the run is wired.
pub trait RunSink: EventSink {
    /// The model config asks for, before anything is wired: what a run that
    /// cannot start reports.
    fn configured(&self, _model: Option<&str>) {}
    /// The run is wired and about to send its first request.
    fn started(&self, _start: &RunStart<'_>) {}
}

/// The JSON formats.
pub struct Headless {
    /// stream-json: every event, and the `init` event first.
    each_event: bool,
    began: Instant,
    result: Mutex<ResultParts>,
}

impl Headless {
    pub fn new(each_event: bool) -> Self {
        Self {
            each_event,
            began: Instant::now(),
            result: Mutex::default(),
        }
    }
}

impl RunSink for Headless {
    fn configured(&self, model: Option<&str>) {
        if let Ok(mut parts) = self.result.lock() {
            parts.model = model.map(str::to_owned);
        }
    }

    fn started(&self, start: &RunStart<'_>) {
        if let Ok(mut parts) = self.result.lock() {
            // A replay has no model of its own: what config names stands.
            if let Some(model) = start.model {
                parts.model = Some(model.to_owned());
            }
            parts.session_id = start.session_id.map(str::to_owned);
        }
        if self.each_event {
            output::out(&format!("{}\n", init(start)));
        }
    }
}

impl EventSink for Headless {
    fn emit(&self, event: Event) {
        let Ok(mut parts) = self.result.lock() else {
            return;
        };
        parts.observe(&event);
        // stdout holds only JSON; a retry is still said where a person
        // watching the run looks, as in text mode (a silent pause of
        // seconds looks like a hang).
        if let Event::Retrying { what } = &event {
            crate::terminal::report(what);
        }
        let line = match &event {
            Event::Final { .. } => {
                let elapsed = self.began.elapsed().as_millis();
                parts.object(&event, u64::try_from(elapsed).unwrap_or(u64::MAX))
            }
            _ if self.each_event => match serde_json::to_value(&event) {
                Ok(line) => line,
                Err(_) => return,
            },
            _ => return,
        };
        output::out(&format!("{line}\n"));
    }
}

/// The `init` event: what the run works with.
fn init(start: &RunStart<'_>) -> Value {
    let mut init = crate::commands::tools::toolbox_json(start.toolbox);
    init["type"] = json!("init");
    init["model"] = json!(start.model);
    init["session_id"] = json!(start.session_id);
    init["workspace"] = json!(start.workspace.display().to_string());
    let skills: Vec<&str> = start
        .toolbox
        .carried_skills()
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    init["skills"] = json!(skills);
    init
}

/// What the result object gathers from the events before the final one.
#[derive(Default)]
struct ResultParts {
    model: Option<String>,
    session_id: Option<String>,
    calls: Vec<CallRecord>,
    compactions: u32,
    /// Every hook that ran, as its stream-json event without `type`.
    hooks: Vec<Value>,
}

/// One tool call, as far as it got.
struct CallRecord {
    id: String,
    name: String,
    input: Value,
    /// `None`: the run ended before the gate decided.
    verdict: Option<GateVerdict>,
    /// `None`: the run ended before a result came back.
    result: Option<(bool, usize)>,
}

impl ResultParts {
    fn observe(&mut self, event: &Event) {
        match event {
            Event::ToolCall {
                id, name, input, ..
            } => self.calls.push(CallRecord {
                id: id.clone(),
                name: name.clone(),
                input: input.clone(),
                verdict: None,
                result: None,
            }),
            Event::Gate { id, decision, .. } => {
                if let Some(call) = self.call(id) {
                    call.verdict = Some(decision.clone());
                }
            }
            Event::ToolResult {
                id,
                is_error,
                bytes,
                ..
            } => {
                if let Some(call) = self.call(id) {
                    call.result = Some((*is_error, *bytes));
                }
            }
            Event::Compacted { .. } => self.compactions += 1,
            Event::Hook { .. } => {
                if let Ok(Value::Object(mut hook)) = serde_json::to_value(event) {
                    hook.remove("type");
                    self.hooks.push(Value::Object(hook));
                }
            }
            _ => {}
        }
    }

    /// The latest call with this id: ids are unique within a turn, not
    /// necessarily across a run.
    fn call(&mut self, id: &str) -> Option<&mut CallRecord> {
        self.calls.iter_mut().rev().find(|c| c.id == id)
    }

    /// The result object: the final event with what was gathered.
    fn object(&self, last: &Event, duration_ms: u64) -> Value {
        let Ok(mut object) = serde_json::to_value(last) else {
            return Value::Null;
        };
        object["session_id"] = json!(self.session_id);
        object["model"] = json!(self.model);
        object["duration_ms"] = json!(duration_ms);
        object["tool_calls"] = self.calls.iter().map(CallRecord::shown).collect();
        object["compactions"] = json!(self.compactions);
        object["hooks"] = json!(self.hooks);
        if let Event::Final { usage, .. } = last {
            object["cost"] = crate::cost::json(self.model.as_deref(), usage);
        }
        object
    }
}

impl CallRecord {
    /// `verdict` (`allowed`, `denied`, `blocked`, or null if the gate never
    /// decided), the `stage` that decided and a refusal's `reason`, and
    /// `is_error` and `bytes` of its result (null if none came back).
    fn shown(&self) -> Value {
        let mut shown = json!({
            "id": self.id,
            "name": self.name,
            "input": self.input,
            "verdict": null,
            "stage": null,
            "reason": null,
            "is_error": self.result.map(|(is_error, _)| is_error),
            "bytes": self.result.map(|(_, bytes)| bytes),
        });
        if let Some(Value::Object(verdict)) = self.verdict.as_ref().map(|v| json!(v)) {
            for (key, value) in verdict {
                shown[key] = value;
            }
        }
        shown
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mecha_agent::{GateStage, RunEnd};
    use mecha_core::StopReason;

    #[test]
    fn each_call_carries_its_input_verdict_and_result() {
        let mut parts = ResultParts::default();
        for (id, decision) in [
            (
                "a",
                GateVerdict::Allowed {
                    stage: GateStage::Rule,
                },
            ),
            (
                "b",
                GateVerdict::Blocked {
                    stage: GateStage::Interlock,
                    reason: "armed".into(),
                },
            ),
        ] {
            parts.observe(&Event::ToolCall {
                id: id.into(),
                name: "shell".into(),
                input: json!({"command": id}),
                confined: None,
            });
            parts.observe(&Event::Gate {
                id: id.into(),
                name: "shell".into(),
                decision,
            });
        }
        parts.observe(&Event::ToolResult {
            id: "a".into(),
            name: "shell".into(),
            is_error: false,
            bytes: 3,
            summary: String::new(),
            excerpt: Default::default(),
        });
        let last = Event::Final {
            text: "done".into(),
            end: RunEnd::Answered(StopReason::EndTurn),
            turns: 1,
            usage: Default::default(),
            taint: Default::default(),
        };
        let object = parts.object(&last, 5);
        let calls = object["tool_calls"].as_array().unwrap();
        assert_eq!(calls[0]["input"]["command"], "a");
        assert_eq!(calls[0]["verdict"], "allowed");
        assert_eq!(calls[0]["stage"], "rule");
        assert_eq!(calls[0]["is_error"], false);
        assert_eq!(calls[1]["verdict"], "blocked");
        assert_eq!(calls[1]["stage"], "interlock");
        assert_eq!(calls[1]["reason"], "armed");
        assert!(calls[1]["is_error"].is_null(), "no result came back");
        assert_eq!(object["duration_ms"], 5);
        assert_eq!(object["type"], "final");
    }
}
