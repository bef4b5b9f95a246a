//! Deferred tool schemas through the real binary: above `[tools]
//! defer_schemas_over_bytes` the first request carries `tool_search` and no
//! MCP schema; a search, or a first call, loads a tool, which the next
//! request carries whole at its sorted place; the first call never runs;
//! a resume sends the same list; and across a session that loads, compacts
//! and narrows, every Anthropic request repeats the one before up to its
//! last cache breakpoint but at those three documented points.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};
use serde_json::{Value, json};

const SUMMARY_MARKER: &str = "[mecha: compaction]";

/// A fixture server `fix` with 30 extra tools, recording its calls, and a
/// threshold of `over` bytes.
fn deferring_env(over: &str) -> (Env, std::path::PathBuf) {
    let mut e = env();
    let record = e.ws.join("calls.log");
    e.extra_config = format!(
        "[tools]\ndefer_schemas_over_bytes = {over}\n\n[[mcp]]\nname = \"fix\"\ncommand = \
         {:?}\nargs = [\"--extra-tools\", \"30\", \"--record\", {:?}]\n",
        fixture_mcp().display().to_string(),
        record.display().to_string(),
    );
    (e, record)
}

fn calls(record: &Path) -> String {
    std::fs::read_to_string(record).unwrap_or_default()
}

/// The tools of an Anthropic request, breakpoints left out.
fn tools(body: &Value) -> Vec<Value> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| without_breakpoints(t.clone()))
        .collect()
}

fn names(body: &Value) -> Vec<String> {
    tools(body)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn tool<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|t| t["name"] == name)
}

fn without_breakpoints(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.remove("cache_control");
    }
    value
}

