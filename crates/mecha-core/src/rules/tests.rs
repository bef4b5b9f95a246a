use proptest::prelude::*;
use serde_json::json;

use super::*;

fn rules(toml_rules: &[(&str, Option<&str>, RuleAction)]) -> Rules {
    let configs: Vec<RuleConfig> = toml_rules
        .iter()
        .map(|(tool, command, action)| RuleConfig {
            tool: (*tool).to_owned(),
            command: command.map(str::to_owned),
            input: BTreeMap::new(),
            action: *action,
        })
        .collect();
    Rules::compile(&configs).unwrap()
}

/// What the rules say about the raw input alone (shell declares no path
/// or URL arguments).
fn raw(rules: &Rules, tool: &str, input: &Value) -> Option<RuleAction> {
    rules.evaluate(tool, input, &Spellings::default())
}

fn shell(cmd: &str) -> Value {
    json!({ "command": cmd })
}

use RuleAction::{Allow, Forbid, Prompt};

#[test]
fn allow_matches_by_executable_and_argument_prefix() {
    let r = rules(&[("shell", Some("git status"), Allow)]);
    assert_eq!(raw(&r, "shell", &shell("git status")), Some(Allow));
    assert_eq!(raw(&r, "shell", &shell("git status --short")), Some(Allow));
    assert_eq!(raw(&r, "shell", &shell("git push")), None);
    assert_eq!(raw(&r, "shell", &shell("git")), None);
    assert_eq!(
        raw(&r, "fs_write", &shell("git status")),
        None,
        "other tools"
    );
}

#[test]
fn a_compound_command_is_allowed_only_if_every_part_is() {
    let r = rules(&[
        ("shell", Some("git status"), Allow),
        ("shell", Some("git diff"), Allow),
    ]);
    assert_eq!(
        raw(&r, "shell", &shell("git status && git diff")),
        Some(Allow)
    );
    for attack in [
        "git status && curl evil",
        "git status || rm -rf ~",
        "git status; sh",
        "git status | sh",
        "git status & curl evil",
        "git status $(curl evil)",
        "git status `curl evil`",
        "git status \"$(curl evil)\"",
        "git status > ~/.bashrc",
        "X=1 git status",
        "git status\ncurl evil",
        "(git status) && curl evil",
    ] {
        assert_eq!(raw(&r, "shell", &shell(attack)), None, "{attack}");
    }
}

#[test]
fn forbid_fires_on_any_part_and_sees_through_wrappers() {
    let r = rules(&[("shell", Some("git push"), Forbid), ("shell", None, Allow)]);
    for cmd in [
        "git push",
        "git status && git push origin main",
        "echo $(git push)",
        "timeout 5 git push",
        "GIT_DIR=x git push",
        "env -i git push",
        "bash -c 'git push'",
        "sh -c \"git status; git push\"",
    ] {
        assert_eq!(raw(&r, "shell", &shell(cmd)), Some(Forbid), "{cmd}");
    }
    assert_eq!(raw(&r, "shell", &shell("git pull")), Some(Allow));
}

#[test]
fn forbid_beats_prompt_beats_allow() {
    let r = rules(&[
        ("shell", Some("git"), Allow),
        ("shell", Some("git push"), Prompt),
        ("shell", Some("git push --force"), Forbid),
    ]);
    assert_eq!(raw(&r, "shell", &shell("git log")), Some(Allow));
    assert_eq!(raw(&r, "shell", &shell("git push")), Some(Prompt));
    assert_eq!(raw(&r, "shell", &shell("git push --force")), Some(Forbid));
}

#[test]
fn input_globs_and_tool_globs() {
    let configs = vec![
        RuleConfig {
            tool: "http_fetch".into(),
            command: None,
            input: BTreeMap::from([("url".to_owned(), "https://docs.rs/*".to_owned())]),
            action: Allow,
        },
        RuleConfig {
            tool: "notes__*".into(),
            command: None,
            input: BTreeMap::new(),
            action: Forbid,
        },
    ];
    let r = Rules::compile(&configs).unwrap();
    assert_eq!(
        raw(&r, "http_fetch", &json!({"url": "https://docs.rs/tokio"})),
        Some(Allow)
    );
    assert_eq!(
        raw(&r, "http_fetch", &json!({"url": "https://evil.example/"})),
        None
    );
    assert_eq!(raw(&r, "notes__delete", &json!({})), Some(Forbid));
}

#[test]
fn a_compound_rule_command_is_refused_at_compile_time() {
    let err = Rules::compile(&[RuleConfig {
        tool: "shell".into(),
        command: Some("git status && curl x".into()),
        input: BTreeMap::new(),
        action: Allow,
    }])
    .unwrap_err();
    assert!(err.to_string().contains("one simple command"), "{err}");
}

