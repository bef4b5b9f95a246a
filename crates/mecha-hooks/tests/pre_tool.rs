//! The pre_tool contract, with real bash hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{allowing, hook, pre_tool, script};
use mecha_hooks::{Decision, HookSet};

fn blocked(decision: &Decision) -> &str {
    match decision {
        Decision::Block(reason) => reason,
        other => panic!("expected a block, got {other:?}"),
    }
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_as_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        "g",
        "cat >/dev/null; echo '  no rm -rf here  ' >&2; exit 2",
    );
    let v = pre_tool(&[hook(&s, None)], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Block("no rm -rf here".to_owned()));
}

#[tokio::test]
async fn json_deny_blocks_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        "g",
        r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on main"}}'"#,
    );
    let v = pre_tool(&[hook(&s, None)], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Block("not on main".to_owned()));
}

#[tokio::test]
async fn top_level_decision_block_blocks_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        "g",
        r#"echo '{"decision":"block","reason":"old style"}'"#,
    );
    let v = pre_tool(&[hook(&s, None)], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Block("old style".to_owned()));
}

#[tokio::test]
async fn ask_wants_a_person_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        "g",
        r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touches prod"}}'"#,
    );
    let v = pre_tool(&[hook(&s, None)], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Ask("touches prod".to_owned()));
}

#[tokio::test]
async fn allow_and_empty_output_are_no_objection_and_messages_are_collected() {
    let dir = tempfile::tempdir().unwrap();
    let allow = script(
        dir.path(),
        "allow",
        r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"},"systemMessage":"checked"}'"#,
    );
    let empty = script(dir.path(), "empty", "exit 0");
    let v = pre_tool(
        &[hook(&allow, None), hook(&empty, None)],
        dir.path(),
        "shell",
    )
    .await;
    assert_eq!(v.decision, Decision::Pass);
    assert_eq!(v.system_messages, vec!["checked".to_owned()]);
    assert_eq!(v.each.len(), 2);
    assert!(v.each.iter().all(|r| r.failure.is_none()));
}

/// Each broken hook blocks by default, naming itself, what went wrong and
/// the way out; under `on_error = "allow"` it passes, the failure kept.
async fn breaks(body: &str, timeout_s: Option<u64>, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "broken", body);
    let mut config = hook(&s, None);
    config.timeout_s = timeout_s;
    let v = pre_tool(std::slice::from_ref(&config), dir.path(), "shell").await;
    let reason = blocked(&v.decision);
    assert!(reason.contains(&s.display().to_string()), "{reason}");
    assert!(reason.contains(what), "{reason}");
    assert!(reason.contains("on_error = \"allow\""), "{reason}");
    let v = pre_tool(&[allowing(config)], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Pass);
    assert!(v.each[0].failure.as_deref().unwrap().contains(what));
}

#[tokio::test]
async fn exit_1_follows_on_error() {
    breaks("echo oops >&2; exit 1", None, "exited with code 1").await;
}

#[tokio::test]
async fn a_killed_hook_follows_on_error() {
    breaks("kill -9 $$", None, "killed by signal 9").await;
}

