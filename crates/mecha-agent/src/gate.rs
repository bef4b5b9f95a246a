//! The dispatch gate: for every call, in call order, validation (the tool
//! exists, lies inside the run's tool surface, had its schema loaded if it
//! was deferred, and gets valid arguments),
//! then the interlock, then the hook, then the declared paths resolved through the
//! jail, then the `[[rule]]`s, then the approver. A call that only stages
//! an item for the owner's review (an outbox action) passes after the hook:
//! it sends nothing, and the review is the decision. Each stage can only
//! refuse; a later stage never overrides an earlier refusal. A call the
//! interlock finds to be the whole trifecta by itself goes through the hook
//! and the rules (a `forbid` still forbids), and then only a fresh human
//! decision lets it run: it takes the place of the allow rule, the `prompt`
//! rule's question or the approver, so it is asked once.

use std::sync::Arc;

use mecha_core::{
    Approver, Decision, FreshReason, InterlockVerdict, ModeSwitch, Registry, RuleAction, Rules,
    Spellings, Taint, Tool, ToolCall, ToolCtx, interlock, unknown_tool,
};

use crate::deferral::Deferral;
use crate::events::{EventSink, GateStage, GateVerdict};
use crate::hook::{Hook, HookVerdict};
use crate::surface::Surface;
use crate::validate::SchemaCheck;

/// Everything the gate consults; fixed for a run but the mode, which is
/// read at each call.
pub struct Gate {
    pub mode: ModeSwitch,
    pub block_sends_after_private: bool,
    pub rules: Rules,
    pub hook: Option<Arc<dyn Hook>>,
    pub approver: Arc<dyn Approver>,
    pub(crate) schemas: SchemaCheck,
    /// The run's deferred schemas, when it defers them.
    pub(crate) deferral: Option<Arc<Deferral>>,
}

impl Gate {
    pub fn new(
        mode: impl Into<ModeSwitch>,
        approver: Arc<dyn Approver>,
        rules: Rules,
        hook: Option<Arc<dyn Hook>>,
        block_sends_after_private: bool,
    ) -> Self {
        Self {
            mode: mode.into(),
            block_sends_after_private,
            rules,
            hook,
            approver,
            schemas: SchemaCheck::default(),
            deferral: None,
        }
    }

