//! `mecha chat`'s slash commands that ask what this run carries: `/skills`
//! (and `/skills NAME`) and `/tools`. What the run carries comes from the
//! running agent (its skill tool, its tools and the session's surface),
//! not from config again: `--skill` and a narrowing change a run without
//! changing a file. What config withheld comes from the toolbox, since a
//! withheld skill is absent from the agent and must still be shown.

use mecha_agent::{Agent, Session};

use crate::wiring::Toolbox;

/// The answer to `line` if it is one of these commands.
pub fn answer(line: &str, agent: &Agent, session: &Session, toolbox: &Toolbox) -> Option<String> {
    let mut words = line.split_whitespace();
    match (words.next()?, words.next(), words.next()) {
        ("/skills", None, _) => Some(skills(toolbox)),
        ("/skills", Some(name), None) => Some(skill_body(toolbox, name)),
        ("/tools", None, _) => Some(tools(agent, session)),
        _ => None,
    }
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
