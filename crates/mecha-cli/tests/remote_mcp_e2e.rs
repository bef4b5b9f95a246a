//! Remote MCP servers through the real binary: the reference server of the
//! MCP project (`@modelcontextprotocol/server-everything`) run in its
//! streamable-HTTP mode on loopback, reached by `url`, behind a relay that
//! records what mecha sends (the bearer token, the headers). Its tools are
//! private, untrusted and blind sends, so they run in an armed
//! conversation and `block_sends_after_private` refuses them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::remote::{Server, free_port, relay};
use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::{Value, json};

/// server-everything in streamable-HTTP mode, ready on its port.
fn start_everything() -> Option<(Server, u16)> {
    let bin = common::npm_server("mcp-server-everything")?;
    let port = free_port();
    let mut child = Command::new(bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = BufReader::new(stderr).lines();
    while Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) if line.contains("listening") => {
                std::thread::spawn(move || for _ in lines {});
                return Some((server, port));
            }
            Some(_) => {}
            None => break,
        }
    }
    panic!("server-everything did not start on port {port}");
}

fn remote_config(e: &mut Env, port: u16, extra: &str) {
    e.extra_config =
        format!("[[mcp]]\nname = \"every\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n{extra}");
}

#[tokio::test]
async fn a_remote_server_is_listed_with_its_tools_as_private_untrusted_blind_sends() {
    let Some((_server, port)) = start_everything() else {
        return;
    };
    let mut e = env();
    remote_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(Api::OpenAi, &mock, "k", "tools", &["--json"], "")
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let server = &listing["servers"][0];
    assert_eq!(server["status"], "ready", "{server}");
    let echo = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "every__echo")
        .unwrap_or_else(|| panic!("{listing}"));
    let human = e.mecha(Api::OpenAi, &mock, "k", "tools", &[], "").await;
    assert!(
        stdout(&human).contains(&format!(
            "remote at http://127.0.0.1:{port}/mcp (streamable HTTP), ready"
        )),
        "{}",
        stdout(&human)
    );
    let check = e
        .mecha(Api::OpenAi, &mock, "k", "mcp", &["check", "every"], "")
        .await;
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(
        stdout(&check).contains(&format!(
            "transport: streamable HTTP to http://127.0.0.1:{port}/mcp\nauth: none sent"
        )),
        "{}",
        stdout(&check)
    );
    let caps = &echo["capabilities"];
    assert_eq!(caps["private_data"], true, "{echo}");
    assert_eq!(caps["untrusted_input"], true, "{echo}");
    assert_eq!(caps["egress"], "blind", "{echo}");
}

#[tokio::test]
async fn a_call_reaches_the_remote_server_with_its_token_and_headers() {
    let Some((_server, port)) = start_everything() else {
        return;
    };
    let (relay_port, heads) = relay(port);
    let mut e = env();
    remote_config(
        &mut e,
        relay_port,
        "bearer_token_env = \"EVERY_TOKEN\"\nheaders = { X-Team = \"infra-${TEAM}\" }\n",
    );
    e.extra_env.push(("EVERY_TOKEN".into(), "t0ken".into()));
    e.extra_env.push(("TEAM".into(), "blue".into()));
    // Armed (a private read under distrust): the blind remote tool runs.
    e.extra_config
        .push_str("[agent]\ndistrust_workspace = true\n");
    std::fs::write(e.ws.join("notes.txt"), "private notes\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "notes.txt"}))]),
        tool_turn(&[("every__echo", json!({"message": "over http"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "echo it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(!is_error, "{result}");
    assert!(result.contains("over http"), "{result}");
    let heads = heads.lock().unwrap().join("\n---\n").to_ascii_lowercase();
    assert!(heads.contains("authorization: bearer t0ken\r\n"), "{heads}");
    assert!(heads.contains("x-team: infra-blue"), "{heads}");
}

#[tokio::test]
async fn a_missing_token_is_named_and_block_sends_after_private_refuses_the_tools() {
    let Some((_server, port)) = start_everything() else {
        return;
    };
    let mut e = env();
    remote_config(&mut e, port, "bearer_token_env = \"NOT_SET_TOKEN\"\n");
    let mock = MockModel::start(vec![MockReply::text("ok")]).await;
    let out = e.run(Api::OpenAi, &mock, "k", &["hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("export the token as NOT_SET_TOKEN"),
        "{}",
        stderr(&out)
    );

    let mut e = env();
    remote_config(&mut e, port, "");
    e.extra_config
        .push_str("[agent]\nblock_sends_after_private = true\n");
    std::fs::write(e.ws.join("notes.txt"), "private notes\n").unwrap();
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "notes.txt"}))]),
        tool_turn(&[("every__echo", json!({"message": "leak"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 2).pop().unwrap();
    assert!(is_error, "{result}");
    assert!(!result.contains("Echo: leak"), "{result}");
}

/// A server that answers every request 401, as one behind OAuth does.
fn unauthorized() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[tokio::test]
async fn a_server_that_wants_authorization_says_what_to_set() {
    let port = unauthorized();
    let mut e = env();
    remote_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    let out = e.mecha(Api::OpenAi, &mock, "k", "tools", &[], "").await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("the server asks for authorization (HTTP 401)")
            && text.contains("bearer_token_env")
            && text.contains("run `mecha mcp login every`"),
        "{text}"
    );
    assert!(!text.contains("WorkerTransport"), "{text}");
}
