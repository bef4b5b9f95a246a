//! Remote MCP servers as people run them, through the real binary against
//! the official Python SDK's server: one that speaks only the older SSE
//! transport (reached by falling back, or named), a login over SSE, a tool
//! list that changes mid-run, and a session the server forgot after a
//! restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::remote::{follow, free_port, logged, login, relay, sdk_python, start_sdk_server};
use common::{Api, Env, env, openai_tool_names, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

fn config(e: &mut Env, url: &str, extra: &str) {
    e.extra_config = format!("[[mcp]]\nname = \"fx\"\nurl = \"{url}\"\n{extra}");
}

/// Runs one call of `tool` and returns its result.
async fn call(e: &Env, tool: &str, args: Value) -> String {
    let mock = MockModel::start(vec![tool_turn(&[(tool, args)]), MockReply::text("done")]).await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(!is_error, "{result}");
    result
}

#[tokio::test]
async fn an_sse_only_server_is_reached_by_falling_back_and_its_tools_run() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let _server = start_sdk_server(&python, port, "sse", &[]);
    let mut e = env();
    config(&mut e, &format!("http://127.0.0.1:{port}/sse"), "");
    let mock = MockModel::start(vec![]).await;
    let listing = e
        .mecha(Api::OpenAi, &mock, "k", "tools", &["--json"], "")
        .await;
    assert!(listing.status.success(), "{}", stdout(&listing));
    let listing: Value = serde_json::from_str(&stdout(&listing)).unwrap();
    assert_eq!(listing["servers"][0]["transport"], "SSE", "{listing}");
    let check = e
        .mecha(Api::OpenAi, &mock, "k", "mcp", &["check", "fx"], "")
        .await;
    assert!(
        stdout(&check).contains(&format!("transport: SSE to http://127.0.0.1:{port}/sse")),
        "{}",
        stdout(&check)
    );
    assert!(
        call(&e, "fx__add", json!({"a": 20, "b": 22}))
            .await
            .contains("42")
    );
}

#[tokio::test]
async fn transport_sse_opens_the_event_stream_first() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let _server = start_sdk_server(&python, port, "sse", &[]);
    let (relay_port, heads) = relay(port);
    let mut e = env();
    config(
        &mut e,
        &format!("http://127.0.0.1:{relay_port}/sse"),
        "transport = \"sse\"\n",
    );
    assert!(
        call(&e, "fx__shout", json!({"text": "old"}))
            .await
            .contains("OLD")
    );
    let heads = heads.lock().unwrap().clone();
    assert!(heads[0].starts_with("GET /sse "), "{heads:?}");
    assert!(
        !heads.iter().any(|h| h.starts_with("POST /sse")),
        "{heads:?}"
    );
}

#[tokio::test]
async fn a_login_is_used_over_sse_too() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let log_path = log.path().to_str().unwrap().to_owned();
    let _server = start_sdk_server(&python, port, "sse", &["--oauth", "--log", &log_path]);
    let mut e = env();
    config(
        &mut e,
        &format!("http://127.0.0.1:{port}/sse"),
        "transport = \"sse\"\n",
    );
    let mock = MockModel::start(vec![]).await;
    let out = login(&e, &mock, "fx", follow).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        call(&e, "fx__add", json!({"a": 1, "b": 1}))
            .await
            .contains('2')
    );
    let seen = logged(log.path());
    let token = seen.iter().find(|e| e["event"] == "call").unwrap();
    assert!(token["token"].is_string(), "{seen:?}");
}

/// A tool the server adds mid-run is in the model's next request, over
/// either transport.
#[tokio::test]
async fn a_changed_tool_list_reaches_the_next_request() {
    let Some(python) = sdk_python() else {
        return;
    };
    for (transport, path) in [("streamable-http", "mcp"), ("sse", "sse")] {
        let port = free_port();
        let _server = start_sdk_server(&python, port, transport, &[]);
        let mut e = env();
        config(&mut e, &format!("http://127.0.0.1:{port}/{path}"), "");
        let mock = MockModel::start(vec![
            tool_turn(&[("fx__grow", json!({}))]),
            MockReply::text("done"),
        ])
        .await;
        let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "grow"]).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let requests = mock.requests();
        assert!(!openai_tool_names(&requests[0].body).contains(&"fx__added".to_owned()));
        assert!(
            openai_tool_names(&requests[1].body).contains(&"fx__added".to_owned()),
            "{transport}: {:?}",
            openai_tool_names(&requests[1].body)
        );
    }
}

