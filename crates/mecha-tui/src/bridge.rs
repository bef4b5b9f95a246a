//! The agent's side of the screen: the run's events, its approval
//! questions and the model's own (`ask_user`), carried from the agent's task to the screen's over one
//! channel, so the screen handles both in the order they happened and the
//! agent never touches the terminal.
//!
//! [`ModalApprover`] is mecha-core's asking approver (the permission mode
//! first, then what the user said "always" to, then a question) with
//! [`ModalAsker`] putting the question in the approval modal.

use async_trait::async_trait;
use mecha_agent::{Event, EventSink};
use mecha_core::{Asker, AskingApprover, Confinement, Offer, Said, Tool};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::ask_user::UserQuestion;
use crate::modal::Answer;

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
    /// The sandbox the call runs in, if one confines it.
    pub confined: Option<Confinement>,
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
            confined: None,
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

/// Asks through the modal, behind [`mecha_core::AskingApprover`].
#[derive(Debug)]
pub struct ModalAsker(pub mpsc::UnboundedSender<ToScreen>);

#[async_trait]
impl Asker for ModalAsker {
    async fn ask(&self, who: Option<&str>, tool: &dyn Tool, input: &Value, offer: &Offer) -> Said {
        let (mut question, answer) = Question::new(who, tool.name(), input, offer.clone());
        question.confined = tool.confinement();
        if self.0.send(ToScreen::Ask(question)).is_err() {
            return nobody(tool);
        }
        match answer.await {
            Ok(Answer::Yes) => Said::Yes,
            Ok(Answer::Always) => Said::Always,
            Ok(Answer::No) => Said::No,
            Ok(Answer::Instead(instead)) => Said::Instead(instead),
            Err(_) => nobody(tool),
        }
    }
}

/// The approver the TUI's runs use: asks in the modal.
pub type ModalApprover = AskingApprover<ModalAsker>;

/// The screen closed before anyone answered: nobody said yes.
fn nobody(tool: &dyn Tool) -> Said {
    Said::Gone(format!(
        "`{}` needs approval and the terminal UI closed before anyone answered",
        tool.name()
    ))
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;
