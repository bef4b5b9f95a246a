//! Distrust from config: what `[tools.NAME] force` and `[agent]
//! distrust_workspace` force onto tools, by name. Both layers add to it and
//! neither can take it away, since forcing only widens.

use std::collections::BTreeMap;

use mecha_core::ForcedCapabilities;

use super::Settings;
use super::model::ToolsSection;

/// The tools whose results `[agent] distrust_workspace` marks untrusted:
/// the ones that read the workspace.
const WORKSPACE_READERS: [&str; 3] = ["fs_read", "fs_list", "shell"];

impl Settings {
    /// Adds what a layer's `[tools.NAME]` tables force to what is forced
    /// already.
    pub(super) fn add_forced(&mut self, tools: &ToolsSection) {
        for (name, force) in tools.forced() {
            let entry = self.forced.entry(name.to_owned()).or_default();
            *entry = entry.union(force);
        }
    }

    /// What the run forces onto each tool by name: the `[tools.NAME]`
    /// tables, and `untrusted_input` on the workspace readers under
    /// `distrust_workspace`.
    pub fn forcing(&self) -> BTreeMap<String, ForcedCapabilities> {
        let mut forcing = self.forced.clone();
        if self.distrust_workspace {
            for name in WORKSPACE_READERS {
                let entry = forcing.entry(name.to_owned()).or_default();
                *entry = entry.union(ForcedCapabilities::UNTRUSTED);
            }
        }
        forcing
    }
}
