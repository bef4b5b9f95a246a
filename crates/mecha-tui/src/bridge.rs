//! The agent's side of the screen: the run's events, its approval
//! questions and the model's own (`ask_user`), carried from the agent's task to the screen's over one
//! channel, so the screen handles both in the order they happened and the
//! agent never touches the terminal.
//!
//! [`ModalApprover`] answers as the terminal approver does (the permission
//! mode first, then what the user said "always" to, then a question), but
//! asks through the approval modal; a fresh decision is always asked.

use std::sync::Mutex;

use async_trait::async_trait;
use mecha_agent::{Event, EventSink};
use mecha_core::{
    Approver, Decision, FreshReason, ModeApprover, PermissionMode, RuleAction, Rules, Spellings,
    StandingAnswer, Tool,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::ask_user::UserQuestion;
use crate::modal::{Answer, Offer};

/// What the agent's task sends the screen.
#[derive(Debug)]
pub enum ToScreen {
    Event(Event),
    Ask(Question),
    /// A line mecha would have written to stderr (a server that died, a
    /// hook's failure): stderr is under the screen while it is up.
    Notice(String),
    /// The model's own question, from the `ask_user` tool.
    AskUser(UserQuestion),
}

/// A call waiting for the person's answer.
#[derive(Debug)]
pub struct Question {
    /// The subagent asking, `None` for the run's own agent.
    pub who: Option<String>,
    pub tool: String,
    pub input: Value,
    pub offer: Offer,
    reply: oneshot::Sender<Answer>,
}

impl Question {
    /// A question, and where its answer arrives.
    pub fn new(
        who: Option<&str>,
        tool: &str,
        input: &Value,
        offer: Offer,
    ) -> (Self, oneshot::Receiver<Answer>) {
        let (reply, answer) = oneshot::channel();
        let question = Self {
            who: who.map(str::to_owned),
            tool: tool.to_owned(),
            input: input.clone(),
            offer,
            reply,
        };
        (question, answer)
    }

    /// Answers; an answer after the run gave up waiting goes nowhere.
    pub fn answer(self, answer: Answer) {
        let _ = self.reply.send(answer);
    }

    /// Whether nobody waits for the answer any more (the call was dropped
    /// with an interrupted turn).
    pub fn abandoned(&self) -> bool {
        self.reply.is_closed()
    }
}

/// Sends each event to the screen.
#[derive(Debug, Clone)]
pub struct ChannelSink(pub mpsc::UnboundedSender<ToScreen>);

impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
        // The screen is gone only when the TUI is closing.
        let _ = self.0.send(ToScreen::Event(event));
    }
}

/// Asks through the modal.
#[derive(Debug)]
pub struct ModalApprover {
    mode: PermissionMode,
    /// What the user said "always" to in this session, as allow rules.
    standing: Mutex<Rules>,
    screen: mpsc::UnboundedSender<ToScreen>,
}

impl ModalApprover {
    pub fn new(mode: PermissionMode, screen: mpsc::UnboundedSender<ToScreen>) -> Self {
        Self {
            mode,
            standing: Mutex::new(Rules::default()),
            screen,
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
        let (question, answer) = Question::new(who, tool.name(), input, offer.clone());
        if self.screen.send(ToScreen::Ask(question)).is_err() {
            return nobody(tool);
        }
        match (answer.await, offer) {
            (Ok(Answer::Yes), _) => Decision::Allow,
            (Ok(Answer::Always), Offer::Always { .. }) => {
                if let (Ok(answer), Ok(mut rules)) = (
                    StandingAnswer::for_call(tool.name(), input),
                    self.standing.lock(),
                ) {
                    // Built to fit these rules; failing that it stays a yes
                    // to this one call.
                    let _ = rules.stand(&answer);
                }
                Decision::Allow
            }
            // An "always" where none was offered is no answer to give.
            (Ok(Answer::Always | Answer::No), _) => Decision::Deny(format!(
                "the user declined this `{}` call; ask them what they want instead, or take \
                 another approach",
                tool.name()
            )),
            (Err(_), _) => nobody(tool),
        }
    }

    fn stands(&self, tool: &dyn Tool, input: &Value) -> bool {
        self.standing.lock().is_ok_and(|rules| {
            rules.evaluate(tool.name(), input, &Spellings::default()) == Some(RuleAction::Allow)
        })
    }
}

/// The screen closed before anyone answered: nobody said yes.
fn nobody(tool: &dyn Tool) -> Decision {
    Decision::Blocked(format!(
        "`{}` needs approval and the terminal UI closed before anyone answered",
        tool.name()
    ))
}

#[async_trait]
impl Approver for ModalApprover {
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
        if self.mode != PermissionMode::Ask || tool.read_only() {
            return ModeApprover(self.mode).approve(tool, input).await;
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
#[path = "bridge_tests.rs"]
mod tests;
