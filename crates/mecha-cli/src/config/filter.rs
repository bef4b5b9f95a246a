//! Which tools a run keeps, and the settings that narrow the set.

use mecha_core::Tool;
use std::collections::BTreeSet;

use super::Settings;

/// Which tools a run keeps: config's enabled/disabled and `--tool` (already
/// folded into the sets), and in a planning run only read-only tools.
#[derive(Debug, Clone)]
pub struct ToolFilter {
    pub(super) enabled: Option<BTreeSet<String>>,
    pub(super) disabled: BTreeSet<String>,
    pub(super) read_only_only: bool,
}

impl ToolFilter {
    pub fn keeps(&self, tool: &dyn Tool) -> bool {
        self.keeps_name(tool.name()) && (!self.read_only_only || tool.read_only())
    }

    /// [`ToolFilter::keeps`] for a subagent, which a planning run also
    /// drops when its profile lists a tool that changes things, even one
    /// narrowed away: a writer cut down to its readers is not what the
    /// profile describes.
    pub fn keeps_subagent(&self, tool: &dyn Tool, read_only_as_configured: bool) -> bool {
        self.keeps(tool) && (!self.read_only_only || read_only_as_configured)
    }

    /// Whether a tool of this name survives every layer.
    pub fn keeps_name(&self, name: &str) -> bool {
        self.enabled.as_ref().is_none_or(|e| e.contains(name)) && !self.disabled.contains(name)
    }
}

impl Settings {
    /// Narrows the enabled set to `only` (`None` leaves it as it is).
    pub fn narrow_enabled(&mut self, only: Option<BTreeSet<String>>) {
        let Some(only) = only else { return };
        self.tools_enabled = Some(match self.tools_enabled.take() {
            None => only,
            Some(current) => current.intersection(&only).cloned().collect(),
        });
    }

    /// What survives narrowing; `plan` keeps only read-only tools.
    pub fn tool_filter(&self, plan: bool) -> ToolFilter {
        ToolFilter {
            enabled: self.tools_enabled.clone(),
            disabled: self.tools_disabled.clone(),
            read_only_only: plan,
        }
    }
}
