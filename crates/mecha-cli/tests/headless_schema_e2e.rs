//! The headless contract, checked against the schemas in docs/schema/:
//! the result object `--output-format json` prints on success, on an API
//! failure, at `--max-turns` and on interrupt, and every line of
//! `stream-json`, which opens with `init`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{Api, Env, env, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply, ScriptToolCall, ScriptTurn, ScriptUsage};
use serde_json::{Value, json};

fn schema_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

fn schema(name: &str) -> Value {
    let text = std::fs::read_to_string(schema_dir().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Serves the checked-in schemas to each other's `$ref`s, and nothing else.
struct CheckedIn;

impl jsonschema::Retrieve for CheckedIn {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let name = uri.path().as_str().rsplit('/').next().unwrap_or_default();
        match name {
            "result.schema.json" | "stream-event.schema.json" => Ok(schema(name)),
            _ => Err(format!("no checked-in schema {uri}").into()),
        }
    }
}

fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_retriever(CheckedIn)
        .build(&schema(name))
        .unwrap()
}

fn assert_valid(validator: &jsonschema::Validator, value: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\nin {value}");
}

/// The one object a json run printed, checked against the result schema.
fn the_result(out: &std::process::Output) -> Value {
    let text = stdout(out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one object expected: {text:?}");
    let object: Value = serde_json::from_str(lines[0]).unwrap();
    assert_valid(&validator("result.schema.json"), &object);
    object
}

/// Every stream-json line, each checked against the event schema.
fn the_events(out: &std::process::Output) -> Vec<Value> {
    let validator = validator("stream-event.schema.json");
    stdout(out)
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            assert_valid(&validator, &event);
            event
        })
        .collect()
}

#[test]
fn the_schemas_reject_what_they_should() {
    let result = validator("result.schema.json");
    // An error without its message, and a field nobody documented.
    let broken = json!({
        "type": "final", "session_id": null, "model": null, "text": "",
        "stop_reason": "error", "is_error": true, "error": null, "turns": 0,
        "duration_ms": 1, "compactions": 0, "tool_calls": [], "hooks": [], "cost": null,
        "taint": {"private_data": false, "untrusted_input": false},
        "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                  "cache_write_tokens": 0},
    });
    assert!(!result.is_valid(&broken));
    let mut fixed = broken.clone();
    fixed["error"] = json!("what broke");
    assert!(result.is_valid(&fixed), "{fixed}");
    fixed["extra"] = json!(1);
    assert!(!result.is_valid(&fixed));
    let events = validator("stream-event.schema.json");
    assert!(!events.is_valid(&json!({"type": "no_such_event"})));
    assert!(events.is_valid(&json!({"type": "text", "text": "hi"})));
}

