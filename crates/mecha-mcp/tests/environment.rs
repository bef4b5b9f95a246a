#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What a server inherits: the environment allowlist, its working
//! directory, and where its command is looked up.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use mecha_mcp::{McpHub, SpawnOptions};
use serde_json::json;

/// mecha's environment as a test stands it up: secrets and a preload beside
/// the variables runtimes need.
fn hostile_parent(workspace: &Path) -> SpawnOptions {
    SpawnOptions::new(workspace)
        .with_parent_env([
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("HOME", "/home/tester"),
            ("LANG", "C.UTF-8"),
            ("TZ", "Europe/Paris"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("NOTES_API_TOKEN", "notes-token"),
        ])
        .with_timezone("America/New_York")
}

async fn server_env(hub: &McpHub, name: &str, ws: &Path) -> BTreeMap<String, String> {
    let out = call(hub, &format!("{name}__env"), json!({}), ws).await;
    serde_json::from_str(&out.content).unwrap()
}

#[tokio::test]
async fn the_server_sees_only_the_allowlist_passthrough_and_literal_env() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = fixture_config("fx", &[]);
    config.env_passthrough = vec!["NOTES_API_TOKEN".into(), "NOT_SET_ANYWHERE".into()];
    config.env.insert("NOTES_REGION".into(), "us".into());
    let hub = McpHub::start([config], &hostile_parent(ws.path())).await;
    let env = server_env(&hub, "fx", ws.path()).await;
    let expected: BTreeMap<String, String> = [
        ("HOME", "/home/tester"),
        ("LANG", "C.UTF-8"),
        ("MECHA_TZ", "America/New_York"),
        ("NOTES_API_TOKEN", "notes-token"),
        ("NOTES_REGION", "us"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("TZ", "Europe/Paris"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(env, expected);
}

#[tokio::test]
async fn an_explicit_mecha_tz_wins_and_no_timezone_means_none() {
    let ws = tempfile::tempdir().unwrap();
    let mut pinned = fixture_config("pinned", &[]);
    pinned.env.insert("MECHA_TZ".into(), "UTC".into());
    let hub = McpHub::start([pinned], &hostile_parent(ws.path())).await;
    assert_eq!(
        server_env(&hub, "pinned", ws.path()).await["MECHA_TZ"],
        "UTC"
    );

    let plain = opts(ws.path());
    let hub = McpHub::start([fixture_config("plain", &[])], &plain).await;
    assert!(
        !server_env(&hub, "plain", ws.path())
            .await
            .contains_key("MECHA_TZ")
    );
}

#[tokio::test]
async fn the_working_directory_is_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let cwd = call(&hub, "fx__cwd", json!({}), ws.path()).await.content;
    assert_eq!(
        Path::new(&cwd).canonicalize().unwrap(),
        ws.path().canonicalize().unwrap()
    );
    assert_ne!(
        Path::new(&cwd).canonicalize().unwrap(),
        std::env::current_dir().unwrap().canonicalize().unwrap()
    );
}

#[tokio::test]
async fn a_bare_command_resolves_against_mechas_path_not_the_servers() {
    let ws = tempfile::tempdir().unwrap();
    let bin_dir = fixture_mcp().parent().unwrap().to_str().unwrap().to_owned();
    let parent = SpawnOptions::new(ws.path()).with_parent_env([("PATH", bin_dir.as_str())]);
    let mut config = mecha_mcp::McpServerConfig::new("fx", "mecha-fixture-mcp");
    // The server's own PATH could never find it.
    config.env.insert("PATH".into(), "/nonexistent".into());
    let hub = McpHub::start([config], &parent).await;
    let env = server_env(&hub, "fx", ws.path()).await;
    assert_eq!(env["PATH"], "/nonexistent");

    // With mecha's PATH lacking it, the failure says so.
    let hub = McpHub::start(
        [mecha_mcp::McpServerConfig::new("fx", "mecha-fixture-mcp")],
        &SpawnOptions::new(ws.path()).with_parent_env([("PATH", "/usr/bin:/bin")]),
    )
    .await;
    let (reason, _) = failure(&hub.statuses(), "fx");
    assert_eq!(
        reason,
        "command `mecha-fixture-mcp` not found on PATH (/usr/bin:/bin); install it, or set \
         `command` to its absolute path"
    );
}
