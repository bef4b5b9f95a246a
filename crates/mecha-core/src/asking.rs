//! An approver that asks a person, whatever the screen: the permission mode
//! answers first, then what the person said "always" to in this session,
//! and only then a question. The terminal's line approver and the TUI's
//! modal are two [`Asker`]s behind the one [`AskingApprover`], so both hold
//! the same rules: a fresh decision is always asked and offers no "always",
//! and an "always" stands for exactly what the question said it covers.

use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use crate::{
    Approver, Decision, FreshReason, ModeApprover, ModeSwitch, RuleAction, Rules, Spellings,
    StandingAnswer, Tool,
};

/// The input schema of `ask_user`, wherever it asks (the terminal UI's
/// modal, a delegated task's parking): one question, `about` saying whom.
pub fn ask_user_schema(about: &str) -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "description": about
            }
        },
        "required": ["question"]
    })
}

/// The question an `ask_user` call asks, or the refusal that names what it
/// needs.
pub fn asked_question(input: &Value) -> Result<&str, String> {
    match input.get("question").and_then(Value::as_str) {
        Some(question) if !question.trim().is_empty() => Ok(question),
        _ => Err("ask_user needs `question`: the question to ask, as a non-empty string".into()),
    }
}

/// What a person may answer besides yes and no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// "always" allows what this stands for, for the rest of the session.
    Always(StandingAnswer),
    /// No "always" for this call, and why.
    NoAlways(String),
    /// A decision on this call alone, and why one is demanded.
    Fresh(FreshReason),
}

impl Offer {
    /// What to offer for `tool` called with `input`; `fresh` when a
    /// decision on this call alone is demanded.
    pub fn for_call(tool: &str, input: &Value, fresh: Option<FreshReason>) -> Self {
        match fresh {
            Some(reason) => Self::Fresh(reason),
            None => match StandingAnswer::for_call(tool, input) {
                Ok(answer) => Self::Always(answer),
                Err(why) => Self::NoAlways(why),
            },
        }
    }
}

/// What the person said to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    Yes,
    /// Yes, and to what the offer's "always" covers.
    Always,
    No,
    /// No, and what the person wants done instead, for the model.
    Instead(String),
    /// Nobody is left to answer (the screen closed): why, for the model.
    Gone(String),
}

/// One way of putting a question to a person.
#[async_trait]
pub trait Asker: Send + Sync {
    /// Asks whether `tool` may run with `input`, for the subagent `who`
    /// (`None`: the run's own agent), offering `offer` besides yes and no.
    async fn ask(&self, who: Option<&str>, tool: &dyn Tool, input: &Value, offer: &Offer) -> Said;
}

/// Approves by the mode, then by standing answers, then by asking.
pub struct AskingApprover<A> {
    /// Read at each call: the session's mode can change while it runs.
    mode: ModeSwitch,
    /// What the person said "always" to in this session, as allow rules.
    standing: Mutex<Rules>,
    asker: A,
}

impl<A: Asker> AskingApprover<A> {
    pub fn new(mode: impl Into<ModeSwitch>, asker: A) -> Self {
        Self {
            mode: mode.into(),
            standing: Mutex::new(Rules::default()),
            asker,
        }
    }

    async fn ask(
        &self,
        who: Option<&str>,
        tool: &dyn Tool,
        input: &Value,
        fresh: Option<FreshReason>,
    ) -> Decision {
        let offer = Offer::for_call(tool.name(), input, fresh);
        match (self.asker.ask(who, tool, input, &offer).await, offer) {
            (Said::Yes, _) => Decision::Allow,
            (Said::Always, Offer::Always(answer)) => {
                if let Ok(mut rules) = self.standing.lock() {
                    // The answer was built to fit these rules; failing
                    // that, it only stays a yes to this one call.
                    let _ = rules.stand(&answer);
                }
                Decision::Allow
            }
            // An "always" where none was offered is no answer to give.
            (Said::Always | Said::No, _) => declined(tool, ""),
            (Said::Instead(instead), _) => declined(tool, &instead),
            (Said::Gone(why), _) => Decision::Blocked(why),
        }
    }

    fn stands(&self, tool: &dyn Tool, input: &Value) -> bool {
        StandingAnswer::never_covers(input).is_none()
            && self.standing.lock().is_ok_and(|rules| {
                rules.evaluate(tool.name(), input, &Spellings::default()) == Some(RuleAction::Allow)
            })
    }
}

/// The person said no: the model is told what they want instead, or, when
/// they said nothing more, to ask or to change course.
fn declined(tool: &dyn Tool, instead: &str) -> Decision {
    let name = tool.name();
    Decision::Deny(match instead.trim() {
        "" => format!(
            "the user declined this `{name}` call; ask them what they want instead, or take \
             another approach"
        ),
        instead => {
            format!("the user declined this `{name}` call and said what to do instead: {instead}")
        }
    })
}

#[async_trait]
impl<A: Asker> Approver for AskingApprover<A> {
    async fn approve(&self, tool: &dyn Tool, input: &Value) -> Decision {
        self.approve_for(None, tool, input).await
    }

    async fn ask_fresh(
        &self,
        tool: &dyn Tool,
        input: &Value,
        why: FreshReason,
    ) -> Option<Decision> {
        self.ask_fresh_for(None, tool, input, why).await
    }

    async fn approve_for(&self, who: Option<&str>, tool: &dyn Tool, input: &Value) -> Decision {
        let mode = self.mode.get();
        if mode.runs_unasked(tool) || !mode.asks() {
            return ModeApprover(mode).approve(tool, input).await;
        }
        if self.stands(tool, input) {
            return Decision::Allow;
        }
        self.ask(who, tool, input, None).await
    }

