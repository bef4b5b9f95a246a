//! Remote MCP servers behind OAuth, through the real binary: the official
//! Python SDK's server acting as its own authorization server (dynamic
//! registration, PKCE, refresh), `mecha mcp login` with the test playing
//! the browser, and the tokens' use: every call carries one, an expiring
//! one is refreshed, and one is never sent to a URL it was not made for.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::remote::{
    follow, free_port, http_get, logged, login, relay, sdk_python, start_sdk_server,
};
use common::{Api, Env, env, results_in, stderr, stdout, tool_turn};
use mecha_testkit::{MockModel, MockReply};
use serde_json::json;

fn docs_config(e: &mut Env, port: u16, extra: &str) {
    e.extra_config =
        format!("[[mcp]]\nname = \"docs\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n{extra}");
}

fn events<'a>(log: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    log.iter().filter(|e| e["event"] == kind).collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_login_made_once_carries_every_call_until_logout() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let log_path = log.path().to_str().unwrap().to_owned();
    let _server = start_sdk_server(
        &python,
        port,
        "streamable-http",
        &["--oauth", "--log", &log_path],
    );
    let mut e = env();
    docs_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;

    let before = e.mecha(Api::OpenAi, &mock, "k", "tools", &[], "").await;
    assert_eq!(before.status.code(), Some(1), "{}", stderr(&before));
    assert!(
        stdout(&before).contains("run `mecha mcp login docs`"),
        "{}",
        stdout(&before)
    );

    let out = login(&e, &mock, "docs", follow).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("logged in to `docs`"),
        "{}",
        stdout(&out)
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let seen = logged(log.path());
    assert_eq!(events(&seen, "register").len(), 1, "{seen:?}");
    assert_eq!(events(&seen, "authorize")[0]["resource"], url, "{seen:?}");
    let token = events(&seen, "token");
    assert_eq!(token[0]["grant"], "authorization_code", "{seen:?}");
    assert_eq!(token[0]["resource"], url, "{seen:?}");
    let file = e.home.join("credentials/mcp-docs.json");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&e.home.join("credentials")), 0o700);

    let check = e
        .mecha(Api::OpenAi, &mock, "k", "mcp", &["check", "docs"], "")
        .await;
    assert!(check.status.success(), "{}", stdout(&check));
    assert!(
        stdout(&check).contains("auth: logged in with OAuth, access token good for"),
        "{}",
        stdout(&check)
    );

    let mock = MockModel::start(vec![
        tool_turn(&[("docs__add", json!({"a": 2, "b": 3}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "add"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(!is_error && result.contains('5'), "{result}");
    let calls = logged(log.path());
    let call = events(&calls, "call");
    assert_eq!(call.len(), 1, "{calls:?}");
    assert!(call[0]["token"].is_string(), "{calls:?}");

    let out = e
        .mecha(Api::OpenAi, &mock, "k", "mcp", &["logout", "docs"], "")
        .await;
    assert!(
        stdout(&out).contains("logged out of `docs`"),
        "{}",
        stdout(&out)
    );
    assert!(!file.exists());
    let after = e.mecha(Api::OpenAi, &mock, "k", "tools", &[], "").await;
    assert!(
        stdout(&after).contains("run `mecha mcp login docs`"),
        "{}",
        stdout(&after)
    );
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_and_the_call_goes_through() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let log_path = log.path().to_str().unwrap().to_owned();
    let _server = start_sdk_server(
        &python,
        port,
        "streamable-http",
        &["--oauth", "--token-ttl", "2", "--log", &log_path],
    );
    let mut e = env();
    docs_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    let out = login(&e, &mock, "docs", follow).await;
    assert!(out.status.success(), "{}", stderr(&out));
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let mock = MockModel::start(vec![
        tool_turn(&[("docs__shout", json!({"text": "fresh"}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "shout"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(!is_error && result.contains("FRESH"), "{result}");
    let seen = logged(log.path());
    let grants: Vec<_> = events(&seen, "token")
        .iter()
        .map(|t| t["grant"].as_str().unwrap().to_owned())
        .collect();
    assert!(grants.contains(&"refresh_token".to_owned()), "{seen:?}");
    let saved = std::fs::read_to_string(e.home.join("credentials/mcp-docs.json")).unwrap();
    let first = events(&seen, "call")[0]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        saved.contains(&first),
        "the refreshed token is kept: {saved}"
    );
}

#[tokio::test]
async fn a_login_is_never_sent_to_another_url_under_the_same_name() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let _server = start_sdk_server(&python, port, "streamable-http", &["--oauth"]);
    let mut e = env();
    docs_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    assert!(login(&e, &mock, "docs", follow).await.status.success());

    // The same name now points elsewhere (a relay that records what
    // reaches it): the token stays home.
    let (elsewhere, heads) = relay(port);
    docs_config(&mut e, elsewhere, "");
    let check = e
        .mecha(Api::OpenAi, &mock, "k", "mcp", &["check", "docs"], "")
        .await;
    let text = stdout(&check);
    assert!(
        text.contains(&format!(
            "the login under this name is for http://127.0.0.1:{port}/mcp"
        )),
        "{text}"
    );
    let heads = heads.lock().unwrap().join("\n").to_ascii_lowercase();
    assert!(!heads.is_empty(), "mecha reached the relay");
    assert!(!heads.contains("authorization:"), "{heads}");
}

#[tokio::test]
async fn the_address_the_browser_ended_on_can_be_pasted() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let _server = start_sdk_server(&python, port, "streamable-http", &["--oauth"]);
    let mut e = env();
    docs_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    // A browser on another machine: it is sent to the callback address,
    // which it cannot reach; the user copies that address into mecha.
    let out = login(&e, &mock, "docs", |url, stdin| {
        let (status, location) = http_get(url);
        assert_eq!(status, 302, "{location:?}");
        writeln!(stdin, "{}", location.unwrap()).unwrap();
    })
    .await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(e.home.join("credentials/mcp-docs.json").exists());
}

#[tokio::test]
async fn a_preregistered_client_is_used_instead_of_registering() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let log_path = log.path().to_str().unwrap().to_owned();
    let callback = free_port();
    let redirect = format!("http://127.0.0.1:{callback}/callback");
    let _server = start_sdk_server(
        &python,
        port,
        "streamable-http",
        &[
            "--oauth",
            "--client-id",
            "mecha-cli",
            "--redirect-uri",
            &redirect,
            "--log",
            &log_path,
        ],
    );
    let mut e = env();
    docs_config(
        &mut e,
        port,
        &format!("client_id = \"mecha-cli\"\ncallback_port = {callback}\n"),
    );
    let mock = MockModel::start(vec![]).await;
    let out = login(&e, &mock, "docs", follow).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let seen = logged(log.path());
    assert!(events(&seen, "register").is_empty(), "{seen:?}");
    assert_eq!(events(&seen, "authorize")[0]["client_id"], "mecha-cli");
}

#[tokio::test]
async fn a_server_without_oauth_is_not_logged_into() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let _server = start_sdk_server(&python, port, "streamable-http", &[]);
    let mut e = env();
    docs_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    let out = e
        .mecha(
            Api::OpenAi,
            &mock,
            "k",
            "mcp",
            &["login", "docs", "--no-browser"],
            "",
        )
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("publishes no OAuth metadata, so it takes no login"),
        "{}",
        stderr(&out)
    );
    assert!(!e.home.join("credentials/mcp-docs.json").exists());
}

/// A workspace that holds mecha's home (a workspace at `~`): the tokens in
/// it are out of every file tool's reach, and hidden from a confined shell.
#[tokio::test]
async fn the_tokens_are_read_by_no_tool_even_inside_the_workspace() {
    let mut e = env();
    e.home = e.ws.join("mh");
    let credentials = e.home.join("credentials");
    std::fs::create_dir_all(&credentials).unwrap();
    std::fs::write(credentials.join("mcp-docs.json"), "SECRET-TOKEN\n").unwrap();
    let confined = common::have("bwrap", "the confined half of this test", "bubblewrap");
    if confined {
        e.extra_config = "[sandbox]\nkind = \"bwrap\"\n".into();
    }
    let mock = MockModel::start(vec![
        tool_turn(&[("fs_read", json!({"path": "mh/credentials/mcp-docs.json"}))]),
        tool_turn(&[(
            "shell",
            json!({"command": "ls -A mh/credentials; cat mh/credentials/mcp-docs.json"}),
        )]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "read it"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let results = results_in(&mock, 2);
    let (read, is_error) = &results[0];
    assert!(*is_error, "{read}");
    assert!(read.contains("where mecha keeps the tokens"), "{read}");
    assert!(!read.contains("SECRET"), "{read}");
    if confined {
        let (shell, _) = &results[1];
        assert!(!shell.contains("SECRET"), "{shell}");
        assert!(shell.contains("No such file"), "an empty folder: {shell}");
    }
}

/// The server forgot the login (it restarted, its grants gone): the run's
/// start says to log in again, and so does the result of a call the model
/// makes to one of its tools anyway.
#[tokio::test]
async fn a_login_the_server_no_longer_honours_is_named_at_start_and_in_the_result() {
    let Some(python) = sdk_python() else {
        return;
    };
    let port = free_port();
    let server = start_sdk_server(&python, port, "streamable-http", &["--oauth"]);
    let mut e = env();
    docs_config(&mut e, port, "");
    let mock = MockModel::start(vec![]).await;
    assert!(login(&e, &mock, "docs", follow).await.status.success());
    drop(server);
    let _restarted = start_sdk_server(&python, port, "streamable-http", &["--oauth"]);
    let mock = MockModel::start(vec![
        tool_turn(&[("docs__add", json!({"a": 1, "b": 1}))]),
        MockReply::text("done"),
    ])
    .await;
    let out = e.run(Api::OpenAi, &mock, "k", &["--yes", "add"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run `mecha mcp login docs` again"),
        "{}",
        stderr(&out)
    );
    let (result, is_error) = results_in(&mock, 1).pop().unwrap();
    assert!(is_error, "{result}");
    assert!(
        result.contains("`docs__add` is not available this run")
            && result.contains("mecha mcp login docs"),
        "{result}"
    );
}
