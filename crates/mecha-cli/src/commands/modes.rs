//! The permission mode on the way, for chat and the TUI: `/mode` says or
//! changes it (the TUI's Shift-Tab cycles it), a plan-mode answer ends
//! with the question whether to carry the plan out, and `/approve` (or
//! `/approve edits`) leaves plan mode and sends the approval as the next
//! prompt, so the same conversation goes on with every tool.

use mecha_agent::Agent;
use mecha_core::PermissionMode;
use mecha_tui::{OnPick, PickItem, Picker};

/// The prompt an approval sends: the plan is the model's last answer.
pub const APPROVED: &str = "The plan is approved: carry it out.";

/// One line on what `mode` lets through.
pub fn described(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Ask => "read-only tools run; every other call asks you first",
        PermissionMode::AcceptEdits => {
            "file edits inside the workspace run unasked; other calls still ask"
        }
        PermissionMode::Plan => {
            "only the read-only tools are offered; the model answers with a plan for you to approve"
        }
        PermissionMode::ReadOnly => "only the read-only tools run",
        PermissionMode::Allow => "every call runs unasked",
    }
}

/// `/mode` (`name`: none) or `/mode NAME`: the answer to show.
pub fn mode_command(agent: &Agent, name: Option<&str>) -> String {
    let switch = agent.mode();
    if let Some(name) = name {
        let Some(mode) = PermissionMode::from_name(name) else {
            let names: Vec<&str> = PermissionMode::names().collect();
            return format!(
                "`{name}` is no permission mode; use one of {}\n",
                names.join(", ")
            );
        };
        if let Err(why) = switch.set(mode) {
            return format!("{why}\n");
        }
    }
    let mode = switch.get();
    format!(
        "permission mode: {} ({}). /mode NAME changes it (ask, accept-edits, plan); in the \
         terminal UI Shift-Tab cycles them.\n",
        mode.as_str(),
        described(mode)
    )
}

/// `/approve` with `edits` or not: the mode to go on in, or why there is
/// nothing to approve.
pub fn approval(agent: &Agent, edits: bool) -> Result<PermissionMode, String> {
    if agent.mode().get() != PermissionMode::Plan {
        return Err(
            "nothing to approve: this conversation is not in plan mode (/mode plan, or \
                    Shift-Tab in the terminal UI, enters it)\n"
                .to_owned(),
        );
    }
    let next = if edits {
        PermissionMode::AcceptEdits
    } else {
        PermissionMode::Ask
    };
    agent.mode().set(next)?;
    Ok(next)
}

/// What a front end says once a plan-mode prompt was answered: how to
/// carry the plan out.
pub const PLAN_READY: &str = "plan mode: /approve carries the plan out (asking before each \
change), /approve edits with file edits accepted; or say what to change";

/// The TUI's question after a plan-mode answer.
pub fn plan_picker() -> Picker {
    let item = |name: &str, description: &str, picked: OnPick| PickItem {
        name: name.to_owned(),
        note: None,
        description: description.to_owned(),
        picked,
    };
    Picker::new(
        "carry out this plan?",
        "picks",
        vec![
            item(
                "yes",
                "go on with every tool, asking before each change (ask)",
                OnPick::Enter("/approve".to_owned()),
            ),
            item(
                "yes, accept edits",
                "go on with every tool; file edits run unasked (accept-edits)",
                OnPick::Enter("/approve edits".to_owned()),
            ),
            item(
                "no",
                "keep planning: type what to change",
                OnPick::Show(
                    "still in plan mode: say what to change in the plan, or Shift-Tab to leave \
                     it"
                    .to_owned(),
                ),
            ),
        ],
    )
}
