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

fn shell(cmd: &str) -> Value {
    json!({ "command": cmd })
}

use RuleAction::{Allow, Forbid, Prompt};

#[test]
fn allow_matches_by_executable_and_argument_prefix() {
    let r = rules(&[("shell", Some("git status"), Allow)]);
    assert_eq!(r.evaluate("shell", &shell("git status")), Some(Allow));
    assert_eq!(
        r.evaluate("shell", &shell("git status --short")),
        Some(Allow)
    );
    assert_eq!(r.evaluate("shell", &shell("git push")), None);
    assert_eq!(r.evaluate("shell", &shell("git")), None);
    assert_eq!(
        r.evaluate("fs_write", &shell("git status")),
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
        r.evaluate("shell", &shell("git status && git diff")),
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
        assert_eq!(r.evaluate("shell", &shell(attack)), None, "{attack}");
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
        assert_eq!(r.evaluate("shell", &shell(cmd)), Some(Forbid), "{cmd}");
    }
    assert_eq!(r.evaluate("shell", &shell("git pull")), Some(Allow));
}

#[test]
fn forbid_beats_prompt_beats_allow() {
    let r = rules(&[
        ("shell", Some("git"), Allow),
        ("shell", Some("git push"), Prompt),
        ("shell", Some("git push --force"), Forbid),
    ]);
    assert_eq!(r.evaluate("shell", &shell("git log")), Some(Allow));
    assert_eq!(r.evaluate("shell", &shell("git push")), Some(Prompt));
    assert_eq!(
        r.evaluate("shell", &shell("git push --force")),
        Some(Forbid)
    );
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
        r.evaluate("http_fetch", &json!({"url": "https://docs.rs/tokio"})),
        Some(Allow)
    );
    assert_eq!(
        r.evaluate("http_fetch", &json!({"url": "https://evil.example/"})),
        None
    );
    assert_eq!(r.evaluate("notes__delete", &json!({})), Some(Forbid));
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
        let verdict = r.evaluate("shell", &shell(&cmd));
        prop_assert_eq!(verdict == Some(Allow), all_safe, "{}", cmd);
    }
}
