//! The slash commands of `mecha chat` and the TUI, answered by mecha and
//! never sent to the model: `/help`, `/quit` (`/exit`), those that ask what
//! this run carries (`/tools`, `/skills`, `/skills NAME`), `/cost`, `/sessions`
//! (this workspace's, or `all`), `/questions` and `/outbox` (what waits for
//! the owner here), `/compact`, `/mode` and `/approve` (see
//! `modes.rs`), and the TUI's own `/clear`, `/resume [ID]`, `/model NAME`
//! and `/rewind` (see `tui_rewind.rs`), which change the conversation
//! itself.
//! What the run carries comes from the running agent (its tools, its skill
//! tool and the session's surface), not from config again: `--skill` and a
//! narrowing change a run without changing a file. What config withheld
//! comes from the toolbox, since a withheld skill is absent from the agent
//! and must still be shown.
//!
//! Which lines are commands: a line whose first word is `/` and lowercase
//! letters, when that word is a command's name, or when it is the whole
//! line (`/halp` then says it is unknown). Anything else goes to the
//! model, so a prompt that starts with a path (`/etc/hosts is broken`,
//! `/tmp is full`) is a prompt.

use std::path::Path;

use mecha_agent::{Agent, AskedCompaction, Session};
use mecha_core::{Capabilities, Egress, Tool};
use mecha_session::{Listing, Store};
use mecha_tui::{OnPick, PickItem, Switch};

use crate::Failure;
use crate::commands::sessions::{failure, started, store};
use crate::commands::tools::ARMED_MARK;
use crate::commands::{modes, tui_rewind, waiting};
use crate::wiring::Toolbox;

/// Which front end reads the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    Chat,
    Tui,
}

/// What a slash command asks of the front end.
#[derive(Debug, PartialEq, Eq)]
pub enum Slash {
    /// Show this (outside text in it is not yet made printable).
    Answer(String),
    Quit,
    /// `/skills`: chat prints [`skills`], the TUI lets one pick from
    /// [`skill_items`].
    Skills,
    /// `/compact`: summarize the conversation now ([`compacted`] says how
    /// it went).
    Compact,
    /// Leave this conversation for another (the TUI only).
    Switch(Switch),
    /// `/resume` without an id: the TUI lets one pick from
    /// [`sessions_to_pick`].
    PickSession,
    /// `/approve`: plan mode was left for this mode; the front end sends
    /// [`modes::APPROVED`] as the next prompt.
    Approved,
    /// `/rewind` (the TUI only): see [`tui_rewind::answer`].
    Rewind(tui_rewind::Asked),
}

/// The commands, as `/help` lists them, and whether chat has them.
const COMMANDS: &[(&str, &str, bool)] = &[
    ("/help", "these commands", true),
    (
        "/tools",
        "the tools this run offers, with what each can do",
        true,
    ),
    (
        "/skills [NAME]",
        "the skills this run carries (and those withheld), or one skill's body",
        true,
    ),
    (
        "/compact",
        "summarize the conversation now, to free the context",
        true,
    ),
    (
        "/cost",
        "this session's tokens by kind, and what they would cost",
        true,
    ),
    (
        "/sessions [all]",
        "this workspace's stored sessions, newest first (all: every workspace's)",
        true,
    ),
    (
        "/questions",
        "what delegated tasks of this workspace asked you",
        true,
    ),
    ("/outbox", "the sends staged here for your review", true),
    (
        "/resume [ID]",
        "go on with a stored session (without an id, pick one of this workspace's)",
        false,
    ),
    (
        "/clear",
        "start a new session; this one stays stored",
        false,
    ),
    (
        "/model NAME",
        "go on with this session on another model",
        false,
    ),
    (
        "/rewind",
        "go back to before a prompt: its files, the conversation, or both (also Esc Esc)",
        false,
    ),
    (
        "/mode [NAME]",
        "the permission mode, or change it: ask, accept-edits, plan",
        true,
    ),
    (
        "/approve [edits]",
        "carry out the plan made in plan mode (edits: with file edits accepted)",
        true,
    ),
    ("/quit, /exit", "end the session", true),
];

/// Every command's name, without its slash.
const NAMES: &[&str] = &[
    "help",
    "tools",
    "skills",
    "compact",
    "cost",
    "sessions",
    "questions",
    "outbox",
    "resume",
    "clear",
    "model",
    "rewind",
    "mode",
    "approve",
    "quit",
    "exit",
];

/// The commands `front` has, each with its slash: what Tab completes.
pub fn names(front: Front) -> Vec<String> {
    let tui_only = ["resume", "clear", "model", "rewind"];
    NAMES
        .iter()
        .filter(|name| front == Front::Tui || !tui_only.contains(name))
        .map(|name| format!("/{name}"))
        .collect()
}

