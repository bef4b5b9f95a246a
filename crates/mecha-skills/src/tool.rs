//! The `skill` tool: level 2 (a skill's body) and level 3 (a file bundled
//! with it). Loading is a tool call rather than a `cat` so it passes the
//! pre-tool gate and lands in the trace, and so it works where shell is
//! sandboxed or withheld.

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
        "skill"
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
    out.narrows = skill.tools.clone().map(|tools| Narrowing {
        by: skill.name.clone(),
        tools,
    });
    out
}
