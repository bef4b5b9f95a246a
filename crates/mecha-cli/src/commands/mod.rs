//! One module per subcommand, and the options `run` and `chat` share.

pub mod chat;
pub mod completions;
pub mod config;
pub mod delegated;
pub mod diff;
pub mod doctor;
pub mod eval;
pub mod hooks;
pub mod mcp;
pub mod mcp_login;
mod modes;
pub mod outbox;
pub mod questions;
pub mod rewind;
pub mod run;
pub mod sessions;
pub mod skills;
mod slash;
pub mod tools;
pub mod trigger;
pub mod triggers;
pub mod tui;
mod tui_rewind;
mod typed;
mod waiting;

use clap::Args;
use mecha_core::PermissionMode;

/// Options of every command that runs the agent.
#[derive(Args, Debug, Clone, Default)]
pub struct RunOptions {
    /// Allow every call without asking (a `prompt` rule still asks, and
    /// read-only mode and the interlock still hold).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Keep only this tool (repeatable); narrows config, never widens it.
    #[arg(long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Plan: send only the read-only tools, for the whole run.
    #[arg(long)]
    pub plan: bool,
    /// Start in this permission mode instead of [agent] permission_mode:
    /// ask, accept-edits, plan, read-only or allow.
    #[arg(long, value_name = "MODE", value_parser = permission_mode)]
    pub permission_mode: Option<PermissionMode>,
    /// Model requests per prompt before stopping (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// The model to use, instead of [provider] model.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Carry only this skill (repeatable); narrows config, never widens it.
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    /// Carry no skills.
    #[arg(long)]
    pub no_skills: bool,
    /// Withhold the `compact` tool: the conversation still compacts at its
    /// threshold, but the model cannot ask for it.
    #[arg(long)]
    pub no_compact_tool: bool,
    /// Show no activity: no tool lines, thinking or status line (the
    /// answer, warnings and errors still show).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `--permission-mode`'s value, spelt as config spells it.
fn permission_mode(name: &str) -> Result<PermissionMode, String> {
    PermissionMode::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = PermissionMode::names().collect();
        format!(
            "`{name}` is no permission mode; use one of {}",
            names.join(", ")
        )
    })
}
