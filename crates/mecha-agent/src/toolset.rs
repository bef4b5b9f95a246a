//! The tools an agent holds: the set and its definitions, replaced
//! together when a refresh (an MCP server's list change) announces new
//! ones between turns.

use std::sync::Arc;

use async_trait::async_trait;
use mecha_core::{Registry, Tool, ToolDefinition};

use crate::agent::Agent;

/// A source of tool-list changes between turns (an MCP server announcing
/// new tools). Asked before every model request.
#[async_trait]
pub trait ToolRefresh: Send + Sync {
    /// `Some` replaces the run's tools. It changes the front of the cached
    /// prefix, so it should answer `Some` only when something changed.
    async fn refresh(&self, current: &Registry) -> Option<Registry>;
}

/// The tools of a run and their definitions, replaced together.
pub(crate) struct ToolSet {
    pub(crate) registry: Registry,
    /// Computed once per set: the tool list is the front of the cached
    /// prefix and must be byte-identical on every request.
    pub(crate) definitions: Vec<ToolDefinition>,
}

impl ToolSet {
    pub(crate) fn new(registry: Registry) -> Arc<Self> {
        Arc::new(Self {
            definitions: registry.definitions(),
            registry,
        })
    }
}

impl Agent {
    /// The tools as they stand, after any change announced since the last
    /// turn.
    pub(crate) async fn current_tools(&self) -> Arc<ToolSet> {
        let current = self.snapshot();
        let Some(refresh) = &self.refresh else {
            return current;
        };
        match refresh.refresh(&current.registry).await {
            Some(registry) => {
                self.gate.schemas.forget();
                let replaced = ToolSet::new(registry);
                if let Ok(mut tools) = self.tools.lock() {
                    *tools = Arc::clone(&replaced);
                }
                replaced
            }
            None => current,
        }
    }

    /// The tools the agent holds now, sorted by name (for a front end
    /// showing what each can do).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.snapshot().registry.iter().cloned().collect()
    }

    pub(crate) fn snapshot(&self) -> Arc<ToolSet> {
        match self.tools.lock() {
            Ok(tools) => Arc::clone(&tools),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }
}
