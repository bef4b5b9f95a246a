//! Asking the person at the terminal whether a call may run, showing what it
//! will do (for file writes, the change to the file as a diff).
//!
//! The person sees the whole change before a yes is accepted: a long one is
//! shown a page at a time, and until the last page is shown the only
//! answers are "more", "whole" and "no". "Always" stands for what the
//! question says it covers, held as allow rules (see
//! [`mecha_core::StandingAnswer`]).

mod current;
mod preview;

pub use preview::preview;

use async_trait::async_trait;
use mecha_core::{Asker, Offer, Said, Tool, ToolCtx};
use serde_json::Value;

use crate::terminal::printable;

/// Lines shown before the person is asked to page on: a change longer than
/// this is paged rather than cut.
const PAGE_LINES: usize = 150;

/// Asks on the terminal (stderr for the question, stdin for the answer),
/// behind [`mecha_core::AskingApprover`].
pub struct TerminalAsker {
    /// For reading the current contents of a file a write would replace.
    ctx: ToolCtx,
}

/// What the person typed.
enum Answer {
    Yes,
    Always,
    More,
    Whole,
    No,
}

impl TerminalAsker {
    pub fn new(ctx: ToolCtx) -> Self {
        Self { ctx }
    }
}

#[async_trait]
impl Asker for TerminalAsker {
    async fn ask(&self, who: Option<&str>, tool: &dyn Tool, input: &Value, offer: &Offer) -> Said {
        let choices = match offer {
            Offer::Fresh(why) => format!("{}. allow? [y]es / [n]o: ", why.why()),
            Offer::Always(answer) => format!(
                "allow? [y]es / [n]o / [a]lways allow {} in this session: ",
                answer.describe()
            ),
            Offer::NoAlways(why) => {
                format!("allow? [y]es / [n]o (no [a]lways for this call: {why}): ")
            }
        };
        let body = preview::preview(tool.name(), input, &self.ctx);
        let lines: Vec<&str> = body.split_inclusive('\n').collect();
        let mut shown = PAGE_LINES.min(lines.len());
        let asker = match who {
            Some(subagent) => format!("mecha's subagent `{subagent}`"),
            None => "mecha".to_owned(),
        };
        let confined = tool
            .confinement()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default();
        say(&format!(
            "\n{asker} wants to run `{}`{confined}:\n{}",
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
                    Answer::No => return instead().await,
                };
                say(&lines[shown..end].concat());
                shown = end;
                continue;
            }
            return match next_answer(&choices).await {
                Answer::Yes => Said::Yes,
                Answer::Always => Said::Always,
                Answer::No => instead().await,
                // Enter pages on, and at the end there is nothing left to
                // page: like anything else, it allows nothing.
                Answer::More | Answer::Whole => Said::No,
            };
        }
    }
}

/// After a no, what the person wants done instead, which the model gets
/// with the refusal; an empty line (or the end of input) is a plain no.
async fn instead() -> Said {
    let question = "  what should the model do instead? (Enter: just refuse): ";
    match crate::stdin::answer(question).await {
        Some(line) if !line.trim().is_empty() => Said::Instead(line.trim().to_owned()),
        _ => Said::No,
    }
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
