//! Standing answers: what an "always" to one call allows for the rest of a
//! session, held as allow rules so it matches exactly as a `[[rule]]` would.
//!
//! For a tool with a `command` argument (shell), "always" stands for
//! `command = "<exe> <first argument>"` for each simple command of the line
//! (leading `NAME=value` assignments included, so `X=1 git status` never
//! stretches to `X=1 git push`): a later compound command runs unasked only
//! if every part of it is covered. Any other tool is allowed whole. A
//! command that removes, overwrites or rewrites history (`rm`, `git push
//! --force`, …, see `destructive.rs`) is never offered one, nor covered by
//! one given to a shorter prefix.

use serde_json::Value;

use super::{Rule, RuleAction, Rules, Spellings, glob, options::is_assignment, wrappers};
use crate::shell_words::split_commands;

/// What an "always" to one call would allow from then on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandingAnswer {
    tool: String,
    /// `None`: every call of the tool. Otherwise the word prefixes each
    /// simple command of a later call must start with.
    prefixes: Option<Vec<Vec<String>>>,
}

impl StandingAnswer {
    /// The standing answer an "always" to this call stands for, or why none
    /// can be offered: a command whose parts a prefix cannot pin down
    /// (redirections, substitutions, syntax the tokenizer does not model,
    /// an executable or first argument the shell expands) would otherwise
    /// be allowed by a rule that then never matches it, or by one that
    /// matches more than was shown.
    pub fn for_call(tool: &str, input: &Value) -> Result<Self, String> {
        let Some(command) = input.get("command").and_then(Value::as_str) else {
            return Ok(Self {
                tool: tool.to_owned(),
                prefixes: None,
            });
        };
        let parts = split_commands(command);
        if parts.is_empty() {
            return Err("the command is empty".to_owned());
        }
        if let Some(why) = parts.iter().find_map(wrappers::destroys) {
            return Err(why);
        }
        let mut prefixes: Vec<Vec<String>> = Vec::new();
        for part in &parts {
            if part.opaque {
                return Err("it uses shell syntax mecha cannot check exactly".to_owned());
            }
            if part.substitutes {
                return Err("it runs a command substitution".to_owned());
            }
            if part.redirects {
                return Err("it redirects input or output".to_owned());
            }
            let assignments = part.words.iter().take_while(|w| is_assignment(w)).count();
            let end = (assignments + 2).min(part.words.len());
            if end == assignments {
                return Err("a part of it only sets variables".to_owned());
            }
            if part.expands.iter().take(end).any(|&e| e) {
                return Err(format!(
                    "the shell expands `{}`, so a prefix cannot pin down what runs",
                    part.words[..end].join(" ")
                ));
            }
            let prefix = part.words[..end].to_vec();
            if !prefixes.contains(&prefix) {
                prefixes.push(prefix);
            }
        }
        let answer = Self {
            tool: tool.to_owned(),
            prefixes: Some(prefixes),
        };
        // Never offer an answer that would not cover the very call it is
        // given for: it would promise what it does not do.
        let mut check = Rules::default();
        check.stand(&answer)?;
        if check.evaluate(tool, input, &Spellings::default()) != Some(RuleAction::Allow) {
            return Err("no prefix rule can cover it exactly".to_owned());
        }
        Ok(answer)
    }

    /// Why no standing answer covers this call, whatever was said "always"
    /// to: a command of it removes, overwrites or rewrites history, and an
    /// earlier "always" to a shorter prefix (`find .`, `git push origin`)
    /// must not stretch over it.
    pub fn never_covers(input: &Value) -> Option<String> {
        let command = input.get("command").and_then(Value::as_str)?;
        split_commands(command).iter().find_map(wrappers::destroys)
    }

    /// What it covers, for the question: `every \`fs_write\` call`, or
    /// `` `git status …` `` for each command prefix.
    pub fn describe(&self) -> String {
        match &self.prefixes {
            None => format!("every `{}` call", self.tool),
            Some(prefixes) => {
                let shown: Vec<String> = prefixes
                    .iter()
                    .map(|words| {
                        let quoted: Vec<String> = words.iter().map(|w| quote(w)).collect();
                        format!("`{} …`", quoted.join(" "))
                    })
                    .collect();
                shown.join(" and ")
            }
        }
    }
}

