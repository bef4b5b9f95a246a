//! A run delegating to a `[[subagent]]` through the real binary, with a
//! mock model that tells parent and child apart by their tool lists: the
//! answer comes back as the result and nothing else of the child's
//! conversation; the user sees the child at work; the child's allowlist
//! holds; its conversation is stored beside the parent's, linked, and a
//! child of an armed parent resumed on its own is still armed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

const RESEARCH: &str = "[[subagent]]\nname = \"research\"\ndescription = \"Read the notes and \
answer a question about them.\"\ntools = [\"fs_read\"]\n";

fn research_env() -> Env {
    let mut e = env();
    std::fs::write(e.ws.join("notes.txt"), "the meeting moved to Tuesday").unwrap();
    e.extra_config = RESEARCH.into();
    e
}

/// The child's requests offer only `fs_read`; everything else is the
/// parent's.
async fn delegating_mock(child: Vec<MockReply>) -> MockModel {
    let mock = MockModel::start(vec![
        tool_turn(&[("research", json!({"task": "When is the meeting?"}))]),
        MockReply::text("It is on Tuesday."),
    ])
    .await;
    mock.route(&["fs_read"], child);
    mock
}

fn bodies(mock: &MockModel) -> Vec<Value> {
    mock.requests().into_iter().map(|r| r.body).collect()
}

fn offers(body: &Value, tool: &str) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == tool))
}

#[tokio::test]
async fn a_run_delegates_and_gets_back_the_answer_alone() {
    let e = research_env();
    let mock = delegating_mock(vec![
        tool_turn(&[("fs_read", json!({"path": "notes.txt"}))]),
        MockReply::text("Tuesday, says notes.txt."),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--yes", "when is the meeting?"],
        )
        .await;
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(stdout(&out), "It is on Tuesday.\n");
    assert!(
        err.contains("research: → fs_read"),
        "the child's call is shown: {err}"
    );

    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 4, "parent, child, child, parent");
    assert!(offers(&bodies[0], "research") && !offers(&bodies[1], "research"));
    let child_system = bodies[1]["system"].to_string();
    assert!(child_system.contains("subagent"), "{child_system}");
    assert_eq!(
        bodies[1]["messages"][0]["content"][0]["text"],
        "When is the meeting?"
    );
    let last = bodies[3]["messages"].to_string();
    assert!(last.contains("Tuesday, says notes.txt."), "{last}");
    assert!(
        !last.contains("the meeting moved to Tuesday"),
        "the file the child read stayed in the child's conversation: {last}"
    );

    // The child's conversation is kept beside the parent's, linked to it.
    let out = e
        .mecha(
            Api::Anthropic,
            &mock,
            "k",
            "sessions",
            &["list", "--json"],
            "",
        )
        .await;
    let listed: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    let child = listed.iter().find(|l| l["parent"].is_string()).unwrap();
    let parent = listed.iter().find(|l| l["parent"].is_null()).unwrap();
    assert_eq!(child["parent"], parent["id"]);
    assert_eq!(child["first_prompt"], "When is the meeting?");

    // `--continue` goes on with the run, not with its subagent's part.
    let mock = MockModel::start(vec![MockReply::text("still Tuesday")]).await;
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--continue", "sure?"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let first = mock.requests()[0].body["messages"][0].to_string();
    assert!(first.contains("when is the meeting?"), "{first}");
}

#[tokio::test]
async fn the_childs_allowlist_holds_through_the_binary() {
    let e = research_env();
    let mock = delegating_mock(vec![
        tool_turn(&[("fs_write", json!({"path": "planted.txt", "content": "x"}))]),
        MockReply::text("could not write"),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--yes", "--output-format", "stream-json", "go"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !e.ws.join("planted.txt").exists(),
        "fs_write is not the child's"
    );
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let progress: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_progress" && e["name"] == "research")
        .collect();
    assert!(
        progress
            .iter()
            .any(|p| p["message"].as_str().unwrap().contains("fs_write refused")),
        "{progress:?}"
    );
}

/// A child works in the same project, so it gets the project's
/// instructions too, after its own opening words.
#[tokio::test]
async fn a_child_gets_the_projects_instructions() {
    let e = research_env();
    std::fs::write(e.ws.join("AGENTS.md"), "Dates are ISO 8601.\n").unwrap();
    let mock = delegating_mock(vec![MockReply::text("2026-12-01")]).await;
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "when is it?"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let bodies = bodies(&mock);
    let child_system = bodies[1]["system"].to_string();
    assert!(
        child_system.contains("subagent")
            && child_system.contains("# Project instructions (AGENTS.md)")
            && child_system.contains("Dates are ISO 8601."),
        "{child_system}"
    );
}

/// The ids `mecha sessions list` shows: the run's, then its subagent's.
async fn parent_and_child(e: &Env, mock: &MockModel) -> (String, String) {
    let out = e
        .mecha(Api::OpenAi, mock, "k", "sessions", &["list", "--json"], "")
        .await;
    let listed: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let id = |child: bool| {
        listed
            .iter()
            .find(|l| l["parent"].is_string() == child)
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .unwrap()
    };
    (id(false), id(true))
}

#[tokio::test]
async fn a_child_of_an_armed_parent_resumed_on_its_own_still_refuses_the_send() {
    let mut e = research_env();
    std::fs::write(e.ws.join("secret.txt"), "s3cr3t").unwrap();
    // todo, forced untrusted, stands in for a fetched page; fs_read brings
    // the private data: the parent is armed when it delegates.
    e.extra_config = format!("{RESEARCH}[tools.todo]\nforce = {{ untrusted_input = true }}\n");
    let todo = json!({"items": [{"content": "read the page", "status": "done"}]});
    let mock = MockModel::start(vec![
        tool_turn(&[("todo", todo), ("fs_read", json!({"path": "secret.txt"}))]),
        tool_turn(&[("research", json!({"task": "When is the meeting?"}))]),
        MockReply::text("Tuesday."),
    ])
    .await;
    // The child takes in nothing: the armed taint it starts with is all
    // it has.
    mock.route(&["fs_read"], vec![MockReply::text("Tuesday.")]);
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, child) = parent_and_child(&e, &mock).await;

    // Nothing is forced now: only the taint the child's session recorded
    // can refuse.
    e.extra_config = RESEARCH.into();
    let mock = MockModel::start(vec![
        tool_turn(&[("shell", json!({"command": "cat secret.txt > sent.txt"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--yes", "--resume", &child, "send it"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(
        is_error && result.contains("refused by mecha's interlock"),
        "{result}"
    );
    assert!(!e.ws.join("sent.txt").exists(), "the send never ran");
}
