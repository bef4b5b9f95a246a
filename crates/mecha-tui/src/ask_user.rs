//! The `ask_user` tool: the model asks the person at the screen, and what
//! they type is the call's result. The question travels to the screen over
//! the same channel as the run's events and approval questions, so it is
//! asked in order with them and queued behind one already on screen; the
//! answer comes back through a oneshot, as an approval's does.
//!
//! It exists only where someone is there to answer: mecha-cli registers it
//! for the terminal UI alone. A run, a chat on a pipe or a batch has nobody
//! to block on.

use async_trait::async_trait;
use mecha_core::{Capabilities, Tool, ToolCtx, ToolOutput};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::bridge::ToScreen;

/// What the model is told when the user pressed Esc (or Ctrl-C) instead of
/// answering: not a failure of the run, a choice to route around.
pub const DECLINED: &str = "the user declined to answer this question; go on without the \
                            answer, or ask it in your reply instead";

/// The model's question, waiting for the person's answer.
#[derive(Debug)]
pub struct UserQuestion {
    /// The subagent asking, `None` for the run's own agent.
    pub who: Option<String>,
    pub question: String,
    reply: oneshot::Sender<Option<String>>,
}

impl UserQuestion {
    /// The question of the subagent `who` (`None`: the run's own agent),
    /// and where its answer arrives (`None`: declined).
    pub fn new(who: Option<&str>, question: &str) -> (Self, oneshot::Receiver<Option<String>>) {
        let (reply, answer) = oneshot::channel();
        let asked = Self {
            who: who.map(str::to_owned),
            question: question.to_owned(),
            reply,
        };
        (asked, answer)
    }

    /// Answers, `None` declining; an answer after the call was dropped (its
    /// turn interrupted) goes nowhere.
    pub fn answer(self, answer: Option<String>) {
        let _ = self.reply.send(answer);
    }

    /// Whether nobody waits for the answer any more.
    pub fn abandoned(&self) -> bool {
        self.reply.is_closed()
    }
}

/// The tool, asking on the screen behind `screen`.
#[derive(Debug)]
pub struct AskUser {
    screen: mpsc::UnboundedSender<ToScreen>,
}

impl AskUser {
    pub fn new(screen: mpsc::UnboundedSender<ToScreen>) -> Self {
        Self { screen }
    }
}

/// The screen closed before anyone answered.
fn unanswered() -> ToolOutput {
    ToolOutput::err(
        "the terminal UI closed before the user answered; go on without the answer, or ask it \
         in your reply instead",
    )
}

#[async_trait]
impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        "Ask the user a question and wait for their typed answer, which is this tool's result. \
         Use it when you need a decision or a fact only they have (which of two approaches they \
         want, a value you cannot find out yourself) and guessing would waste work; do not ask \
         what you can find out with the other tools. Make the question complete on its own, \
         with the options if there are some. The user may decline to answer."
    }

    fn input_schema(&self) -> Value {
        mecha_core::ask_user_schema("The question to show the user.")
    }

    /// It changes nothing: the approval gate would only ask the user
    /// whether the model may ask them something, and plan mode, which
    /// keeps only read-only tools, is where a question is most useful.
    fn read_only(&self) -> bool {
        true
    }

    /// The spec declares nothing for it: the answer is the owner's own
    /// words, neither private data read from the machine nor untrusted
    /// content from outside, and the question reaches only the person at
    /// this screen, so it is no send.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let question = match mecha_core::asked_question(&input) {
            Ok(question) => question,
            Err(refusal) => return Ok(ToolOutput::err(refusal)),
        };
        let (asked, answer) = UserQuestion::new(ctx.agent(), question);
        if self.screen.send(ToScreen::AskUser(asked)).is_err() {
            return Ok(unanswered());
        }
        Ok(match answer.await {
            Ok(Some(answer)) => ToolOutput::ok(answer),
            Ok(None) => ToolOutput::err(DECLINED),
            Err(_) => unanswered(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    /// Calls the tool with `input`, the screen answering `answer`.
    async fn asked(input: Value, answer: Option<&str>) -> (Option<String>, ToolOutput) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let tool = AskUser::new(tx);
        let dir = std::env::temp_dir();
        let ctx = ToolCtx::new(&dir, 10_000).unwrap();
        let screen = async {
            match rx.recv().await {
                Some(ToScreen::AskUser(q)) => {
                    let seen = q.question.clone();
                    q.answer(answer.map(str::to_owned));
                    Some(seen)
                }
                _ => None,
            }
        };
        let (seen, out) = tokio::join!(screen, tool.call(input, &ctx));
        (seen, out.unwrap())
    }

    #[tokio::test]
    async fn the_typed_answer_is_the_result() {
        let (seen, out) = asked(json!({"question": "which colour?"}), Some("blue")).await;
        assert_eq!(seen.as_deref(), Some("which colour?"));
        assert!(!out.is_error);
        assert_eq!(out.content, "blue");
    }

    #[tokio::test]
    async fn a_subagents_question_says_whose_it_is() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let ctx = ToolCtx::new(&std::env::temp_dir(), 10_000)
            .unwrap()
            .with_agent("researcher");
        let tool = AskUser::new(tx);
        let screen = async {
            let Some(ToScreen::AskUser(q)) = rx.recv().await else {
                panic!("nothing asked");
            };
            let who = q.who.clone();
            q.answer(Some("yes".into()));
            who
        };
        let (who, _) = tokio::join!(screen, tool.call(json!({"question": "ok?"}), &ctx));
        assert_eq!(who.as_deref(), Some("researcher"));
    }

    #[tokio::test]
    async fn a_declined_question_tells_the_model_to_go_on() {
        let (_, out) = asked(json!({"question": "which colour?"}), None).await;
        assert!(out.is_error);
        assert_eq!(out.content, DECLINED);
    }

    #[tokio::test]
    async fn no_question_is_refused_without_asking() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let ctx = ToolCtx::new(&std::env::temp_dir(), 10_000).unwrap();
        let out = AskUser::new(tx)
            .call(json!({"question": "  "}), &ctx)
            .await
            .unwrap();
        assert!(rx.try_recv().is_err(), "asked an empty question");
        assert!(
            out.is_error && out.content.contains("needs `question`"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn a_closed_screen_is_no_answer() {
        let (tx, rx) = mpsc::unbounded_channel();
        drop(rx);
        let ctx = ToolCtx::new(&std::env::temp_dir(), 10_000).unwrap();
        let out = AskUser::new(tx)
            .call(json!({"question": "which colour?"}), &ctx)
            .await
            .unwrap();
        assert!(
            out.is_error && out.content.contains("closed before the user answered"),
            "{out:?}"
        );
    }
}