impl Rules {
    /// Adds the allow rules a standing answer stands for.
    pub fn stand(&mut self, answer: &StandingAnswer) -> Result<(), String> {
        let tool = glob(&globset::escape(&answer.tool), false, false)?;
        match &answer.prefixes {
            None => self.rules.push(Rule {
                tool,
                command: None,
                input: Vec::new(),
                action: RuleAction::Allow,
            }),
            Some(prefixes) => {
                for prefix in prefixes {
                    self.rules.push(Rule {
                        tool: tool.clone(),
                        command: Some(prefix.clone()),
                        input: Vec::new(),
                        action: RuleAction::Allow,
                    });
                }
            }
        }
        Ok(())
    }
}

/// A word as a person would type it: bare if it is plain, single-quoted
/// otherwise, so `'a b'` is not shown as two words.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn standing(tool: &str, input: &Value) -> Rules {
        let mut rules = Rules::default();
        rules
            .stand(&StandingAnswer::for_call(tool, input).unwrap())
            .unwrap();
        rules
    }

    fn covers(rules: &Rules, command: &str) -> bool {
        rules.evaluate(
            "shell",
            &json!({ "command": command }),
            &Spellings::default(),
        ) == Some(RuleAction::Allow)
    }

    #[test]
    fn always_on_a_command_covers_its_executable_and_first_argument_only() {
        let r = standing("shell", &json!({"command": "echo hi"}));
        assert!(covers(&r, "echo hi"));
        assert!(covers(&r, "echo hi there"));
        for not in [
            "rm x",
            "echo bye",
            "echo",
            "echo hi && rm x",
            "echo hi; rm x",
        ] {
            assert!(!covers(&r, not), "{not}");
        }
        assert_eq!(
            r.evaluate(
                "fs_write",
                &json!({"command": "echo hi"}),
                &Spellings::default()
            ),
            None,
            "another tool"
        );
    }

    #[test]
    fn always_on_a_compound_command_covers_each_part() {
        let r = standing(
            "shell",
            &json!({"command": "git status --short && cargo test -q"}),
        );
        assert!(covers(&r, "cargo test && git status"));
        assert!(!covers(&r, "git status && rm -rf ~"));
        assert_eq!(
            StandingAnswer::for_call(
                "shell",
                &json!({"command": "git status --short && cargo test -q"})
            )
            .unwrap()
            .describe(),
            "`git status …` and `cargo test …`"
        );
    }

    #[test]
    fn leading_assignments_stay_part_of_the_prefix() {
        let r = standing("shell", &json!({"command": "LANG=C git status"}));
        assert!(covers(&r, "LANG=C git status --short"));
        assert!(!covers(&r, "LANG=C git push"));
        assert!(!covers(&r, "GIT_SSH_COMMAND=evil git status"));
    }

    #[test]
    fn what_a_prefix_cannot_pin_down_gets_no_standing_answer() {
        for (command, why) in [
            ("echo hi > f", "redirects"),
            ("echo $(cat secret)", "substitution"),
            ("$TOOL run", "expands"),
            ("cat *.txt", "expands"),
            ("if true; then ls; fi", "cannot check"),
            ("X=1", "only sets variables"),
            ("", "empty"),
        ] {
            let err =
                StandingAnswer::for_call("shell", &json!({ "command": command })).unwrap_err();
            assert!(err.contains(why), "{command}: {err}");
        }
    }

    #[test]
    fn always_on_another_tool_covers_that_tool_whole_and_its_name_is_no_glob() {
        let r = standing("fs_write", &json!({"path": "a", "content": "b"}));
        assert_eq!(
            r.evaluate("fs_write", &json!({"path": "other"}), &Spellings::default()),
            Some(RuleAction::Allow)
        );
        assert_eq!(
            r.evaluate("fs_edit", &json!({}), &Spellings::default()),
            None
        );
        let r = standing("files__*", &json!({}));
        assert_eq!(
            r.evaluate("files__delete", &json!({}), &Spellings::default()),
            None
        );
        assert_eq!(
            StandingAnswer::for_call("fs_write", &json!({}))
                .unwrap()
                .describe(),
            "every `fs_write` call"
        );
    }

    #[test]
    fn words_are_shown_quoted_as_typed() {
        let answer =
            StandingAnswer::for_call("shell", &json!({"command": "grep 'a b' src"})).unwrap();
        assert_eq!(answer.describe(), "`grep 'a b' …`");
    }
}
