//! `[[subagent]]` profiles: read from the user's file only, checked whole at
//! start-up, and put in dependency order (a profile a child may call comes
//! before the profile that names it). What needs the run's tools (a name
//! that collides with one, a tool that is not registered) is checked where
//! the tools are built, in `wiring/subagents.rs`.
//!
//! Every refusal names the profile and the fix: the peers' silently ignored
//! allowlists are exactly the failure this is here to prevent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mecha_agent::{AnswerShape, DEFAULT_SUBAGENT_TURNS, Profile};

use super::ConfigError;
use super::model::SubagentSection;

/// The longest a tool name may be, as the model APIs take it.
const MAX_NAME_CHARS: usize = 64;

/// Tools that belong to the parent's conversation itself (its compaction,
/// its history): a child has a conversation of its own, so naming one is
/// a mistake, refused rather than quietly dropped.
pub(super) const CONVERSATION_TOOLS: [&str; 2] = ["compact", "recall"];

/// One profile, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentConfig {
    pub profile: Profile,
    /// The allowlist as written: exactly these tools, of those the run has.
    pub tools: Vec<String>,
    /// A model of its own instead of the parent's.
    pub model: Option<String>,
    /// The file that defines it, for messages.
    pub source: PathBuf,
}

impl SubagentConfig {
    pub fn name(&self) -> &str {
        &self.profile.name
    }
}

/// Checks every `[[subagent]]` of `path` and returns them in dependency
/// order.
pub(super) fn check(
    path: &Path,
    sections: Vec<SubagentSection>,
) -> Result<Vec<SubagentConfig>, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let mut checked = Vec::with_capacity(sections.len());
    for (index, section) in sections.into_iter().enumerate() {
        let config = one(path, index, section).map_err(invalid)?;
        if checked
            .iter()
            .any(|c: &SubagentConfig| c.name() == config.name())
        {
            return Err(invalid(format!(
                "two [[subagent]] profiles are named `{}`: each becomes a tool, so rename one",
                config.name()
            )));
        }
        checked.push(config);
    }
    dependency_order(checked).map_err(invalid)
}

fn one(path: &Path, index: usize, section: SubagentSection) -> Result<SubagentConfig, String> {
    let Some(name) = section.name else {
        return Err(format!(
            "[[subagent]] number {} has no `name`: add one (name = \"research\"); it becomes the \
             tool the parent calls",
            index + 1
        ));
    };
    check_name(&name)?;
    let description = section
        .description
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| {
            format!(
                "[[subagent]] `{name}` has no `description`: add one saying what it is for; it \
                 is all the parent reads to decide whether to delegate"
            )
        })?;
    let tools = section.tools.ok_or_else(|| {
        format!(
            "[[subagent]] `{name}` has no `tools`: list exactly the tools the child may use \
             (tools = [\"fs_read\", \"fs_list\"]), or tools = [] for none; nothing is inherited"
        )
    })?;
    if tools.contains(&name) {
        return Err(format!(
            "[[subagent]] `{name}` names itself in `tools`: a child cannot delegate to itself; \
             remove `{name}` from its tools"
        ));
    }
    if let Some(tool) = tools
        .iter()
        .find(|t| CONVERSATION_TOOLS.contains(&t.as_str()))
    {
        return Err(format!(
            "[[subagent]] `{name}` lists `{tool}`, which belongs to the parent's conversation: \
             a child has its own; remove `{tool}` from its tools"
        ));
    }
    let max_turns = section.max_turns.unwrap_or(DEFAULT_SUBAGENT_TURNS);
    if max_turns == 0 {
        return Err(format!(
            "[[subagent]] `{name}`: max_turns = 0 leaves the child no model request; use at \
             least 1, or leave it out for {DEFAULT_SUBAGENT_TURNS}"
        ));
    }
    if section.timeout_s == Some(0) {
        return Err(format!(
            "[[subagent]] `{name}`: timeout_s = 0 would stop the child before it starts; use at \
             least 1, or leave it out for no time limit"
        ));
    }
    let trusted = match (section.trusted_output, section.answer_shape) {
        (true, Some(shape)) => Some(answer_shape(&name, &shape)?),
        (false, None) => None,
        (true, None) => {
            return Err(format!(
                "[[subagent]] `{name}` sets trusted_output = true without answer_shape: trust is \
                 earned by an answer of a known shape, so add answer_shape = \"number\", \
                 \"boolean\" or a list of the allowed answers, or drop trusted_output"
            ));
        }
        (false, Some(_)) => {
            return Err(format!(
                "[[subagent]] `{name}` sets answer_shape without trusted_output = true: the \
                 shape only decides which answers come back trusted, so add trusted_output = \
                 true, or drop answer_shape"
            ));
        }
    };
    Ok(SubagentConfig {
        profile: Profile {
            name,
            description,
            instructions: section.instructions,
            max_turns,
            timeout: section.timeout_s.map(Duration::from_secs),
            trusted,
        },
        tools,
        model: section.model,
        source: path.to_path_buf(),
    })
}

