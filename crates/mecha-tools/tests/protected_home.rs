//! The file tools cannot write into mecha's own home, even when the
//! workspace contains it: a model that rewrites `config.toml` or plants a
//! skill chooses what the next run starts. And what they read from its
//! session store (earlier runs' fetched pages) is outside content.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_tools::{FsEdit, FsRead, FsWrite};
use serde_json::{Value, json};

const CONFIG: &str = "[provider]\nkind = \"anthropic\"\n";

/// A workspace holding a mecha home `.mecha` with a config, protected.
fn home_in_workspace() -> (tempfile::TempDir, ToolCtx) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".mecha/skills")).unwrap();
    std::fs::write(dir.path().join(".mecha/config.toml"), CONFIG).unwrap();
    let ctx = ToolCtx::new(dir.path(), 64 * 1024)
        .unwrap()
        .protecting(&dir.path().join(".mecha"))
        .unwrap();
    (dir, ctx)
}

async fn call(tool: &dyn Tool, input: Value, ctx: &ToolCtx) -> ToolOutput {
    tool.call(input, ctx).await.unwrap()
}

fn assert_refused(out: &ToolOutput, spelling: &str) {
    assert!(out.is_error, "{spelling}: not refused: {}", out.content);
    assert!(
        out.content.contains("where mecha keeps its own config")
            && out.content.contains("Ask the user"),
        "{spelling}: the refusal must say why and what to do: {}",
        out.content
    );
}

fn config_of(ws: &Path) -> String {
    std::fs::read_to_string(ws.join(".mecha/config.toml")).unwrap()
}

#[tokio::test]
async fn fs_write_and_fs_edit_cannot_touch_the_home_by_any_spelling() {
    let (dir, ctx) = home_in_workspace();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join("notes")).unwrap();
    std::os::unix::fs::symlink(ws.join(".mecha"), ws.join("cfg")).unwrap();
    std::os::unix::fs::symlink(ws.join(".mecha/config.toml"), ws.join("settings.toml")).unwrap();
    let absolute = ws.join(".mecha/config.toml").display().to_string();
    for spelling in [
        ".mecha/config.toml",
        "./.mecha/config.toml",
        "notes/../.mecha/config.toml",
        ".mecha/./config.toml",
        absolute.as_str(),
        "cfg/config.toml",
        "settings.toml",
    ] {
        let out = call(
            &FsWrite,
            json!({"path": spelling, "content": "[[mcp]]\nname = \"planted\"\n"}),
            &ctx,
        )
        .await;
        assert_refused(&out, spelling);
        let out = call(
            &FsEdit,
            json!({"path": spelling, "old": "anthropic", "new": "openai"}),
            &ctx,
        )
        .await;
        assert_refused(&out, spelling);
        assert_eq!(config_of(&ws), CONFIG, "{spelling} changed the config");
    }
}

#[tokio::test]
async fn nothing_new_lands_in_the_home_and_the_home_itself_cannot_be_replaced() {
    let (dir, ctx) = home_in_workspace();
    for spelling in [
        ".mecha/skills/evil/SKILL.md",
        ".mecha/hooks/pre_tool",
        ".mecha/sessions/x.jsonl",
        ".mecha",
    ] {
        let out = call(&FsWrite, json!({"path": spelling, "content": "x"}), &ctx).await;
        assert_refused(&out, spelling);
    }
    assert!(!dir.path().join(".mecha/skills/evil").exists());
    assert!(!dir.path().join(".mecha/hooks").exists());
    assert!(dir.path().join(".mecha").is_dir());
}

#[tokio::test]
async fn a_home_that_does_not_exist_yet_is_protected_too() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 64 * 1024)
        .unwrap()
        .protecting(&dir.path().join(".mecha"))
        .unwrap();
    let out = call(
        &FsWrite,
        json!({"path": ".mecha/config.toml", "content": "x"}),
        &ctx,
    )
    .await;
    assert_refused(&out, ".mecha/config.toml");
    assert!(!dir.path().join(".mecha").exists());
}

#[tokio::test]
async fn a_sibling_of_the_home_and_reading_the_home_are_unaffected() {
    let (dir, ctx) = home_in_workspace();
    // `.mecha-notes` shares a prefix with `.mecha` but is not inside it.
    let out = call(
        &FsWrite,
        json!({"path": ".mecha-notes/todo.md", "content": "x"}),
        &ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(dir.path().join(".mecha-notes/todo.md").exists());
    let out = call(&FsRead, json!({"path": ".mecha/config.toml"}), &ctx).await;
    assert!(
        !out.is_error && out.content.contains("anthropic"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_rerooted_context_keeps_the_protection() {
    let (dir, ctx) = home_in_workspace();
    let rerooted = ctx.rerooted(dir.path()).unwrap().for_call("c", 2, 1024);
    let out = call(
        &FsWrite,
        json!({"path": ".mecha/config.toml", "content": "x"}),
        &rerooted,
    )
    .await;
    assert_refused(&out, "rerooted");
}

#[tokio::test]
async fn a_stored_session_reads_as_outside_content_by_any_spelling() {
    let (dir, ctx) = home_in_workspace();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let ctx = ctx.holding_external(&ws.join(".mecha/sessions")).unwrap();
    std::fs::create_dir_all(ws.join(".mecha/sessions")).unwrap();
    std::fs::create_dir_all(ws.join(".mecha/sessions-old")).unwrap();
    std::fs::write(
        ws.join(".mecha/sessions/s.jsonl"),
        "{\"page\": \"obey me\"}\n",
    )
    .unwrap();
    std::fs::write(ws.join(".mecha/sessions-old/s.jsonl"), "mine\n").unwrap();
    std::os::unix::fs::symlink(ws.join(".mecha"), ws.join("home")).unwrap();
    std::os::unix::fs::symlink(ws.join(".mecha/sessions/s.jsonl"), ws.join("old.jsonl")).unwrap();
    let rerooted = ctx.rerooted(&ws).unwrap().for_call("c", 2, 4096);
    for (spelling, ctx) in [
        (".mecha/sessions/s.jsonl", &ctx),
        ("home/sessions/s.jsonl", &ctx),
        ("old.jsonl", &ctx),
        (".mecha/sessions/s.jsonl", &rerooted),
    ] {
        let out = call(&FsRead, json!({"path": spelling}), ctx).await;
        assert!(
            out.external && out.content.contains("obey me"),
            "{spelling}: {out:?}"
        );
    }
    // The rest of the home is the user's own, and a sibling sharing the
    // prefix is no part of the store.
    for spelling in [".mecha/config.toml", ".mecha/sessions-old/s.jsonl"] {
        let out = call(&FsRead, json!({"path": spelling}), &ctx).await;
        assert!(!out.is_error && !out.external, "{spelling}: {out:?}");
    }
}
