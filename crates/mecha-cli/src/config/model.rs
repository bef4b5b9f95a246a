//! The shape of `config.toml` and of a project's `mecha.toml`.
//!
//! Unknown keys are errors in both: a misspelt key silently ignored is a
//! setting the user believes in and nothing enforces.

use serde::Deserialize;

/// `$MECHA_HOME/config.toml`: the user's own settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalConfig {
    #[serde(default)]
    pub provider: ProviderSection,
    #[serde(default)]
    pub tools: ToolsSection,
}

/// `[provider]`: the model a run talks to. Only what the tool layer needs
/// so far; the connection settings arrive with the providers.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// Tokens the model's context holds; the output budget derives from it.
    pub context_window: Option<u64>,
}

/// `[tools]`: which built-ins a run gets, and their limits.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// Empty means every tool.
    #[serde(default)]
    pub enabled: Vec<String>,
    /// Applied after `enabled`, so it wins.
    #[serde(default)]
    pub disabled: Vec<String>,
    /// One turn's tool results share this many bytes.
    pub output_budget_bytes: Option<usize>,
    #[serde(default)]
    pub shell: ShellSection,
    #[serde(default)]
    pub http_fetch: HttpFetchSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellSection {
    pub default_timeout_s: Option<u64>,
    pub max_timeout_s: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpFetchSection {
    pub timeout_s: Option<u64>,
    pub max_body_bytes: Option<usize>,
}

/// A workspace's `mecha.toml`. It may only narrow: every field here can take
/// something away and none can add. The sections a project must never set
/// (`[provider]` would let a cloned repository pick where the conversation
/// is sent) are caught by name so the error can say why.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    #[serde(default)]
    pub tools: ToolsSection,
    pub provider: Option<toml::Value>,
}