/// The most sessions `/sessions` lists.
const SESSIONS_SHOWN: usize = 20;

/// The command `line` is, if it is one (see the module's rule), in a run
/// in `workspace`.
pub fn command(
    line: &str,
    front: Front,
    agent: &Agent,
    session: &Session,
    toolbox: &Toolbox,
    workspace: &Path,
) -> Option<Slash> {
    let (word, args) = parse(line)?;
    let answer = match (word, args.as_slice()) {
        ("quit" | "exit", []) => return Some(Slash::Quit),
        ("help", []) => help(front),
        ("tools", []) => tools(agent, session),
        ("skills", []) => return Some(Slash::Skills),
        ("skills", [name]) => skill_body(toolbox, name),
        ("skills", _) => "/skills takes one skill's name at most: /skills NAME\n".to_owned(),
        ("compact", []) => return Some(Slash::Compact),
        ("cost", []) => crate::cost::summary(agent.model(), &session.usage),
        ("sessions", []) => sessions(Some(workspace)),
        ("sessions", ["all"]) => sessions(None),
        ("sessions", _) => "/sessions takes `all` at most: /sessions all\n".to_owned(),
        ("questions", []) => waiting::questions(workspace),
        ("outbox", []) => waiting::outbox(workspace),
        ("rewind", _) if front == Front::Chat => "/rewind is the terminal UI's (run `mecha`); \
             from chat, list the turns with `mecha rewind SESSION --list` and go back with \
             `mecha rewind SESSION --to N`\n"
            .to_owned(),
        ("rewind", args) => match tui_rewind::asked(args) {
            Ok(asked) => return Some(Slash::Rewind(asked)),
            Err(how) => how,
        },
        ("resume" | "clear" | "model", _) if front == Front::Chat => format!(
            "/{word} changes the conversation, which the terminal UI does: run `mecha`. In \
             chat, end it and start `mecha chat --resume ID` (or `--model NAME`).\n"
        ),
        ("resume", []) => return Some(Slash::PickSession),
        ("resume", [id]) => return Some(Slash::Switch(Switch::Resume((*id).to_owned()))),
        ("resume", _) => {
            "/resume takes one session's id: /resume ID (/sessions lists them)\n".into()
        }
        ("clear", []) => return Some(Slash::Switch(Switch::Fresh)),
        ("model", [name]) => return Some(Slash::Switch(Switch::Model((*name).to_owned()))),
        ("model", _) => "/model takes the model's name: /model NAME\n".to_owned(),
        ("mode", []) => modes::mode_command(agent, None),
        ("mode", [name]) => modes::mode_command(agent, Some(name)),
        ("mode", _) => "/mode takes one mode at most: /mode plan\n".to_owned(),
        ("approve", []) | ("approve", ["edits"]) => {
            match modes::approval(agent, !args.is_empty()) {
                Ok(_) => return Some(Slash::Approved),
                Err(why) => why,
            }
        }
        ("approve", _) => "/approve takes `edits` at most: /approve edits\n".to_owned(),
        (known, _) if NAMES.contains(&known) => format!("/{known} takes no arguments\n"),
        (unknown, _) => format!("/{unknown} is not a command here.\n{}", help(front)),
    };
    Some(Slash::Answer(answer))
}

/// `line` as a command's name (no slash) and its arguments, if the rule
/// makes it a command; `None`: it is a prompt for the model.
fn parse(line: &str) -> Option<(&str, Vec<&str>)> {
    let mut words = line.split_whitespace();
    let word = words.next()?.strip_prefix('/')?;
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let args: Vec<&str> = words.collect();
    // `/usr is full`: a prompt that starts with a path.
    (NAMES.contains(&word) || args.is_empty()).then_some((word, args))
}

fn help(front: Front) -> String {
    let mut out = String::from("commands (answered by mecha, not sent to the model):\n");
    let shown: Vec<_> = COMMANDS
        .iter()
        .filter(|(_, _, in_chat)| front == Front::Tui || *in_chat)
        .collect();
    // The widest name and two spaces, so a long one never runs into its
    // description.
    let width = shown.iter().map(|(name, ..)| name.len()).max().unwrap_or(0) + 2;
    for (name, what, _) in shown {
        out.push_str(&format!("  {name:<width$}{what}\n"));
    }
    out.push_str(match front {
        Front::Chat => {
            "Keys: Enter sends; a line ending in \\ goes on to the next; a paste stays one \
             prompt; Up and Down recall earlier prompts; Ctrl-C clears the line.\n"
        }
        Front::Tui => {
            "Keys: Enter sends; Alt-Enter or Ctrl-J starts a new line; Up and Down recall \
             earlier prompts; PageUp and PageDown scroll; Ctrl-O shows every call's input and \
             result; Esc or Ctrl-C stops a turn; Esc twice on an empty prompt rewinds \
             (/rewind); Ctrl-C clears the prompt, and twice on an empty prompt quits.\n"
        }
    });
    out.push_str(
        "A line that starts with ! runs a shell command as you; its output goes to the model \
         with your next prompt. @path in a prompt attaches that workspace file.\n",
    );
    out.push_str(match front {
        Front::Chat => "Tab completes a /command or an @path (twice: lists the choices).\n",
        Front::Tui => {
            "Tab completes a /command or an @path; Shift-Tab cycles the permission mode (ask, \
             accept-edits, plan).\n"
        }
    });
    out
}