#[tokio::test]
async fn a_hanging_hook_times_out_and_follows_on_error() {
    let started = Instant::now();
    breaks("sleep 30", Some(1), "timed out after 1 s").await;
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn garbage_on_stdout_follows_on_error() {
    breaks("echo 'ok sure, go ahead'", None, "not JSON").await;
}

#[tokio::test]
async fn an_unknown_permission_decision_follows_on_error() {
    breaks(
        r#"echo '{"hookSpecificOutput":{"permissionDecision":"yes"}}'"#,
        None,
        "none of allow, deny, ask",
    )
    .await;
}

#[tokio::test]
async fn a_flood_of_output_is_bounded_and_does_not_hang() {
    let started = Instant::now();
    breaks(
        "head -c 20000000 /dev/zero | tr '\\0' x",
        Some(20),
        "not JSON",
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn the_timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let body = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let s = script(dir.path(), "g", &body);
    let mut config = hook(&s, None);
    config.timeout_s = Some(1);
    let v = pre_tool(&[config], dir.path(), "shell").await;
    blocked(&v.decision);
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(5);
    // Gone, or a zombie waiting for init: either way not running.
    while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            Instant::now() < deadline,
            "the hook's background sleep survived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_matcher_is_an_anchored_regex() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "exit 2");
    let set = HookSet::compile(&[hook(&s, Some("shell|fs_.*"))], dir.path()).unwrap();
    let ctx = common::context(dir.path());
    let input = serde_json::json!({});
    for (tool, runs) in [
        ("shell", true),
        ("fs_read", true),
        ("fs_reader2", true),
        ("myshell", false),
        ("shell2", false),
        ("http_fetch", false),
    ] {
        let v = set.pre_tool(&ctx, tool, &input, "t").await;
        assert_eq!(v.each.len(), usize::from(runs), "{tool}");
    }
    let set = HookSet::compile(&[hook(&s, Some("fs_read"))], dir.path()).unwrap();
    assert!(
        set.pre_tool(&ctx, "fs_reader2", &input, "t")
            .await
            .each
            .is_empty()
    );
    for everything in [None, Some(""), Some("*")] {
        let set = HookSet::compile(&[hook(&s, everything)], dir.path()).unwrap();
        let v = set.pre_tool(&ctx, "anything_at_all", &input, "t").await;
        assert_eq!(v.each.len(), 1, "{everything:?}");
    }
}

#[tokio::test]
async fn matching_hooks_run_concurrently_and_a_refusal_wins() {
    let dir = tempfile::tempdir().unwrap();
    let pass = script(dir.path(), "pass", "sleep 0.5");
    let ask = script(
        dir.path(),
        "ask",
        r#"sleep 0.5; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"hm"}}'"#,
    );
    let deny = script(dir.path(), "deny", "sleep 0.5; echo nope >&2; exit 2");
    let started = Instant::now();
    let v = pre_tool(
        &[hook(&pass, None), hook(&ask, None), hook(&deny, None)],
        dir.path(),
        "shell",
    )
    .await;
    let took = started.elapsed();
    assert_eq!(v.decision, Decision::Block("nope".to_owned()));
    assert!(took < Duration::from_millis(1200), "took {took:?}");
    assert_eq!(v.each.len(), 3);
    assert!(
        v.each
            .iter()
            .all(|r| r.elapsed >= Duration::from_millis(500))
    );
    let v = pre_tool(&[hook(&pass, None), hook(&ask, None)], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Ask("hm".to_owned()));
}

#[tokio::test]
async fn stdin_carries_every_field_and_the_hook_runs_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let s = script(dir.path(), "g", "cat > stdin.json; pwd > pwd.txt");
    let set = HookSet::compile(&[hook(&s, None)], dir.path()).unwrap();
    let v = set
        .pre_tool(
            &common::context(&work),
            "shell",
            &serde_json::json!({"command": "rm -rf /"}),
            "toolu_9",
        )
        .await;
    assert_eq!(v.decision, Decision::Pass);
    let raw = std::fs::read_to_string(work.join("stdin.json")).unwrap();
    // Claude Code's order, for scripts that match on the text.
    let at = |key: &str| raw.find(&format!("\"{key}\":")).unwrap();
    assert!(
        at("session_id") < at("cwd") && at("cwd") < at("hook_event_name"),
        "{raw}"
    );
    assert!(
        at("hook_event_name") < at("tool_name") && at("tool_name") < at("tool_input"),
        "{raw}"
    );
    let stdin: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        stdin,
        serde_json::json!({
            "session_id": "sess-1",
            "cwd": work,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "shell",
            "tool_input": {"command": "rm -rf /"},
            "tool_use_id": "toolu_9",
        })
    );
    let pwd = std::fs::read_to_string(work.join("pwd.txt")).unwrap();
    assert_eq!(
        std::path::Path::new(pwd.trim()).canonicalize().unwrap(),
        work.canonicalize().unwrap()
    );
}

#[tokio::test]
async fn other_events_hooks_do_not_run_at_pre_tool() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "g", "exit 2");
    let mut config = hook(&s, None);
    config.event = mecha_hooks::HookEvent::PostTool;
    let v = pre_tool(&[config], dir.path(), "shell").await;
    assert_eq!(v.decision, Decision::Pass);
    assert!(v.each.is_empty());
}
