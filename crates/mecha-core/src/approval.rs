//! Approval: whether a call that passed the interlock, the hook and the
//! rules may run. Approval is asked call by call, in order (it may wait on a
//! human); the approved calls then run concurrently.

use async_trait::async_trait;
use serde_json::Value;

use crate::{ModeSwitch, PermissionMode, Tool};

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused by whoever was asked; the reason reaches the model so it can
    /// pick another approach.
    Deny(String),
    /// Refused by policy (mode, rules, hook, interlock): not a user's
    /// correction, and never mined as one.
    Blocked(String),
}

/// Decides whether one call may run.
#[async_trait]
pub trait Approver: Send + Sync {
    async fn approve(&self, tool: &dyn Tool, input: &Value) -> Decision;

    /// Asks a human for a fresh decision on this one call, ignoring any
    /// standing answer and any `--yes`, and offering none: what a `prompt`
    /// rule and the one-call trifecta demand. `why` says which, for the
    /// person asked. `None` when nobody can answer, and then the call is
    /// refused.
    async fn ask_fresh(
        &self,
        _tool: &dyn Tool,
        _input: &Value,
        _why: FreshReason,
    ) -> Option<Decision> {
        None
    }

    /// [`approve`](Self::approve), asked on behalf of the subagent `who`
    /// (`None`: the run's own agent), for an approver that shows a person
    /// who wants the call.
    async fn approve_for(&self, _who: Option<&str>, tool: &dyn Tool, input: &Value) -> Decision {
        self.approve(tool, input).await
    }

    /// [`ask_fresh`](Self::ask_fresh) on behalf of the subagent `who`.
    async fn ask_fresh_for(
        &self,
        _who: Option<&str>,
        tool: &dyn Tool,
        input: &Value,
        why: FreshReason,
    ) -> Option<Decision> {
        self.ask_fresh(tool, input, why).await
    }
}

/// Why a call needs a fresh human decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshReason {
    /// A `prompt` `[[rule]]` matched it.
    Rule,
    /// A hook answered `ask`.
    Hook,
    /// Untrusted content is in the conversation and the call reads private
    /// data and sends where the model says (see
    /// [`crate::Capabilities::is_one_call_trifecta`]).
    OneCallTrifecta,
}

impl FreshReason {
    /// One line telling the person asked why this call is asked afresh.
    pub fn why(self) -> &'static str {
        match self {
            Self::Rule => "a rule asks for a fresh decision on this call",
            Self::Hook => "a hook asks for a fresh decision on this call",
            Self::OneCallTrifecta => {
                "untrusted content is in this conversation and this call could read private data \
                 and send it in one go, so it needs a fresh decision"
            }
        }
    }
}

/// Answers from the mode alone, asking nobody: for runs with no one to ask.
///
/// Read-only and plan mode are not decided here: the gate refuses a
/// changing tool in them before any rule or approver is consulted, so that
/// one place decides it ([`PermissionMode::refusal`]). What reaches this
/// approver and is not allowed outright
/// ([`PermissionMode::runs_unasked`]) needed a yes that nobody can give.
#[derive(Debug, Clone, Copy)]
pub struct ModeApprover(pub PermissionMode);

#[async_trait]
impl Approver for ModeApprover {
    async fn approve(&self, tool: &dyn Tool, _input: &Value) -> Decision {
        if self.0.runs_unasked(tool) {
            return Decision::Allow;
        }
        // Nothing is watching to answer, and the safe reading of a question
        // nobody hears is no. Nobody said no, either: it is policy, not a
        // user's correction.
        Decision::Blocked(format!(
            "`{}` needs approval and this run is non-interactive (use --yes to allow)",
            tool.name()
        ))
    }
}

/// The mode alone as it stands at each call: for a run with nobody to
/// ask whose mode can still change (`/mode` in a chat on a pipe).
#[async_trait]
impl Approver for ModeSwitch {
    async fn approve(&self, tool: &dyn Tool, input: &Value) -> Decision {
        ModeApprover(self.get()).approve(tool, input).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{ToolCtx, ToolOutput};

    struct Writer;

    #[async_trait]
    impl Tool for Writer {
        fn name(&self) -> &str {
            "writer"
        }
        fn description(&self) -> &str {
            "changes things"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
            Ok(ToolOutput::ok("wrote"))
        }
    }

    /// Nobody answered, so nobody declined: a refusal by policy, which is
    /// never mined as a user's correction.
    #[tokio::test]
    async fn a_question_nobody_can_answer_is_blocked_not_denied() {
        assert_eq!(
            ModeApprover(PermissionMode::Ask)
                .approve(&Writer, &json!({}))
                .await,
            Decision::Blocked(
                "`writer` needs approval and this run is non-interactive (use --yes to allow)"
                    .into()
            )
        );
        assert_eq!(
            ModeApprover(PermissionMode::Allow)
                .approve(&Writer, &json!({}))
                .await,
            Decision::Allow
        );
    }
}
