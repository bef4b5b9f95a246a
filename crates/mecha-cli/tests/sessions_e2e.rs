//! `mecha sessions list` and `show` through the real binary, over session
//! files written through mecha-session's own writer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, stderr, stdout};
use mecha_core::{Journal, Message, Record, Usage};
use mecha_session::{NewSession, Store};
use mecha_testkit::MockModel;
use serde_json::Value;

/// A session in `e`'s MECHA_HOME whose first prompt is `prompt`, with
/// `turns` turns; returns its id.
fn session(e: &Env, prompt: &str, turns: u32) -> String {
    let store = Store::new(e.home.join("sessions"));
    let writer = store
        .create(NewSession {
            workspace: &e.ws,
            model: "test-model",
            command: "run",
            parent: None,
        })
        .unwrap();
    writer.append(&Record::Message {
        message: Message::user_text(prompt),
        external: vec![],
    });
    for turn in 1..=turns {
        writer.append(&Record::Turn {
            turn,
            usage: Usage::default(),
        });
    }
    writer.sync();
    // Sessions a moment apart, so "newest first" has an order to check.
    std::thread::sleep(std::time::Duration::from_millis(5));
    writer.id().to_owned()
}

async fn sessions(e: &Env, args: &[&str]) -> std::process::Output {
    let mock = MockModel::start(vec![]).await;
    e.mecha(Api::OpenAi, &mock, "k", "sessions", args, "").await
}

const HOSTILE: &str = "\x1b]0;owned\x07\x1b[2Jlooks innocent\u{202e}txt.exe";

#[tokio::test]
async fn the_list_is_newest_first_fitted_to_the_width_and_escaped() {
    let mut e = env();
    let old = session(&e, "first task\nwith two lines", 1);
    let hostile = session(&e, HOSTILE, 2);
    let long = session(&e, &"a very long prompt ".repeat(20), 3);
    std::fs::write(e.home.join("sessions").join("broken.jsonl"), "garbage\n").unwrap();
    for width in [70, 160] {
        e.extra_env = vec![("COLUMNS".into(), width.to_string())];
        let out = sessions(&e, &["list"]).await;
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            !out.stdout.contains(&0x1b),
            "a raw escape reached the terminal"
        );
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        for (line, id) in lines
            .iter()
            .zip([&long, &hostile, &old, &"broken".to_owned()])
        {
            assert!(line.starts_with(id.as_str()), "{line} is not {id}");
            assert!(
                line.chars().count() <= width,
                "{} chars: {line}",
                line.chars().count()
            );
        }
        assert!(
            lines[0].contains("  3 turns  ") && lines[0].ends_with('…'),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains(r"\u{1b}]0;"), "{}", lines[1]);
        if width == 160 {
            let escaped = r"\u{1b}]0;owned\u{7}\u{1b}[2Jlooks innocent\u{202e}";
            assert!(lines[1].contains(escaped), "{}", lines[1]);
            assert!(
                lines[2].contains("first task with two lines"),
                "{}",
                lines[2]
            );
            let ws = e.ws.to_str().unwrap();
            assert!(lines[2].contains(ws), "{}", lines[2]);
            assert!(
                lines[3].contains("[cannot be read:") && lines[3].contains("line 1"),
                "{}",
                lines[3]
            );
        }
    }

    // Without COLUMNS and without a terminal: 100.
    e.extra_env.clear();
    let out = sessions(&e, &["list"]).await;
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert_eq!(first.chars().count(), 100, "{first}");
}

#[tokio::test]
async fn the_json_list_is_one_object_a_line() {
    let e = env();
    let old = session(&e, "first", 1);
    let new = session(&e, HOSTILE, 2);
    let out = sessions(&e, &["list", "--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!out.stdout.contains(&0x1b));
    let rows: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["id"], new.as_str());
    assert_eq!(rows[0]["first_prompt"], HOSTILE);
    assert_eq!(rows[0]["turns"], 2);
    assert_eq!(rows[1]["id"], old.as_str());
    assert_eq!(rows[1]["workspace"], e.ws.to_str().unwrap());
    assert!(rows[1]["problem"].is_null());
    assert!(rows[1]["started"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn show_prints_the_escaped_transcript() {
    let e = env();
    let id = session(&e, HOSTILE, 1);
    // A unique start of the id is enough.
    let out = sessions(&e, &["show", &id[..id.len() - 2]]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !out.stdout.contains(&0x1b),
        "a raw escape reached the terminal"
    );
    let text = stdout(&out);
    assert!(text.starts_with(&format!("session {id} ")), "{text}");
    assert!(text.contains(r"user: \u{1b}]0;owned\u{7}"), "{text}");
    assert!(text.contains("--- turn 1 "), "{text}");
}

#[tokio::test]
async fn an_unknown_session_is_a_usage_error_naming_the_list() {
    let e = env();
    session(&e, "one", 1);
    let out = sessions(&e, &["show", "nope"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no session `nope`") && err.contains("mecha sessions list"),
        "{err}"
    );
    assert!(stdout(&out).is_empty());
}

#[tokio::test]
async fn show_reads_past_a_line_something_else_broke_and_says_so() {
    let e = env();
    let id = session(&e, "before the damage", 2);
    let path = e.home.join("sessions").join(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "\x1b[2J not a record";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = sessions(&e, &["show", &id]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("user: before the damage"), "{shown}");
    assert!(shown.contains("--- turn 2 "), "{shown}");
    let err = stderr(&out);
    assert!(err.contains("line 3: skipped"), "{err}");
    assert!(!out.stderr.contains(&0x1b), "{err}");
}

/// `mecha sessions` with no command is the list, `--json` included.
#[tokio::test]
async fn sessions_alone_lists() {
    let e = env();
    session(&e, "first", 1);
    session(&e, "second", 2);
    for (alone, listed) in [(&[][..], &["list"][..]), (&["--json"], &["list", "--json"])] {
        let out = sessions(&e, alone).await;
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), stdout(&sessions(&e, listed).await));
        assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
    }
}

/// A real run's transcript: each turn's marker comes before the answer
/// and the calls it made, and their results after it.
#[tokio::test]
async fn show_puts_each_turn_before_its_calls() {
    let e = env();
    std::fs::write(e.ws.join("a.txt"), "hi\n").unwrap();
    let mock = MockModel::start(vec![
        common::tool_turn(&[("fs_read", serde_json::json!({"path": "a.txt"}))]),
        mecha_testkit::MockReply::text("It says hi."),
    ])
    .await;
    let out = e
        .run(Api::OpenAi, &mock, "k", &["--yes", "read a.txt"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&sessions(&e, &["list", "--json"]).await);
    let row: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    let text = stdout(&sessions(&e, &["show", row["id"].as_str().unwrap()]).await);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in {text}"))
    };
    assert!(at("--- turn 1 ") < at("assistant calls fs_read"), "{text}");
    assert!(
        at("assistant calls fs_read") < at("result of fs_read"),
        "{text}"
    );
    assert!(at("result of fs_read") < at("--- turn 2 "), "{text}");
    assert!(at("--- turn 2 ") < at("assistant: It says hi."), "{text}");
}
