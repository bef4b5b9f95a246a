//! Asking the person at the terminal whether a call may run, showing what it
//! will do (for file writes, a diff).

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;

use async_trait::async_trait;
use mecha_core::{Approver, Decision, ModeApprover, PermissionMode, Tool, ToolCtx};
use serde_json::Value;
use similar::TextDiff;

use crate::terminal::printable;

/// Longest preview of a call's input, so a huge write does not flood the
/// terminal before the question.
const PREVIEW_LINES: usize = 60;

/// Asks on the terminal (stderr for the question, stdin for the answer).
pub struct TerminalApprover {
    mode: PermissionMode,
    /// Tools the user said "always" to, for this session.
    always: Mutex<BTreeSet<String>>,
    /// For reading the current contents of a file a write would replace.
    ctx: ToolCtx,
}

impl TerminalApprover {
    pub fn new(mode: PermissionMode, ctx: ToolCtx) -> Self {
        Self {
            mode,
            always: Mutex::new(BTreeSet::new()),
            ctx,
        }
    }

    async fn ask(&self, tool: &dyn Tool, input: &Value, offer_always: bool) -> Decision {
        let mut question = format!("\nmecha wants to run `{}`:\n", tool.name());
        question.push_str(&printable(&preview(tool.name(), input, &self.ctx)));
        question.push_str(if offer_always {
            "allow? [y]es / [n]o / [a]lways for this tool in this session: "
        } else {
            "a rule asks for a fresh decision on this call. allow? [y]es / [n]o: "
        });
        {
            let mut stderr = std::io::stderr().lock();
            let _ = stderr.write_all(question.as_bytes());
            let _ = stderr.flush();
        }
        let answer = crate::stdin::next_line()
            .await
            .map(|line| line.trim().to_ascii_lowercase())
            .unwrap_or_default();
        match answer.as_str() {
            "y" | "yes" => Decision::Allow,
            "a" | "always" if offer_always => {
                if let Ok(mut always) = self.always.lock() {
                    always.insert(tool.name().to_owned());
                }
                Decision::Allow
            }
            _ => Decision::Deny(format!(
                "the user declined this `{}` call; ask them what they want instead, or take \
                 another approach",
                tool.name()
            )),
        }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, tool: &dyn Tool, input: &Value) -> Decision {
        if self.mode != PermissionMode::Ask || tool.read_only() {
            return ModeApprover(self.mode).approve(tool, input).await;
        }
        if self
            .always
            .lock()
            .is_ok_and(|always| always.contains(tool.name()))
        {
            return Decision::Allow;
        }
        self.ask(tool, input, true).await
    }

    async fn ask_fresh(&self, tool: &dyn Tool, input: &Value) -> Option<Decision> {
        Some(self.ask(tool, input, false).await)
    }
}

/// What the call will do, in the terms a person checks: the command, the
/// URL, or the change to a file as a diff.
fn preview(tool: &str, input: &Value, ctx: &ToolCtx) -> String {
    let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or("");
    let body = match tool {
        "shell" => format!("  $ {}\n", text("command")),
        "http_fetch" => format!("  GET {}\n", text("url")),
        "fs_edit" => diff(text("path"), text("old"), text("new")),
        "fs_write" => {
            let path = text("path");
            let current = ctx
                .resolve_in_workspace(path)
                .ok()
                .and_then(|p| p.dir().read_to_string(p.relative()).ok())
                .unwrap_or_default();
            diff(path, &current, text("content"))
        }
        _ => serde_json::to_string_pretty(input).unwrap_or_default() + "\n",
    };
    let lines: Vec<&str> = body.lines().collect();
    // A command is shown whole, however long: what is hidden below a cut is
    // what would run unseen.
    if tool == "shell" || lines.len() <= PREVIEW_LINES {
        return body;
    }
    let mut cut = lines[..PREVIEW_LINES].join("\n");
    cut.push_str(&format!(
        "\n  … {} more lines\n",
        lines.len() - PREVIEW_LINES
    ));
    cut
}

fn diff(path: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}
