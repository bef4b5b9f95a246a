//! The shape of `config.toml` and of a project's `mecha.toml`.
//!
//! Unknown keys are errors in both: a misspelt key silently ignored is a
//! setting the user believes in and nothing enforces.

use std::path::PathBuf;

use mecha_core::{PermissionMode, RuleConfig};
use mecha_mcp::McpServerConfig;
use mecha_provider::ProviderSettings;
use mecha_sandbox::{SandboxConfig, SandboxKind};
use serde::Deserialize;

/// `$MECHA_HOME/config.toml`: the user's own settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalConfig {
    #[serde(default)]
    pub provider: ProviderSettings,
    #[serde(default)]
    pub agent: AgentSection,
    #[serde(default)]
    pub tools: ToolsSection,
    #[serde(default)]
    pub rule: Vec<RuleConfig>,
    /// `[[mcp]]`: MCP servers whose tools join the run.
    #[serde(default)]
    pub mcp: Vec<McpServerConfig>,
    /// Files in the `mcpServers` JSON format other clients use, relative to
    /// this file's directory.
    #[serde(default)]
    pub mcp_files: Vec<PathBuf>,
    /// `[sandbox]`: what confines shell commands and sandboxed servers.
    #[serde(default)]
    pub sandbox: SandboxConfig,
}

/// `[agent]`: how a run behaves.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// allow, read-only or ask (the default).
    pub permission_mode: Option<PermissionMode>,
    /// Model requests per prompt before the run stops.
    pub max_turns: Option<u32>,
    /// Refuse every send, blind ones too, once private data is present.
    pub block_sends_after_private: Option<bool>,
    /// An IANA name (`Europe/Berlin`), handed to MCP servers as MECHA_TZ.
    pub timezone: Option<String>,
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
    /// The most one spill file keeps of an oversized result.
    pub spill_max_bytes: Option<u64>,
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
    #[serde(default)]
    pub agent: AgentSection,
    /// Only `forbid` and `prompt` rules: an `allow` would widen.
    #[serde(default)]
    pub rule: Vec<RuleConfig>,
    #[serde(default)]
    pub sandbox: ProjectSandbox,
    /// Caught by name to refuse with a reason: a project must not start
    /// programs, nor choose where the conversation goes.
    pub provider: Option<toml::Value>,
    pub mcp: Option<toml::Value>,
    pub mcp_files: Option<toml::Value>,
}

/// A project's `[sandbox]`: it may switch confinement on and the network
/// off. The keys that would widen what a confined command sees are caught
/// by name, to refuse with a reason.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSandbox {
    pub kind: Option<SandboxKind>,
    pub network: Option<bool>,
    pub readable: Option<toml::Value>,
    pub writable: Option<toml::Value>,
    pub image: Option<toml::Value>,
}
