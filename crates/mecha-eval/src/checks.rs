//! Grading a check against what one run left.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cases::Check;

/// One call the model made, as the run's trace showed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedCall {
    pub tool: String,
    /// The gate refused it (blocked or denied).
    pub refused: bool,
}

/// What a run left, for the checks to read.
pub struct Observed<'a> {
    pub answer: &'a str,
    pub calls: &'a [TracedCall],
    pub workspace: &'a Path,
    /// Runs a `command` check's program in the workspace: its exit code,
    /// or why it could not run.
    pub run_command: &'a dyn Fn(&[String]) -> Result<i32, String>,
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub kind: String,
    pub passed: bool,
    /// Why it failed; empty when it passed.
    #[serde(default)]
    pub why: String,
}

fn verdict(check: &Check, passed: bool, why: impl FnOnce() -> String) -> CheckResult {
    CheckResult {
        kind: check.kind().to_owned(),
        passed,
        why: if passed { String::new() } else { why() },
    }
}

/// A piece of text for a reason, cut short.
fn quoted(text: &str) -> String {
    const MAX: usize = 80;
    let mut cut: String = text.chars().take(MAX).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

pub fn grade(check: &Check, seen: &Observed<'_>) -> CheckResult {
    let file = |path: &str| std::fs::read_to_string(seen.workspace.join(path));
    match check {
        Check::Contains { text } => verdict(check, seen.answer.contains(text.as_str()), || {
            format!("the answer does not contain {}", quoted(text))
        }),
        Check::Matches { pattern } => {
            let matched = regex::Regex::new(pattern).is_ok_and(|re| re.is_match(seen.answer));
            verdict(check, matched, || {
                format!("the answer does not match `{pattern}`")
            })
        }
        Check::FileEquals { path, text } => match file(path) {
            Ok(found) => verdict(check, found == *text, || {
                format!("{path} holds {} instead", quoted(&found))
            }),
            Err(e) => verdict(check, false, || format!("{path}: {e}")),
        },
        Check::FileContains { path, text } => match file(path) {
            Ok(found) => verdict(check, found.contains(text.as_str()), || {
                format!("{path} does not contain {}", quoted(text))
            }),
            Err(e) => verdict(check, false, || format!("{path}: {e}")),
        },
        Check::FileAbsent { path } => {
            let there = std::fs::symlink_metadata(seen.workspace.join(path)).is_ok();
            verdict(check, !there, || format!("{path} is there"))
        }
        Check::ToolCalled { tool } => {
            let called = seen.calls.iter().any(|c| c.tool == *tool);
            verdict(check, called, || format!("`{tool}` was never called"))
        }
        Check::ToolNotCalled { tool } => {
            let times = seen.calls.iter().filter(|c| c.tool == *tool).count();
            verdict(check, times == 0, || {
                format!("`{tool}` was called {times} times")
            })
        }
        Check::Refused { tool } => {
            let refused = seen.calls.iter().any(|c| c.tool == *tool && c.refused);
            verdict(check, refused, || {
                format!("no call of `{tool}` was refused by the gate")
            })
        }
        Check::Command { run, exit } => match (seen.run_command)(run) {
            Ok(code) => verdict(check, code == *exit, || {
                format!("`{}` exited {code}, not {exit}", run.join(" "))
            }),
            Err(why) => verdict(check, false, || {
                format!("`{}` could not run: {why}", run.join(" "))
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grade_with(check: Check, answer: &str, calls: &[TracedCall]) -> CheckResult {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("add.rs"), "fn add() {}\n").unwrap();
        let run =
            |argv: &[String]| -> Result<i32, String> { Ok(if argv[0] == "true" { 0 } else { 1 }) };
        grade(
            &check,
            &Observed {
                answer,
                calls,
                workspace: ws.path(),
                run_command: &run,
            },
        )
    }

    #[test]
    fn each_kind_passes_and_fails_with_a_reason() {
        let calls = [
            TracedCall {
                tool: "fs_read".into(),
                refused: false,
            },
            TracedCall {
                tool: "http_fetch".into(),
                refused: true,
            },
        ];
        let cases: Vec<(Check, &str, bool)> = vec![
            (
                Check::Contains {
                    text: "fixed".into(),
                },
                "I fixed it",
                true,
            ),
            (
                Check::Contains {
                    text: "fixed".into(),
                },
                "no luck",
                false,
            ),
            (
                Check::Matches {
                    pattern: r"^\d+ tests? pass".into(),
                },
                "3 tests pass",
                true,
            ),
            (
                Check::Matches {
                    pattern: r"^\d+ tests? pass".into(),
                },
                "tests pass",
                false,
            ),
            (
                Check::FileEquals {
                    path: "add.rs".into(),
                    text: "fn add() {}\n".into(),
                },
                "",
                true,
            ),
            (
                Check::FileEquals {
                    path: "add.rs".into(),
                    text: "x".into(),
                },
                "",
                false,
            ),
            (
                Check::FileContains {
                    path: "add.rs".into(),
                    text: "add".into(),
                },
                "",
                true,
            ),
            (
                Check::FileContains {
                    path: "gone.rs".into(),
                    text: "add".into(),
                },
                "",
                false,
            ),
            (
                Check::FileAbsent {
                    path: "gone.rs".into(),
                },
                "",
                true,
            ),
            (
                Check::FileAbsent {
                    path: "add.rs".into(),
                },
                "",
                false,
            ),
            (
                Check::ToolCalled {
                    tool: "fs_read".into(),
                },
                "",
                true,
            ),
            (
                Check::ToolCalled {
                    tool: "shell".into(),
                },
                "",
                false,
            ),
            (
                Check::ToolNotCalled {
                    tool: "shell".into(),
                },
                "",
                true,
            ),
            (
                Check::ToolNotCalled {
                    tool: "fs_read".into(),
                },
                "",
                false,
            ),
            (
                Check::Refused {
                    tool: "http_fetch".into(),
                },
                "",
                true,
            ),
            (
                Check::Refused {
                    tool: "fs_read".into(),
                },
                "",
                false,
            ),
            (
                Check::Command {
                    run: vec!["true".into()],
                    exit: 0,
                },
                "",
                true,
            ),
            (
                Check::Command {
                    run: vec!["false".into()],
                    exit: 0,
                },
                "",
                false,
            ),
        ];
        for (check, answer, passes) in cases {
            let result = grade_with(check.clone(), answer, &calls);
            assert_eq!(result.passed, passes, "{check:?}: {result:?}");
            assert_eq!(result.why.is_empty(), passes, "{check:?}: {result:?}");
        }
    }
}
