#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A well-behaved server through the hub: naming, capabilities from
//! annotations, result shapes, pagination, odd schemas, protocol versions.

mod common;

use common::*;
use mecha_core::{Capabilities, Egress};
use mecha_mcp::{McpHub, ServerState};
use serde_json::json;

#[tokio::test]
async fn tools_are_prefixed_and_calls_work() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let names = tool_names(&hub);
    assert!(names.contains(&"fx__echo".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("fx__")));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools come sorted");

    let out = call(&hub, "fx__echo", json!({"text": "hello"}), ws.path()).await;
    assert_eq!(out.content, "hello");
    assert!(!out.is_error && !out.external);

    let origin = hub.origin("fx__echo").unwrap();
    assert_eq!(
        (origin.server.as_str(), origin.raw_name.as_str()),
        ("fx", "echo")
    );

    match &status(&hub.statuses(), "fx").state {
        ServerState::Ready {
            protocol_version,
            server_info,
            tools,
            ..
        } => {
            assert_eq!(protocol_version, "2025-06-18");
            assert!(
                server_info
                    .as_deref()
                    .unwrap()
                    .starts_with("mecha-fixture-mcp")
            );
            assert_eq!(tools.len(), names.len());
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn annotations_become_capabilities() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let caps = |n: &str| tool(&hub, n).capabilities();
    let private_only = Capabilities {
        private_data: true,
        ..Capabilities::NONE
    };
    assert_eq!(caps("fx__echo"), private_only);
    assert!(!tool(&hub, "fx__echo").read_only());
    assert_eq!(
        caps("fx__echo_open"),
        Capabilities {
            private_data: true,
            untrusted_input: true,
            egress: Egress::Chosen,
            destructive: false
        }
    );
    assert!(caps("fx__destroy").destructive);
    assert!(tool(&hub, "fx__read").read_only());
    assert_eq!(caps("fx__read"), private_only);

    // Content from an open-world tool is outside content; the same text
    // from a local one is not.
    let open = call(&hub, "fx__echo_open", json!({"text": "x"}), ws.path()).await;
    assert!(open.external);
}

#[tokio::test]
async fn forced_capabilities_widen_and_override_read_only() {
    let ws = tempfile::tempdir().unwrap();
    let mut config = fixture_config("fx", &[]);
    config.force.destructive = true;
    config.force.egress = mecha_core::ForcedEgress::Blind;
    let hub = McpHub::start([config], &opts(ws.path())).await;
    let read = tool(&hub, "fx__read");
    assert!(!read.read_only(), "forced destructive beats readOnlyHint");
    assert!(read.capabilities().destructive);
    assert_eq!(read.capabilities().egress, Egress::Blind);
    // Forcing never narrows: the open-world tool stays a chosen send.
    assert_eq!(
        tool(&hub, "fx__echo_open").capabilities().egress,
        Egress::Chosen
    );
}

#[tokio::test]
async fn result_shapes() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let text = |out: mecha_core::ToolOutput| out.content;
    let image = call(&hub, "fx__image", json!({}), ws.path()).await;
    assert_eq!(image.content, "a screenshot");
    assert_eq!(image.images.len(), 1, "an image block is an image");
    assert_eq!(image.images[0].media_type, "image/png");
    assert_eq!(
        text(call(&hub, "fx__resource", json!({}), ws.path()).await),
        "[resource file:///notes.txt]\nresource text\n[resource file:///blob.bin: \
         application/octet-stream, 8 bytes]"
    );
    assert_eq!(
        text(call(&hub, "fx__resource_link", json!({}), ws.path()).await),
        "[resource link: report <file:///report.pdf>]"
    );
    let structured = call(&hub, "fx__structured", json!({}), ws.path()).await;
    let value: serde_json::Value = serde_json::from_str(&structured.content).unwrap();
    assert_eq!(value, json!({"temperature": 21.5, "unit": "C"}));

    let fail = call(&hub, "fx__fail", json!({}), ws.path()).await;
    assert!(fail.is_error && !fail.external);
    assert_eq!(fail.content, "it went wrong");

    // A result bigger than the call's budget is spilled as it is rendered,
    // never built whole; the spill file holds all of it.
    let big_ctx = ctx(ws.path());
    let big = tool(&hub, "fx__big")
        .call(json!({"bytes": 2_000_000}), &big_ctx)
        .await
        .unwrap();
    assert!(big.content.len() <= 1 << 20, "{} bytes", big.content.len());
    assert!(
        big.content.contains("of 2000000 bytes"),
        "{}",
        &big.content[big.content.len() - 600..]
    );
    let at = big.content.rfind("saved at ").unwrap() + "saved at ".len();
    let path = big.content[at..].split(" — ").next().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 2_000_000);

    // Input that is not an object is refused by the harness, not external.
    let refused = tool(&hub, "fx__echo")
        .call(json!("text"), &ctx(ws.path()))
        .await
        .unwrap();
    assert!(refused.is_error && !refused.external);
    assert!(refused.content.contains("JSON object"));
}

#[tokio::test]
async fn a_tool_added_later_is_callable() {
    let ws = tempfile::tempdir().unwrap();
    // `added` exists only after `notify`; calling it before is refused by the
    // server with -32602.
    let hub = McpHub::start([fixture_config("fx", &[])], &opts(ws.path())).await;
    let _ = call(&hub, "fx__notify", json!({}), ws.path()).await;
    let tools = hub.take_changed().await.expect("the list changed");
    let added = tools.iter().find(|t| t.name() == "fx__added").unwrap();
    let out = added.call(json!({}), &ctx(ws.path())).await.unwrap();
    assert_eq!(out.content, "added tool answered");
    assert!(!out.is_error);
}