/// The server restarts between two calls of one run (while the model
/// waits on another server's `nap`): the second call finds its session
/// unknown (HTTP 404), and mecha starts a new one and makes the call there.
#[tokio::test]
async fn a_session_the_server_forgot_is_started_again() {
    let Some(python) = sdk_python() else {
        return;
    };
    let (port, clock) = (free_port(), free_port());
    let before = tempfile::NamedTempFile::new().unwrap();
    let after = tempfile::NamedTempFile::new().unwrap();
    let log = |f: &tempfile::NamedTempFile| f.path().to_str().unwrap().to_owned();
    let server = start_sdk_server(&python, port, "streamable-http", &["--log", &log(&before)]);
    let _clock = start_sdk_server(&python, clock, "streamable-http", &[]);
    let mut e = env();
    config(&mut e, &format!("http://127.0.0.1:{port}/mcp"), "");
    e.extra_config.push_str(&format!(
        "[[mcp]]\nname = \"clock\"\nurl = \"http://127.0.0.1:{clock}/mcp\"\n"
    ));
    let mock = MockModel::start(vec![
        tool_turn(&[("fx__add", json!({"a": 1, "b": 2}))]),
        tool_turn(&[("clock__nap", json!({"seconds": 6}))]),
        tool_turn(&[("fx__add", json!({"a": 3, "b": 4}))]),
        MockReply::text("done"),
    ])
    .await;
    let mut cmd = e.command(Api::OpenAi, &mock, "k", "run", &["--yes", "add twice"]);
    let run = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !logged(before.path()).iter().any(|e| e["event"] == "call") {
        assert!(Instant::now() < deadline, "the first call never came");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(server);
    let _restarted = start_sdk_server(&python, port, "streamable-http", &["--log", &log(&after)]);
    let out = run.await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 3);
    assert!(!results[0].1 && results[0].0.contains('3'), "{results:?}");
    assert!(
        !results[1].1 && results[1].0.contains("awake"),
        "{results:?}"
    );
    assert!(!results[2].1 && results[2].0.contains('7'), "{results:?}");
    let calls = logged(after.path());
    assert_eq!(
        calls.iter().filter(|e| e["event"] == "call").count(),
        1,
        "{calls:?}"
    );
}

/// An SSE server that names another origin for its messages is refused:
/// nothing (the token least of all) is sent there.
#[tokio::test]
async fn an_endpoint_on_another_origin_gets_nothing() {
    use std::io::{Read, Write};
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let elsewhere_port = elsewhere.local_addr().unwrap().port();
    elsewhere.set_nonblocking(true).unwrap();
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in server.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\nevent: endpoint\r\n\
                 data: http://127.0.0.1:{elsewhere_port}/messages\r\n\r\n"
            );
            std::thread::sleep(Duration::from_secs(5));
        }
    });
    let mut e = env();
    config(
        &mut e,
        &format!("http://127.0.0.1:{port}/sse"),
        "transport = \"sse\"\nbearer_token_env = \"FX_TOKEN\"\n",
    );
    e.extra_env.push(("FX_TOKEN".into(), "t0ken".into()));
    let mock = MockModel::start(vec![]).await;
    let check = e
        .mecha(Api::OpenAi, &mock, "k", "mcp", &["check", "fx"], "")
        .await;
    assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
    assert!(
        stdout(&check).contains("another origin"),
        "{}",
        stdout(&check)
    );
    assert!(
        elsewhere.accept().is_err(),
        "mecha connected to the other origin"
    );
}