    /// The validation stage alone: the tool exists, lies inside `surface`
    /// and gets arguments that match its schema; `Err` is the refusal.
    /// Dispatch asks it too, of a call whose narrowing the turn is judged
    /// by: a load that never gets past it narrows nothing.
    pub(crate) fn validate<'r>(
        &self,
        registry: &'r Registry,
        surface: Option<&Surface>,
        call: &ToolCall,
    ) -> Result<&'r dyn Tool, String> {
        let Some(tool) = registry.get(&call.name) else {
            return Err(unknown_tool(registry, &call.name));
        };
        // A shortened tool list alone is advisory: a model that saw the
        // tool earlier in the conversation can still name it.
        if let Some(surface) = surface
            && !surface.allows(&call.name)
        {
            return Err(surface.refusal(&call.name, registry));
        }
        // The model never saw the schema: its arguments are a guess. The
        // answer is the schema, and the tool joins the list.
        if let Some(answer) = self
            .deferral
            .as_ref()
            .and_then(|d| d.first_call(&call.name))
        {
            return Err(answer);
        }
        if let Some(error) = &call.input_error {
            return Err(format!(
                "the arguments for `{}` are not valid JSON ({error}); send a JSON object that \
                 matches its input schema",
                call.name
            ));
        }
        self.schemas.check(tool.as_ref(), &call.input)?;
        Ok(tool.as_ref())
    }

    /// Judges one call against the conversation's taint and tool surface
    /// (`None`: nothing narrowed it) as they stand; `ctx` is the context it
    /// would run in, whose jail judges its paths.
    pub async fn judge(
        &self,
        registry: &Registry,
        ctx: &ToolCtx,
        taint: Taint,
        surface: Option<&Surface>,
        call: &ToolCall,
        events: &dyn EventSink,
    ) -> GateVerdict {
        let gated = Gated {
            registry,
            ctx,
            taint,
            surface,
        };
        self.judge_asking(self.approver.as_ref(), gated, call, events)
            .await
    }

    /// [`judge`](Self::judge), with `approver` answering where the run's
    /// approver would (a call the user typed is its own yes).
    pub(crate) async fn judge_asking(
        &self,
        approver: &dyn Approver,
        gated: Gated<'_>,
        call: &ToolCall,
        events: &dyn EventSink,
    ) -> GateVerdict {
        use GateStage::*;
        let Gated {
            registry,
            ctx,
            taint,
            surface,
        } = gated;
        let blocked = |stage, reason: String| GateVerdict::Blocked { stage, reason };
        let tool = match self.validate(registry, surface, call) {
            Ok(tool) => tool,
            Err(reason) => return blocked(Validation, reason),
        };
        // Staging sends nothing: the owner's review is the decision, so the
        // hooks (which may still refuse) are all that stand before it.
        if tool.stages_for_review() {
            if let Some(hook) = &self.hook
                && let HookVerdict::Block(reason) =
                    hook.pre_tool(tool, &call.input, &call.id, events).await
            {
                return blocked(Hook, format!("refused by a hook: {reason}"));
            }
            return GateVerdict::Allowed { stage: Hook };
        }
        // With nobody to give the fresh decision, this is the refusal.
        let needs_fresh = match interlock(taint, tool, self.block_sends_after_private) {
            InterlockVerdict::Refused(reason) => return blocked(Interlock, reason),
            InterlockVerdict::NeedsFreshDecision(refusal) => Some(refusal),
            InterlockVerdict::Clear => None,
        };
        let hook_asks = match &self.hook {
            Some(hook) => match hook.pre_tool(tool, &call.input, &call.id, events).await {
                HookVerdict::Pass => None,
                HookVerdict::Block(reason) => {
                    return blocked(Hook, format!("refused by a hook: {reason}"));
                }
                HookVerdict::Ask(reason) => Some(reason),
            },
            None => None,
        };
        // A path the tool would refuse is refused now, in the jail's words:
        // nobody should be asked to approve a write outside the workspace
        // or into mecha's home. What the paths resolve to is also what
        // forbid and prompt rules must judge.
        let spellings = match Spellings::of(tool, &call.input, ctx) {
            Ok(spellings) => spellings,
            Err(refusal) => return blocked(Path, refusal.to_string()),
        };
        // Read-only and plan mode refuse whatever changes things, before
        // any rule or person can be asked: neither an allow rule nor a yes
        // to a prompt rule lifts it.
        if let Some(refusal) = self.mode.get().refusal(tool) {
            return blocked(Approval, refusal);
        }
        match (
            self.rules.evaluate(tool.name(), &call.input, &spellings),
            needs_fresh,
        ) {
            (Some(RuleAction::Forbid), _) => blocked(
                Rule,
                format!(
                    "`{}` with these arguments is forbidden by a [[rule]] in your config",
                    tool.name()
                ),
            ),
            // In place of whatever else would have answered: one question.
            (_, Some(refusal)) => {
                let why = FreshReason::OneCallTrifecta;
                match approver.ask_fresh(tool, &call.input, why).await {
                    Some(decision) => verdict(Interlock, decision),
                    None => blocked(Interlock, refusal),
                }
            }
            // A hook's `ask` is a prompt rule of its own: only a person,
            // asked afresh, lets the call run.
            (_, None) if hook_asks.is_some() => {
                let why = FreshReason::Hook;
                match approver.ask_fresh(tool, &call.input, why).await {
                    Some(decision) => verdict(Hook, decision),
                    None => blocked(
                        Hook,
                        format!(
                            "a hook requires a fresh human decision for this `{}` call ({}), and \
                             this run has nobody to ask",
                            tool.name(),
                            hook_asks.unwrap_or_default()
                        ),
                    ),
                }
            }
            (Some(RuleAction::Prompt), None) => {
                let why = FreshReason::Rule;
                match approver.ask_fresh(tool, &call.input, why).await {
                    Some(decision) => verdict(Rule, decision),
                    None => blocked(
                        Rule,
                        format!(
                            "a [[rule]] requires a fresh human decision for this `{}` call, and \
                             this run has nobody to ask",
                            tool.name()
                        ),
                    ),
                }
            }
            (Some(RuleAction::Allow), None) => GateVerdict::Allowed { stage: Rule },
            (None, None) => verdict(Approval, approver.approve(tool, &call.input).await),
        }
    }
}

/// What a call is judged against: the run's tools, the context it would
/// run in, and the conversation's taint and surface as they stand.
#[derive(Clone, Copy)]
pub(crate) struct Gated<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) ctx: &'a ToolCtx,
    pub(crate) taint: Taint,
    pub(crate) surface: Option<&'a Surface>,
}

fn verdict(stage: GateStage, decision: Decision) -> GateVerdict {
    match decision {
        Decision::Allow => GateVerdict::Allowed { stage },
        Decision::Deny(reason) => GateVerdict::Denied { stage, reason },
        Decision::Blocked(reason) => GateVerdict::Blocked { stage, reason },
    }
}
