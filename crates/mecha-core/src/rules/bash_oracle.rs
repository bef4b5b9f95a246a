//! Differential test against bash itself: random command lines built from
//! words, every kind of quoting, operators, substitutions and keywords are
//! run by a real `bash -c` whose PATH holds only loggers (every command the
//! grammar names appends its argv to a log and does nothing else). Then:
//!
//! - a line an allow rule for `git status` allows ran nothing but
//!   `git status …` and created no file, and each logged argv is one of the
//!   parts the tokenizer found (when no word of the line expands);
//! - a line that ran `git push` fires a forbid rule for `git push`.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;
use tempfile::TempDir;

use super::{RuleAction, RuleConfig, Rules, Spellings};
use crate::shell_words::split_commands;

/// Every command the grammar can name; each is a logger on PATH.
const LOGGED: [&str; 11] = [
    "git", "echo", "curl", "cat", "sh", "bash", "env", "xargs", "touch", "ls", "time",
];

/// Bash builtins the grammar names, disabled so the loggers run instead;
/// `FUNCNEST` stops a generated function that calls itself.
const PRELUDE: &str = "enable -n echo kill pwd test true false\nFUNCNEST=20\n";

#[rustfmt::skip]
const WORDS: &[&str] = &[
    "git", "status", "push", "echo", "PWNED", "-s", "x", "curl", "eval", "command", "exec",
    "env", "sh", "-c", "xargs", "time", "builtin", "-C", ".", "--no-pager", "\t", "a=b",
];

/// Quoting, where a tokenizer is most likely to disagree with bash.
#[rustfmt::skip]
const QUOTES: &[&str] = &[
    "'a b'", "\"a b\"", "'git push'", "\"git push\"", "$'\\''", "$'\\\"'", "$'a\\tb'",
    "$'\\x41'", "$\"x\"", "'\\''", "\"\\\"\"", "\"\\\\\"", "\"\\x\"", "\\'", "\\\"", "\\\\",
    "\\;", "\\ ", "a\\ b", "'", "\"", "$'", "$\"", "\\", "''", "\"\"", "\"'\"", "'\"'",
    "\"$'x'\"", "'$(echo PWNED)'", "\\$(echo PWNED)", "$'\\n'", "$'\\\\'", "#", "\\\n",
];

/// Ways to run a second command, and redirections.
#[rustfmt::skip]
const OPERATORS: &[&str] = &[
    ";", "&&", "||", "|", "&", "\n", ";;", "|&", "&>", ">", ">>", "<", "<<", "<<<", "2>&1",
    "out", "2>", "{fd}>", ">&2", "<>", "; echo PWNED", "&& echo PWNED", "\necho PWNED",
    "| echo PWNED", "& echo PWNED",
];

/// Expansions, substitutions and keywords.
#[rustfmt::skip]
const SYNTAX: &[&str] = &[
    "$X", "${X}", "${X:-a}", "${X:-'a'}", "\"$X\"", "$((1))", "$[1]", "*", "{push,}",
    "{git,push}", "~", "$", "$$", "$#", "$!", "$1",
    "$(", ")", "(", "`", "$(echo PWNED)", "`echo PWNED`", "<(echo PWNED)", "\"$(echo x)\"",
    "!", "{", "}", "if", "then", "fi", "for", "in", "do", "done", "case", "esac", "function",
    "f()",
];

/// How a line starts: mostly as the allowed command, sometimes as a way of
/// running `git push` that the rest of the line may complete.
#[rustfmt::skip]
const HEADS: &[&str] = &[
    "git push ", "git ", "eval ", "exec ", "command ", "time ", "builtin ", "{ ", "if ", "! ",
    "x=1 ", "f() { ", "(", "$(", "`", "env ", "xargs ", "sh -c ",
];

fn line() -> impl Strategy<Value = String> {
    let head = prop_oneof![
        6 => Just("git status "),
        2 => Just(""),
        2 => prop::sample::select(HEADS),
    ];
    let token = prop_oneof![
        3 => prop::sample::select(WORDS),
        4 => prop::sample::select(QUOTES),
        2 => prop::sample::select(OPERATORS),
        2 => prop::sample::select(SYNTAX),
    ];
    let separator = prop::sample::select(&[" ", " ", ""][..]);
    (head, prop::collection::vec((token, separator), 0..12)).prop_map(|(head, tokens)| {
        let mut line = head.to_owned();
        for (token, separator) in tokens {
            line.push_str(token);
            line.push_str(separator);
        }
        line
    })
}

struct Oracle {
    bash: PathBuf,
    root: TempDir,
}

/// What one line did: the argv of every logged command, and the files it
/// left in its working directory.
struct Run {
    log: Vec<Vec<String>>,
    files: Vec<String>,
}

