//! A confined call says so where a person watches it: the activity line of
//! `mecha run` names the backend and the network of the shell and of a
//! `sandbox = true` server's tools, and stream-json's `tool_call` carries
//! the same. Needs the real bwrap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};
use serde_json::{Value, json};

fn have_bwrap() -> bool {
    common::have(
        "bwrap",
        "the sandbox tests",
        "bubblewrap (apt-get install bubblewrap)",
    )
}

/// bwrap without network for the shell; a sandboxed fixture server with
/// network of its own; and an unconfined tool (`todo`) for contrast.
fn config() -> String {
    let fixture = fixture_mcp();
    format!(
        "[sandbox]\nkind = \"bwrap\"\nreadable = [{dir:?}]\n\n[[mcp]]\nname = \"box\"\n\
         command = {cmd:?}\nsandbox = true\nnetwork = true\n",
        dir = fixture.parent().unwrap().display().to_string(),
        cmd = fixture.display().to_string(),
    )
}

fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("shell", json!({"command": "echo hi"})),
        ("box__cwd", json!({})),
        (
            "todo",
            json!({"items": [{"content": "x", "status": "pending"}]}),
        ),
    ]
}

#[tokio::test]
async fn the_activity_line_says_where_a_call_runs() {
    if !have_bwrap() {
        return;
    }
    let mut e = env();
    e.extra_config = config();
    let mock = MockModel::start(vec![tool_turn(&calls()), MockReply::text("done")]).await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let line = |name: &str| {
        err.lines()
            .find(|l| l.starts_with(&format!("→ {name} ")))
            .unwrap_or_else(|| panic!("no activity line for {name}: {err}"))
            .to_owned()
    };
    assert!(
        line("shell").ends_with(" (confined: bwrap, no network)"),
        "{err}"
    );
    assert!(
        line("box__cwd").ends_with(" (confined: bwrap, network on)"),
        "{err}"
    );
    assert!(!line("todo").contains("confined"), "{err}");
}

#[tokio::test]
async fn stream_json_says_it_too() {
    if !have_bwrap() {
        return;
    }
    let mut e = env();
    e.extra_config = config();
    let mock = MockModel::start(vec![tool_turn(&calls()), MockReply::text("done")]).await;
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--yes", "--output-format", "stream-json", "go"],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema/stream-event.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
    let tool_call = jsonschema::validator_for(&schema["$defs"]["tool_call"]).unwrap();
    let calls: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|event| event["type"] == "tool_call")
        .collect();
    for call in &calls {
        assert!(tool_call.is_valid(call), "{call}");
    }
    let confined: Vec<(String, Value)> = calls
        .iter()
        .map(|event| {
            (
                event["name"].as_str().unwrap().to_owned(),
                event["confined"].clone(),
            )
        })
        .collect();
    assert_eq!(
        confined,
        vec![
            (
                "shell".into(),
                json!({"backend": "bwrap", "network": false})
            ),
            (
                "box__cwd".into(),
                json!({"backend": "bwrap", "network": true})
            ),
            ("todo".into(), Value::Null),
        ]
    );
}
