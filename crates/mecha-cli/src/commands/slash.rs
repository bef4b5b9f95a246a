//! `mecha chat`'s slash commands, answered by mecha and never sent to the
//! model: `/help`, `/quit` (`/exit`), and those that ask what this run
//! carries, `/skills` (and `/skills NAME`) and `/tools`. What the run
//! carries comes from the running agent (its skill tool, its tools and the
//! session's surface), not from config again: `--skill` and a narrowing
//! change a run without changing a file. What config withheld comes from
//! the toolbox, since a withheld skill is absent from the agent and must
//! still be shown.
//!
//! Which lines are commands: a line whose first word is `/` and lowercase
//! letters, when that word is a command's name, or when it is the whole
//! line (`/halp` then says it is unknown). Anything else goes to the
//! model, so a prompt that starts with a path (`/etc/hosts is broken`,
//! `/tmp is full`) is a prompt.

use mecha_agent::{Agent, Session};

use crate::wiring::Toolbox;

/// What a slash command asks of chat.
#[derive(Debug, PartialEq, Eq)]
pub enum Slash {
    /// Show this (outside text in it is not yet made printable).
    Answer(String),
    Quit,
}

/// The commands, as `/help` lists them.
const COMMANDS: &[(&str, &str)] = &[
    ("/help", "these commands"),
    ("/tools", "the tools this run offers"),
    (
        "/skills [NAME]",
        "the skills this run carries, or one skill's body",
    ),
    (
        "/quit, /exit",
        "end the chat (so do Ctrl-D, and Ctrl-C twice on an empty line)",
    ),
];

/// The names `/help` lists, without their slash.
const NAMES: &[&str] = &["help", "tools", "skills", "quit", "exit"];

/// The command `line` is, if it is one (see the module's rule).
pub fn command(line: &str, agent: &Agent, session: &Session, toolbox: &Toolbox) -> Option<Slash> {
    let (word, args) = parse(line)?;
    let answer = match (word, args.as_slice()) {
        ("quit" | "exit", []) => return Some(Slash::Quit),
        ("help", []) => help(),
        ("tools", []) => tools(agent, session),
        ("skills", []) => skills(toolbox),
        ("skills", [name]) => skill_body(toolbox, name),
        ("skills", _) => "/skills takes one skill's name at most: /skills NAME\n".to_owned(),
        (known, _) if NAMES.contains(&known) => format!("/{known} takes no arguments\n"),
        (unknown, _) => format!("/{unknown} is not a command here.\n{}", help()),
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

fn help() -> String {
    let mut out = String::from("commands (answered by mecha, not sent to the model):\n");
    for (name, what) in COMMANDS {
        out.push_str(&format!("  {name:<16}{what}\n"));
    }
    out.push_str(
        "Keys: Enter sends; a line ending in \\ goes on to the next; a paste stays one prompt; \
         Up and Down recall earlier prompts; Ctrl-C clears the line.\n",
    );
    out
}

fn skills(toolbox: &Toolbox) -> String {
    let carried = toolbox
        .skill_tool
        .as_ref()
        .map(|tool| tool.carried())
        .unwrap_or_default();
    let mut out = format!("skills this run carries ({}):\n", carried.len());
    for name in &carried {
        let description = toolbox
            .skill_tool
            .as_ref()
            .and_then(|tool| tool.get(name))
            .map(|skill| skill.description.trim().to_owned())
            .unwrap_or_default();
        out.push_str(&format!("  {name}  {description}\n"));
    }
    for (skill, why) in &toolbox.skills.withheld {
        out.push_str(&format!("  {}  [withheld: {why}]\n", skill.name));
    }
    for failure in &toolbox.skills.failures {
        out.push_str(&format!(
            "  {}  [failed: {}]\n",
            failure.dir_name, failure.reason
        ));
    }
    out.push_str("/skills NAME shows a skill's body.\n");
    out
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

fn tools(agent: &Agent, session: &Session) -> String {
    let names = agent.tool_names();
    let mut out = format!("tools this run offers ({}):\n", names.len());
    for name in &names {
        let mark = match &session.surface {
            Some(surface) if !surface.allows(name) => "  [outside the surface a skill narrowed to]",
            _ => "",
        };
        out.push_str(&format!("  {name}{mark}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn commands_are_told_from_prompts_that_start_with_a_path() {
        assert_eq!(parse("/help"), Some(("help", vec![])));
        assert_eq!(
            parse("  /skills  review "),
            Some(("skills", vec!["review"]))
        );
        assert_eq!(parse("/tools please"), Some(("tools", vec!["please"])));
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