impl Oracle {
    fn new() -> Option<Self> {
        let bash = std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("bash"))
            .find(|p| p.is_file())?;
        let root = tempfile::tempdir().ok()?;
        let bin = root.path().join("bin");
        std::fs::create_dir(&bin).ok()?;
        for name in LOGGED {
            let path = bin.join(name);
            // NUL-separated argv after its length; `printf` is a builtin of
            // /bin/sh, so the logger needs nothing on PATH.
            std::fs::write(
                &path,
                "#!/bin/sh\nprintf '%s\\0' \"$#\" \"${0##*/}\" \"$@\" >> \"$LOG\"\n",
            )
            .ok()?;
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .ok()?;
        }
        Some(Self { bash, root })
    }

    fn run(&self, line: &str) -> Result<Run, TestCaseError> {
        let case = tempfile::tempdir_in(self.root.path()).map_err(fail)?;
        let work = case.path().join("work");
        std::fs::create_dir(&work).map_err(fail)?;
        let log = case.path().join("log");
        let mut child = Command::new(&self.bash)
            .arg("-c")
            .arg(format!("{PRELUDE}{line}"))
            .env_clear()
            .env("PATH", self.root.path().join("bin"))
            .env("LOG", &log)
            .env("HOME", &work)
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(fail)?;
        // Reading stdout to its end waits for background commands too, as
        // they hold it open.
        let mut stdout = child.stdout.take().ok_or_else(|| fail("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = tx.send(stdout.read_to_end(&mut sink));
        });
        if rx.recv_timeout(Duration::from_secs(10)).is_err() {
            let _ = Command::new(&self.bash)
                .arg("-c")
                .arg(format!("kill -9 -- -{}", child.id()))
                .status();
            let _ = child.wait();
            return Err(fail(format!("{line:?} did not finish")));
        }
        child.wait().map_err(fail)?;
        Ok(Run {
            log: read_log(&log)?,
            files: std::fs::read_dir(&work)
                .map_err(fail)?
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
        })
    }
}

fn read_log(path: &Path) -> Result<Vec<Vec<String>>, TestCaseError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(fail(e)),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut fields = text.split('\0');
    let mut log = Vec::new();
    while let Some(count) = fields.next().filter(|c| !c.is_empty()) {
        let count: usize = count.parse().map_err(fail)?;
        log.push(fields.by_ref().take(count + 1).map(str::to_owned).collect());
    }
    Ok(log)
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn rules(command: &str, action: RuleAction) -> Rules {
    Rules::compile(&[RuleConfig {
        tool: "shell".into(),
        command: Some(command.into()),
        input: Default::default(),
        action,
    }])
    .unwrap()
}

/// What a checked line was: allowed, and whether it ran `git push`.
#[derive(Default, Clone, Copy)]
struct Seen {
    allowed: usize,
    pushed: usize,
}

fn check(oracle: &Oracle, line: &str) -> Result<Seen, TestCaseError> {
    let input = json!({ "command": line });
    let allowed = rules("git status", RuleAction::Allow)
        .evaluate("shell", &input, &Spellings::default())
        .is_some();
    let forbidden = rules("git push", RuleAction::Forbid)
        .evaluate("shell", &input, &Spellings::default())
        .is_some();
    let run = oracle.run(line)?;
    if allowed {
        prop_assert!(run.files.is_empty(), "{line:?} made {:?}", run.files);
        for argv in &run.log {
            prop_assert!(
                argv.starts_with(&["git".to_owned(), "status".to_owned()]),
                "{line:?} was allowed and ran {argv:?}"
            );
        }
        let parts = split_commands(line);
        if parts.iter().all(|p| !p.expands.contains(&true)) {
            for argv in &run.log {
                prop_assert!(
                    parts.iter().any(|p| p.words == *argv),
                    "{line:?} ran {argv:?}, not one of {parts:?}"
                );
            }
        }
    }
    let pushed = run.log.iter().find(|a| runs_git_push(a));
    if let Some(argv) = pushed {
        prop_assert!(forbidden, "{line:?} ran {argv:?} past a forbid rule");
    }
    Ok(Seen {
        allowed: usize::from(allowed),
        pushed: usize::from(pushed.is_some()),
    })
}

/// `git push`, past the global options the grammar can produce.
fn runs_git_push(argv: &[String]) -> bool {
    let Some((git, mut rest)) = argv.split_first() else {
        return false;
    };
    while let Some((option, after)) = rest.split_first() {
        rest = match option.as_str() {
            "-C" | "-c" => after.get(1..).unwrap_or_default(),
            "--no-pager" => after,
            _ => break,
        };
    }
    git == "git" && rest.first().is_some_and(|s| s == "push")
}

/// 200 random lines by default; `MECHA_ORACLE_CASES=20000` searches longer.
#[test]
fn bash_runs_only_what_the_rules_saw() {
    let _children = crate::process_tree::TEST_CHILDREN.blocking_lock();
    let Some(oracle) = Oracle::new() else {
        eprintln!("bash_runs_only_what_the_rules_saw: skipped, no bash on PATH");
        return;
    };
    let mut runner = TestRunner::new(Config {
        cases: std::env::var("MECHA_ORACLE_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(200),
        failure_persistence: None,
        ..Config::default()
    });
    let seen = std::cell::Cell::new(Seen::default());
    let result = runner.run(&line(), |line| {
        let one = check(&oracle, &line)?;
        let total = seen.get();
        seen.set(Seen {
            allowed: total.allowed + one.allowed,
            pushed: total.pushed + one.pushed,
        });
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let seen = seen.get();
    eprintln!(
        "bash oracle: of the lines tried, {} were allowed and {} ran `git push`",
        seen.allowed, seen.pushed
    );
}

/// Lines found by the property above, or close to them, kept as fixed
/// cases so they run even if the random search misses them.
#[test]
fn known_tricks_against_bash() {
    let _children = crate::process_tree::TEST_CHILDREN.blocking_lock();
    let Some(oracle) = Oracle::new() else {
        eprintln!("known_tricks_against_bash: skipped, no bash on PATH");
        return;
    };
    for line in [
        "git status $'\\'' ; echo PWNED > pwned.txt",
        "git status $'\\'' ; echo PWNED",
        "git status \"\\\"\" ; echo PWNED",
        "git status \\\n; echo PWNED",
        "git status #\\\necho PWNED",
        "git status \"\\x\"",
        "{git,push}",
        "&> git {git,push}",
        "eval 'git push'",
        "exec git push",
        "command git push",
        "if git push; then :; fi",
    ] {
        check(&oracle, line).unwrap();
    }
}
