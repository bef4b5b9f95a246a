//! The tool registry: every tool of a run, always in sorted order.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::Tool;

/// Two tools claimed one name.
#[derive(Debug, thiserror::Error)]
#[error("two tools are named `{name}`; tool names must be unique")]
pub struct DuplicateTool {
    pub name: String,
}

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// The tools of a run, keyed and iterated by name.
///
/// Sorted because the tool list is the front of the cached prompt prefix:
/// any reordering would re-pay for the whole prefix on every request.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// Name prefixes of tools that are missing this run (`docs__`: an MCP
    /// server that did not start), with why, so a call to one is answered
    /// with the reason rather than as a typo.
    absent: BTreeMap<String, String>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a name already taken is refused, never shadowed.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), DuplicateTool> {
        let name = tool.name().to_owned();
        if self.tools.contains_key(&name) {
            return Err(DuplicateTool { name });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// A registry with no tools that knows what this one knows of missing
    /// ones: for rebuilding one tool by tool.
    pub fn emptied(&self) -> Self {
        Self {
            tools: BTreeMap::new(),
            absent: self.absent.clone(),
        }
    }

    /// Notes that tools named `prefix…` are missing this run, and why.
    pub fn mark_absent(&mut self, prefix: impl Into<String>, why: impl Into<String>) {
        self.absent.insert(prefix.into(), why.into());
    }

    /// Why a tool named `name` is missing, when its prefix was marked.
    pub fn absence(&self, name: &str) -> Option<&str> {
        self.absent
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix.as_str()))
            .map(|(_, why)| why.as_str())
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }

    /// The names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Keeps only the tools `keep` says yes to. Narrowing is the only edit a
    /// registry takes after it is built.
    pub fn retain(&mut self, mut keep: impl FnMut(&dyn Tool) -> bool) {
        self.tools.retain(|_, tool| keep(tool.as_ref()));
    }

    /// What the model is sent, in order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.iter()
            .map(|t| ToolDefinition {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.input_schema(),
            })
            .collect()
    }

    /// The echoes every result of the run ends with, in tool order.
    pub fn echoes(&self) -> Vec<String> {
        self.iter().filter_map(|t| t.echo()).collect()
    }
}
