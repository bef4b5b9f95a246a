//! One turn's calls: each gated in order (by the tool surface the turn's
//! skill loads leave), the approved ones run concurrently within the
//! turn's budget, and the results (with what they
//! brought into the session: taint, a narrowing, a compaction request)
//! handed back in call order.

use mecha_core::{Block, Call, EXTERNAL_HEADER, Registry, Slot, ToolCall, ToolOutput, run_turn};

use crate::agent::{Agent, AgentError, Session};
use crate::ending::CUT_CALL;
use crate::events::{Event, EventSink, Excerpt, GateStage, GateVerdict, summary};
use crate::progress;
use crate::surface::Surface;

/// What one turn's calls handed back: the result blocks in call order,
/// which of them came from outside the machine, and the question the turn
/// parked on, if a call parked it.
pub(crate) struct TurnResults {
    pub(crate) blocks: Vec<Block>,
    pub(crate) external: Vec<String>,
    pub(crate) parked: Option<Parked>,
}

/// A delegated task's question for its absent owner: the call that asked
/// it waits for the answer as its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    pub call_id: String,
    pub question: String,
}

impl Agent {
    /// Gates every call in order, runs the approved ones concurrently within
    /// the turn budget, and returns the results in call order. The budget
    /// covers the refusals too: every block the turn sends takes room. A
    /// call the output limit cut (always the last) is refused without asking
    /// the gate: nobody should approve arguments that are not all there.
    pub(crate) async fn dispatch(
        &self,
        registry: &Registry,
        session: &mut Session,
        turn: u32,
        calls: &[ToolCall],
        cut: Option<ToolCall>,
        events: &dyn EventSink,
    ) -> Result<TurnResults, AgentError> {
        let whole = calls.len();
        let surface = self.turn_surface(registry, session.surface.as_ref(), calls);
        let calls: Vec<&ToolCall> = calls.iter().chain(cut.as_ref()).collect();
        let mut verdicts = Vec::with_capacity(calls.len());
        for (n, &call) in calls.iter().enumerate() {
            events.emit(Event::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
                confined: registry.get(&call.name).and_then(|t| t.confinement()),
            });
            let verdict = if n >= whole {
                GateVerdict::Blocked {
                    stage: GateStage::Validation,
                    reason: CUT_CALL.to_owned(),
                }
            } else {
                let surface = surface.as_ref();
                self.gate
                    .judge(registry, &self.ctx, session.taint, surface, call, events)
                    .await
            };
            events.emit(Event::Gate {
                id: call.id.clone(),
                name: call.name.clone(),
                decision: verdict.clone(),
            });
            verdicts.push(verdict);
        }
        let slots: Vec<Slot> = calls
            .iter()
            .zip(&verdicts)
            .map(|(c, verdict)| match verdict {
                GateVerdict::Allowed { .. } => Slot::Run(Call {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    input: c.input.clone(),
                }),
                GateVerdict::Denied { reason, .. } | GateVerdict::Blocked { reason, .. } => {
                    Slot::Refused {
                        name: c.name.clone(),
                        output: ToolOutput::refusal(reason.clone()),
                    }
                }
            })
            .collect();
        let changes_workspace = calls.iter().zip(&verdicts).any(|(call, verdict)| {
            matches!(verdict, GateVerdict::Allowed { .. })
                && registry
                    .get(&call.name)
                    .is_some_and(|tool| !tool.read_only())
        });
        if changes_workspace {
            self.checkpoint_before_change(session).await?;
        }
        // What an interrupt while they run may have left half done.
        session.running = calls
            .iter()
            .zip(&verdicts)
            .filter(|(_, verdict)| matches!(verdict, GateVerdict::Allowed { .. }))
            .map(|(call, _)| call.id.clone())
            .collect();
        let budget = self.limits.turn_budget;
        // A subagent's child starts from the taint its call was judged by.
        let turn_ctx = self.ctx.clone().with_taint(session.taint);
        let results = progress::reporting(&turn_ctx, &calls, events, |ctx| async move {
            run_turn(registry, &ctx, turn, budget, slots).await
        })
        .await;
        session.running.clear();
        let outputs = calls
            .iter()
            .zip(results)
            .map(|(call, result)| {
                result.map_err(|source| AgentError::Tool {
                    name: call.name.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ran: Vec<(&ToolCall, &ToolOutput)> = calls
            .iter()
            .zip(&verdicts)
            .zip(&outputs)
            .filter(|((_, verdict), _)| matches!(verdict, GateVerdict::Allowed { .. }))
            .map(|((call, _), output)| (*call, output))
            .collect();
        let used = outputs.iter().map(|o| o.content.len()).sum();
        let notes = self.post_tool_notes(registry, &ran, used, events).await;
        let mut blocks = Vec::with_capacity(calls.len() + notes.len());
        let mut external = Vec::new();
        let mut parked = None;
        for ((call, verdict), output) in calls.into_iter().zip(&verdicts).zip(outputs) {
            if let (GateVerdict::Allowed { .. }, Some(tool)) = (verdict, registry.get(&call.name)) {
                session.taint.record(tool.capabilities(), &output);
                session.compact_requested |= output.requests_compaction;
                if let Some(narrowing) = &output.narrows
                    && Surface::apply(&mut session.surface, narrowing, tool.name(), registry)
                    && let Some(surface) = &session.surface
                {
                    events.emit(Event::Narrowed {
                        by: narrowing.by.clone(),
                        tools: surface.tools().map(str::to_owned).collect(),
                    });
                }
            }
            let shown = output
                .content
                .strip_prefix(EXTERNAL_HEADER)
                .unwrap_or(&output.content);
            events.emit(Event::ToolResult {
                id: call.id.clone(),
                name: call.name.clone(),
                is_error: output.is_error,
                bytes: output.content.len(),
                summary: summary(shown, output.is_error),
                excerpt: Excerpt::of(shown),
            });
            if output.external {
                external.push(call.id.clone());
            }
            if let (None, Some(question)) = (&parked, &output.parks) {
                parked = Some(Parked {
                    call_id: call.id.clone(),
                    question: question.to_string(),
                });
            }
            blocks.push(Block::ToolResult {
                tool_use_id: call.id.clone(),
                content: output.content,
                is_error: output.is_error,
                images: output.images,
            });
        }
        // After every result: a provider puts results first, and a note
        // must not sit where a result is expected.
        blocks.extend(notes);
        Ok(TurnResults {
            blocks,
            external,
            parked,
        })
    }

    /// The surface a turn's calls are judged by: the session's, narrowed as
    /// every load in the turn that passes validation will narrow it (a
    /// skill with `tools:`). The calls run side by side with the load, so
    /// one beside it, before or after it in the model's order, must not
    /// escape what it restricts. A load refused later on (by a hook, a
    /// rule, a person) still narrows its turn: that errs towards refusing,
    /// and its refusal is among the results.
    fn turn_surface(
        &self,
        registry: &Registry,
        session: Option<&Surface>,
        calls: &[ToolCall],
    ) -> Option<Surface> {
        let loads: Vec<_> = calls
            .iter()
            .filter_map(|call| {
                let narrowing = registry.get(&call.name)?.narrowing(&call.input)?;
                let tool = self.gate.validate(registry, session, call).ok()?;
                Some((narrowing, tool.name()))
            })
            .collect();
        Surface::for_turn(session, &loads, registry)
    }
}
