//! Bad `[[hook]]` config: each an error naming the hook and the fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{hook, script};
use mecha_hooks::{HookConfig, HookSet};

#[derive(serde::Deserialize)]
struct File {
    hook: Vec<HookConfig>,
}

fn parse(text: &str) -> Result<Vec<HookConfig>, String> {
    toml::from_str::<File>(text)
        .map(|f| f.hook)
        .map_err(|e| e.to_string())
}

#[test]
fn an_unknown_event_is_refused_listing_the_events() {
    let err = parse("[[hook]]\nevent = \"before_tool\"\ncommand = \"x\"\n").unwrap_err();
    assert!(err.contains("before_tool"), "{err}");
    assert!(
        err.contains("pre_tool") && err.contains("session_start"),
        "{err}"
    );
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn an_unknown_key_is_refused_naming_it() {
    let err = parse("[[hook]]\nevent = \"pre_tool\"\ncommand = \"x\"\ntimeout = 5\n").unwrap_err();
    assert!(err.contains("unknown field `timeout`"), "{err}");
    assert!(err.contains("timeout_s"), "{err}");
}

#[test]
fn a_full_hook_parses() {
    let hooks = parse(
        "[[hook]]\nevent = \"pre_tool\"\nmatcher = \"shell\"\ncommand = \"x\"\ntimeout_s = 5\n\
         on_error = \"allow\"\n\n[[hook]]\nevent = \"stop\"\ncommand = \"y\"\n",
    )
    .unwrap();
    assert_eq!(hooks.len(), 2);
}

#[test]
fn a_matcher_that_is_not_a_regex_names_the_hook_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "exit 0");
    let good = hook(&s, None);
    let bad = hook(&s, Some("shell|(fs_"));
    let err = HookSet::compile(&[good, bad], dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[[hook]] #2"), "{err}");
    assert!(err.contains(&s.display().to_string()), "{err}");
    assert!(err.contains("shell|(fs_"), "{err}");
    assert!(err.contains("\"*\" for every tool"), "{err}");
}

#[test]
fn every_broken_hook_is_named_not_only_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "exit 0");
    let gone = hook(&dir.path().join("gone.sh"), None);
    let good = hook(&s, None);
    let bad = hook(&s, Some("(("));
    let err = HookSet::compile(&[gone, good, bad], dir.path()).unwrap_err();
    assert_eq!(err.errors.len(), 2, "{err}");
    // The good one is still there, to be shown.
    assert_eq!(err.usable.describe().len(), 1);
    let text = err.to_string();
    assert!(
        text.contains("[[hook]] #1") && text.contains("gone.sh"),
        "{text}"
    );
    assert!(text.contains("[[hook]] #3"), "{text}");
    assert!(
        !text.contains("[[hook]] #2"),
        "the good one is not blamed: {text}"
    );
}

#[test]
fn a_missing_command_names_the_hook_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let err = HookSet::compile(&[hook(&dir.path().join("nope.sh"), None)], dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("[[hook]] #1"), "{err}");
    assert!(err.contains("nope.sh"), "{err}");
    assert!(err.contains("there is no file"), "{err}");
    assert!(err.contains("name of a program on PATH"), "{err}");
    let mut bare = hook(&dir.path().join("x"), None);
    bare.command = "no-such-program-mecha-test".to_owned();
    let err = HookSet::compile(&[bare], dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no program `no-such-program-mecha-test` is on PATH"),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_executable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.sh");
    std::fs::write(&path, "exit 0\n").unwrap();
    let err = HookSet::compile(&[hook(&path, None)], dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("chmod +x"), "{err}");
}

#[test]
fn relative_commands_are_relative_to_the_config_dir_and_bare_names_use_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("hooks")).unwrap();
    script(&dir.path().join("hooks"), "g.sh", "exit 0");
    let mut relative = hook(dir.path(), None);
    relative.command = "hooks/g.sh".to_owned();
    let mut bare = hook(dir.path(), None);
    bare.command = "true".to_owned();
    let set = HookSet::compile(&[relative.clone(), bare], dir.path()).unwrap();
    let lines = set.describe();
    assert_eq!(lines[0].command, "hooks/g.sh");
    assert_eq!(lines[0].matcher, "*");
    assert_eq!(lines[0].timeout_s, 60);
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(HookSet::compile(&[relative], elsewhere.path()).is_err());
}

#[test]
fn a_matcher_on_an_event_without_a_tool_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "exit 0");
    let mut config = hook(&s, Some("shell"));
    config.event = mecha_hooks::HookEvent::Stop;
    let err = HookSet::compile(&[config], dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("remove the matcher"), "{err}");
}

#[test]
fn a_zero_timeout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "exit 0");
    let mut config = hook(&s, None);
    config.timeout_s = Some(0);
    let err = HookSet::compile(&[config], dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("timeout_s must be at least 1"), "{err}");
}