#[tokio::test]
async fn pagination_is_followed() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start(
        [fixture_config(
            "fx",
            &["--extra-tools", "40", "--page-size", "7"],
        )],
        &opts(ws.path()),
    )
    .await;
    let names = tool_names(&hub);
    assert!(names.contains(&"fx__echo".to_owned()));
    assert!(names.contains(&"fx__extra_000".to_owned()));
    assert!(names.contains(&"fx__extra_039".to_owned()));
    assert_eq!(names.iter().filter(|n| n.contains("extra_")).count(), 40);
}

#[tokio::test]
async fn odd_schemas_cost_nothing_but_their_schema() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start([fixture_config("fx", &["--odd-schemas"])], &opts(ws.path())).await;
    for name in ["fx__no_schema", "fx__string_schema", "fx__array_schema"] {
        assert_eq!(tool(&hub, name).input_schema(), json!({"type": "object"}));
    }
    let out = call(&hub, "fx__no_schema", json!({}), ws.path()).await;
    assert_eq!(out.content, "no_schema");
    assert_eq!(
        tool(&hub, "fx__echo").input_schema(),
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
}

#[tokio::test]
async fn an_older_protocol_version_is_accepted() {
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start(
        [fixture_config("old", &["--protocol", "2024-11-05"])],
        &opts(ws.path()),
    )
    .await;
    match &status(&hub.statuses(), "old").state {
        ServerState::Ready {
            protocol_version, ..
        } => assert_eq!(protocol_version, "2024-11-05"),
        other => panic!("{other:?}"),
    }
    let out = call(&hub, "old__echo", json!({"text": "hi"}), ws.path()).await;
    assert_eq!(out.content, "hi");
}

#[tokio::test]
async fn odd_raw_names_are_sanitised_and_the_raw_name_is_what_the_server_gets() {
    let ws = tempfile::tempdir().unwrap();
    let long = "t".repeat(90);
    let hub = McpHub::start(
        [fixture_config(
            "fx",
            &[
                "--tool-name",
                "get.weather",
                "--tool-name",
                "get_weather",
                "--tool-name",
                &long,
            ],
        )],
        &opts(ws.path()),
    )
    .await;
    let names = tool_names(&hub);
    assert!(names.iter().all(|n| {
        n.len() <= 64
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }));
    // The safely spelt one keeps its name; the other gets a hash suffix.
    assert!(names.contains(&"fx__get_weather".to_owned()));
    let dotted = names
        .iter()
        .find(|n| n.starts_with("fx__get_weather_"))
        .expect("hashed name");
    assert_eq!(hub.origin(dotted).unwrap().raw_name, "get.weather");
    let out = call(&hub, dotted, json!({"text": "x"}), ws.path()).await;
    assert_eq!(out.content, "get.weather: x");
    let cut = names.iter().find(|n| n.starts_with("fx__ttt")).unwrap();
    assert_eq!(cut.len(), 64);
    let out = call(&hub, cut, json!({"text": "y"}), ws.path()).await;
    assert_eq!(out.content, format!("{long}: y"));
}

#[tokio::test]
async fn prefix_tools_false_registers_raw_names_and_collisions_fail_loudly() {
    let ws = tempfile::tempdir().unwrap();
    let bare = |name: &str| {
        let mut config = fixture_config(name, &["--tool-name", "get.weather"]);
        config.prefix_tools = false;
        config
    };
    let alpha = McpHub::start([bare("alpha")], &opts(ws.path())).await;
    let names = tool_names(&alpha);
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    // Sanitised the same way as prefixed names.
    assert!(names.contains(&"get_weather".to_owned()), "{names:?}");
    assert!(!alpha.origin("echo").unwrap().prefixed);

    let mut registry = mecha_core::Registry::new();
    alpha.register_into(&mut registry).unwrap();
    assert_eq!(registry.len(), names.len());

    // A second unprefixed server collides with what is already registered.
    let beta = McpHub::start([bare("beta")], &opts(ws.path())).await;
    let e = beta.register_into(&mut registry).unwrap_err();
    assert_eq!(e.server, "beta");
    assert_eq!(e.other_server, None);
    assert!(
        e.to_string()
            .contains("MCP server `beta` registers a tool named `big`"),
        "{e}"
    );
    assert!(e.to_string().contains("prefix_tools = true"), "{e}");
    assert_eq!(
        registry.len(),
        names.len(),
        "nothing of beta's was registered"
    );

    // Two unprefixed servers in one hub: the error names both.
    let both = McpHub::start([bare("alpha"), bare("beta")], &opts(ws.path())).await;
    let mut registry = mecha_core::Registry::new();
    let e = both.register_into(&mut registry).unwrap_err();
    assert_eq!(
        (e.server.as_str(), e.other_server.as_deref()),
        ("beta", Some("alpha"))
    );
    assert!(
        e.to_string()
            .starts_with("MCP servers `alpha` and `beta` both register a tool named `big`"),
        "{e}"
    );
    assert!(registry.is_empty(), "all or nothing");

    // Prefixed beside unprefixed is fine.
    let mixed = McpHub::start(
        [bare("alpha"), fixture_config("beta", &[])],
        &opts(ws.path()),
    )
    .await;
    mixed
        .register_into(&mut mecha_core::Registry::new())
        .unwrap();
}