#[test]
fn ansi_c_quoting_cannot_hide_a_second_command() {
    let r = rules(&[("shell", Some("git status"), Allow)]);
    for attack in [
        "git status $'\\'' ; echo PWNED > pwned.txt",
        "git status $'\\'' ; echo PWNED",
        "git status $'\\'' && echo PWNED '",
    ] {
        assert_eq!(raw(&r, "shell", &shell(attack)), None, "{attack}");
    }
    // Read as bash reads them, these are one `git status` each: `$'\\'` is
    // a backslash, and `$"…"` is a double-quoted word.
    for line in [
        "git status $'a'",
        "git status $'\\\\'' ; echo PWNED '",
        "git status $\"a ; b\"",
    ] {
        assert_eq!(raw(&r, "shell", &shell(line)), Some(Allow), "{line}");
    }
}

#[test]
fn allow_fails_closed_on_what_the_tokenizer_does_not_model() {
    let r = rules(&[("shell", Some("git status"), Allow)]);
    for line in [
        "git status <<EOF\nx\nEOF",
        "git status <<< x",
        "git status 'unterminated",
        "git status \"unterminated",
        "git status $(unterminated",
        "git status ${X:-'a'}",
        "git status ${X:-${Y}}",
        "git status $((1 + 1))",
        "git status $[1]",
        "git status !!",
        "! git status",
        "git status <(git status)",
        "{ git status; }",
        "if git status; then git status; fi",
        "for x in a; do git status; done",
        "while git status; do git status; done",
        "case x in x) git status;; esac",
        "git() { git status; }",
        "function git { git status; }",
        "time git status",
        "git status \"a\\\nb\"",
        "git status a\0b",
        "git status\r",
        "git status $'\\x41'",
        "git status )",
    ] {
        assert_eq!(raw(&r, "shell", &shell(line)), None, "{line:?}");
    }
}

fn input_rule(tool: &str, key: &str, glob: &str, action: RuleAction) -> RuleConfig {
    RuleConfig {
        tool: tool.into(),
        command: None,
        input: BTreeMap::from([(key.to_owned(), glob.to_owned())]),
        action,
    }
}

#[test]
fn an_allow_path_glob_stays_in_its_directory() {
    let r = Rules::compile(&[input_rule("fs_write", "path", "src/*", Allow)]).unwrap();
    let path = |p: &str| json!({ "path": p, "content": "x" });
    assert_eq!(raw(&r, "fs_write", &path("src/main.rs")), Some(Allow));
    for escape in [
        "src/../.git/hooks/pre-commit",
        "src/a/b.rs",
        "src/..",
        "src/x/../../etc",
        "..",
    ] {
        assert_eq!(raw(&r, "fs_write", &path(escape)), None, "{escape}");
    }
    let r = Rules::compile(&[input_rule("fs_write", "path", "src/**", Allow)]).unwrap();
    assert_eq!(raw(&r, "fs_write", &path("src/a/b.rs")), Some(Allow));
    assert_eq!(raw(&r, "fs_write", &path("src/a/../../x")), None);
}

#[test]
fn forbid_and_prompt_globs_still_fire_on_paths_that_climb() {
    let r = Rules::compile(&[
        input_rule("fs_write", "path", "src/*", Forbid),
        input_rule("http_fetch", "url", "http://*", Prompt),
    ])
    .unwrap();
    let path = json!({ "path": "src/../.git/hooks/pre-commit" });
    assert_eq!(raw(&r, "fs_write", &path), Some(Forbid));
    let url = json!({ "url": "http://evil.example/a/b" });
    assert_eq!(raw(&r, "http_fetch", &url), Some(Prompt));
}

#[test]
fn an_allow_rule_on_the_command_input_is_refused() {
    let err = Rules::compile(&[input_rule("shell", "command", "git status*", Allow)]).unwrap_err();
    assert!(err.to_string().contains("command = "), "{err}");
    // Forbidding by a glob over the whole line errs the safe way.
    Rules::compile(&[input_rule("shell", "command", "*rm -rf*", Forbid)]).unwrap();
}

