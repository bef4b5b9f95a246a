//! The events around the loop, with real bash hooks: what each reads on
//! stdin, and what its answers mean.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{context, hook, script};
use mecha_hooks::{Decision, HookConfig, HookEvent, HookSet, OnError};
use serde_json::{Value, json};

fn at(event: HookEvent, mut config: HookConfig) -> HookConfig {
    config.event = event;
    config
}

/// A hook that saves its stdin as `seen.json` and then runs `body`.
fn recording(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    script(
        dir,
        "h",
        &format!("cat > {}/seen.json\n{body}", dir.display()),
    )
}

fn seen(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("seen.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn post_tool_sees_the_result_and_its_context_and_block_reason_are_notes() {
    let dir = tempfile::tempdir().unwrap();
    let s = recording(
        dir.path(),
        r#"echo '{"decision":"block","reason":"output has a token","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"rotate it"}}'"#,
    );
    let set = HookSet::compile(
        &[at(HookEvent::PostTool, hook(&s, Some("shell")))],
        dir.path(),
    )
    .unwrap();
    let response = json!({"content": "ghp_x", "is_error": false});
    let v = set
        .post_tool(
            &context(dir.path()),
            "shell",
            &json!({"command": "env"}),
            "t1",
            &response,
        )
        .await;
    assert_eq!(v.decision, Decision::Block("output has a token".into()));
    assert_eq!(v.contexts, ["rotate it"]);
    let got = seen(dir.path());
    assert_eq!(got["hook_event_name"], "PostToolUse");
    assert_eq!(got["tool_name"], "shell");
    assert_eq!(got["tool_input"]["command"], "env");
    assert_eq!(got["tool_response"]["content"], "ghp_x");
    assert_eq!(got["tool_use_id"], "t1");
    // The matcher holds for post_tool as for pre_tool.
    let other = set
        .post_tool(&context(dir.path()), "fs_read", &json!({}), "t2", &response)
        .await;
    assert!(other.each.is_empty());
}

#[tokio::test]
async fn user_prompt_sees_the_prompt_and_exit_2_blocks_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = recording(dir.path(), "echo 'prompt mentions a secret' >&2; exit 2");
    let set = HookSet::compile(&[at(HookEvent::UserPrompt, hook(&s, None))], dir.path()).unwrap();
    let v = set
        .user_prompt(&context(dir.path()), "my key is sk-1")
        .await;
    assert_eq!(
        v.decision,
        Decision::Block("prompt mentions a secret".into())
    );
    let got = seen(dir.path());
    assert_eq!(got["hook_event_name"], "UserPromptSubmit");
    assert_eq!(got["prompt"], "my key is sk-1");
    assert_eq!(got["session_id"], "sess-1");
    assert!(got.get("tool_name").is_none(), "{got}");
}

#[tokio::test]
async fn user_prompt_and_session_start_take_plain_text_as_context() {
    let dir = tempfile::tempdir().unwrap();
    let s = recording(dir.path(), "echo 'branch: main'");
    for event in [HookEvent::UserPrompt, HookEvent::SessionStart] {
        let set = HookSet::compile(&[at(event, hook(&s, None))], dir.path()).unwrap();
        let v = if event == HookEvent::UserPrompt {
            set.user_prompt(&context(dir.path()), "hi").await
        } else {
            set.session_start(&context(dir.path()), "resume").await
        };
        assert_eq!(v.decision, Decision::Pass, "{event}");
        assert_eq!(v.contexts, ["branch: main"], "{event}");
    }
    assert_eq!(seen(dir.path())["source"], "resume");
    assert_eq!(seen(dir.path())["hook_event_name"], "SessionStart");
}

#[tokio::test]
async fn plain_text_from_a_tool_hook_is_still_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "h", "cat >/dev/null; echo 'all good'");
    let set = HookSet::compile(&[hook(&s, None)], dir.path()).unwrap();
    let v = set
        .pre_tool(&context(dir.path()), "shell", &json!({}), "t1")
        .await;
    assert!(matches!(v.decision, Decision::Block(_)), "{:?}", v.decision);
    assert!(
        v.each[0].failure.as_deref().unwrap().contains("not JSON"),
        "{:?}",
        v.each[0].failure
    );
}

#[tokio::test]
async fn stop_sees_whether_it_already_sent_the_model_back_and_block_sends_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let s = recording(
        dir.path(),
        r#"echo '{"decision":"block","reason":"run the tests first"}'"#,
    );
    let set = HookSet::compile(&[at(HookEvent::Stop, hook(&s, None))], dir.path()).unwrap();
    let v = set.stop(&context(dir.path()), true, "all done").await;
    assert_eq!(v.decision, Decision::Block("run the tests first".into()));
    let got = seen(dir.path());
    assert_eq!(got["hook_event_name"], "Stop");
    assert_eq!(got["stop_hook_active"], true);
    assert_eq!(got["last_assistant_message"], "all done");
}

#[tokio::test]
async fn a_broken_hook_blocks_a_prompt_but_never_keeps_the_model_working() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "h", "cat >/dev/null; exit 7");
    let prompt =
        HookSet::compile(&[at(HookEvent::UserPrompt, hook(&s, None))], dir.path()).unwrap();
    let v = prompt.user_prompt(&context(dir.path()), "hi").await;
    let Decision::Block(reason) = &v.decision else {
        panic!("{:?}", v.decision);
    };
    assert!(reason.contains("so the prompt is blocked"), "{reason}");
    for event in [
        HookEvent::Stop,
        HookEvent::PostTool,
        HookEvent::SessionStart,
    ] {
        let set = HookSet::compile(&[at(event, hook(&s, None))], dir.path()).unwrap();
        let v = match event {
            HookEvent::Stop => set.stop(&context(dir.path()), false, "done").await,
            HookEvent::PostTool => {
                let response = json!({"content": "", "is_error": false});
                set.post_tool(&context(dir.path()), "shell", &json!({}), "t", &response)
                    .await
            }
            _ => set.session_start(&context(dir.path()), "startup").await,
        };
        assert_eq!(v.decision, Decision::Pass, "{event}");
        assert!(
            v.each[0].failure.as_deref().unwrap().contains("code 7"),
            "{event}"
        );
    }
    // on_error = "allow" lets the prompt through.
    let mut allowing = at(HookEvent::UserPrompt, hook(&s, None));
    allowing.on_error = Some(OnError::Allow);
    let set = HookSet::compile(&[allowing], dir.path()).unwrap();
    let v = set.user_prompt(&context(dir.path()), "hi").await;
    assert_eq!(v.decision, Decision::Pass);
}

#[tokio::test]
async fn a_permission_decision_means_nothing_outside_pre_tool() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(
        dir.path(),
        "h",
        r#"cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"deny"}}'"#,
    );
    let set = HookSet::compile(&[at(HookEvent::Stop, hook(&s, None))], dir.path()).unwrap();
    let v = set.stop(&context(dir.path()), false, "done").await;
    assert_eq!(v.decision, Decision::Pass);
}

#[tokio::test]
async fn a_script_busy_for_a_moment_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let s = script(dir.path(), "h", "cat >/dev/null; echo '{}'");
    // Open for writing, the script cannot be run (ETXTBSY) until closed.
    let writing = std::fs::OpenOptions::new().write(true).open(&s).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        drop(writing);
    });
    let set = HookSet::compile(&[hook(&s, None)], dir.path()).unwrap();
    let v = set
        .pre_tool(&context(dir.path()), "shell", &json!({}), "t1")
        .await;
    closer.join().unwrap();
    assert_eq!(v.decision, Decision::Pass, "{:?}", v.each[0].failure);
}
