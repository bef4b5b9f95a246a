//! The user's `[[hook]]` programs as the agent's hooks: each event's
//! matching hooks run (concurrently, in `mecha-hooks`), their verdicts
//! decide, and every hook that ran is reported as an event, which the
//! front end shows (a line on stderr, an event in stream-json).

use std::sync::Arc;

use async_trait::async_trait;
use mecha_agent::{Event, EventSink, Hook, HookSaid, HookVerdict, PromptVerdict, SessionSource};
use mecha_core::{ModeSwitch, Tool, ToolOutput};
use mecha_hooks::{Decision, HookContext, HookEvent, HookSet, Verdicts};
use serde_json::{Value, json};

/// The run's hooks, with what every hook is told about the run.
pub struct UserHooks {
    pub set: Arc<HookSet>,
    pub context: HookContext,
    /// The session's mode, which Shift-Tab or `/mode` may change on the
    /// way: each hook is told the mode as it is when it runs.
    pub mode: ModeSwitch,
}

impl UserHooks {
    fn context(&self) -> HookContext {
        HookContext {
            permission_mode: self.mode.get().as_str().to_owned(),
            ..self.context.clone()
        }
    }
}

#[async_trait]
impl Hook for UserHooks {
    async fn pre_tool(
        &self,
        tool: &dyn Tool,
        input: &Value,
        call_id: &str,
        events: &dyn EventSink,
    ) -> HookVerdict {
        let verdicts = self
            .set
            .pre_tool(&self.context(), tool.name(), input, call_id)
            .await;
        report(
            events,
            HookEvent::PreTool,
            Some((tool.name(), call_id)),
            &verdicts,
        );
        match verdicts.decision {
            Decision::Pass => HookVerdict::Pass,
            Decision::Block(reason) => HookVerdict::Block(reason),
            Decision::Ask(reason) => HookVerdict::Ask(reason),
        }
    }

    /// A post_tool hook's `block` cannot undo the call: its reason is a
    /// note for the model, as its context is.
    async fn post_tool(
        &self,
        tool: &dyn Tool,
        input: &Value,
        call_id: &str,
        output: &ToolOutput,
        events: &dyn EventSink,
    ) -> Vec<String> {
        if !self.set.has(HookEvent::PostTool) {
            return Vec::new();
        }
        let response = json!({"content": output.content, "is_error": output.is_error});
        let verdicts = self
            .set
            .post_tool(&self.context(), tool.name(), input, call_id, &response)
            .await;
        report(
            events,
            HookEvent::PostTool,
            Some((tool.name(), call_id)),
            &verdicts,
        );
        verdicts
            .each
            .into_iter()
            .flat_map(|run| {
                let reason = match run.decision {
                    Decision::Block(reason) => Some(reason),
                    Decision::Pass | Decision::Ask(_) => None,
                };
                reason.into_iter().chain(run.context)
            })
            .collect()
    }

    async fn user_prompt(&self, prompt: &str, events: &dyn EventSink) -> PromptVerdict {
        if !self.set.has(HookEvent::UserPrompt) {
            return PromptVerdict::Send {
                context: Vec::new(),
            };
        }
        let verdicts = self.set.user_prompt(&self.context(), prompt).await;
        report(events, HookEvent::UserPrompt, None, &verdicts);
        match verdicts.decision {
            Decision::Block(reason) => PromptVerdict::Block(reason),
            Decision::Pass | Decision::Ask(_) => PromptVerdict::Send {
                context: verdicts.contexts,
            },
        }
    }

    async fn stop(&self, answer: &str, sent_back: bool, events: &dyn EventSink) -> Option<String> {
        if !self.set.has(HookEvent::Stop) {
            return None;
        }
        let verdicts = self.set.stop(&self.context(), sent_back, answer).await;
        report(events, HookEvent::Stop, None, &verdicts);
        match verdicts.decision {
            Decision::Block(reason) => Some(reason),
            Decision::Pass | Decision::Ask(_) => None,
        }
    }

    async fn session_start(&self, source: SessionSource, events: &dyn EventSink) -> Vec<String> {
        if !self.set.has(HookEvent::SessionStart) {
            return Vec::new();
        }
        let verdicts = self
            .set
            .session_start(&self.context(), source.as_str())
            .await;
        report(events, HookEvent::SessionStart, None, &verdicts);
        verdicts.contexts
    }
}

/// One event per hook that ran, in config order.
pub fn report(
    events: &dyn EventSink,
    event: HookEvent,
    call: Option<(&str, &str)>,
    verdicts: &Verdicts,
) {
    for run in &verdicts.each {
        let (verdict, reason) = match &run.decision {
            Decision::Pass => (HookSaid::Pass, None),
            Decision::Block(reason) => (HookSaid::Block, Some(reason.clone())),
            Decision::Ask(reason) => (HookSaid::Ask, Some(reason.clone())),
        };
        events.emit(Event::Hook {
            event: event.to_string(),
            command: run.command.clone(),
            tool: call.map(|(tool, _)| tool.to_owned()),
            id: call.map(|(_, id)| id.to_owned()),
            verdict,
            reason,
            context: run.context.clone(),
            message: run.system_message.clone(),
            failure: run.failure.clone(),
            elapsed_ms: u64::try_from(run.elapsed.as_millis()).unwrap_or(u64::MAX),
        });
    }
}