#[tokio::test]
async fn a_large_surface_is_deferred_and_loaded_a_tool_at_a_time() {
    let (e, record) = deferring_env("0");
    let mock = MockModel::start(vec![
        // Straight to a tool whose schema the model never saw.
        tool_turn(&[("fix__echo", json!({"text": "guessed"}))]),
        tool_turn(&[("tool_search", json!({"query": "fix__read"}))]),
        tool_turn(&[("fix__echo", json!({"text": "hello"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let requests: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(requests.len(), 4);

    // The first request: built-ins whole, `tool_search`, no MCP tool.
    let first = tools(&requests[0]);
    let first_names = names(&requests[0]);
    assert!(
        first_names.iter().all(|n| !n.starts_with("fix__")),
        "{first_names:?}"
    );
    assert!(first_names.contains(&"fs_read".to_owned()));
    let search = tool(&first, "tool_search").expect("tool_search is offered");
    let catalogue = search["description"].as_str().unwrap();
    assert!(catalogue.contains("\nfix__echo: "), "{catalogue}");
    assert!(catalogue.contains("\nfix__extra_029"), "{catalogue}");
    let sent = serde_json::to_string(&requests[0]).unwrap().len();
    assert!(sent < 16_000, "the first request is {sent} bytes");

    // `mecha tools --schema` prints exactly that list, and the listing
    // marks the deferred tools.
    let listing = e
        .mecha(Api::Anthropic, &mock, "k", "tools", &["--schema"], "")
        .await;
    let printed: Vec<Value> = serde_json::from_str(&stdout(&listing)).unwrap();
    assert_eq!(printed, first);
    let listing = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    let text = stdout(&listing);
    assert!(
        text.contains("fix__echo") && text.contains("[deferred]"),
        "{text}"
    );
    assert!(text.contains("defer_schemas_over_bytes = 0"), "{text}");
    let listing = e
        .mecha(Api::Anthropic, &mock, "k", "tools", &["--json"], "")
        .await;
    let listing: Value = serde_json::from_str(&stdout(&listing)).unwrap();
    let marked = |name: &str| {
        listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["deferred"] == true)
    };
    assert_eq!(marked("fix__echo"), Some(true), "{listing}");
    assert_eq!(marked("fs_read"), Some(false), "built-ins never wait");

    // The guessed call was answered with the schema and never ran.
    let (answer, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(is_error, "{answer}");
    assert!(answer.contains("`fix__echo` did not run"), "{answer}");
    assert!(answer.contains("\"input_schema\""), "{answer}");
    assert!(!calls(&record).contains("guessed"), "{}", calls(&record));

    // From the next request on, the tool is in the list, whole, in order.
    let second = names(&requests[1]);
    let mut sorted = second.clone();
    sorted.sort();
    assert_eq!(second, sorted);
    let echo = tool(&tools(&requests[1]), "fix__echo").cloned().unwrap();
    assert!(
        echo["input_schema"]["properties"]["text"].is_object(),
        "{echo}"
    );
    assert_eq!(second.len(), first_names.len() + 1);

    // A search returns the schema, and loads the tool too.
    let (found, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(!is_error, "{found}");
    assert!(found.contains("\"name\":\"fix__read\""), "{found}");
    assert!(names(&requests[2]).contains(&"fix__read".to_owned()));
    assert!(!names(&requests[2]).contains(&"fix__destroy".to_owned()));

    // The call made knowing the schema ran.
    assert!(calls(&record).contains("hello"), "{}", calls(&record));
    assert_eq!(tool(&tools(&requests[3]), "fix__echo"), Some(&echo));

    // A resumed session sends the list it had: both tools loaded.
    let mock = MockModel::start(vec![MockReply::text("again")]).await;
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "--continue", "more"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // (`recall` joins a resumed run: there is history to search.)
    let mut resumed = tools(&mock.requests()[0].body);
    resumed.retain(|t| t["name"] != "recall");
    assert_eq!(resumed, tools(&requests[3]));

    // A run's stream-json `init` event marks them as the listing does.
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let args = ["--yes", "--output-format", "stream-json", "hi"];
    let out = e.run(Api::Anthropic, &mock, "k", &args).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let init: Value = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["type"] == "init")
        .expect("an init event");
    let marked = |name: &str| {
        init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["deferred"] == true)
    };
    assert_eq!(marked("fix__read"), Some(true), "{init}");
    assert_eq!(marked("fs_read"), Some(false), "{init}");
}

#[tokio::test]
async fn under_the_threshold_or_never_the_list_goes_whole() {
    for over in ["1000000", "\"never\""] {
        let (e, _) = deferring_env(over);
        let mock = MockModel::start(vec![MockReply::text("ok")]).await;
        let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let names = names(&mock.requests()[0].body);
        assert!(names.contains(&"fix__echo".to_owned()), "{over}: {names:?}");
        assert!(
            !names.contains(&"tool_search".to_owned()),
            "{over}: {names:?}"
        );
    }
    let (e, _) = deferring_env("\"sometimes\"");
    let mock = MockModel::start(vec![]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "\"sometimes\" is not a number of bytes (0 defers every MCP tool's schema) or \"never\""
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_project_may_only_lower_the_threshold() {
    let (e, _) = deferring_env("\"never\"");
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[tools]\ndefer_schemas_over_bytes = 0\n",
    )
    .unwrap();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(names(&mock.requests()[0].body).contains(&"tool_search".to_owned()));

    let (e, _) = deferring_env("0");
    std::fs::write(
        e.ws.join("mecha.toml"),
        "[tools]\ndefer_schemas_over_bytes = \"never\"\n",
    )
    .unwrap();
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e.run(Api::Anthropic, &mock, "k", &["go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(names(&mock.requests()[0].body).contains(&"tool_search".to_owned()));
    assert!(
        stderr(&out).contains("defer_schemas_over_bytes"),
        "{}",
        stderr(&out)
    );
}

/// An Anthropic request as the cache sees it: the tools, the system
/// prompt, then each message's blocks, in order, breakpoints left out;
/// and where the last breakpoint sits in that sequence.
fn cached_sequence(body: &Value) -> (Vec<Value>, usize) {
    let mut sequence = Vec::new();
    let mut last = 0;
    let mut push = |item: &Value, sequence: &mut Vec<Value>| {
        if item.get("cache_control").is_some() {
            last = sequence.len();
        }
        sequence.push(without_breakpoints(item.clone()));
    };
    for t in body["tools"].as_array().unwrap() {
        push(t, &mut sequence);
    }
    for s in body["system"].as_array().unwrap() {
        push(s, &mut sequence);
    }
    for m in body["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            let mut block = b.clone();
            block["role"] = m["role"].clone();
            push(&block, &mut sequence);
        }
    }
    (sequence, last)
}

fn is_summary_request(body: &Value) -> bool {
    serde_json::to_string(body["messages"].as_array().unwrap().last().unwrap())
        .unwrap()
        .contains(SUMMARY_MARKER)
}

#[tokio::test]
async fn the_cache_holds_across_loads_compactions_and_a_narrowing() {
    let (mut e, _) = deferring_env("0");
    std::fs::write(e.ws.join("big.txt"), "data line\n".repeat(600)).unwrap();
    let skill = e.home.join("skills").join("review");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: review\ndescription: Review.\ntools: [fs_read, fix__echo]\n---\nRead it all.\n",
    )
    .unwrap();
    e.provider_config =
        "context_window = 40000\nmax_tokens = 1000\ncompact_at_tokens = 9000\n".into();
    e.extra_config = e
        .extra_config
        .replace("[tools]\n", "[tools]\noutput_budget_bytes = 12000\n");
    let todo = json!({"items": [{"content": "read big.txt", "status": "in_progress"}]});
    let read = || tool_turn(&[("fs_read", json!({"path": "big.txt"}))]);
    let mut replies = vec![
        tool_turn(&[("todo", todo)]),
        tool_turn(&[("tool_search", json!({"query": "fix__echo"}))]),
        tool_turn(&[("skill", json!({"name": "review"}))]),
    ];
    replies.extend((0..10).map(|_| read()));
    replies.push(MockReply::text("all read"));
    let mock = MockModel::start(replies).await;
    mock.answer_summaries(SUMMARY_MARKER);
    let out = e
        .run(Api::Anthropic, &mock, "k", &["--yes", "read it"])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(mock.summaries() >= 1, "it compacted");

    let requests: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| !is_summary_request(b))
        .collect();
    for body in &requests {
        let marked = |v: &Value| v.get("cache_control").is_some();
        let last_block = body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap();
        assert!(
            marked(body["tools"].as_array().unwrap().last().unwrap())
                && marked(&body["system"][0])
                && marked(last_block),
            "breakpoints on the tools, the system prompt and the newest message"
        );
    }
    let (mut tool_changes, mut history_changes) = (Vec::new(), 0);
    for pair in requests.windows(2) {
        let (before, upto) = cached_sequence(&pair[0]);
        let (after, _) = cached_sequence(&pair[1]);
        assert_eq!(
            pair[0]["system"], pair[1]["system"],
            "the system prompt never moves"
        );
        if after.len() > upto && before[..=upto] == after[..=upto] {
            continue;
        }
        // Where the request broke from the last one's cached prefix.
        let (old, new) = (names(&pair[0]), names(&pair[1]));
        if old != new {
            tool_changes.push((old, new));
        } else {
            history_changes += 1;
        }
    }
    // A load adds one tool; the narrowing keeps what the skill names (and
    // the skill tool); each compaction rewrites the history once.
    assert_eq!(tool_changes.len(), 2, "{tool_changes:#?}");
    let (old, new) = &tool_changes[0];
    assert_eq!(new.len(), old.len() + 1);
    assert!(new.contains(&"fix__echo".to_owned()) && !old.contains(&"fix__echo".to_owned()));
    let (_, narrowed) = &tool_changes[1];
    assert_eq!(narrowed, &["fix__echo", "fs_read", "skill"]);
    assert_eq!(history_changes, mock.summaries(), "only the compactions");
}
