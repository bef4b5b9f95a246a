//! Calls the user makes at the prompt instead of the model: `!command`
//! (a shell command run as the user) and `@path` (a file attached to the
//! prompt). The front end says which tool and input each is; here they go
//! through the same gate as the model's calls (surface, interlock, hooks,
//! the jail, the mode, rules), with one difference: typing the call was
//! the user's yes, so where the gate would ask a person (the approver, a
//! `prompt` rule, a hook's `ask`, the one-call trifecta) the answer is
//! yes. What no yes lifts still refuses: read-only and plan mode, a
//! `forbid` rule, a hook's block, the interlock's refusal of a send in an
//! armed conversation.
//!
//! A call that ran counts like any other: its result's taint enters the
//! session (a `!command` reads private data as `shell` declares), and its
//! output, within the turn budget and spilled with a marker when it is
//! longer, waits in [`Session::attached`] to go with the next prompt, so
//! the model sees what the user saw.

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use mecha_core::{
    Approver, Call, Decision, FreshReason, Record, Slot, Tool, ToolCall, ToolOutput, run_turn,
};
use serde_json::Value;

use crate::agent::{Agent, Session};
use crate::events::{Event, EventSink, Excerpt, GateVerdict, summary};
use crate::gate::Gated;

/// One call the user typed.
#[derive(Debug, Clone)]
pub struct TypedCall {
    pub tool: String,
    pub input: Value,
    /// What the model is told before its output (`the user ran …`).
    pub label: String,
}

/// The user's yes, given by typing the call.
struct Typed;

#[async_trait]
impl Approver for Typed {
    async fn approve(&self, _tool: &dyn Tool, _input: &Value) -> Decision {
        Decision::Allow
    }

    async fn ask_fresh(&self, _: &dyn Tool, _: &Value, _: FreshReason) -> Option<Decision> {
        Some(Decision::Allow)
    }
}

/// Gives each typed call an id of its own for the screen's lines.
static TYPED: AtomicU64 = AtomicU64::new(0);

impl Agent {
    /// Runs the calls the user typed, together, within one turn's budget;
    /// each is the output it gave (`is_error` when it failed) or the
    /// gate's refusal. What ran is attached to the next prompt.
    pub async fn run_typed(
        &self,
        session: &mut Session,
        typed: &[TypedCall],
        events: &dyn EventSink,
    ) -> Vec<Result<ToolOutput, String>> {
        let tools = self.snapshot();
        let registry = &tools.registry;
        let calls: Vec<ToolCall> = typed
            .iter()
            .map(|c| ToolCall {
                id: format!("typed-{}", TYPED.fetch_add(1, Ordering::Relaxed)),
                name: c.tool.clone(),
                input: c.input.clone(),
                input_error: None,
            })
            .collect();
        let mut slots = Vec::with_capacity(calls.len());
        for call in &calls {
            events.emit(Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
                confined: registry.get(&call.name).and_then(|t| t.confinement()),
            });
            let gated = Gated {
                registry,
                ctx: &self.ctx,
                taint: session.taint,
                surface: session.surface.as_ref(),
            };
            let verdict = self.gate.judge_asking(&Typed, gated, call, events).await;
            events.emit(Event::Gate {
                id: call.id.clone(),
                name: call.name.clone(),
                decision: verdict.clone(),
            });
            slots.push(match verdict {
                GateVerdict::Allowed { .. } => Slot::Run(Call {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                }),
                GateVerdict::Denied { reason, .. } | GateVerdict::Blocked { reason, .. } => {
                    Slot::Refused {
                        name: call.name.clone(),
                        output: ToolOutput::refusal(reason),
                    }
                }
            });
        }
        let ran: Vec<bool> = slots.iter().map(|s| matches!(s, Slot::Run(_))).collect();
        let ctx = self.ctx.clone().with_taint(session.taint);
        let outputs = run_turn(
            registry,
            &ctx,
            session.turns,
            self.limits.turn_budget,
            slots,
        )
        .await;
        let before = session.taint;
        let mut done = Vec::with_capacity(calls.len());
        for (((call, typed), output), ran) in calls.iter().zip(typed).zip(outputs).zip(ran) {
            let output = match output {
                Ok(output) => output,
                Err(e) => ToolOutput::err(format!("`{}` failed: {e:#}", call.name)),
            };
            events.emit(Event::ToolResult {
                id: call.id.clone(),
                name: call.name.clone(),
                is_error: output.is_error,
                bytes: output.content.len(),
                summary: summary(&output.content, output.is_error),
                excerpt: Excerpt::of(&output.content),
            });
            if !ran {
                done.push(Err(output.content));
                continue;
            }
            if let Some(tool) = registry.get(&call.name) {
                session.taint.record(tool.capabilities(), &output);
            }
            session
                .attached
                .push(format!("[mecha: {}]\n{}", typed.label, output.content));
            done.push(Ok(output));
        }
        self.note_changes(session, registry, before, false, events);
        done
    }

    /// Journals what waits to go with the next prompt (after a
    /// `!command`), so that leaving before that prompt loses nothing: the
    /// resumed session sends it then. An `@path` goes with the prompt it is
    /// in at once, and needs no record of its own.
    pub fn journal_attached(&self, session: &Session) {
        self.note(&Record::Attached {
            attached: session.attached.clone(),
        });
        self.sync();
    }
}
