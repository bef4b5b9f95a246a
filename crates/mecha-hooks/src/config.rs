//! `[[hook]]` as written, and its checking: a hook that cannot run is an
//! error at start-up, never a surprise at the first tool call.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    PreTool,
    PostTool,
    UserPrompt,
    Stop,
    SessionStart,
}

impl HookEvent {
    /// The `hook_event_name` hook scripts already expect (Claude Code's).
    pub fn wire_name(self) -> &'static str {
        match self {
            Self::PreTool => "PreToolUse",
            Self::PostTool => "PostToolUse",
            Self::UserPrompt => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SessionStart => "SessionStart",
        }
    }

    /// Whether the event concerns one tool, so that a matcher means something.
    fn has_tool(self) -> bool {
        matches!(self, Self::PreTool | Self::PostTool)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PreTool => "pre_tool",
            Self::PostTool => "post_tool",
            Self::UserPrompt => "user_prompt",
            Self::Stop => "stop",
            Self::SessionStart => "session_start",
        })
    }
}

/// What a hook that breaks (a crash, a timeout, an unexpected exit code or
/// output) means. Blocking is the default: a guard that breaks must not
/// open the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    #[default]
    Block,
    Allow,
}

impl fmt::Display for OnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Block => "block",
            Self::Allow => "allow",
        })
    }
}

/// Seconds a hook may run when its `timeout_s` is not set (Claude Code's
/// default).
pub const DEFAULT_TIMEOUT_S: u64 = 60;

/// One `[[hook]]` of the user's `config.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub event: HookEvent,
    /// A regex on the tool name, anchored; absent, `""` or `"*"` match
    /// every tool.
    pub matcher: Option<String>,
    /// The program to run: `~/` is the home directory, a relative path is
    /// relative to the config file's directory, a bare name is looked up
    /// on PATH.
    pub command: String,
    pub timeout_s: Option<u64>,
    pub on_error: Option<OnError>,
}

/// A `[[hook]]` that cannot be used. Each names the hook by its number in
/// the file and its command, and says what to write instead.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(
        "[[hook]] #{number} (`{command}`): matcher `{matcher}` is not a valid regex ({reason}); \
         write a regex on the tool name such as \"shell|fs_.*\", or \"*\" for every tool"
    )]
    BadMatcher {
        number: usize,
        command: String,
        matcher: String,
        reason: String,
    },
    #[error(
        "[[hook]] #{number} (`{command}`): a matcher applies only to pre_tool and post_tool \
         hooks, and this one is {event}; remove the matcher"
    )]
    MatcherWithoutTool {
        number: usize,
        command: String,
        event: HookEvent,
    },
    #[error(
        "[[hook]] #{number} (`{command}`): {problem}; give the path of an executable file \
         (`~/` is your home directory, a relative path is relative to {config_dir}) or the \
         name of a program on PATH. The command is one program, not a shell line: put \
         arguments in a script"
    )]
    BadCommand {
        number: usize,
        command: String,
        problem: String,
        config_dir: PathBuf,
    },
    #[error("[[hook]] #{number} (`{command}`): timeout_s must be at least 1")]
    ZeroTimeout { number: usize, command: String },
}

/// Every `[[hook]]` of a file that cannot be used, in the file's order, so
/// one broken hook does not hide the next, and the hooks that can.
#[derive(Debug, thiserror::Error)]
#[error("{}", joined(.errors))]
pub struct HookErrors {
    pub errors: Vec<HookError>,
    /// The hooks that compiled: enough to show or try them, never to run
    /// with, since a run would go without a guard its user configured.
    pub usable: crate::HookSet,
}

fn joined(errors: &[HookError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// A checked hook, ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    pub(crate) event: HookEvent,
    /// As written, for display; `None` matches every tool.
    pub(crate) matcher: Option<(String, Regex)>,
    /// As written, to name the hook to the user.
    pub(crate) command: String,
    /// Where it resolved: the program that runs.
    pub(crate) program: PathBuf,
    pub(crate) timeout: Duration,
    pub(crate) on_error: OnError,
}

impl Hook {
    /// `number` counts from 1, as a user counts `[[hook]]` tables.
    pub(crate) fn compile(
        number: usize,
        config: &HookConfig,
        config_dir: &Path,
    ) -> Result<Self, HookError> {
        let command = config.command.clone();
        let matcher = match config.matcher.as_deref() {
            None | Some("" | "*") => None,
            Some(_) if !config.event.has_tool() => {
                return Err(HookError::MatcherWithoutTool {
                    number,
                    command,
                    event: config.event,
                });
            }
            // Anchored, as Claude Code's are: `shell` must not match
            // `shell_extra`.
            Some(m) => match Regex::new(&format!("^(?:{m})$")) {
                Ok(re) => Some((m.to_owned(), re)),
                Err(e) => {
                    return Err(HookError::BadMatcher {
                        number,
                        command,
                        matcher: m.to_owned(),
                        reason: complaint(&e.to_string()),
                    });
                }
            },
        };
        let timeout_s = config.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if timeout_s == 0 {
            return Err(HookError::ZeroTimeout { number, command });
        }
        let program =
            resolve_command(&command, config_dir).map_err(|problem| HookError::BadCommand {
                number,
                command: command.clone(),
                problem,
                config_dir: config_dir.to_path_buf(),
            })?;
        Ok(Self {
            event: config.event,
            matcher,
            command,
            program,
            timeout: Duration::from_secs(timeout_s),
            on_error: config.on_error.unwrap_or_default(),
        })
    }

    pub(crate) fn matches(&self, tool: &str) -> bool {
        self.matcher
            .as_ref()
            .is_none_or(|(_, re)| re.is_match(tool))
    }
}

/// regex's messages draw the pattern over several lines and say what is
/// wrong on the last; that line is enough inside ours.
fn complaint(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or(text)
        .to_owned()
}

/// Where `command` is, or what is wrong with it.
fn resolve_command(command: &str, config_dir: &Path) -> Result<PathBuf, String> {
    if command.trim().is_empty() {
        return Err("the command is empty".to_owned());
    }
    let path = if let Some(rest) = command.strip_prefix("~/") {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .ok_or_else(|| "it starts with `~/` and HOME is not set".to_owned())?;
        PathBuf::from(home).join(rest)
    } else if command.contains('/') {
        config_dir.join(command)
    } else {
        return mecha_core::on_path(command)
            .ok_or_else(|| format!("no program `{command}` is on PATH"));
    };
    if !path.is_file() {
        return Err(format!("there is no file {}", path.display()));
    }
    if !is_executable(&path) {
        return Err(format!(
            "{} is not executable (chmod +x it)",
            path.display()
        ));
    }
    Ok(path)
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}
