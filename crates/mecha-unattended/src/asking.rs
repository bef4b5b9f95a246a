//! `ask_user` in a delegated task: nobody is there to answer, so the
//! question parks the task. The call's result is the owner's answer, given
//! later with `mecha questions answer`; until then the run ends, its
//! session kept, with the turn's other results waiting beside the question.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use mecha_core::{Approver, Capabilities, Decision, ModeSwitch, Tool, ToolCtx, ToolOutput};
use serde_json::Value;

/// The result the parked call holds while the question waits. The model
/// never reads it: the answer takes its place before the next request.
pub const PARKED: &str = "[this question is parked for the owner; their answer will be this \
                          call's result]";

/// The tool; one question parks a run, and a second asked beside it in the
/// same turn is refused so that it is not lost.
#[derive(Debug, Default)]
pub struct ParkingAskUser {
    parked: AtomicBool,
}

#[async_trait]
impl Tool for ParkingAskUser {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        "Ask the task's owner a question. This task runs unattended: the question is kept for \
         the owner, the task pauses, and it resumes with their answer as this tool's result, \
         which may take hours. Ask only what blocks the task (a decision or a fact only they \
         have), make the question complete on its own with the options if there are some, and \
         ask one question at a time."
    }

    fn input_schema(&self) -> Value {
        mecha_core::ask_user_schema("The question for the owner.")
    }

    /// It changes nothing and reaches only the owner.
    fn read_only(&self) -> bool {
        true
    }

    /// As the terminal UI's: the answer is the owner's own words.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn call(&self, input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let question = match mecha_core::asked_question(&input) {
            Ok(question) => question,
            Err(refusal) => return Ok(ToolOutput::refusal(refusal)),
        };
        if self.parked.swap(true, Ordering::SeqCst) {
            return Ok(ToolOutput::refusal(
                "another question is already parked for the owner in this turn; this one was \
                 not asked. Ask it after that one is answered",
            ));
        }
        Ok(ToolOutput {
            parks: Some(question.into()),
            ..ToolOutput::ok(PARKED)
        })
    }
}

/// The approver of a delegated task: the permission mode alone (the rules
/// and hooks answered before it), and a call that needed a yes is refused
/// with what to change, since nobody is there to say it.
#[derive(Debug, Clone)]
pub struct NobodyToAsk(pub ModeSwitch);

#[async_trait]
impl Approver for NobodyToAsk {
    async fn approve(&self, tool: &dyn Tool, _input: &Value) -> Decision {
        if self.0.get().runs_unasked(tool) {
            return Decision::Allow;
        }
        Decision::Blocked(format!(
            "`{}` needs approval, and this is a delegated task with nobody to approve it, so it \
             did not run. Do the task without it, or say in your answer what you would have run; \
             the owner can allow it for unattended runs with an allow [[rule]] or [agent] \
             permission_mode",
            tool.name()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn the_first_question_parks_and_a_second_beside_it_is_refused() {
        let tool = ParkingAskUser::default();
        let ctx = ToolCtx::new(&std::env::temp_dir(), 4096).unwrap();
        let first = tool
            .call(json!({"question": "which account?"}), &ctx)
            .await
            .unwrap();
        assert_eq!(first.parks.as_deref(), Some("which account?"));
        let second = tool.call(json!({"question": "and?"}), &ctx).await.unwrap();
        assert!(second.parks.is_none() && second.is_error, "{second:?}");
        let empty = ParkingAskUser::default()
            .call(json!({"question": " "}), &ctx)
            .await
            .unwrap();
        assert!(empty.parks.is_none() && empty.is_error);
    }
}
