//! `[[rule]]` entries: per-tool policy on a call's input, checked after the
//! interlock and the hook and before the approver.
//!
//! For `shell`, a rule's `command` matches by executable and argument
//! prefix, and a compound command matches an allow rule only if every part
//! of it does; a forbid or prompt rule fires if any part matches. Among the
//! rules that match, forbid beats prompt beats allow.

use std::collections::BTreeMap;

use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use serde_json::Value;

use crate::shell_words::{SimpleCommand, split_commands};

/// What a rule does to a call it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    /// Runs without asking (never past read-only mode or the interlock).
    Allow,
    /// Needs a fresh human decision; refused when nobody can answer.
    Prompt,
    /// Never runs.
    Forbid,
}

/// One `[[rule]]` as written in config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// A tool name, or a glob over names (`files__*`).
    pub tool: String,
    /// For tools with a `command` argument (shell): executable and argument
    /// prefix, e.g. `git status`.
    pub command: Option<String>,
    /// Globs over string arguments, e.g. `{ url = "https://docs.rs/*" }`.
    #[serde(default)]
    pub input: BTreeMap<String, String>,
    pub action: RuleAction,
}

/// A rule that cannot be compiled.
#[derive(Debug, thiserror::Error)]
#[error("[[rule]] for `{tool}`: {message}")]
pub struct RuleError {
    pub tool: String,
    pub message: String,
}

#[derive(Debug)]
struct Rule {
    tool: GlobMatcher,
    command: Option<Vec<String>>,
    input: Vec<(String, GlobMatcher)>,
    action: RuleAction,
}

/// The compiled rules of a run.
#[derive(Debug, Default)]
pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub fn compile(configs: &[RuleConfig]) -> Result<Self, RuleError> {
        let glob = |tool: &str, pattern: &str| {
            Glob::new(pattern)
                .map(|g| g.compile_matcher())
                .map_err(|e| RuleError {
                    tool: tool.to_owned(),
                    message: format!("`{pattern}` is not a valid glob: {e}"),
                })
        };
        let mut rules = Vec::with_capacity(configs.len());
        for c in configs {
            let command = match &c.command {
                None => None,
                Some(text) => {
                    let parts = split_commands(text);
                    match parts.as_slice() {
                        [one] if !one.redirects && !one.substitutes => Some(one.words.clone()),
                        _ => {
                            return Err(RuleError {
                                tool: c.tool.clone(),
                                message: format!(
                                    "command `{text}` must be one simple command (an executable \
                                     and its leading arguments), with no operators or redirections"
                                ),
                            });
                        }
                    }
                }
            };
            let input = c
                .input
                .iter()
                .map(|(k, p)| Ok((k.clone(), glob(&c.tool, p)?)))
                .collect::<Result<_, RuleError>>()?;
            rules.push(Rule {
                tool: glob(&c.tool, &c.tool)?,
                command,
                input,
                action: c.action,
            });
        }
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The strongest action among the rules that match this call, if any.
    pub fn evaluate(&self, tool: &str, input: &Value) -> Option<RuleAction> {
        let applicable: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| r.tool.is_match(tool) && r.input_matches(input))
            .collect();
        if applicable.is_empty() {
            return None;
        }
        let parts = input
            .get("command")
            .and_then(Value::as_str)
            .map(split_commands);
        let fires = |action: RuleAction| {
            let rules = applicable.iter().filter(|r| r.action == action);
            if action == RuleAction::Allow {
                rules.clone().any(|r| r.command.is_none())
                    || parts.as_ref().is_some_and(|parts| {
                        !parts.is_empty()
                            && parts.iter().all(|part| {
                                rules
                                    .clone()
                                    .filter_map(|r| r.command.as_deref())
                                    .any(|prefix| allows(part, prefix))
                            })
                    })
            } else {
                rules.clone().any(|r| match (&r.command, &parts) {
                    (None, _) => true,
                    (Some(prefix), Some(parts)) => parts.iter().any(|p| touches(p, prefix)),
                    (Some(_), None) => false,
                })
            }
        };
        [RuleAction::Forbid, RuleAction::Prompt, RuleAction::Allow]
            .into_iter()
            .find(|&a| fires(a))
    }
}

impl Rule {
    fn input_matches(&self, input: &Value) -> bool {
        self.input.iter().all(|(key, glob)| {
            input
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|v| glob.is_match(v))
        })
    }
}

/// An allow rule covers a part only if the part is exactly the prefix plus
/// more arguments: no redirection, no substitution, no leading variable
/// assignment (`GIT_SSH_COMMAND=… git status` is not `git status`).
fn allows(part: &SimpleCommand, prefix: &[String]) -> bool {
    !part.redirects && !part.substitutes && part.words.starts_with(prefix)
}

/// Wrappers that run their arguments as a command; a forbid rule sees
/// through them so `timeout 5 git push` is still `git push`.
const WRAPPERS: [&str; 7] = ["env", "command", "exec", "nice", "nohup", "timeout", "sudo"];

/// A forbid or prompt rule fires if the part runs the prefix, seen through
/// variable assignments and wrappers, or if any later word sequence does.
fn touches(part: &SimpleCommand, prefix: &[String]) -> bool {
    let words = &part.words;
    if let Some(script) = inline_script(words) {
        return split_commands(script).iter().any(|p| touches(p, prefix));
    }
    (0..words.len()).any(|start| {
        let before = &words[..start];
        let plausible_start = before.iter().all(|w| {
            w.contains('=')
                || w.starts_with('-')
                || WRAPPERS.contains(&w.as_str())
                || w.parse::<f64>().is_ok()
        });
        plausible_start && words[start..].starts_with(prefix)
    })
}

/// The script of `bash -c '…'` (or sh, dash, zsh), which runs as commands
/// of its own.
fn inline_script(words: &[String]) -> Option<&str> {
    let shell = words.first()?.rsplit('/').next()?;
    if !matches!(shell, "bash" | "sh" | "dash" | "zsh") {
        return None;
    }
    let flag = words
        .iter()
        .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))?;
    words.get(flag + 1).map(String::as_str)
}

#[cfg(test)]
mod tests;
