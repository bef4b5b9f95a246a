//! The tools an agent holds: the set and its definitions, replaced
//! together when a refresh (an MCP server's list change) announces new
//! ones between turns.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mecha_core::{Registry, Tool, ToolDefinition};

use crate::agent::Agent;
use crate::deferral::{Deferral, ToolSearch, deferred};

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
    /// What the loop calls: `base`, plus `tool_search` while schemas are
    /// deferred.
    pub(crate) registry: Registry,
    /// The tools as given (what a refresh starts from).
    base: Registry,
    /// Every tool's full definition, computed once per set: the tool list is
    /// the front of the cached prefix and must be byte-identical on every
    /// request.
    full: Arc<[ToolDefinition]>,
    /// Set while this set defers schemas.
    deferral: Option<Arc<Deferral>>,
    /// The list last sent and the loaded count it was built for: rebuilt
    /// only when a load changed it.
    sent: Mutex<Option<(usize, Arc<[ToolDefinition]>)>>,
}

impl ToolSet {
    /// The set of `base`'s tools; with `deferral`, its deferrable tools'
    /// schemas are deferred when they add up to more than its threshold.
    pub(crate) fn new(base: Registry, deferral: Option<&Arc<Deferral>>) -> Arc<Self> {
        let mut registry = base.clone();
        let deferring = deferral.and_then(|deferral| {
            let names = deferred(&base, deferral.over_bytes)?.names;
            let all: BTreeMap<String, ToolDefinition> = base
                .definitions()
                .into_iter()
                .filter(|d| names.contains(&d.name))
                .map(|d| (d.name.clone(), d))
                .collect();
            let search = ToolSearch::new(Arc::clone(deferral), &all);
            deferral.defer(all);
            match registry.register(Arc::new(search)) {
                Ok(()) => Some(Arc::clone(deferral)),
                // A tool of that name already: nothing is deferred rather
                // than leave schemas no tool can load.
                Err(e) => {
                    tracing::warn!(tool = %e.name, "a tool holds tool_search's name; no schema is deferred");
                    deferral.defer(BTreeMap::new());
                    None
                }
            }
        });
        if let (None, Some(deferral)) = (&deferring, deferral) {
            deferral.defer(BTreeMap::new());
        }
        Arc::new(Self {
            full: registry.definitions().into(),
            registry,
            base,
            deferral: deferring,
            sent: Mutex::new(None),
        })
    }

    /// The list a request sends now: every full definition, less the
    /// deferred tools not yet loaded. The same bytes until a load.
    pub(crate) fn definitions(&self) -> Arc<[ToolDefinition]> {
        let Some(deferral) = &self.deferral else {
            return Arc::clone(&self.full);
        };
        let version = deferral.loaded_count();
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((built, list)) = &*sent
            && *built == version
        {
            return Arc::clone(list);
        }
        let list: Arc<[ToolDefinition]> = self
            .full
            .iter()
            .filter(|d| !deferral.withheld(&d.name))
            .cloned()
            .collect();
        *sent = Some((version, Arc::clone(&list)));
        list
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
        match refresh.refresh(&current.base).await {
            Some(registry) => {
                self.gate.schemas.forget();
                let replaced = ToolSet::new(registry, self.gate.deferral.as_ref());
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

    /// The tools the loop calls (`tool_search` among them while schemas
    /// are deferred): a resumed session hands each its saved state.
    pub fn registry(&self) -> Registry {
        self.snapshot().registry.clone()
    }

    /// Defers the schemas of deferrable tools (MCP servers') while they
    /// add up to more than `over_bytes`, serialized: the model gets
    /// `tool_search` to load them.
    #[must_use]
    pub fn with_deferred_schemas(mut self, over_bytes: usize) -> Self {
        let deferral = Arc::new(Deferral::new(over_bytes));
        let base = self.snapshot().base.clone();
        self.tools = Mutex::new(ToolSet::new(base, Some(&deferral)));
        self.gate.deferral = Some(deferral);
        self
    }

    pub(crate) fn snapshot(&self) -> Arc<ToolSet> {
        match self.tools.lock() {
            Ok(tools) => Arc::clone(&tools),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }
}
