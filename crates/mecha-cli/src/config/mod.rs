//! Configuration: `$MECHA_HOME/config.toml`, narrowed by the workspace's
//! `mecha.toml`, narrowed again by flags. Each layer can only take away.

mod checkpoint;
mod compaction;
mod defer;
mod distrust;
mod filter;
mod hooks;
mod instructions;
mod mcp_files;
mod model;
mod origin;
mod outbox;
mod project;
mod sandbox;
mod search;
mod skills;
mod subagents;
mod toml_file;
mod unheeded;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mecha_core::{
    DEFAULT_SPILL_MAX_BYTES, FALLBACK_TURN_BUDGET, ForcedCapabilities, MIN_TURN_BUDGET,
    PermissionMode, RuleAction, RuleConfig, budget_for_context_window,
};
use mecha_mcp::McpServerConfig;
use mecha_provider::ProviderSettings;
use mecha_sandbox::SandboxConfig;
use mecha_tools::{BuiltinConfig, FetchConfig, ShellConfig};

pub use checkpoint::CheckpointSettings;
pub use defer::{DEFAULT_DEFER_SCHEMAS, DeferSchemas};
pub use filter::ToolFilter;
pub use hooks::Hooks;
use model::{GlobalConfig, ProjectConfig};
pub use origin::Origin;
use origin::Origins;
pub use skills::SkillSettings;
pub use subagents::SubagentConfig;
use toml_file::read_optional;
use unheeded::Narrowing;

/// A configuration file that could not be used; the text names the file, the
/// line and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}\n  {line} | {text}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
        text: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "cannot find the mecha home directory: set MECHA_HOME, or HOME so that ~/.mecha can be used"
    )]
    NoHome,
}

