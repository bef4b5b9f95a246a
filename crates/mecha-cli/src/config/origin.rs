//! Where each effective setting came from: mecha's default, the user's
//! `config.toml`, the project's `mecha.toml`, the environment, or a flag.
//!
//! Recorded as the layers are applied (`Settings::load`, `apply_flags`,
//! `add_mcp_files`): each layer compares the settings before and after it,
//! so a value a layer changed is that layer's, and nothing re-reads a file
//! to guess. The environment's share of `[provider]` is mecha-provider's
//! `resolve`, combined here by [`Origin::of_provider`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use mecha_core::PermissionMode;
use mecha_provider::Source;
use serde_json::{Value, json};

use super::Settings;
use crate::commands::RunOptions;

/// Where one value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Default,
    /// The user's `config.toml`, at this path.
    UserFile(PathBuf),
    /// The project's `mecha.toml`, at this path.
    ProjectFile(PathBuf),
    /// This environment variable.
    Env(String),
    /// This command-line flag.
    Flag(&'static str),
}

impl Origin {
    /// The layer's name, as `mecha config --json` writes it.
    pub fn layer(&self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::UserFile(_) => "config.toml",
            Self::ProjectFile(_) => "mecha.toml",
            Self::Env(_) => "environment",
            Self::Flag(_) => "flag",
        }
    }

    /// Which file, variable or flag, when the layer has more than one.
    pub fn source(&self) -> Option<String> {
        match self {
            Self::Default => None,
            Self::UserFile(path) | Self::ProjectFile(path) => Some(path.display().to_string()),
            Self::Env(name) => Some(name.clone()),
            Self::Flag(flag) => Some((*flag).to_owned()),
        }
    }

    /// `{"value": .., "origin": .., "source": ..}`, the shape of every
    /// entry of `mecha config --json`.
    pub fn entry(&self, value: Value) -> Value {
        let mut entry = json!({ "value": value, "origin": self.layer() });
        if let Some(source) = self.source() {
            entry["source"] = Value::String(source);
        }
        entry
    }

    /// A `[provider]` value: the origin config gave it when config set it
    /// (the file, or a flag), else what the provider took from the
    /// environment or its default.
    pub fn of_provider(configured: Origin, source: &Source) -> Origin {
        match source {
            Source::Config => configured,
            Source::Env(name) => Self::Env(name.clone()),
            Source::Default => Self::Default,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.source() {
            Some(source) => write!(f, "{} ({source})", self.layer()),
            None => f.write_str(self.layer()),
        }
    }
}

/// The origin of every tracked setting, and of each rule and MCP server.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    values: BTreeMap<&'static str, Origin>,
    /// One per `Settings::rules` entry, in order.
    rules: Vec<Origin>,
    /// One per `Settings::mcp` entry, in order.
    mcp: Vec<Origin>,
}

impl Origins {
    /// Where the setting `key` (a key of [`Settings::tracked`]) came from.
    pub fn of(&self, key: &str) -> Origin {
        self.values.get(key).cloned().unwrap_or(Origin::Default)
    }

    pub fn rule(&self, index: usize) -> Origin {
        self.rules.get(index).cloned().unwrap_or(Origin::Default)
    }

    pub fn mcp(&self, index: usize) -> Origin {
        self.mcp.get(index).cloned().unwrap_or(Origin::Default)
    }
}

