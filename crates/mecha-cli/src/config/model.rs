//! The shape of `config.toml` and of a project's `mecha.toml`.
//!
//! Unknown keys are errors in both: a misspelt key silently ignored is a
//! setting the user believes in and nothing enforces.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mecha_core::{ForcedCapabilities, PermissionMode, RuleConfig};
use mecha_mcp::McpServerConfig;
use mecha_provider::ProviderSettings;
use mecha_sandbox::{SandboxConfig, SandboxKind};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

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
    /// `[skills]`: which skills of the store a run carries.
    #[serde(default)]
    pub skills: SkillsSection,
    /// `[[subagent]]`: child agents, each one more tool.
    #[serde(default)]
    pub subagent: Vec<SubagentSection>,
    /// `[[hook]]`: policy programs at the gate and around the loop.
    #[serde(default)]
    pub hook: Vec<mecha_hooks::HookConfig>,
    /// `[[outbox]]`: actions that stage for the owner's review.
    #[serde(default)]
    pub outbox: Vec<mecha_unattended::outbox::OutboxAction>,
    /// `[tui]`: the terminal UI's own settings.
    #[serde(default)]
    pub tui: TuiSection,
    /// `[[search]]`: web_search's backends, in the order they are tried.
    #[serde(default)]
    pub search: Vec<super::search::SearchSection>,
    /// `[checkpoint]`: the workspace snapshots `mecha rewind` goes back to.
    #[serde(default)]
    pub checkpoint: super::checkpoint::CheckpointSection,
}

/// `[tui]`: how the screen behaves.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiSection {
    /// How the screen says it needs you: `bel` (the default), `osc9` or
    /// `off`.
    pub notify: Option<mecha_tui::Notify>,
}

/// One `[[subagent]]` as written; `subagents.rs` checks it. The keys every
/// profile needs are optional here so that their absence can be refused
/// naming the profile, which serde's "missing field" cannot.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentSection {
    pub name: Option<String>,
    pub description: Option<String>,
    pub tools: Option<Vec<String>>,
    pub instructions: Option<String>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub timeout_s: Option<u64>,
    #[serde(default)]
    pub trusted_output: bool,
    /// `"number"`, `"boolean"` or a list of strings; read as a value so a
    /// wrong one is refused naming the profile.
    pub answer_shape: Option<toml::Value>,
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
    /// A repository you did not write: what fs_read, fs_list and shell
    /// return counts as untrusted, so an injection planted in it arms the
    /// interlock.
    pub distrust_workspace: Option<bool>,
    /// Workspace files that may hold the project's instructions for
    /// agents; the first that exists is sent.
    pub instructions_files: Option<Vec<String>>,
}

/// `[tools]`: which built-ins a run gets, their limits, and `[tools.NAME]`
/// tables that force capabilities onto any tool by its registered name.
///
/// Deserialized by hand: a key that is no setting is a tool's table, and
/// one whose value is not a table is still the unknown field it looks like.
#[derive(Debug, Default)]
pub struct ToolsSection {
    /// Empty means every tool.
    pub enabled: Vec<String>,
    /// Applied after `enabled`, so it wins.
    pub disabled: Vec<String>,
    /// One turn's tool results share this many bytes.
    pub output_budget_bytes: Option<usize>,
    /// The most one spill file keeps of an oversized result.
    pub spill_max_bytes: Option<u64>,
    /// Above this many bytes of MCP schemas, they wait behind `tool_search`.
    pub defer_schemas_over_bytes: Option<super::DeferSchemas>,
    pub shell: ShellSection,
    pub http_fetch: HttpFetchSection,
    /// `[tools.NAME]` for every other tool, built-in or MCP.
    pub other: BTreeMap<String, ToolSection>,
}

impl ToolsSection {
    /// What each `[tools.NAME]` table forces, by tool name.
    pub fn forced(&self) -> impl Iterator<Item = (&str, ForcedCapabilities)> {
        let named = [
            ("shell", self.shell.force),
            ("http_fetch", self.http_fetch.force),
        ];
        named
            .into_iter()
            .chain(self.other.iter().map(|(name, t)| (name.as_str(), t.force)))
            .filter(|(_, force)| !force.is_empty())
    }
}

/// The `[tools]` keys that are settings rather than tools.
const TOOLS_SETTINGS: &[&str] = &[
    "enabled",
    "disabled",
    "output_budget_bytes",
    "spill_max_bytes",
    "defer_schemas_over_bytes",
];

impl<'de> Deserialize<'de> for ToolsSection {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ToolsVisitor)
    }
}