fn check_name(name: &str) -> Result<(), String> {
    let length = name.chars().count();
    if (1..=MAX_NAME_CHARS).contains(&length) && name.chars().all(mecha_core::is_tool_name_char) {
        return Ok(());
    }
    Err(format!(
        "[[subagent]] name {name:?} cannot be a tool name: use 1 to {MAX_NAME_CHARS} ASCII \
         letters, digits, `_` or `-` (name = \"research\")"
    ))
}

fn answer_shape(name: &str, value: &toml::Value) -> Result<AnswerShape, String> {
    let wrong = || {
        format!(
            "[[subagent]] `{name}`: answer_shape must be \"number\", \"boolean\" or a non-empty \
             list of allowed answers (answer_shape = [\"yes\", \"no\"]), each non-empty and \
             without surrounding spaces, since answers are compared trimmed"
        )
    };
    match value {
        toml::Value::String(word) if word == "number" => Ok(AnswerShape::Number),
        toml::Value::String(word) if word == "boolean" => Ok(AnswerShape::Boolean),
        toml::Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| match item {
                toml::Value::String(s) if !s.is_empty() && s.trim() == s => Ok(s.clone()),
                _ => Err(wrong()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(AnswerShape::OneOf),
        _ => Err(wrong()),
    }
}

/// The profiles ordered so that each comes after every profile it names;
/// a cycle is refused, spelt out.
fn dependency_order(profiles: Vec<SubagentConfig>) -> Result<Vec<SubagentConfig>, String> {
    let index: BTreeMap<&str, usize> = profiles
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name(), i))
        .collect();
    let mut state = vec![Visit::New; profiles.len()];
    let mut order = Vec::with_capacity(profiles.len());
    let mut path = Vec::new();
    for start in 0..profiles.len() {
        visit(start, &profiles, &index, &mut state, &mut path, &mut order)?;
    }
    let mut slots: Vec<Option<SubagentConfig>> = profiles.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}

#[derive(Clone, Copy, PartialEq)]
enum Visit {
    New,
    OnPath,
    Done,
}

fn visit(
    at: usize,
    profiles: &[SubagentConfig],
    index: &BTreeMap<&str, usize>,
    state: &mut [Visit],
    path: &mut Vec<usize>,
    order: &mut Vec<usize>,
) -> Result<(), String> {
    match state[at] {
        Visit::Done => return Ok(()),
        Visit::OnPath => {
            let from = path.iter().position(|&p| p == at).unwrap_or(0);
            let names: Vec<&str> = path[from..]
                .iter()
                .chain(std::iter::once(&at))
                .map(|&i| profiles[i].name())
                .collect();
            return Err(format!(
                "[[subagent]] profiles form a cycle: {}; a child may call another profile, but \
                 not one that leads back to it, so remove one of these from the other's `tools`",
                names.join(" → ")
            ));
        }
        Visit::New => {}
    }
    state[at] = Visit::OnPath;
    path.push(at);
    for tool in &profiles[at].tools {
        if let Some(&next) = index.get(tool.as_str()) {
            visit(next, profiles, index, state, path, order)?;
        }
    }
    path.pop();
    state[at] = Visit::Done;
    order.push(at);
    Ok(())
}
