//! The `skill` tool: level 2 (a skill's body) and level 3 (a file bundled
//! with it). Loading is a tool call rather than a `cat` so it passes the
//! pre-tool gate and lands in the trace, and so it works where shell is
//! sandboxed or withheld.
//!
//! The names loaded so far are its state: carried across a compaction as
//! the bodies themselves, saved with a session and restored on resume.

use std::collections::BTreeMap;
use std::sync::Mutex;

use anyhow::anyhow;
use async_trait::async_trait;
use mecha_core::{Capabilities, Narrowing, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

use crate::Skill;
use crate::bundled;

/// The skills a run carries, and which of them it has loaded.
pub struct SkillTool {
    skills: BTreeMap<String, Skill>,
    /// Names loaded (level 2) so far, in load order, each once.
    loaded: Mutex<Vec<String>>,
}

impl SkillTool {
    /// The tool's name, which config and `--tool` narrow by.
    pub const NAME: &'static str = "skill";

    pub fn new(skills: Vec<Skill>) -> Self {
        Self {
            skills: skills.into_iter().map(|s| (s.name.clone(), s)).collect(),
            loaded: Mutex::new(Vec::new()),
        }
    }

    /// The names this tool carries, sorted (for `/skills` in chat).
    pub fn carried(&self) -> Vec<&str> {
        self.skills.keys().map(String::as_str).collect()
    }

    /// A carried skill by name (for `/skills NAME`).
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    fn loaded(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // The list is only ever pushed to whole; a panic elsewhere leaves
        // it consistent.
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a level-2 load, once per skill.
    fn record(&self, name: &str) {
        let mut loaded = self.loaded();
        if !loaded.iter().any(|n| n == name) {
            loaded.push(name.to_owned());
        }
    }

    fn unknown(&self, name: &str) -> ToolOutput {
        let carried = self.carried();
        ToolOutput::refusal(if carried.is_empty() {
            format!("no skill named `{name}`; this run carries no skills")
        } else {
            format!(
                "no skill named `{name}`; this run carries: {}",
                carried.join(", ")
            )
        })
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> &str {
        "Load a skill listed in the system prompt: returns its procedure, written by the user. \
         With `file`, returns a file bundled with the skill instead (a path relative to the \
         skill's folder)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name"},
                "file": {"type": "string", "description": "A bundled file, relative to the skill's folder"}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    /// Loading a skill's body (not one of its files) narrows to its
    /// `tools:`, which the frontmatter says before anything runs.
    fn narrowing(&self, input: &Value) -> Option<Narrowing> {
        if !matches!(input.get("file"), None | Some(Value::Null)) {
            return None;
        }
        let name = input.get("name").and_then(Value::as_str)?;
        self.skills.get(name).and_then(narrowing_of)
    }

    fn saved_state(&self) -> Option<Value> {
        let loaded = self.loaded();
        (!loaded.is_empty()).then(|| json!(*loaded))
    }

    /// Marks the saved names loaded again, in their order, so their bodies
    /// cross the next compaction. A name this run does not carry is named
    /// in the `Err`; the others are restored all the same.
    fn restore_state(&self, state: Value) -> Result<(), String> {
        let names: Vec<String> = serde_json::from_value(state).map_err(|e| {
            format!("the saved list of loaded skills is malformed ({e}); no skill was restored")
        })?;
        let (carried, missing): (Vec<_>, Vec<_>) =
            names.iter().partition(|n| self.skills.contains_key(*n));
        for name in carried {
            self.record(name);
        }
        match missing.as_slice() {
            [] => Ok(()),
            [name] => Err(format!(
                "skill `{name}` was loaded earlier in this session but this run does not carry \
                 it (withheld by [skills] config or --skill, or it failed to load): its \
                 procedure is not restored"
            )),
            names => Err(format!(
                "skills {} were loaded earlier in this session but this run does not carry \
                 them (withheld by [skills] config or --skill, or they failed to load): their \
                 procedures are not restored",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn carried_state(&self) -> Option<String> {
        let loaded = self.loaded();
        if loaded.is_empty() {
            return None;
        }
        let mut out = String::from(
            "Skills loaded earlier in this run, each reproduced verbatim; their procedures \
             still apply.\n",
        );
        for skill in loaded.iter().filter_map(|name| self.skills.get(name)) {
            out.push_str(&format!("\n[skill `{}`]\n{}\n", skill.name, skill.body));
        }
        Some(out)
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let Some(name) = input.get("name").and_then(Value::as_str) else {
            return Ok(ToolOutput::refusal(
                "`name` is required: the name of a skill listed in the system prompt",
            ));
        };
        let Some(skill) = self.skills.get(name) else {
            return Ok(self.unknown(name));
        };
        let file = match input.get("file") {
            None | Some(Value::Null) => None,
            Some(Value::String(file)) => Some(file.clone()),
            Some(_) => {
                return Ok(ToolOutput::refusal(
                    "`file` has to be a string: a path relative to the skill's folder",
                ));
            }
        };
        let level2 = file.is_none();
        // Listing and reading touch the disk: off the async thread.
        let (owned, ctx) = (skill.clone(), ctx.clone());
        let out = tokio::task::spawn_blocking(move || match file {
            Some(file) => bundled::read(&owned, &file, &ctx),
            None => body(&owned, &ctx),
        })
        .await
        .map_err(|e| anyhow!("`skill` stopped without a result ({e}); this is a bug in mecha"))?;
        if level2 {
            self.record(name);
        }
        Ok(out)
    }
}

/// Level 2: the body, after a line naming the bundled files, and the
/// narrowing its `tools:` asks for.
fn body(skill: &Skill, ctx: &ToolCtx) -> ToolOutput {
    let (files, total) = bundled::list(&skill.dir, bundled::LIST_MAX);
    let mut head = format!("[skill `{}` loaded; its procedure follows", skill.name);
    if !files.is_empty() {
        head.push_str(&format!(
            ". Its bundled files, read with `skill` and `file` (relative to the skill's \
             folder): {}",
            files.join(", ")
        ));
        if total > files.len() {
            head.push_str(&format!(" (and {} more)", total - files.len()));
        }
    }
    head.push_str("]\n\n");
    let mut sink = ctx.sink("skill", ctx.call_budget_bytes);
    sink.push(head.as_bytes());
    sink.push(skill.body.as_bytes());
    let mut out = ToolOutput::ok(sink.finish());
    out.narrows = narrowing_of(skill);
    out
}

/// What loading `skill` narrows the run to: its `tools:`, if it has them.
fn narrowing_of(skill: &Skill) -> Option<Narrowing> {
    skill.tools.clone().map(|tools| Narrowing {
        by: skill.name.clone(),
        tools,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::PathBuf;

    use super::*;

    fn skill(name: &str) -> Skill {
        Skill {
            dir_name: name.to_owned(),
            name: name.to_owned(),
            description: format!("the {name} procedure"),
            triggers: Vec::new(),
            tools: None,
            body: format!("Do {name} carefully."),
            dir: PathBuf::from("/nonexistent").join(name),
        }
    }

    fn tool(names: &[&str]) -> SkillTool {
        SkillTool::new(names.iter().map(|n| skill(n)).collect())
    }

    #[tokio::test]
    async fn loading_a_body_says_its_narrowing_before_it_runs_and_a_file_does_not() {
        let narrow = Skill {
            tools: Some(vec!["fs_read".to_owned()]),
            ..skill("review")
        };
        let tool = SkillTool::new(vec![narrow, skill("plain")]);
        let expected = Narrowing {
            by: "review".to_owned(),
            tools: vec!["fs_read".to_owned()],
        };
        for input in [
            json!({"name": "review"}),
            json!({"name": "review", "file": null}),
        ] {
            assert_eq!(tool.narrowing(&input), Some(expected.clone()), "{input}");
        }
        for input in [
            json!({"name": "review", "file": "a.md"}),
            json!({"name": "review", "file": 3}),
            json!({"name": "plain"}),
            json!({"name": "nope"}),
            json!({}),
        ] {
            assert_eq!(tool.narrowing(&input), None, "{input}");
        }
        // What it says before is what the load asks for.
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolCtx::new(dir.path(), 10_000).unwrap();
        let out = tool.call(json!({"name": "review"}), &ctx).await.unwrap();
        assert_eq!(out.narrows, Some(expected));
    }

    #[test]
    fn the_loaded_names_are_saved_in_load_order_and_restored() {
        let first = tool(&["alpha", "beta", "gamma"]);
        assert_eq!(first.saved_state(), None, "nothing loaded, nothing saved");
        for name in ["gamma", "alpha", "gamma"] {
            first.record(name);
        }
        let saved = first.saved_state().unwrap();
        assert_eq!(saved, json!(["gamma", "alpha"]));
        let resumed = tool(&["alpha", "beta", "gamma"]);
        resumed.restore_state(saved).unwrap();
        assert_eq!(resumed.saved_state(), Some(json!(["gamma", "alpha"])));
        let carried = resumed.carried_state().unwrap();
        let (gamma, alpha) = (
            carried.find("Do gamma carefully.").unwrap(),
            carried.find("Do alpha carefully.").unwrap(),
        );
        assert!(gamma < alpha, "in load order: {carried}");
        assert!(!carried.contains("Do beta"), "{carried}");
    }

    #[test]
    fn a_skill_no_longer_carried_is_named_and_the_others_restored() {
        let resumed = tool(&["alpha", "gamma"]);
        let err = resumed
            .restore_state(json!(["gamma", "beta", "alpha"]))
            .unwrap_err();
        assert!(err.starts_with("skill `beta` was loaded earlier"), "{err}");
        assert!(
            err.contains("withheld by [skills] config or --skill"),
            "{err}"
        );
        assert!(err.contains("failed to load"), "{err}");
        assert_eq!(resumed.saved_state(), Some(json!(["gamma", "alpha"])));
        let carried = resumed.carried_state().unwrap();
        assert!(carried.contains("Do gamma carefully."), "{carried}");
        assert!(carried.contains("Do alpha carefully."), "{carried}");

        let none = tool(&[]);
        let err = none.restore_state(json!(["beta", "delta"])).unwrap_err();
        assert!(err.contains("skills `beta`, `delta` were loaded"), "{err}");
        assert_eq!(none.saved_state(), None);
    }

    #[test]
    fn a_malformed_saved_list_restores_nothing() {
        let resumed = tool(&["alpha"]);
        for bad in [json!("alpha"), json!([1]), json!({"alpha": true})] {
            let err = resumed.restore_state(bad).unwrap_err();
            assert!(err.contains("malformed"), "{err}");
        }
        assert_eq!(resumed.saved_state(), None);
    }
}
