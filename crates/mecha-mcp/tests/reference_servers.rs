#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The reference servers from npm, as users meet them:
//! `@modelcontextprotocol/server-everything` and `server-filesystem`.
//! `.ci/run` installs them; locally, a missing install is a printed skip.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use mecha_core::{Capabilities, Egress};
use mecha_mcp::{McpHub, McpServerConfig, ServerState, SpawnOptions};
use serde_json::json;

fn server(bin: &Path, name: &str, program: &str, args: &[&str]) -> McpServerConfig {
    let mut config = McpServerConfig::new(name, bin.join(program).to_string_lossy());
    config.args = args.iter().map(|a| (*a).to_owned()).collect();
    config
}

/// The real PATH (node must be found) plus secrets that must not leak.
fn parent(workspace: &Path) -> SpawnOptions {
    SpawnOptions::new(workspace).with_parent_env([
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", "/home/tester".to_owned()),
        ("ANTHROPIC_API_KEY", "sk-ant-secret".to_owned()),
        ("GITHUB_TOKEN", "ghp_secret".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret".to_owned()),
        ("LD_PRELOAD", "/tmp/evil.so".to_owned()),
    ])
}

#[tokio::test]
async fn server_everything() {
    let Some(bin) = npm_servers() else { return };
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start(
        [server(
            &bin,
            "everything",
            "mcp-server-everything",
            &["stdio"],
        )],
        &parent(ws.path()),
    )
    .await;
    let statuses = hub.statuses();
    let ServerState::Ready {
        protocol_version, ..
    } = &status(&statuses, "everything").state
    else {
        panic!("{}", status(&statuses, "everything"));
    };
    assert_eq!(protocol_version, "2025-06-18");
    let names = tool_names(&hub);
    for expected in [
        "everything__echo",
        "everything__get-sum",
        "everything__get-env",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    // Tools that need client capabilities mecha does not declare are not
    // offered.
    assert!(!names.iter().any(|n| n.contains("sampling")), "{names:?}");

    let echo = call(
        &hub,
        "everything__echo",
        json!({"message": "hi"}),
        ws.path(),
    )
    .await;
    assert!(!echo.is_error && !echo.external, "{echo:?}");
    assert!(echo.content.contains("hi"), "{}", echo.content);
    let sum = call(
        &hub,
        "everything__get-sum",
        json!({"a": 2, "b": 3}),
        ws.path(),
    )
    .await;
    assert!(sum.content.contains('5'), "{}", sum.content);

    // Annotations: echo is read-only and local; gzip-file-as-resource
    // reaches the open world.
    let echo_tool = tool(&hub, "everything__echo");
    assert!(echo_tool.read_only());
    assert_eq!(
        echo_tool.capabilities(),
        Capabilities {
            private_data: true,
            ..Capabilities::NONE
        }
    );
    let gzip = tool(&hub, "everything__gzip-file-as-resource");
    assert!(!gzip.read_only());
    assert_eq!(
        gzip.capabilities(),
        Capabilities {
            private_data: true,
            untrusted_input: true,
            egress: Egress::Chosen,
            destructive: false
        }
    );

    // A real server's view of its environment: nothing of mecha's secrets.
    let env = call(&hub, "everything__get-env", json!({}), ws.path()).await;
    let start = env.content.find('{').unwrap();
    let env: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&env.content[start..]).unwrap();
    let keys: Vec<&str> = env.keys().map(String::as_str).collect();
    assert_eq!(keys, ["HOME", "PATH"], "{env:?}");

    // Other result shapes come back as text or placeholders.
    let image = call(&hub, "everything__get-tiny-image", json!({}), ws.path()).await;
    assert!(
        image.images.iter().any(|i| i.media_type == "image/png"),
        "{image:?}"
    );
    let links = call(
        &hub,
        "everything__get-resource-links",
        json!({"count": 2}),
        ws.path(),
    )
    .await;
    assert!(
        links.content.contains("[resource link: ")
            && links
                .content
                .contains("; read it with everything__read_resource]"),
        "{}",
        links.content
    );
    // The link is no dead end: the reader tool follows it.
    let uri = links
        .content
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(uri, _)| uri.to_owned())
        .unwrap();
    let reader = tool(&hub, "everything__read_resource");
    assert!(reader.read_only());
    let read = call(
        &hub,
        "everything__read_resource",
        json!({ "uri": uri }),
        ws.path(),
    )
    .await;
    assert!(!read.is_error, "{}", read.content);
    assert!(
        read.content.starts_with(&format!("[resource {uri}")),
        "{}",
        read.content
    );
    let structured = call(
        &hub,
        "everything__get-structured-content",
        json!({"location": "New York"}),
        ws.path(),
    )
    .await;
    assert!(!structured.is_error, "{}", structured.content);
    assert!(
        structured.content.contains("temperature"),
        "{}",
        structured.content
    );
}

#[tokio::test]
async fn server_filesystem() {
    let Some(bin) = npm_servers() else { return };
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.md"), "# notes\nbuy milk\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();

    let hub = McpHub::start(
        [server(
            &bin,
            "fs",
            "mcp-server-filesystem",
            &[root.to_str().unwrap()],
        )],
        &parent(&root),
    )
    .await;
    let read = call(
        &hub,
        "fs__read_text_file",
        json!({"path": root.join("notes.md")}),
        &root,
    )
    .await;
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.contains("buy milk"), "{}", read.content);
    assert!(!read.external, "a local file is not outside content");

    let denied = call(
        &hub,
        "fs__read_text_file",
        json!({"path": outside.path().join("secret.txt")}),
        &root,
    )
    .await;
    assert!(denied.is_error, "{}", denied.content);
    assert!(!denied.content.contains("s3cret"));

    // Annotations: readers are read-only, writers destructive, nothing is
    // open-world.
    let reader = tool(&hub, "fs__read_text_file");
    assert!(reader.read_only());
    assert!(!reader.capabilities().destructive);
    let writer = tool(&hub, "fs__write_file");
    assert!(!writer.read_only());
    assert!(writer.capabilities().destructive);
    let mkdir = tool(&hub, "fs__create_directory");
    assert!(!mkdir.read_only() && !mkdir.capabilities().destructive);
    for t in hub.tools() {
        assert_eq!(t.capabilities().egress, Egress::None, "{}", t.name());
        assert!(t.capabilities().private_data, "{}", t.name());
    }

    let wrote = call(
        &hub,
        "fs__write_file",
        json!({"path": root.join("out.txt"), "content": "written"}),
        &root,
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.content);
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).unwrap(),
        "written"
    );
}
