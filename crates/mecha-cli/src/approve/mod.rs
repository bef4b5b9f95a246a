//! Asking the person at the terminal whether a call may run, showing what it
//! will do (for file writes, the change to the file as a diff).
//!
//! The person sees the whole change before a yes is accepted: a long one is
//! shown a page at a time, and until the last page is shown the only
//! answers are "more", "whole" and "no". "Always" stands for what the
//! question says it covers, held as allow rules (see [`StandingAnswer`]).

mod current;
mod preview;

pub use preview::preview;

use std::sync::Mutex;

use async_trait::async_trait;
use mecha_core::{
    Approver, Decision, FreshReason, ModeApprover, PermissionMode, RuleAction, Rules,
    StandingAnswer, Tool, ToolCtx,
};
use serde_json::Value;

use crate::terminal::printable;

/// Lines shown before the person is asked to page on: a change longer than
/// this is paged rather than cut.
const PAGE_LINES: usize = 150;

/// Asks on the terminal (stderr for the question, stdin for the answer).
pub struct TerminalApprover {
    mode: PermissionMode,
    /// What the user said "always" to in this session, as allow rules.
    standing: Mutex<Rules>,
    /// For reading the current contents of a file a write would replace.
    ctx: ToolCtx,
}

/// What the person said.
enum Answer {
    Yes,
    Always,
    More,
    Whole,
    No,
}

impl TerminalApprover {
    pub fn new(mode: PermissionMode, ctx: ToolCtx) -> Self {
        Self {
            mode,
            standing: Mutex::new(Rules::default()),
            ctx,
        }
    }

    /// Asks about one call, made by the subagent `who` (`None`: the run's
    /// own agent). `fresh`: why a decision on this call alone is demanded,
    /// and then no standing answer is offered.
    async fn ask(
        &self,
        who: Option<&str>,
        tool: &dyn Tool,
        input: &Value,
        fresh: Option<FreshReason>,
    ) -> Decision {
        let (choices, standing) = match fresh {
            Some(why) => (format!("{}. allow? [y]es / [n]o: ", why.why()), None),
            None => match StandingAnswer::for_call(tool.name(), input) {
                Ok(answer) => (
                    format!(
                        "allow? [y]es / [n]o / [a]lways allow {} in this session: ",
                        answer.describe()
                    ),
                    Some(answer),
                ),
                Err(why) => (
                    format!("allow? [y]es / [n]o (no [a]lways for this call: {why}): "),
                    None,
                ),
            },
        };
        let body = preview::preview(tool.name(), input, &self.ctx);
        let lines: Vec<&str> = body.split_inclusive('\n').collect();
        let mut shown = PAGE_LINES.min(lines.len());
        let asker = match who {
            Some(subagent) => format!("mecha's subagent `{subagent}`"),
            None => "mecha".to_owned(),
        };
        say(&format!(
            "\n{asker} wants to run `{}`:\n{}",
            tool.name(),
            lines[..shown].concat()
        ));
        loop {
            let unseen = lines.len() - shown;
            if unseen > 0 {
                let question = format!(
                    "  … {unseen} more line{} to see before this can be allowed. [m]ore / \
                     [w]hole / [n]o: ",
                    if unseen == 1 { "" } else { "s" }
                );
                let end = match next_answer(&question).await {
                    Answer::More => (shown + PAGE_LINES).min(lines.len()),
                    Answer::Whole => lines.len(),
                    Answer::Yes | Answer::Always => {
                        say("  not yet: the rest of the change has not been shown.\n");
                        continue;
                    }
                    Answer::No => return declined(tool),
                };
                say(&lines[shown..end].concat());
                shown = end;
                continue;
            }
            return match (next_answer(&choices).await, standing) {
                (Answer::Yes, _) => Decision::Allow,
                (Answer::Always, Some(answer)) => {
                    if let Ok(mut rules) = self.standing.lock() {
                        // The answer was built to fit these rules; failing
                        // that, it only stays a yes to this one call.
                        let _ = rules.stand(&answer);
                    }
                    Decision::Allow
                }
                _ => declined(tool),
            };
        }
    }

    fn stands(&self, tool: &dyn Tool, input: &Value) -> bool {
        self.standing.lock().is_ok_and(|rules| {
            rules.evaluate(tool.name(), input, &mecha_core::Spellings::default())
                == Some(RuleAction::Allow)
        })
    }
}

#[async_trait]
impl Approver for TerminalApprover {
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

fn declined(tool: &dyn Tool) -> Decision {
    Decision::Deny(format!(
        "the user declined this `{}` call; ask them what they want instead, or take another \
         approach",
        tool.name()
    ))
}

/// Writes question text to stderr, made printable: it carries the model's
/// arguments and a file's contents.
fn say(text: &str) {
    crate::output::err(&printable(text));
}

/// Asks `question` (one line, made printable where it is shown) and reads
/// the answer.
async fn next_answer(question: &str) -> Answer {
    // End of input: nobody is left to say yes.
    let Some(line) = crate::stdin::answer(question).await else {
        return Answer::No;
    };
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "a" | "always" => Answer::Always,
        // Enter pages on, as a pager does; it never allows anything.
        "" | "m" | "more" => Answer::More,
        "w" | "whole" => Answer::Whole,
        _ => Answer::No,
    }
}
