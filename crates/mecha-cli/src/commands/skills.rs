//! `mecha skills`: what a run would carry, the skills config withheld
//! (marked, with the reason, never left out) and the ones that failed to
//! load. Exits 1 when one failed, or the store could not be read.

use clap::Args;
use mecha_skills::{Skill, level1_block};
use serde_json::{Value, json};

use crate::Failure;
use crate::config::Settings;
use crate::skills::{Selection, SkillFlags, level1_warning};
use crate::terminal::printable;

#[derive(Args, Debug)]
pub struct SkillsArgs {
    /// Print each carried skill's body too.
    #[arg(long)]
    show: bool,
    /// One JSON object per skill folder.
    #[arg(long)]
    json: bool,
    /// As a run with `--skill NAME` would see it (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    only: Vec<String>,
    /// As a run with `--no-skills` would see it.
    #[arg(long)]
    no_skills: bool,
}

pub fn run(args: SkillsArgs, settings: Settings) -> Result<u8, Failure> {
    let flags = SkillFlags {
        only: args.only,
        none: args.no_skills,
    };
    let mut selection = Selection::load(&settings.skills, &flags);
    selection.narrow_to_tools(&settings.tool_filter(false));
    let block = level1_block(&selection.carried);
    let size_warning = level1_warning(&block, settings.provider.context_window);
    if args.json {
        let text = serde_json::to_string_pretty(&as_json(&selection))
            .map_err(|e| Failure::Run(e.into()))?;
        crate::output::out(&format!("{text}\n"));
    } else {
        crate::output::out(&printable(&human(&selection, &block, args.show)));
    }
    if let Some(why) = &selection.unreadable {
        crate::output::err_line(&printable(&format!("mecha: {why}")));
    }
    for line in selection.warnings.iter().chain(&size_warning) {
        crate::output::warning(line);
    }
    Ok(u8::from(selection.failed()))
}

fn human(selection: &Selection, block: &str, show: bool) -> String {
    let mut out = format!(
        "skills: {} carried ({} bytes in the system prompt), {} withheld, {} failed\n",
        selection.carried.len(),
        block.len(),
        selection.withheld.len(),
        selection.failures.len()
    );
    for skill in &selection.carried {
        out.push_str(&entry(skill, None));
        if show {
            out.push('\n');
            for line in skill.body.trim_end().lines() {
                out.push_str(&format!("    {line}\n"));
            }
            out.push('\n');
        }
    }
    for (skill, why) in &selection.withheld {
        out.push_str(&entry(skill, Some(why)));
    }
    for failure in &selection.failures {
        out.push_str(&format!(
            "  {}  [failed: {}]\n",
            failure.dir_name, failure.reason
        ));
    }
    out
}

fn entry(skill: &Skill, withheld: Option<&str>) -> String {
    let mark = withheld.map_or_else(String::new, |why| format!("  [withheld: {why}]"));
    let mut line = format!("  {}{mark}\n    {}\n", skill.name, skill.description.trim());
    if !skill.triggers.is_empty() {
        line.push_str(&format!("    triggers: {}\n", skill.triggers.join(", ")));
    }
    if let Some(tools) = &skill.tools {
        line.push_str(&format!("    narrows the tools to: {}\n", tools.join(", ")));
    }
    line
}

fn as_json(selection: &Selection) -> Vec<Value> {
    let skill = |skill: &Skill, status: &str, reason: Option<&str>| {
        json!({
            "dir": skill.dir_name,
            "name": skill.name,
            "status": status,
            "reason": reason,
            "description": skill.description,
            "triggers": skill.triggers,
            "tools": skill.tools,
        })
    };
    let mut all: Vec<(String, Value)> = Vec::new();
    for s in &selection.carried {
        all.push((s.dir_name.clone(), skill(s, "carried", None)));
    }
    for (s, why) in &selection.withheld {
        all.push((s.dir_name.clone(), skill(s, "withheld", Some(why))));
    }
    for f in &selection.failures {
        let value =
            json!({"dir": f.dir_name, "name": Value::Null, "status": "failed", "reason": f.reason});
        all.push((f.dir_name.clone(), value));
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all.into_iter().map(|(_, v)| v).collect()
}