    async fn ask_fresh_for(
        &self,
        who: Option<&str>,
        tool: &dyn Tool,
        input: &Value,
        why: FreshReason,
    ) -> Option<Decision> {
        Some(self.ask(who, tool, input, Some(why)).await)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{PermissionMode, ToolCtx, ToolOutput};

    struct Shell;

    #[async_trait]
    impl Tool for Shell {
        fn name(&self) -> &str {
            "shell"
        }
        fn description(&self) -> &str {
            "runs commands"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
            Ok(ToolOutput::ok(""))
        }
    }

    /// Answers from a list, and records each offer it was shown.
    struct Answers(Mutex<Vec<Said>>, Mutex<Vec<Offer>>);

    #[async_trait]
    impl Asker for Answers {
        async fn ask(&self, _: Option<&str>, _: &dyn Tool, _: &Value, offer: &Offer) -> Said {
            self.1.lock().unwrap().push(offer.clone());
            self.0.lock().unwrap().remove(0)
        }
    }

    fn approver(said: Vec<Said>) -> AskingApprover<Answers> {
        AskingApprover::new(
            PermissionMode::Ask,
            Answers(Mutex::new(said), Mutex::new(Vec::new())),
        )
    }

    fn command(line: &str) -> Value {
        json!({ "command": line })
    }

    #[test]
    fn always_is_offered_for_what_a_rule_can_pin_down() {
        let git = Offer::for_call("shell", &command("git status"), None);
        assert!(
            matches!(&git, Offer::Always(answer) if answer.describe().contains("git status")),
            "{git:?}"
        );
        let redirect = Offer::for_call("shell", &command("ls > out"), None);
        assert!(matches!(redirect, Offer::NoAlways(_)), "{redirect:?}");
        let fresh = Offer::for_call("shell", &command("git status"), Some(FreshReason::Hook));
        assert_eq!(fresh, Offer::Fresh(FreshReason::Hook));
    }

    #[tokio::test]
    async fn always_stands_for_what_it_covered_and_no_more() {
        let a = approver(vec![Said::Always, Said::No]);
        assert_eq!(
            a.approve(&Shell, &command("git status")).await,
            Decision::Allow
        );
        assert_eq!(
            a.approve(&Shell, &command("git status --short")).await,
            Decision::Allow,
            "covered: nobody was asked"
        );
        assert!(matches!(
            a.approve(&Shell, &command("git push")).await,
            Decision::Deny(_)
        ));
        assert_eq!(a.asker.1.lock().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_fresh_decision_is_asked_despite_a_standing_answer_and_offers_no_always() {
        let a = approver(vec![Said::Always, Said::Always]);
        a.approve(&Shell, &command("ls")).await;
        let fresh = a.ask_fresh(&Shell, &command("ls"), FreshReason::Rule).await;
        assert!(
            matches!(fresh, Some(Decision::Deny(_))),
            "an always where none was offered is a no: {fresh:?}"
        );
        let offers = a.asker.1.lock().unwrap();
        assert_eq!(offers.len(), 2, "asked although ls stands");
        assert_eq!(offers[1], Offer::Fresh(FreshReason::Rule));
    }

    #[tokio::test]
    async fn a_command_that_destroys_offers_no_always_and_takes_none() {
        let a = approver(vec![Said::Always]);
        assert!(matches!(
            a.approve(&Shell, &command("rm -rf build")).await,
            Decision::Deny(_)
        ));
        let offers = a.asker.1.lock().unwrap();
        assert!(
            matches!(&offers[0], Offer::NoAlways(why) if why.contains("`rm` removes files")),
            "{offers:?}"
        );
    }

    #[tokio::test]
    async fn an_always_never_stretches_over_a_command_that_destroys() {
        let a = approver(vec![Said::Always, Said::Always, Said::No, Said::No]);
        assert_eq!(
            a.approve(&Shell, &command("find . -name x")).await,
            Decision::Allow
        );
        assert_eq!(
            a.approve(&Shell, &command("git push origin main")).await,
            Decision::Allow
        );
        for destroys in ["find . -delete", "git push origin main --force"] {
            assert!(
                matches!(
                    a.approve(&Shell, &command(destroys)).await,
                    Decision::Deny(_)
                ),
                "{destroys} ran on an earlier always"
            );
        }
        assert_eq!(a.asker.1.lock().unwrap().len(), 4, "both were asked");
    }

    #[tokio::test]
    async fn a_no_with_what_to_do_instead_tells_the_model_both() {
        let a = approver(vec![
            Said::Instead("  run the tests first ".into()),
            Said::Instead(" ".into()),
        ]);
        assert_eq!(
            a.approve(&Shell, &command("make")).await,
            Decision::Deny(
                "the user declined this `shell` call and said what to do instead: run the tests \
                 first"
                    .into()
            )
        );
        assert!(
            matches!(a.approve(&Shell, &command("make")).await, Decision::Deny(why) if why.contains("ask them what they want")),
            "nothing said is a plain no"
        );
    }

    #[tokio::test]
    async fn nobody_left_to_answer_is_a_refusal_by_policy() {
        let a = approver(vec![Said::Gone("the screen closed".into())]);
        assert_eq!(
            a.approve(&Shell, &command("make")).await,
            Decision::Blocked("the screen closed".into())
        );
    }

    #[tokio::test]
    async fn allow_mode_asks_nobody() {
        let a = AskingApprover::new(
            PermissionMode::Allow,
            Answers(Mutex::new(Vec::new()), Mutex::new(Vec::new())),
        );
        assert_eq!(
            a.approve(&Shell, &command("rm -rf x")).await,
            Decision::Allow
        );
    }
}
