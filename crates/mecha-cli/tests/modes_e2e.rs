//! Permission modes and typed calls outside the TUI: `--permission-mode`
//! and `permission_mode = "plan"` for `run`, and in line-mode `chat`
//! `/mode`, `/approve`, `!command` and `@path`, as the TUI has them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, stderr, stdout};
use mecha_testkit::{MockModel, MockReply};
use serde_json::Value;

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const READ_ONLY: [&str; 5] = ["compact", "fs_list", "fs_read", "http_fetch", "todo"];

#[tokio::test]
async fn run_starts_in_the_mode_the_flag_or_config_names() {
    let mut e = common::env();
    let mock = MockModel::start(vec![MockReply::text("a plan"), MockReply::text("b")]).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--permission-mode", "plan", "make a plan"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(offered(&mock.requests()[0].body), READ_ONLY);
    let sent = mock.requests()[0].body["messages"].to_string();
    assert!(sent.contains("[mecha: plan mode]"), "{sent}");
    e.extra_config = "[agent]\npermission_mode = \"plan\"\n".into();
    e.run(Api::Anthropic, &mock, "k", &["again"]).await;
    assert_eq!(offered(&mock.requests()[1].body), READ_ONLY);
    let bad = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--permission-mode", "yolo", "x"],
        )
        .await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("accept-edits"),
        "the error lists the modes: {}",
        stderr(&bad)
    );
}

#[tokio::test]
async fn chat_plans_with_mode_and_goes_on_with_every_tool_after_approve() {
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("1. do it"), MockReply::text("did it")]).await;
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &[],
            "/mode plan\nplan it\n/approve edits\n/mode\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&out));
    let planning = offered(&requests[0].body);
    assert!(planning.contains(&"fs_read".to_owned()), "{planning:?}");
    for writer in ["fs_write", "fs_edit", "shell"] {
        assert!(!planning.contains(&writer.to_owned()), "{planning:?}");
    }
    assert!(stderr(&out).contains("/approve carries the plan out"));
    let tools = offered(&requests[1].body);
    assert!(tools.contains(&"fs_write".to_owned()), "{tools:?}");
    let messages = requests[1].body["messages"].to_string();
    assert!(messages.contains("1. do it"), "{messages}");
    assert!(messages.contains("The plan is approved"), "{messages}");
    let approval = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert!(
        !approval.to_string().contains("[mecha: plan mode]"),
        "{approval}"
    );
    assert!(
        stdout(&out).contains("permission mode: accept-edits"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn chat_runs_a_bang_command_and_attaches_a_mention_as_the_tui_does() {
    let e = common::env();
    std::fs::write(e.ws.join("notes.txt"), "note-body\n").unwrap();
    std::fs::write(e.ws.parent().unwrap().join("outside.txt"), "outside-body\n").unwrap();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &[],
            "!echo shell-$((2+3))\nlook at @../outside.txt\nand @notes.txt\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("shell-5"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("@../outside.txt was not attached (outside the workspace)"),
        "{}",
        stderr(&out)
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "the refused prompt was sent");
    let sent = requests[0].body["messages"].to_string();
    assert!(sent.contains("shell-5"), "{sent}");
    assert!(sent.contains("note-body"), "{sent}");
    assert!(!sent.contains("outside-body"), "{sent}");
}

/// A `!command` with no prompt after it is kept in the session: left
/// there, it goes with the first prompt of the resumed chat, and
/// `sessions show` says it waits.
#[tokio::test]
async fn a_bang_command_left_without_a_prompt_goes_with_the_resumed_sessions_next() {
    let e = common::env();
    let mock = MockModel::start(vec![MockReply::text("seen")]).await;
    let left = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &[],
            "!echo kept-$((6*7))\n",
        )
        .await;
    assert!(left.status.success(), "{}", stderr(&left));
    assert!(stdout(&left).contains("kept-42"), "{}", stdout(&left));
    assert!(mock.requests().is_empty());
    let id = common::only_session(&e);
    let shown = e
        .mecha(Api::Anthropic, &mock, "k", "sessions", &["show", &id], "")
        .await;
    assert!(
        stdout(&shown).contains("waiting for the next prompt")
            && stdout(&shown).contains("kept-42"),
        "{}",
        stdout(&shown)
    );
    let resumed = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &["--continue"],
            "what did it print?\n",
        )
        .await;
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "{}", stderr(&resumed));
    let sent = requests[0].body["messages"].to_string();
    assert!(sent.contains("kept-42"), "{sent}");
    assert!(sent.contains("what did it print?"), "{sent}");
}

/// A hook is told the mode as it is when it runs: after `/mode`, the new
/// one, not the mode the chat started in.
#[tokio::test]
async fn hooks_are_told_the_mode_as_it_is_now() {
    let mut e = common::env();
    let hooks = e.home.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let record = hooks.join("record.sh");
    std::fs::write(
        &record,
        "#!/bin/sh\ncat >> \"$HOME/seen\"\necho >> \"$HOME/seen\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["755"])
        .arg(&record)
        .status()
        .unwrap();
    e.extra_config = "[[hook]]\nevent = \"user_prompt\"\ncommand = \"~/hooks/record.sh\"\n".into();
    let mock = MockModel::start(vec![MockReply::text("one"), MockReply::text("two")]).await;
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "chat",
            &[],
            "first\n/mode accept-edits\nsecond\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = std::fs::read_to_string(e.home.join("seen")).unwrap();
    let modes: Vec<String> = seen
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["permission_mode"].to_string())
        .collect();
    assert_eq!(modes, ["\"ask\"", "\"accept-edits\""], "{seen}");
}