/// The skills this run carries, then those config withheld and those that
/// failed to load, each with why: chat's `/skills`.
pub fn skills(toolbox: &Toolbox) -> String {
    let items = skill_items(toolbox);
    let carried = items.iter().filter(|item| item.note.is_none()).count();
    let mut out = format!("skills this run carries ({carried}):\n");
    for item in &items {
        match &item.note {
            None => out.push_str(&format!("  {}  {}\n", item.name, item.description)),
            Some(note) => out.push_str(&format!("  {}  [{note}]\n", item.name)),
        }
    }
    out.push_str("/skills NAME shows a skill's body.\n");
    out
}

/// The same list, for the TUI to pick from: picking a carried skill shows
/// its body, any other says why it is not here.
/// `/skills` with nothing to list: one line, with where a skill goes.
pub fn no_skills(toolbox: &Toolbox) -> String {
    format!(
        "no skills: a skill is a folder holding a SKILL.md in {} (`mecha skills` \
         shows what a run loads)",
        toolbox.skills.store.display()
    )
}

pub fn skill_items(toolbox: &Toolbox) -> Vec<PickItem> {
    let tool = toolbox.skill_tool.as_ref();
    let carried = tool.map(|tool| tool.carried()).unwrap_or_default();
    let mut items: Vec<PickItem> = carried
        .iter()
        .map(|name| PickItem {
            name: (*name).to_owned(),
            note: None,
            description: tool
                .and_then(|tool| tool.get(name))
                .map(|skill| skill.description.trim().to_owned())
                .unwrap_or_default(),
            picked: OnPick::Show(skill_body(toolbox, name)),
        })
        .collect();
    for (skill, why) in &toolbox.skills.withheld {
        items.push(PickItem {
            name: skill.name.clone(),
            note: Some(format!("withheld: {why}")),
            description: skill.description.trim().to_owned(),
            picked: OnPick::Show(skill_body(toolbox, &skill.name)),
        });
    }
    for failure in &toolbox.skills.failures {
        items.push(PickItem {
            name: failure.dir_name.clone(),
            note: Some(format!("failed: {}", failure.reason)),
            description: String::new(),
            picked: OnPick::Show(format!(
                "the skill in `{}` did not load: {}\n",
                failure.dir_name, failure.reason
            )),
        });
    }
    items
}

fn skill_body(toolbox: &Toolbox, name: &str) -> String {
    match toolbox.skill_tool.as_ref().and_then(|tool| tool.get(name)) {
        Some(skill) => format!("{}\n", skill.body.trim_end()),
        None => match toolbox.skills.withheld.iter().find(|(s, _)| s.name == name) {
            Some((_, why)) => format!("`{name}` is not carried by this run: {why}\n"),
            None => format!("no skill `{name}` in this run; /skills lists them\n"),
        },
    }
}

/// Each tool with what it can do, as the interlock counts it.
fn tools(agent: &Agent, session: &Session) -> String {
    let tools = agent.tools();
    let width = tools.iter().map(|t| t.name().len()).max().unwrap_or(0);
    let mut out = format!("tools this run offers ({}):\n", tools.len());
    for tool in &tools {
        let name = tool.name();
        let mut marks = vec![can_do(tool.as_ref())];
        if tool.capabilities().refused_when_armed() {
            marks.push(ARMED_MARK.to_owned());
        }
        if let Some(surface) = &session.surface
            && !surface.allows(name)
        {
            marks.push("[outside the surface a skill narrowed to]".to_owned());
        }
        out.push_str(&format!("  {name:width$}  {}\n", marks.join("  ")));
    }
    out
}

/// What a tool's capabilities say it does, in words.
fn can_do(tool: &dyn Tool) -> String {
    let Capabilities {
        private_data,
        untrusted_input,
        egress,
        destructive,
    } = tool.capabilities();
    let mut words = Vec::new();
    if private_data {
        words.push("reads private data");
    }
    if untrusted_input {
        words.push("brings untrusted content");
    }
    match egress {
        Egress::None => {}
        Egress::Blind => words.push("sends to a fixed place"),
        Egress::Chosen => words.push("sends where the model says"),
    }
    if destructive {
        words.push("can overwrite or delete");
    }
    if words.is_empty() {
        words.push(if tool.read_only() {
            "read-only"
        } else {
            "no risk declared"
        });
    }
    words.join(", ")
}