impl Settings {
    /// The settings whose origin is tracked, by key, as `mecha config`
    /// shows them.
    pub fn tracked(&self) -> BTreeMap<&'static str, Value> {
        let p = &self.provider;
        let shell = &self.builtins.shell;
        let fetch = &self.builtins.fetch;
        let compact_at = match (p.compact_at_tokens, self.project_compact_at) {
            (Some(user), Some(project)) => Some(user.min(project)),
            (user, project) => user.or(project),
        };
        BTreeMap::from([
            ("provider.kind", json!(p.kind.map(|k| k.as_str()))),
            ("provider.model", json!(p.model)),
            ("provider.base_url", json!(p.base_url)),
            ("provider.api_key_env", json!(p.api_key_env)),
            ("provider.context_window", json!(p.context_window)),
            ("provider.max_tokens", json!(p.max_tokens)),
            ("provider.compact_at_tokens", json!(compact_at)),
            (
                "agent.permission_mode",
                json!(self.permission_mode.as_str()),
            ),
            ("agent.max_turns", json!(self.max_turns)),
            (
                "agent.block_sends_after_private",
                json!(self.block_sends_after_private),
            ),
            ("agent.distrust_workspace", json!(self.distrust_workspace)),
            ("agent.timezone", json!(self.timezone)),
            ("tui.notify", json!(self.notify.as_str())),
            ("tools.enabled", json!(self.tools_enabled)),
            ("tools.disabled", json!(self.tools_disabled)),
            ("tools.output_budget_bytes", json!(self.turn_budget)),
            ("tools.spill_max_bytes", json!(self.spill_max_bytes)),
            ("tools.defer_schemas_over_bytes", json!(self.defer_schemas)),
            (
                "tools.shell.default_timeout_s",
                json!(shell.default_timeout.as_secs()),
            ),
            (
                "tools.shell.max_timeout_s",
                json!(shell.max_timeout.as_secs()),
            ),
            ("tools.http_fetch.timeout_s", json!(fetch.timeout.as_secs())),
            (
                "tools.http_fetch.max_body_bytes",
                json!(fetch.max_body_bytes),
            ),
            ("sandbox.kind", json!(self.sandbox.kind.map(|k| k.as_str()))),
            ("sandbox.network", json!(self.sandbox.network)),
            ("sandbox.allow_hosts", json!(self.sandbox.allow_hosts)),
            ("skills.dir", json!(self.skills.dir.display().to_string())),
            ("checkpoint.enabled", json!(self.checkpoint.enabled)),
            (
                "checkpoint.max_file_bytes",
                json!(self.checkpoint.limits.max_file_bytes),
            ),
            (
                "checkpoint.max_snapshot_bytes",
                json!(self.checkpoint.limits.max_snapshot_bytes),
            ),
            (
                "checkpoint.include_ignored",
                json!(self.checkpoint.limits.include_ignored),
            ),
        ])
    }

    /// Credits `origin` with every tracked value that differs from
    /// `before`, and with the rules and MCP servers added since.
    pub(super) fn credit(&mut self, before: &BTreeMap<&'static str, Value>, origin: &Origin) {
        for (key, value) in self.tracked() {
            if before.get(key) != Some(&value) {
                self.origins.values.insert(key, origin.clone());
            }
        }
        self.origins.rules.resize(self.rules.len(), origin.clone());
        self.origins.mcp.resize(self.mcp.len(), origin.clone());
    }

    /// Applies the flags of `run` and `chat` that change settings rather
    /// than narrow the tools: `--model`, `--max-turns`, `--yes`.
    pub fn apply_flags(&mut self, options: &RunOptions) {
        if let Some(model) = &options.model {
            self.provider.model = Some(model.clone());
            self.origins
                .values
                .insert("provider.model", Origin::Flag("--model"));
        }
        if let Some(max_turns) = options.max_turns {
            self.max_turns = max_turns.max(1);
            self.origins
                .values
                .insert("agent.max_turns", Origin::Flag("--max-turns"));
        }
        // The mode named on the command line, then --yes for the modes
        // that ask; read-only and plan hold. Only a run started in allow
        // can go back to it on the screen, so --yes is the way in.
        if let Some(mode) = options.permission_mode {
            self.permission_mode = mode;
            self.origins
                .values
                .insert("agent.permission_mode", Origin::Flag("--permission-mode"));
        }
        if options.yes && self.permission_mode.asks() {
            self.permission_mode = PermissionMode::Allow;
            self.origins
                .values
                .insert("agent.permission_mode", Origin::Flag("--yes"));
        }
    }

    /// Narrows the enabled tools to the `--tool` names (none: no change),
    /// crediting the flag.
    pub fn apply_tool_flags(&mut self, tools: &[String]) {
        if tools.is_empty() {
            return;
        }
        self.narrow_enabled(Some(tools.iter().cloned().collect()));
        self.origins
            .values
            .insert("tools.enabled", Origin::Flag("--tool"));
    }

    /// Adds the servers of each `--mcp-file`.
    pub fn add_mcp_files(&mut self, files: &[PathBuf]) -> Result<(), super::ConfigError> {
        let before = self.tracked();
        for file in files {
            self.import_mcp_file(file, "--mcp-file")?;
        }
        self.credit(&before, &Origin::Flag("--mcp-file"));
        Ok(())
    }
}
