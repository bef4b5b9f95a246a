//! MCP results and reporting through the real binary: structured content,
//! the resource reader, the open-world refusal, server status in `mecha
//! tools`, the words of `mecha mcp check`, the activity line of a JSON
//! result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Api, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply, fixture_mcp};
use serde_json::{Value, json};

fn fixture_server(name: &str, args: &[&str]) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = {:?}\nargs = {:?}\n",
        fixture_mcp().display().to_string(),
        args
    )
}

#[tokio::test]
async fn structured_content_is_the_answer_only_when_there_is_no_content() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__structured", json!({})), ("fix__media", json!({}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 1);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].0.contains(r#"{"temperature":21.5,"unit":"C"}"#),
        "{results:?}"
    );
    // The image is the answer; its mirror in structuredContent is not
    // appended as text.
    assert!(!results[1].0.contains("STRUCTURED-MIRROR"), "{results:?}");
}

#[tokio::test]
async fn a_resource_link_leads_to_the_reader_tool_which_reads_it() {
    let mut e = env();
    let record = e.ws.join("calls.log");
    e.extra_config = fixture_server(
        "fix",
        &["--resources", "--record", record.to_str().unwrap()],
    );
    let read = |uri: &str| ("fix__read_resource", json!({ "uri": uri }));
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__resource_link", json!({}))]),
        tool_turn(&[
            read("mem://notes"),
            read("mem://notes.b64"),
            read("file:///report.pdf"),
            read("mem://missing"),
        ]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 2);
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(
        results[0]
            .0
            .contains("<file:///report.pdf>; read it with fix__read_resource]"),
        "{results:?}"
    );
    assert_eq!(results[1].0, "[resource mem://notes]\nthe notes resource");
    assert_eq!(
        results[2].0,
        "[resource mem://notes.b64]\nhello from a blob"
    );
    assert_eq!(
        results[3].0,
        "[resource file:///report.pdf: application/pdf, 9 bytes]"
    );
    assert!(
        results[4].1 && results[4].0.contains("resource not found"),
        "{results:?}"
    );
    // The server was really asked.
    let calls = std::fs::read_to_string(&record).unwrap();
    assert!(calls.contains("read mem://notes\n"), "{calls}");
}

#[tokio::test]
async fn the_open_world_refusal_says_the_tool_is_marked_open_world() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    std::fs::write(e.ws.join("secret.txt"), "TOKEN-123").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "secret.txt"}))]),
        tool_turn(&[("fix__echo_open", json!({"text": "a page"}))]),
        tool_turn(&[("fix__echo_open", json!({}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let refusal = results_in(&mock, 3).last().cloned().unwrap().0;
    assert!(
        refusal.contains(
            "`fix__echo_open` is marked open-world (`openWorldHint`) by its MCP server, so any \
             call to it counts as a send"
        ),
        "{refusal}"
    );
    assert!(
        !refusal.contains("destination the model chooses"),
        "{refusal}"
    );
}

#[tokio::test]
async fn mecha_tools_reports_every_server_and_fails_when_one_did() {
    let mut e = env();
    e.extra_config =
        fixture_server("good", &[]) + &fixture_server("broken", &["--exit-at-start", "7"]);
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "tools", &["--json"], "")
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let servers = listing["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{servers:?}");
    assert_eq!(servers[0]["name"], "good");
    assert_eq!(servers[0]["status"], "ready");
    assert_eq!(servers[1]["name"], "broken");
    assert_eq!(servers[1]["status"], "failed");
    assert!(
        servers[1]["reason"]
            .as_str()
            .unwrap()
            .contains("exit status 7"),
        "{servers:?}"
    );
    let tool = |name: &str| {
        listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing: {listing:#}"))
    };
    assert_eq!(tool("good__echo_open")["refused_when_armed"], true);
    assert_eq!(tool("good__echo")["refused_when_armed"], false);
    // A server that offers no resources gets no reader.
    assert!(
        !listing.to_string().contains("good__read_resource"),
        "{listing:#}"
    );

    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing: {text}"))
            .to_owned()
    };
    assert!(
        line("good__echo_open").contains("[refused once armed]"),
        "{text}"
    );
    assert!(
        !line("good__echo").contains("[refused once armed]"),
        "{text}"
    );
    assert!(text.contains("MCP server `good` ("), "{text}");
    assert!(
        text.contains("MCP server `broken` is unavailable"),
        "{text}"
    );

    // With every server up, the exit code is 0 again.
    e.extra_config = fixture_server("good", &[]);
    let out = e.mecha(Api::Anthropic, &mock, "k", "tools", &[], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn mcp_check_uses_the_json_words_and_marks_sends() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &["--empty-version"]);
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::Anthropic, &mock, "k", "mcp", &["check", "fix"], "")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("MCP server `fix`: ready"), "{text}");
    assert!(text.contains("server: mecha-fixture-mcp\n"), "{text:?}");
    let line = |raw: &str| {
        text.lines()
            .find(|l| l.contains(&format!("(raw `{raw}`)")))
            .unwrap_or_else(|| panic!("{raw} missing: {text}"))
            .to_owned()
    };
    let open = line("echo_open");
    assert!(open.contains("egress=chosen"), "{open}");
    assert!(open.ends_with("[refused once armed]"), "{open}");
    assert!(line("echo").contains("egress=none"), "{text}");
    assert!(!line("echo").contains("[refused once armed]"), "{text}");
    assert!(
        !text.contains("egress=None") && !text.contains("egress=Chosen"),
        "{text}"
    );
    assert!(text.lines().all(|l| !l.ends_with(' ')), "{text:?}");
}

#[tokio::test]
async fn a_json_result_is_one_line_on_the_activity_line() {
    let mut e = env();
    e.extra_config = fixture_server("fix", &[]);
    let pretty = "{\n  \"name\": \"mecha\",\n  \"tools\": [\n    1,\n    2\n  ]\n}";
    let mock = MockModel::start(vec![
        tool_turn(&[("fix__echo", json!({ "text": pretty }))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::Anthropic, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "← fix__echo: {{\"name\": \"mecha\", \"tools\": [1, 2]}} ({} bytes)",
            pretty.len()
        )),
        "{err}"
    );
}

/// A one-line result is its own summary: the activity line does not add
/// its size again beside the size the write already names.
#[tokio::test]
async fn a_one_line_result_shows_one_size() {
    let e = env();
    let mock = MockModel::start(vec![
        tool_turn(&[(
            "fs_write",
            json!({"path": "b.txt", "content": "hello world\nsecond line\n"}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("← fs_write"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(line, "← fs_write: created b.txt (24 bytes)");
}
