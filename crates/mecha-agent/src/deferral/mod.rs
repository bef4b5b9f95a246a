//! Deferred tool schemas: when the deferrable tools' schemas (MCP servers')
//! add up to more than a threshold, they are left out of the tool list. The
//! model sees one `tool_search` tool whose description names each of them
//! with its first sentence; a search returns the full schemas of the tools
//! it matches, and from the next request on those tools are in the list
//! with their full schemas, at their sorted place. A call to a deferred tool
//! not yet loaded is answered with its schema instead of running, and loads
//! it too.
//!
//! The loaded set only grows (like the surface, there is no unload), lives
//! in the agent (so a compaction keeps it) and is journaled as
//! `tool_search`'s saved state (so a resume sends the same list). Each load
//! changes the list once, from the loaded tool on: the cached prefix is
//! written again once, then read as before.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use mecha_core::{Registry, Tool, ToolDefinition};
use serde_json::json;

mod catalogue;
mod tool_search;

pub(crate) use tool_search::ToolSearch;

/// The name of the tool that loads deferred schemas.
pub const TOOL_SEARCH: &str = "tool_search";

/// Which tools of a registry a threshold defers, and their definitions'
/// serialized bytes, all told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferred {
    pub names: Vec<String>,
    pub bytes: usize,
}

/// The deferrable tools of `registry` when their definitions add up to more
/// than `over_bytes`; `None` when they do not (or there are none), and the
/// list goes whole.
pub fn deferred(registry: &Registry, over_bytes: usize) -> Option<Deferred> {
    let mut names = Vec::new();
    let mut bytes = 0;
    for tool in registry.iter().filter(|t| t.deferrable()) {
        names.push(tool.name().to_owned());
        bytes += definition_bytes(tool.as_ref());
    }
    (!names.is_empty() && bytes > over_bytes).then_some(Deferred { names, bytes })
}

/// What `registry`'s tool list is sent as at the start of a session with
/// `over_bytes` as the threshold (`None`: never defer): `mecha tools
/// --schema`'s answer, the same code as the loop's.
pub fn first_definitions(registry: &Registry, over_bytes: Option<usize>) -> Vec<ToolDefinition> {
    let set = match over_bytes {
        Some(over_bytes) => crate::toolset::ToolSet::new(
            registry.clone(),
            Some(&Arc::new(Deferral::new(over_bytes))),
        ),
        None => crate::toolset::ToolSet::new(registry.clone(), None),
    };
    set.definitions().to_vec()
}

fn definition_bytes(tool: &dyn Tool) -> usize {
    let definition = json!({
        "name": tool.name(),
        "description": tool.description(),
        "input_schema": tool.input_schema(),
    });
    serde_json::to_string(&definition).map_or(0, |s| s.len())
}

/// A run's deferral: the threshold, the tools the current set defers, and
/// what the session loaded. Shared by the agent, its gate and `tool_search`.
#[derive(Debug)]
pub(crate) struct Deferral {
    pub(crate) over_bytes: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
pub(super) struct State {
    /// The full definitions of the tools the current set defers, by name.
    pub(super) deferred: BTreeMap<String, ToolDefinition>,
    /// The names whose schemas the session loaded; only grows.
    pub(super) loaded: BTreeSet<String>,
}

impl Deferral {
    pub(crate) fn new(over_bytes: usize) -> Self {
        Self {
            over_bytes,
            state: Mutex::new(State::default()),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a new tool set's deferred tools (none: the set goes whole).
    pub(crate) fn defer(&self, deferred: BTreeMap<String, ToolDefinition>) {
        self.state().deferred = deferred;
    }

    /// How many names were ever loaded: a version of the loaded set, since
    /// it only grows.
    pub(crate) fn loaded_count(&self) -> usize {
        self.state().loaded.len()
    }

    /// Whether `name` is deferred and not loaded, so the list leaves it out.
    pub(crate) fn withheld(&self, name: &str) -> bool {
        let state = self.state();
        state.deferred.contains_key(name) && !state.loaded.contains(name)
    }

    /// For a call to a deferred tool whose schema the model has not seen:
    /// the answer that carries the schema, the tool now loaded. `None`: the
    /// call goes on to the rest of the gate.
    pub(crate) fn first_call(&self, name: &str) -> Option<String> {
        let mut state = self.state();
        if state.loaded.contains(name) {
            return None;
        }
        let definition = serde_json::to_string(state.deferred.get(name)?).ok()?;
        state.loaded.insert(name.to_owned());
        Some(format!(
            "`{name}` did not run: its input schema had not been loaded (the schemas of this \
             run's MCP tools are deferred to keep the prompt small). Here is its definition; \
             the tool is in your tool list with it from the next request on. Call it again with \
             arguments that match:\n{definition}"
        ))
    }
}