#[tokio::test]
async fn json_on_success_has_the_whole_result() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_list", json!({"path": "."}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(Api::OpenAi, &mock, "k", &["--output-format", "json", "go"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let object = the_result(&out);
    assert_eq!(object["text"], "done");
    assert_eq!(object["stop_reason"], "end_turn");
    assert_eq!(object["model"], "test-model");
    assert_eq!(object["turns"], 2);
    let id = object["session_id"].as_str().expect("the run is stored");
    let stored = walk(&e.home).into_iter().any(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().contains(id))
    });
    assert!(stored, "no session file named {id} under {:?}", e.home);
    let call = &object["tool_calls"][0];
    assert_eq!(call["name"], "fs_list");
    assert_eq!(call["input"], json!({"path": "."}));
    assert_eq!(call["verdict"], "allowed");
    assert_eq!(call["is_error"], false);
    assert!(
        object["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "{object}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[tokio::test]
async fn json_when_retries_give_up_is_an_error_result() {
    let e = env();
    // The first attempt and every retry answer 500, without waiting.
    let mock = MockModel::start(
        (0..5)
            .map(|_| MockReply::status_retry_after(500, 0))
            .collect(),
    )
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let object = the_result(&out);
    assert_eq!(object["stop_reason"], "error");
    let error = object["error"].as_str().unwrap();
    assert!(error.contains("gave up after 4 retries"), "{error}");
    assert_eq!(object["tool_calls"], json!([]));
}

#[tokio::test]
async fn json_at_max_turns_and_a_refused_call_fit_the_schema() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_list", json!({})), ("no_such_tool", json!({}))]),
        tool_turn(&[("fs_list", json!({}))]),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", "--max-turns", "1", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let object = the_result(&out);
    assert_eq!(object["stop_reason"], "max_turns");
    let refused = &object["tool_calls"][1];
    assert_eq!(refused["name"], "no_such_tool");
    assert_eq!(refused["verdict"], "blocked");
    assert_eq!(refused["stage"], "validation");
    assert!(refused["reason"].as_str().is_some_and(|r| !r.is_empty()));
}

#[test]
fn json_on_interrupt_fits_the_schema() {
    let e = env();
    let out = common::interrupted_json_run(&e);
    let object = the_result(&out);
    assert_eq!(object["stop_reason"], "interrupted");
    let call = &object["tool_calls"][0];
    assert_eq!(call["name"], "shell");
    assert_eq!(call["verdict"], "allowed");
    assert!(call["is_error"].is_null(), "it never finished: {call}");
}

/// A server that cannot start: the run goes on without it.
fn broken_server(e: &mut Env) {
    e.extra_config = "[[mcp]]\nname = \"gone\"\ncommand = \"/nonexistent/mcp-server\"\n".to_owned();
}

#[tokio::test]
async fn stream_json_opens_with_init_and_every_line_fits_the_schema() {
    let mut e = env();
    broken_server(&mut e);
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_list", json!({}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--output-format", "stream-json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = the_events(&out);
    let init = &events[0];
    assert_eq!(init["type"], "init", "{init}");
    assert_eq!(init["model"], "test-model");
    assert_eq!(
        init["workspace"],
        e.ws.canonicalize().unwrap().display().to_string()
    );
    assert!(init["sandbox"].is_null(), "{init}");
    let tools = init["tools"].as_array().unwrap();
    let fs_list = tools.iter().find(|t| t["name"] == "fs_list").unwrap();
    assert_eq!(fs_list["capabilities"]["private_data"], true, "{fs_list}");
    assert_eq!(fs_list["read_only"], true, "{fs_list}");
    let server = &init["servers"][0];
    assert_eq!(server["name"], "gone");
    assert_eq!(server["status"], "failed");
    assert!(server["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["session_id"], init["session_id"]);
    assert!(last["session_id"].is_string());
    assert!(events.iter().any(|e| e["type"] == "tool_result"));
}

#[tokio::test]
async fn a_retry_is_announced_when_it_is_decided() {
    let e = env();
    let reply = || {
        vec![
            MockReply::status_retry_after(429, 0),
            MockReply::text("answer"),
        ]
    };
    let mock = MockModel::start(reply()).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "stream-json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = the_events(&out);
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    assert!(at("retrying") < at("text"), "{events:?}");
    let what = events[at("retrying")]["what"].as_str().unwrap().to_owned();
    for part in ["429", "retrying in 0s", "1 of 4"] {
        assert!(what.contains(part), "{part:?} in {what}");
    }
    // In text, on stderr, with the same words.
    let mock = MockModel::start(reply()).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&what), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "answer");
    // With one JSON result on stdout, the retry is still said on stderr.
    let mock = MockModel::start(reply()).await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(&what), "{}", stderr(&out));
    assert_eq!(the_result(&out)["text"], "answer");
}

#[tokio::test]
async fn a_run_that_cannot_start_prints_its_result_alone_in_stream_json() {
    let e = env();
    let mock = MockModel::start(vec![]).await;
    let out = e
        .run(
            Api::OpenAi,
            &mock,
            "k",
            &["--output-format", "stream-json", " "],
        )
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let events = the_events(&out);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "final");
    assert_eq!(events[0]["stop_reason"], "error");
    // The model config names, though nothing was wired.
    assert_eq!(events[0]["model"], "test-model");
    assert!(events[0]["session_id"].is_null());
}

/// A turn that reports `read` cache reads and `write` cache writes.
fn cached(read: u64, write: u64, calls: Vec<ScriptToolCall>, text: Option<&str>) -> MockReply {
    MockReply::from(ScriptTurn {
        text: text.map(str::to_owned),
        tool_calls: calls,
        usage: Some(ScriptUsage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }),
        ..ScriptTurn::default()
    })
}

#[tokio::test]
async fn stream_json_reports_cache_reads_and_writes_per_request_and_in_all() {
    let e = env();
    let list = ScriptToolCall {
        name: "fs_list".into(),
        input: Some(json!({"path": "."})),
        ..ScriptToolCall::default()
    };
    let mock = MockModel::start(vec![
        cached(0, 4000, vec![list], None),
        cached(4000, 120, Vec::new(), Some("done")),
    ])
    .await;
    let out = e
        .run(
            Api::Anthropic,
            &mock,
            "k",
            &["--output-format", "stream-json", "go"],
        )
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = the_events(&out);
    let per_request: Vec<(u64, u64, u64)> = events
        .iter()
        .filter(|e| e["type"] == "usage")
        .map(|e| {
            let u = &e["usage"];
            (
                e["turn"].as_u64().unwrap(),
                u["cache_read_tokens"].as_u64().unwrap(),
                u["cache_write_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(per_request, [(1, 0, 4000), (2, 4000, 120)]);
    let last = events.last().unwrap();
    assert_eq!(last["usage"]["cache_read_tokens"], 4000, "{last}");
    assert_eq!(last["usage"]["cache_write_tokens"], 4120, "{last}");
}