/// Where mecha keeps its files: `MECHA_HOME`, else `~/.mecha`.
pub fn mecha_home() -> Result<PathBuf, ConfigError> {
    if let Some(home) = std::env::var_os("MECHA_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".mecha"))
        .ok_or(ConfigError::NoHome)
}

/// An MCP server and the file (or flag) it came from.
#[derive(Debug, Clone)]
pub struct ConfiguredServer {
    pub config: McpServerConfig,
    pub source: String,
}

/// The settings a run uses, after every layer.
#[derive(Debug)]
pub struct Settings {
    pub global_file: PathBuf,
    pub project_file: Option<PathBuf>,
    pub provider: ProviderSettings,
    pub permission_mode: PermissionMode,
    pub max_turns: u32,
    pub block_sends_after_private: bool,
    pub rules: Vec<RuleConfig>,
    /// MCP servers, each with where it was configured.
    pub mcp: Vec<ConfiguredServer>,
    pub timezone: Option<String>,
    /// Things worth telling the user that do not stop the run.
    pub warnings: Vec<String>,
    /// `None` means every tool; otherwise only these.
    pub tools_enabled: Option<BTreeSet<String>>,
    pub tools_disabled: BTreeSet<String>,
    pub turn_budget: usize,
    /// Nothing in the user's config set the budget; a provider that knows
    /// its context window may derive a better one.
    pub budget_is_fallback: bool,
    /// The most one spill file keeps.
    pub spill_max_bytes: u64,
    /// `[tools] defer_schemas_over_bytes`, after the project's lowering.
    pub defer_schemas: DeferSchemas,
    /// The project's `output_budget_bytes`: a ceiling on whatever the user's
    /// layer resolves to, the window's derivation included.
    project_budget: Option<usize>,
    /// The project's `[provider] compact_at_tokens`: a ceiling on the
    /// user's threshold, explicit or derived.
    project_compact_at: Option<u64>,
    pub builtins: BuiltinConfig,
    /// `[sandbox]`, after the project's narrowing; started (and checked
    /// against the machine) when the tools are built.
    pub sandbox: SandboxConfig,
    /// `[tools.NAME] force` of both layers, by tool name.
    pub forced: BTreeMap<String, ForcedCapabilities>,
    /// `[agent] distrust_workspace`.
    pub distrust_workspace: bool,
    /// `[agent] instructions_files`: the project's, else the user's.
    pub instructions_files: Vec<String>,
    /// `[skills]` of both layers.
    pub skills: SkillSettings,
    /// `[[subagent]]` of the user's file, checked, in dependency order.
    pub subagents: Vec<SubagentConfig>,
    /// `[[hook]]` of the user's file, checked.
    pub hooks: Hooks,
    /// `[[outbox]]` of the user's file, checked.
    pub outbox: Vec<mecha_unattended::outbox::OutboxAction>,
    /// `[tui] notify`.
    pub notify: mecha_tui::Notify,
    /// `[[search]]` of the user's file, checked; `None`: no web tools.
    pub search: Option<mecha_tools::SearchConfig>,
    /// `[checkpoint]` of both layers.
    pub checkpoint: CheckpointSettings,
    /// Where each value came from, for `mecha config`.
    pub origins: Origins,
}

impl Settings {
    /// Reads the global file (absent is fine) and the workspace's project
    /// file (absent is fine), and layers them.
    pub fn load(home: &Path, workspace: &Path) -> Result<Self, ConfigError> {
        let global_file = home.join("config.toml");
        let global: GlobalConfig = read_optional(&global_file)?.unwrap_or_default();
        let project_path = workspace.join("mecha.toml");
        let project: Option<ProjectConfig> = read_optional(&project_path)?;
        // What an empty file gives is the default each layer is told from.
        let defaults = Self::from_global(global_file.clone(), GlobalConfig::default())?.tracked();
        let mut settings = Self::from_global(global_file.clone(), global)?;
        settings.credit(&defaults, &Origin::UserFile(global_file));
        if let Some(project) = project {
            let before = settings.tracked();
            settings.narrow_by_project(&project_path, project)?;
            settings.credit(&before, &Origin::ProjectFile(project_path.clone()));
            settings.project_file = Some(project_path);
        }
        Ok(settings)
    }

    fn from_global(path: PathBuf, global: GlobalConfig) -> Result<Self, ConfigError> {
        let tools = &global.tools;
        let search = search::check(&path, &global.search)?;
        let mut hidden_env = provider_key_variables(&global.provider);
        // The search keys are mecha's to send, like the model's: a shell
        // command (which an injection may write) never sees them.
        hidden_env.extend(search.iter().flat_map(|s| {
            s.backends
                .iter()
                .filter_map(|b| b.spec.key_variable().map(str::to_owned))
        }));
        let shell = ShellConfig {
            hidden_env,
            default_timeout: secs_or(
                tools.shell.default_timeout_s,
                ShellConfig::default().default_timeout,
            ),
            max_timeout: secs_or(
                tools.shell.max_timeout_s,
                ShellConfig::default().max_timeout,
            ),
            sandbox: None,
        };
        let fetch_default = FetchConfig::default();
        let fetch = FetchConfig {
            timeout: secs_or(tools.http_fetch.timeout_s, fetch_default.timeout),
            max_body_bytes: tools
                .http_fetch
                .max_body_bytes
                .unwrap_or(fetch_default.max_body_bytes),
        };
        let configured_budget = tools.output_budget_bytes.or_else(|| {
            global
                .provider
                .context_window
                .map(budget_for_context_window)
        });
        let agent = &global.agent;
        let here = path.parent().unwrap_or(Path::new("."));
        let inline = global.mcp.into_iter().map(|mut config| {
            config.anchor_command(here);
            ConfiguredServer {
                config,
                source: path.display().to_string(),
            }
        });
        let mut settings = Self {
            mcp: inline.collect(),
            timezone: agent.timezone.clone(),
            warnings: Vec::new(),
            permission_mode: agent.permission_mode.unwrap_or_default(),
            max_turns: agent.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            block_sends_after_private: agent.block_sends_after_private.unwrap_or(false),
            rules: global.rule,
            tools_enabled: non_empty_set(&tools.enabled),
            tools_disabled: tools.disabled.iter().cloned().collect(),
            turn_budget: configured_budget.unwrap_or(FALLBACK_TURN_BUDGET),
            budget_is_fallback: configured_budget.is_none(),
            spill_max_bytes: tools.spill_max_bytes.unwrap_or(DEFAULT_SPILL_MAX_BYTES),
            defer_schemas: tools
                .defer_schemas_over_bytes
                .unwrap_or(DEFAULT_DEFER_SCHEMAS),
            project_budget: None,
            project_compact_at: None,
            builtins: BuiltinConfig { shell, fetch },
            forced: BTreeMap::new(),
            distrust_workspace: agent.distrust_workspace.unwrap_or(false),
            instructions_files: instructions::check(&path, agent.instructions_files.clone())?
                .unwrap_or_else(instructions::default_files),
            global_file: path.clone(),
            project_file: None,
            provider: ProviderSettings {
                config_file: Some(path.clone()),
                ..global.provider
            },
            sandbox: global.sandbox,
            skills: SkillSettings::from_user(&global.skills, here, &path),
            subagents: subagents::check(&path, global.subagent)?,
            hooks: hooks::compile(&path, here, &global.hook),
            outbox: outbox::checked(&path, global.outbox)?,
            notify: global.tui.notify.unwrap_or_default(),
            search,
            checkpoint: CheckpointSettings::from_user(global.checkpoint),
            origins: Origins::default(),
        };
        settings.add_forced(&global.tools);
        for file in &global.mcp_files {
            settings.import_mcp_file(&expand_home(here, file), &path.display().to_string())?;
        }
        settings.validate(&path)?;
        Ok(settings)
    }

    /// Derives the budget from the provider's context window when the
    /// user's config left it unset. A project value still only lowers it.
    pub fn adopt_context_window(&mut self, window: Option<u64>) {
        if let (true, Some(window)) = (self.budget_is_fallback, window) {
            let derived = budget_for_context_window(window).max(MIN_TURN_BUDGET);
            self.turn_budget = self.project_budget.map_or(derived, |p| derived.min(p));
        }
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        if self.turn_budget < MIN_TURN_BUDGET {
            return Err(invalid(format!(
                "[tools] output_budget_bytes = {} is too small; use at least {MIN_TURN_BUDGET}",
                self.turn_budget
            )));
        }
        if self.spill_max_bytes < self.turn_budget as u64 {
            return Err(invalid(format!(
                "[tools] spill_max_bytes = {} is smaller than the turn's output budget ({} \
                 bytes), so a spill file could not hold more than the transcript shows; raise \
                 spill_max_bytes or lower output_budget_bytes",
                self.spill_max_bytes, self.turn_budget
            )));
        }
        let shell = &self.builtins.shell;
        if shell.max_timeout > MAX_SHELL_TIMEOUT {
            return Err(invalid(format!(
                "[tools.shell] max_timeout_s = {} is more than a day; use at most {}",
                shell.max_timeout.as_secs(),
                MAX_SHELL_TIMEOUT.as_secs()
            )));
        }
        if shell.default_timeout.is_zero() || shell.max_timeout.is_zero() {
            return Err(invalid(
                "[tools.shell] timeouts must be at least 1 second".to_owned(),
            ));
        }
        if shell.default_timeout > shell.max_timeout {
            return Err(invalid(format!(
                "[tools.shell] default_timeout_s ({}) is larger than max_timeout_s ({}); raise \
                 max_timeout_s or lower default_timeout_s",
                shell.default_timeout.as_secs(),
                shell.max_timeout.as_secs()
            )));
        }
        if self.max_turns == 0 {
            return Err(invalid("[agent] max_turns must be at least 1".to_owned()));
        }
        let servers: Vec<McpServerConfig> = self.mcp.iter().map(|s| s.config.clone()).collect();
        if let Err(e) = mecha_mcp::validate_all(&servers, self.sandbox.kind.is_some()) {
            return Err(invalid(e.to_string()));
        }
        if let Err(e) = mecha_core::Rules::compile(&self.rules) {
            return Err(invalid(e.to_string()));
        }
        if self.builtins.fetch.timeout.is_zero() {
            return Err(invalid(
                "[tools.http_fetch] timeout_s must be at least 1".to_owned(),
            ));
        }
        Ok(())
    }
}

/// The variables that hold model API keys, which shell commands never see.
fn provider_key_variables(provider: &ProviderSettings) -> Vec<String> {
    let mut names = vec!["ANTHROPIC_API_KEY".to_owned(), "OPENAI_API_KEY".to_owned()];
    names.extend(provider.api_key_env.clone());
    names
}

/// `~/x` is the user's home, as people write it in config; other relative
/// paths are relative to the config file's directory.
fn expand_home(base: &Path, file: &Path) -> PathBuf {
    match (file.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => base.join(file),
    }
}

/// The longest a shell command may be allowed to run.
const MAX_SHELL_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Model requests per prompt when config names no limit.
pub const DEFAULT_MAX_TURNS: u32 = 100;

fn secs_or(secs: Option<u64>, default: Duration) -> Duration {
    secs.map_or(default, Duration::from_secs)
}

fn non_empty_set(names: &[String]) -> Option<BTreeSet<String>> {
    (!names.is_empty()).then(|| names.iter().cloned().collect())
}

#[cfg(test)]
mod force_tests;
#[cfg(test)]
mod subagent_tests;
#[cfg(test)]
mod tests;
