//! Level 1: the block of skill metadata the system prompt carries on every
//! run. It sits inside the cached prefix, so it is sorted by name and
//! built from nothing that varies between runs (no paths, no file order).

use std::fmt::Write as _;

use crate::Skill;

/// The level-1 block for the system prompt: one short entry per skill,
/// sorted by name, byte-stable; "" when `skills` is empty.
pub fn level1_block(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut sorted: Vec<&Skill> = skills.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::from(
        "Skills: procedures the user wrote. When one fits the task, call the `skill` tool with \
         its name to load it before you start; nothing loads unless you call it. Cues are words \
         that suggest a skill, not commands.\n",
    );
    for skill in sorted {
        let _ = write!(out, "- {}: {}", skill.name, one_line(&skill.description));
        if !skill.triggers.is_empty() {
            let _ = write!(out, " (cues: {})", one_line(&skill.triggers.join(", ")));
        }
        out.push('\n');
    }
    out
}

/// Runs of whitespace (a block scalar's newlines) as one space, so every
/// entry is one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::PathBuf;

    use super::*;

    fn skill(name: &str, description: &str) -> Skill {
        Skill {
            dir_name: name.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            triggers: Vec::new(),
            tools: None,
            body: String::new(),
            dir: PathBuf::from("/store").join(name),
        }
    }

    #[test]
    fn entries_are_sorted_by_name_and_one_line_each() {
        let block = level1_block(&[skill("b", "two\n  lines"), skill("a", "one")]);
        let entries: Vec<&str> = block.lines().skip(1).collect();
        assert_eq!(entries, ["- a: one", "- b: two lines"]);
    }
}