/// The sessions of `workspace`, or of every workspace.
fn listed(workspace: Option<&Path>) -> Result<(Store, Vec<Listing>), Failure> {
    let store = store()?;
    let all = match workspace {
        Some(workspace) => store.list_in(workspace),
        None => store.list(),
    };
    Ok((store, all.map_err(failure)?))
}

/// `/sessions`: this workspace's sessions (`None`: every workspace's).
fn sessions(workspace: Option<&Path>) -> String {
    match listed(workspace) {
        Err(e) => format!("cannot list the sessions: {e}\n"),
        Ok((store, all)) if all.is_empty() => match workspace {
            Some(_) => "no sessions of this workspace yet; /sessions all lists every \
                        workspace's\n"
                .to_owned(),
            None => format!(
                "no sessions yet (they are kept in {})\n",
                store.dir().display()
            ),
        },
        Ok((_, all)) => {
            let shown = &all[..all.len().min(SESSIONS_SHOWN)];
            let mut out = crate::commands::sessions::lines(shown, 100);
            if all.len() > shown.len() {
                out.push_str(&format!(
                    "and {} older: `mecha sessions list` shows all\n",
                    all.len() - shown.len()
                ));
            }
            out.push_str("/resume ID goes on with one (a unique start of its id will do).\n");
            out
        }
    }
}

/// `/resume` without an id: this workspace's sessions but `current`, each
/// picked by entering `/resume ID`; `Err`, the line to show instead.
pub fn sessions_to_pick(workspace: &Path, current: Option<&str>) -> Result<Vec<PickItem>, String> {
    let (_, all) = listed(Some(workspace)).map_err(|e| format!("cannot list the sessions: {e}"))?;
    let items: Vec<PickItem> = all
        .into_iter()
        .filter(|l| Some(l.id.as_str()) != current)
        .map(|l| {
            let turns = if l.turns == 1 { "turn" } else { "turns" };
            PickItem {
                description: format!(
                    "{}  {} {turns}  {}",
                    started(&l.started),
                    l.turns,
                    l.first_prompt
                ),
                name: l.id.clone(),
                note: None,
                picked: OnPick::Enter(format!("/resume {}", l.id)),
            }
        })
        .collect();
    if items.is_empty() {
        let none = "no other session of this workspace to resume; /sessions all lists every \
                    workspace's";
        return Err(none.to_owned());
    }
    Ok(items)
}

/// What `/compact` did, in words.
pub fn compacted(asked: &AskedCompaction) -> String {
    match asked {
        AskedCompaction::Done {
            tokens_before,
            tokens_after,
        } => format!(
            "compacted: the conversation went from about {tokens_before} to {tokens_after} \
             tokens; the earlier part is now the model's summary\n"
        ),
        AskedCompaction::NothingOlder => {
            "nothing to compact yet: everything in the conversation is recent\n".to_owned()
        }
        AskedCompaction::Failed(error) => {
            format!("compaction failed; the conversation is as it was: {error}\n")
        }
        AskedCompaction::Off => "this run does not compact: the model's context window is \
                                 unknown (set [provider] context_window)\n"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{COMMANDS, Front, help, parse};

    #[test]
    fn help_keeps_a_gap_between_every_command_and_its_description() {
        let text = help(Front::Tui);
        for (name, what, _) in COMMANDS {
            let row = text
                .lines()
                .find(|l| l.ends_with(what))
                .unwrap_or_else(|| panic!("no row for {name}: {text}"));
            assert!(row.starts_with(&format!("  {name}  ")), "{row:?}");
        }
    }

    #[test]
    fn commands_are_told_from_prompts_that_start_with_a_path() {
        assert_eq!(parse("/help"), Some(("help", vec![])));
        assert_eq!(
            parse("  /skills  review "),
            Some(("skills", vec!["review"]))
        );
        assert_eq!(parse("/tools please"), Some(("tools", vec!["please"])));
        assert_eq!(parse("/model gpt-5"), Some(("model", vec!["gpt-5"])));
        // A lone unknown word is a mistyped command.
        assert_eq!(parse("/halp"), Some(("halp", vec![])));
        for prompt in [
            "/etc/hosts is broken",
            "/etc/hosts",
            "/tmp is full",
            "/Help",
            "/ help",
            "/",
            "/usr/bin/env: not found",
            "/v2 of the api",
            "hello /help",
            "",
        ] {
            assert_eq!(parse(prompt), None, "{prompt:?} is a prompt");
        }
    }
}