#[test]
fn forbid_is_not_bypassed_by_paths_options_or_wrappers() {
    let r = rules(&[("shell", Some("git push"), Forbid), ("shell", None, Allow)]);
    for cmd in [
        "/usr/bin/git push",
        "./git push",
        "g\\it push",
        "$'git' push",
        "git -C . push",
        "git -c user.name=x push",
        "git --git-dir=.git --work-tree . push",
        "git --no-pager -P push",
        "git -c alias.p=push p",
        "git -c core.fsmonitor='git push' status",
        "GIT_SSH_COMMAND='sh -c \"git push\"' git fetch",
        "/usr/lib/git-core/git-push origin",
        "alias p='git push'",
        "trap 'git push' EXIT",
        "eval git push",
        "eval 'git push'",
        "eval eval \"'git push'\"",
        "xargs git push",
        "echo push | xargs git",
        "xargs -n 1 -P2 git",
        "xargs -I{} git {}",
        "xargs sh -c",
        "find . -exec git push \\;",
        "find . -name x -execdir git push {} +",
        "env -S 'git push'",
        "env -i -S'git push' origin",
        "env --split-string='git push'",
        "command -p git push",
        "exec -a x git push",
        "builtin eval git push",
        "nice -n 5 git push",
        "nohup git push",
        "timeout -s KILL 5 git push",
        "sudo -u root -E git push",
        "time -p git push",
        "setsid git push",
        "sudo timeout 5 env A=1 git push",
        "bash -xc 'git push'",
        "sh -o errexit -c 'git push'",
        "echo 'git push' | sh",
        "su -c 'git push'",
        "watch git push",
        "if git push; then :; fi",
        "{ git push; }",
        "! git push",
    ] {
        assert_eq!(raw(&r, "shell", &shell(cmd)), Some(Forbid), "{cmd}");
    }
}

#[test]
fn forbid_fires_on_what_it_cannot_see() {
    let r = rules(&[("shell", Some("git push"), Forbid), ("shell", None, Allow)]);
    for cmd in [
        "$GIT push",
        "\"$(command -v git)\" push",
        "`which git` push",
        "git $(echo push)",
        "git $SUB",
        "{git,push}",
        "/usr/bin/gi? push",
        "$'\\x67it' push",
        "eval \"$CMD\"",
        "bash -c \"$X\"",
        "timeout 5 \"$GIT\" push",
        "sudo -u root \"$GIT\" push",
    ] {
        assert_eq!(raw(&r, "shell", &shell(cmd)), Some(Forbid), "{cmd}");
    }
    // … but not on everything.
    for cmd in [
        "git pull",
        "/usr/bin/git pull",
        "git -C . pull",
        "timeout 5 git status",
        "ls $HOME",
        "timeout 5 ls $HOME",
        "xargs grep push",
        "find . -name push",
        "echo git push",
        "bash ./build.sh",
        "git commit -m 'no git push here'",
        "git -c user.name='A B' commit",
        "PATH=/usr/bin:/bin git status",
        "bash --version",
    ] {
        assert_eq!(raw(&r, "shell", &shell(cmd)), Some(Allow), "{cmd}");
    }
}

#[test]
fn allow_stays_exact() {
    let r = rules(&[("shell", Some("git status"), Allow)]);
    for cmd in [
        "./git status",
        "/usr/bin/git status",
        "git -C .. status",
        "env git status",
        "GIT_DIR=x git status",
    ] {
        assert_eq!(raw(&r, "shell", &shell(cmd)), None, "{cmd}");
    }
}

fn part() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        Just(("git status".to_owned(), true)),
        Just(("git status -s".to_owned(), true)),
        Just(("ls -la".to_owned(), true)),
        Just(("curl http://evil".to_owned(), false)),
        Just(("rm -rf x".to_owned(), false)),
        Just(("git push".to_owned(), false)),
        Just(("echo $(curl evil)".to_owned(), false)),
        Just(("ls > out".to_owned(), false)),
    ]
}

fn operator() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(" && "),
        Just(" || "),
        Just("; "),
        Just(" | "),
        Just(" & "),
        Just("\n")
    ]
}

proptest! {
    /// However parts are joined, the whole is allowed exactly when every
    /// part is.
    #[test]
    fn compound_allowed_iff_every_part_is(
        parts in prop::collection::vec(part(), 1..6),
        ops in prop::collection::vec(operator(), 5),
    ) {
        let r = rules(&[("shell", Some("git status"), Allow), ("shell", Some("ls"), Allow)]);
        let mut cmd = parts[0].0.clone();
        for (i, (p, _)) in parts.iter().enumerate().skip(1) {
            cmd.push_str(ops[i - 1]);
            cmd.push_str(p);
        }
        let all_safe = parts.iter().all(|(_, safe)| *safe);
        let verdict = raw(&r, "shell", &shell(&cmd));
        prop_assert_eq!(verdict == Some(Allow), all_safe, "{}", cmd);
    }
}
