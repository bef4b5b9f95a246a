//! What a resume restores besides the history, through the real binary:
//! a skill's narrowing (which already gated the calls beside its load)
//! stays in force and its body is carried by the next compaction; the todo
//! list comes back; `chat --continue` picks the
//! conversation up, with `recall` on offer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, Env, env, openai_tool_names, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

const SUMMARY_MARKER: &str = "[mecha: compaction]";
const PROCEDURE: &str = "STEP-ONE: read the notes. STEP-TWO: never write.";

fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn skill_env() -> Env {
    let mut e = env();
    let dir = e.home.join("skills").join("review");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: review\ndescription: Review the notes.\ntools: [fs_read]\n---\n{PROCEDURE}\n"
        ),
    )
    .unwrap();
    std::fs::write(e.ws.join("notes.txt"), "note line\n".repeat(600)).unwrap();
    e.provider_config =
        "context_window = 40000\nmax_tokens = 1000\ncompact_at_tokens = 9000\n".into();
    e.extra_config = "[tools]\noutput_budget_bytes = 12000\n".into();
    e
}

#[tokio::test]
async fn a_resume_keeps_the_narrowing_the_loaded_skill_and_the_todo_list() {
    let e = skill_env();
    let todo = |status| json!({"items": [{"content": "review the notes", "status": status}]});
    let mock = MockModel::start(vec![
        tool_turn(&[("todo", todo("in_progress"))]),
        // The skill names only fs_read: the todo call beside its load is
        // judged by the surface the load leaves, and refused.
        tool_turn(&[("skill", json!({"name": "review"})), ("todo", todo("done"))]),
        MockReply::text("loaded"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "review"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(openai_tool_names(&mock.requests()[0].body).contains(&"fs_write".to_owned()));
    let (refusal, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(
        is_error
            && refusal.contains("`todo` is outside this run's tool surface")
            && refusal.contains("`review` is loaded in this same turn, and its `tools:`"),
        "{refusal}"
    );

    let mut replies: Vec<MockReply> = (0..8)
        .map(|_| tool_turn(&[("fs_read", json!({"path": "notes.txt"}))]))
        .collect();
    replies.insert(
        0,
        tool_turn(&[("fs_write", json!({"path": "x.txt", "content": "no"}))]),
    );
    replies.push(MockReply::text("reviewed"));
    let mock = MockModel::start(replies).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(Api::OpenAi, &mock, "k", &["--yes", "--continue", "go on"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !texts(b).last().unwrap().starts_with(SUMMARY_MARKER))
        .collect();
    assert_eq!(
        openai_tool_names(&requests[0]),
        ["fs_read", "skill"],
        "the narrowing came back"
    );
    assert!(
        !e.ws.join("x.txt").exists(),
        "the write outside the surface never ran"
    );
    assert!(mock.summaries() >= 1, "it compacted");
    let last = texts(requests.last().unwrap());
    // The carried state is a user message of its own, joined to the ones
    // before it for Chat Completions.
    let carried: Vec<&str> = last
        .iter()
        .filter_map(|t| t.find("[carried state:").map(|at| &t[at..]))
        .collect();
    assert_eq!(carried.len(), 1, "{last:#?}");
    assert!(
        carried[0].contains(PROCEDURE),
        "the restored skill was carried"
    );
    assert!(
        carried[0].contains("[>] review the notes"),
        "and the todo list, as it was before the refused update"
    );
}

#[tokio::test]
async fn chat_continue_picks_the_conversation_up_with_recall() {
    let e = env();
    let mock = MockModel::start(vec![MockReply::text("the answer is 42")]).await;
    let out = e
        .mecha(
            Api::OpenAi,
            &mock,
            "k",
            "chat",
            &[],
            "what is the answer?\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(openai_tool_names(&mock.requests()[0].body).contains(&"recall".to_owned()));

    let mock = MockModel::start(vec![MockReply::text("still 42")]).await;
    let out = e
        .mecha(
            Api::OpenAi,
            &mock,
            "k",
            "chat",
            &["--continue"],
            "and again?\n",
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("resumed session"), "{}", stderr(&out));
    assert!(stdout(&out).contains("still 42"));
    let sent = texts(&mock.requests()[0].body);
    assert_eq!(
        sent[1..],
        ["what is the answer?", "the answer is 42", "and again?"]
    );
}
