#![allow(clippy::unwrap_used)]

use async_trait::async_trait;
use mecha_core::{Approver, Decision, FreshReason, PermissionMode, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::*;

struct Shell;

#[async_trait]
impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }
    fn description(&self) -> &str {
        "runs a command"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _input: Value, _ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        Ok(ToolOutput::ok(""))
    }
}

/// Answers the next question with `answer`, returning it for inspection.
async fn answer_next(
    rx: &mut mpsc::UnboundedReceiver<ToScreen>,
    answer: Answer,
) -> (Option<String>, Offer) {
    match rx.recv().await {
        Some(ToScreen::Ask(q)) => {
            let seen = (q.who.clone(), q.offer.clone());
            q.answer(answer);
            seen
        }
        other => panic!("expected a question, got {other:?}"),
    }
}

#[tokio::test]
async fn always_stands_for_what_it_said_and_a_fresh_decision_is_asked_anyway() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let approver = std::sync::Arc::new(ModalApprover::new(PermissionMode::Ask, ModalAsker(tx)));
    let git = json!({"command": "git status"});

    let asking = {
        let approver = approver.clone();
        let git = git.clone();
        tokio::spawn(async move { approver.approve_for(Some("helper"), &Shell, &git).await })
    };
    let (who, offer) = answer_next(&mut rx, Answer::Always).await;
    assert_eq!(who.as_deref(), Some("helper"));
    assert!(
        matches!(&offer, Offer::Always(answer) if answer.describe().contains("git status")),
        "{offer:?}"
    );
    assert_eq!(asking.await.unwrap(), Decision::Allow);

    // Covered now: no question (a question would wait for ever).
    let covered = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        approver.approve(&Shell, &json!({"command": "git status -s"})),
    )
    .await;
    assert_eq!(
        covered.ok(),
        Some(Decision::Allow),
        "a standing answer asked again"
    );
    assert!(rx.try_recv().is_err(), "a standing answer asked again");

    // Not covered: asked, and a no is the user's refusal.
    let asking = {
        let approver = approver.clone();
        tokio::spawn(async move {
            approver
                .approve(&Shell, &json!({"command": "git push"}))
                .await
        })
    };
    answer_next(&mut rx, Answer::No).await;
    assert!(matches!(asking.await.unwrap(), Decision::Deny(reason) if reason.contains("declined")));

    // A fresh decision ignores the standing answer and offers no always.
    let asking = {
        let approver = approver.clone();
        tokio::spawn(async move {
            approver
                .ask_fresh(&Shell, &json!({"command": "git status"}), FreshReason::Rule)
                .await
        })
    };
    let (_, offer) = answer_next(&mut rx, Answer::Always).await;
    assert_eq!(offer, Offer::Fresh(FreshReason::Rule));
    assert!(
        matches!(asking.await.unwrap(), Some(Decision::Deny(_))),
        "an always to a fresh question allowed the call"
    );
}

#[tokio::test]
async fn a_closed_screen_is_nobody_saying_yes() {
    let (tx, rx) = mpsc::unbounded_channel();
    drop(rx);
    let approver = ModalApprover::new(PermissionMode::Ask, ModalAsker(tx));
    let decision = approver
        .approve(&Shell, &json!({"command": "rm -rf build"}))
        .await;
    assert!(
        matches!(decision, Decision::Blocked(reason) if reason.contains("closed before anyone answered"))
    );
}

#[tokio::test]
async fn events_reach_the_screen_in_order() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = ChannelSink(tx);
    sink.emit(Event::Text { text: "a".into() });
    sink.emit(Event::RedactedThinking);
    assert!(matches!(
        rx.recv().await,
        Some(ToScreen::Event(Event::Text { .. }))
    ));
    assert!(matches!(
        rx.recv().await,
        Some(ToScreen::Event(Event::RedactedThinking))
    ));
}
