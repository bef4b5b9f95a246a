//! What waits for the owner in a workspace: questions delegated tasks
//! parked and sends the outbox staged. The TUI says so when it opens, and
//! `/questions` and `/outbox` list them.

use std::path::Path;

use mecha_unattended::Question;
use mecha_unattended::outbox::{Decision, Item};

use crate::commands::delegated::question_store;
use crate::wiring::outbox_store;

fn questions_in(workspace: &Path) -> Vec<Question> {
    question_store()
        .ok()
        .and_then(|store| store.list().ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|q| q.workspace == workspace)
        .collect()
}

fn staged_in(workspace: &Path) -> Vec<Item> {
    outbox_store()
        .ok()
        .and_then(|store| store.list().ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|item| item.workspace == workspace && item.decision == Decision::Staged)
        .collect()
}

/// The lines a screen opens with when something waits here; none when
/// nothing does.
pub fn announcement(workspace: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let questions = questions_in(workspace).len();
    if questions > 0 {
        lines.push(format!(
            "{questions} question{} from delegated tasks wait{} for your answer: /questions",
            if questions == 1 { "" } else { "s" },
            if questions == 1 { "s" } else { "" },
        ));
    }
    let staged = staged_in(workspace).len();
    if staged > 0 {
        lines.push(format!(
            "{staged} staged send{} wait{} for your review: /outbox",
            if staged == 1 { "" } else { "s" },
            if staged == 1 { "s" } else { "" },
        ));
    }
    lines
}

/// `/questions`: this workspace's parked questions and how to answer.
pub fn questions(workspace: &Path) -> String {
    let all = questions_in(workspace);
    if all.is_empty() {
        return "no delegated task of this workspace waits for an answer\n".to_owned();
    }
    let mut out = String::new();
    for q in &all {
        let who = q.delegation.trigger.as_deref().unwrap_or("a delegated run");
        out.push_str(&format!("{}  ({who}, {})  {}\n", q.id, q.asked, q.question));
    }
    out.push_str("answer one with `mecha questions answer ID \"…\"` in a shell\n");
    out
}

/// `/outbox`: this workspace's staged sends and how to decide.
pub fn outbox(workspace: &Path) -> String {
    let all = staged_in(workspace);
    if all.is_empty() {
        return "nothing of this workspace waits in the outbox\n".to_owned();
    }
    let mut out = String::new();
    for item in &all {
        out.push_str(&format!(
            "{}  {}  {}  {}\n",
            item.id,
            item.action,
            item.staged,
            item.staged_by()
        ));
    }
    out.push_str(
        "read one with `mecha outbox show ID`, then `mecha outbox approve ID` or `reject ID` in \
         a shell\n",
    );
    out
}