struct ToolsVisitor;

impl<'de> Visitor<'de> for ToolsVisitor {
    type Value = ToolsSection;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the [tools] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolsSection, A::Error> {
        let mut tools = ToolsSection::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "enabled" => tools.enabled = map.next_value()?,
                "disabled" => tools.disabled = map.next_value()?,
                "output_budget_bytes" => tools.output_budget_bytes = Some(map.next_value()?),
                "spill_max_bytes" => tools.spill_max_bytes = Some(map.next_value()?),
                "defer_schemas_over_bytes" => {
                    tools.defer_schemas_over_bytes = Some(map.next_value()?);
                }
                "shell" => tools.shell = map.next_value()?,
                "http_fetch" => tools.http_fetch = map.next_value()?,
                _ => {
                    let table = map.next_value_seed(ToolTable(&key))?;
                    tools.other.insert(key, table);
                }
            }
        }
        Ok(tools)
    }
}

/// The value of a `[tools]` key that is no setting: a tool's table, or else
/// a misspelt setting.
struct ToolTable<'a>(&'a str);

impl ToolTable<'_> {
    fn unknown<E: de::Error>(&self) -> E {
        E::custom(format!(
            "unknown field `{}`, expected one of `{}`, or a table [tools.{0}] that sets `force` \
             for the tool of that name",
            self.0,
            TOOLS_SETTINGS.join("`, `")
        ))
    }
}

impl<'de> DeserializeSeed<'de> for ToolTable<'_> {
    type Value = ToolSection;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ToolSection, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ToolTable<'_> {
    type Value = ToolSection;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a table [tools.{}]", self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ToolSection, A::Error> {
        ToolSection::deserialize(de::value::MapAccessDeserializer::new(map))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<ToolSection, E> {
        Err(self.unknown())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<ToolSection, E> {
        Err(self.unknown())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<ToolSection, E> {
        Err(self.unknown())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<ToolSection, E> {
        Err(self.unknown())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<ToolSection, E> {
        Err(self.unknown())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<ToolSection, A::Error> {
        Err(self.unknown())
    }
}

/// `[tools.NAME]` for a tool with no settings of its own.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSection {
    /// Capabilities forced on; only widens.
    #[serde(default)]
    pub force: ForcedCapabilities,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellSection {
    pub default_timeout_s: Option<u64>,
    pub max_timeout_s: Option<u64>,
    #[serde(default)]
    pub force: ForcedCapabilities,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpFetchSection {
    pub timeout_s: Option<u64>,
    pub max_body_bytes: Option<usize>,
    #[serde(default)]
    pub force: ForcedCapabilities,
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
    #[serde(default)]
    pub skills: SkillsSection,
    /// May switch checkpoints off and lower their caps.
    #[serde(default)]
    pub checkpoint: super::checkpoint::CheckpointSection,
    /// Caught by name to ignore with a warning (`project.rs`): a project
    /// must not start programs, nor define agents, nor choose where the
    /// conversation goes.
    /// Of `[provider]` only `compact_at_tokens` is taken (it can only
    /// compact sooner).
    pub provider: Option<toml::Value>,
    pub mcp: Option<toml::Value>,
    pub mcp_files: Option<toml::Value>,
    /// A cloned repository must not define agents.
    pub subagent: Option<toml::Value>,
    /// A cloned repository must not run programs of its choosing.
    pub hook: Option<toml::Value>,
    /// A cloned repository must not choose where queries go.
    pub search: Option<toml::Value>,
    /// Nor say what may be sent in the user's name.
    pub outbox: Option<toml::Value>,
}

/// A project's `[sandbox]`: it may switch confinement on and the network
/// off. The keys that would widen what a confined command sees are caught
/// by name, to ignore with a warning.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSandbox {
    pub kind: Option<SandboxKind>,
    pub network: Option<bool>,
    /// Kept only where the user's own network or list already allows it.
    pub allow_hosts: Option<Vec<String>>,
    pub readable: Option<toml::Value>,
    pub writable: Option<toml::Value>,
    pub image: Option<toml::Value>,
}

/// `[skills]`: which skills of the store a run carries. In a project's
/// file `enabled` intersects and `disabled` adds; its `dir` is dropped,
/// with a warning, since the store is the user's alone.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsSection {
    /// Empty means every skill in the store.
    #[serde(default)]
    pub enabled: Vec<String>,
    /// Applied after `enabled`, so it wins.
    #[serde(default)]
    pub disabled: Vec<String>,
    /// Where the store is (default `$MECHA_HOME/skills`).
    pub dir: Option<PathBuf>,
}
