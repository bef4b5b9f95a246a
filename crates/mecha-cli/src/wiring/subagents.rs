//! `[[subagent]]` profiles as tools: checked against every tool the run
//! could have, then each built from the tools the run keeps and narrowed
//! like any other tool.
//!
//! A child's tools are the parent's instances, so the sandbox, the forcing
//! and the workspace jail are the parent's; a child can never reach a tool
//! the parent's run does not have, because it is given only tools already
//! in the narrowed registry.

use std::collections::BTreeMap;
use std::sync::Arc;

use mecha_agent::{Runtime, SubagentTool};
use mecha_core::{Registry, Tool};
use mecha_skills::SkillTool;
use mecha_tools::Todo;

use super::{Toolbox, of_a_server};
use crate::Failure;
use crate::config::{Settings, SubagentConfig};

/// Refuses a profile named like a tool of the run, or listing a tool that
/// is not one. `registry` is every tool before narrowing: a tool the run
/// narrowed away is no typo, it is simply not given to the child. A tool
/// of a configured MCP server that did not offer it is only warned about,
/// as `[tools]` names are.
pub(super) fn check_profiles(settings: &Settings, registry: &Registry) -> Result<(), Failure> {
    let profiles = &settings.subagents;
    let is_profile = |name: &str| profiles.iter().any(|p| p.name() == name);
    for profile in profiles {
        let file = profile.source.display();
        let name = profile.name();
        // A server's namespace too: one that did not start this run, or
        // adds the tool later, would take the name from under the profile.
        if registry.contains(name) || of_a_server(settings, name) {
            return Err(Failure::Usage(format!(
                "{file}: [[subagent]] `{name}` has the name of a tool the run already has, or \
                 may get from an MCP server: the profile becomes a tool of that name, so rename \
                 it"
            )));
        }
        for tool in &profile.tools {
            if registry.contains(tool) || is_profile(tool) {
                continue;
            }
            if of_a_server(settings, tool) {
                crate::output::warning(&format!(
                    "[[subagent]] `{name}` lists `{tool}`, which is not \
                     available: its MCP server did not offer it"
                ));
                continue;
            }
            let known: Vec<&str> = registry
                .names()
                .chain(profiles.iter().map(SubagentConfig::name))
                .filter(|n| *n != name)
                .collect();
            let meant = match mecha_core::closest(tool, known.iter().copied()) {
                _ if super::WEB_TOOLS.contains(&tool.as_str()) && settings.search.is_none() => {
                    "web_search and web_open exist only when a [[search]] backend is configured; "
                        .to_owned()
                }
                Some(meant) => format!("did you mean `{meant}`? "),
                None => String::new(),
            };
            return Err(Failure::Usage(format!(
                "{file}: [[subagent]] `{name}` lists `{tool}` in its tools, which is no tool: \
                 check the spelling ({meant}the tools are: {})",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// Registers each of `profiles` (checked, in dependency order) as a tool of
/// the run, with `runtime` connecting it to a model (`|_| None` where tools
/// are only listed). Each child gets those of its profile's tools that the
/// run keeps, a profile it names included when that one was kept; the
/// subagent itself is then kept or dropped like any tool.
pub fn register_subagents(
    toolbox: &mut Toolbox,
    profiles: &[SubagentConfig],
    runtime: &dyn Fn(&SubagentConfig) -> Option<Runtime>,
) -> Result<(), Failure> {
    let mut read_only_as_configured: BTreeMap<&str, bool> = BTreeMap::new();
    for profile in profiles {
        let mut child = Registry::new();
        let mut read_only = true;
        for name in &profile.tools {
            // A tool nothing offered this run (its server failed) might
            // change things.
            read_only &= match toolbox.unnarrowed.get(name) {
                Some(tool) => tool.read_only(),
                None => read_only_as_configured
                    .get(name.as_str())
                    .copied()
                    .unwrap_or(false),
            };
            if child.contains(name) {
                continue;
            }
            let Some(tool) = toolbox.registry.get(name) else {
                continue;
            };
            let tool = fresh_instance(toolbox, name).unwrap_or_else(|| Arc::clone(tool));
            child.register(tool).map_err(|e| Failure::Run(e.into()))?;
        }
        let tool = SubagentTool::new(profile.profile.clone(), child, runtime(profile));
        let given = tool.tool_names().into_iter().map(str::to_owned).collect();
        let tool = toolbox.forcing.apply(Arc::new(tool));
        read_only &= tool.read_only();
        read_only_as_configured.insert(profile.name(), read_only);
        if toolbox.filter.keeps_subagent(tool.as_ref(), read_only) {
            toolbox
                .registry
                .register(tool)
                .map_err(|e| Failure::Run(e.into()))?;
            toolbox.children.insert(profile.name().to_owned(), given);
        }
    }
    Ok(())
}

/// A tool whose state belongs to one conversation, as a new instance for a
/// child, so that the child's plan or loaded skills never overwrite the
/// parent's. `None` for tools without such state, which are shared.
fn fresh_instance(toolbox: &Toolbox, name: &str) -> Option<Arc<dyn Tool>> {
    let todo = Todo::default();
    let fresh: Arc<dyn Tool> = if name == todo.name() {
        Arc::new(todo)
    } else if toolbox
        .skill_tool
        .as_ref()
        .is_some_and(|s| s.name() == name)
    {
        Arc::new(SkillTool::new(toolbox.skills.carried.clone()))
    } else {
        return None;
    };
    Some(toolbox.forcing.apply(fresh))
}

#[cfg(test)]
mod tests;
