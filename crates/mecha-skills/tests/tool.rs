//! The skill tool: level 2 and 3, narrowing, carried state, and attacks on
//! `file`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{simple, skill};
use mecha_core::{Capabilities, Narrowing, Tool, ToolCtx, ToolOutput};
use mecha_skills::{SkillTool, Store};
use serde_json::{Value, json};

struct Setup {
    store: tempfile::TempDir,
    _ws: tempfile::TempDir,
    ctx: ToolCtx,
    tool: SkillTool,
}

fn setup() -> Setup {
    let store = tempfile::tempdir().unwrap();
    skill(
        store.path(),
        "plain",
        simple("plain", "", "# Plain\n\nStep one.").as_bytes(),
    );
    skill(
        store.path(),
        "narrow",
        simple("narrow", "tools: [fs_read, fs_list]\n", "# Narrow").as_bytes(),
    );
    let dir = store.path().join("plain");
    std::fs::create_dir_all(dir.join("reference")).unwrap();
    std::fs::write(dir.join("TEMPLATE.md"), "Dear {name},\n").unwrap();
    std::fs::write(dir.join("reference/notes.md"), "notes\n").unwrap();
    std::fs::write(dir.join("font.ttf"), [0u8, 1, 0, 2]).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 64 * 1024).unwrap();
    let loaded = Store::load(store.path());
    assert!(loaded.failures.is_empty(), "{:?}", loaded.failures);
    let tool = SkillTool::new(loaded.skills);
    Setup {
        store,
        _ws: ws,
        ctx,
        tool,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

fn call(s: &Setup, input: Value) -> ToolOutput {
    rt().block_on(s.tool.call(input, &s.ctx)).unwrap()
}

#[test]
fn the_tool_declares_no_capabilities_and_is_read_only() {
    let s = setup();
    assert_eq!(s.tool.name(), "skill");
    assert_eq!(s.tool.capabilities(), Capabilities::NONE);
    assert!(s.tool.read_only());
    assert!(s.tool.argument_kinds().is_empty());
    assert_eq!(s.tool.carried(), ["narrow", "plain"]);
    assert_eq!(s.tool.get("plain").unwrap().body, "# Plain\n\nStep one.");
}

#[test]
fn level2_returns_the_body_and_names_the_bundled_files() {
    let s = setup();
    let out = call(&s, json!({"name": "plain"}));
    assert!(!out.is_error && !out.external, "{out:?}");
    assert_eq!(
        out.content,
        "[skill `plain` loaded; its procedure follows. Its bundled files, read with `skill` and \
         `file` (relative to the skill's folder): TEMPLATE.md, font.ttf, reference/notes.md]\n\n\
         # Plain\n\nStep one."
    );
    assert_eq!(out.narrows, None);
}

#[test]
fn a_long_body_is_kept_within_the_call_budget() {
    let store = tempfile::tempdir().unwrap();
    let body = "line of the procedure\n".repeat(2000);
    skill(store.path(), "big", simple("big", "", &body).as_bytes());
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(ws.path(), 4096).unwrap();
    let tool = SkillTool::new(Store::load(store.path()).skills);
    let out = rt()
        .block_on(tool.call(json!({"name": "big"}), &ctx))
        .unwrap();
    assert!(out.content.len() <= 4096, "{} bytes", out.content.len());
    assert!(
        out.content.contains("[truncated by the harness"),
        "{}",
        out.content
    );
}

#[test]
fn narrows_is_set_only_for_a_skill_with_tools() {
    let s = setup();
    let out = call(&s, json!({"name": "narrow"}));
    assert_eq!(
        out.narrows,
        Some(Narrowing {
            by: "narrow".into(),
            tools: vec!["fs_read".into(), "fs_list".into()]
        })
    );
    assert_eq!(call(&s, json!({"name": "plain"})).narrows, None);
}

#[test]
fn an_unknown_skill_is_refused_naming_the_carried_ones() {
    let s = setup();
    let out = call(&s, json!({"name": "nope"}));
    assert!(out.is_error && out.harness, "{out:?}");
    assert_eq!(
        out.content,
        "no skill named `nope`; this run carries: narrow, plain"
    );
}

#[test]
fn carried_state_holds_each_loaded_body_once_in_load_order() {
    let s = setup();
    assert_eq!(s.tool.carried_state(), None);
    for _ in 0..3 {
        call(&s, json!({"name": "narrow"}));
        call(&s, json!({"name": "plain"}));
    }
    call(&s, json!({"name": "plain", "file": "TEMPLATE.md"}));
    let state = s.tool.carried_state().unwrap();
    assert_eq!(state.matches("# Plain\n\nStep one.").count(), 1, "{state}");
    assert_eq!(state.matches("# Narrow").count(), 1, "{state}");
    assert!(state.find("# Narrow") < state.find("# Plain"), "{state}");
    assert!(
        !state.contains("Dear"),
        "a bundled file is not a loaded body: {state}"
    );
}

#[test]
fn level3_returns_a_bundled_file() {
    let s = setup();
    let out = call(&s, json!({"name": "plain", "file": "TEMPLATE.md"}));
    assert_eq!(out.content, "Dear {name},\n");
    assert!(!out.is_error && !out.external);
    let out = call(&s, json!({"name": "plain", "file": "reference/./notes.md"}));
    assert_eq!(out.content, "notes\n");
}

#[test]
fn a_binary_file_is_refused() {
    let s = setup();
    let out = call(&s, json!({"name": "plain", "file": "font.ttf"}));
    assert!(out.is_error && out.harness, "{out:?}");
    assert_eq!(
        out.content,
        "`font.ttf` in skill `plain` is a binary file; the skill tool returns text files only"
    );
}

#[test]
fn a_missing_file_names_the_files_there_are() {
    let s = setup();
    let out = call(&s, json!({"name": "plain", "file": "nope.md"}));
    assert!(out.is_error, "{out:?}");
    assert!(out.content.contains("TEMPLATE.md"), "{}", out.content);
}

fn assert_outside(out: &ToolOutput) {
    assert!(out.is_error && out.harness, "{out:?}");
    assert!(
        out.content.contains("outside the folder of skill `plain`"),
        "{}",
        out.content
    );
}

#[test]
fn dot_dot_climbing_out_is_refused() {
    let s = setup();
    // A sibling skill's body, and a file beside the store.
    std::fs::write(s.store.path().join("secret.txt"), "secret").unwrap();
    for file in [
        "../narrow/SKILL.md",
        "../secret.txt",
        "reference/../../secret.txt",
    ] {
        let out = call(&s, json!({"name": "plain", "file": file}));
        assert_outside(&out);
        assert!(!out.content.contains("secret\n"));
    }
}

#[test]
fn an_absolute_path_is_refused() {
    let s = setup();
    let out = call(&s, json!({"name": "plain", "file": "/etc/passwd"}));
    assert_outside(&out);
    assert!(!out.content.contains("root:"));
}

#[test]
fn a_symlink_out_is_refused() {
    let s = setup();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("key"), "private key").unwrap();
    let dir = s.store.path().join("plain");
    symlink(outside.path().join("key"), dir.join("link.md")).unwrap();
    symlink(outside.path(), dir.join("linkdir")).unwrap();
    for file in ["link.md", "linkdir/key"] {
        let out = call(&s, json!({"name": "plain", "file": file}));
        assert_outside(&out);
        assert!(!out.content.contains("private key"));
    }
}

/// Another thread swaps a folder inside the skill for a symlink to `/`
/// while the tool reads through it thousands of times. The check sees a
/// real folder; by the open it may be the symlink. No read may land
/// outside, because the open itself is confined beneath the skill's folder.
#[test]
fn racing_a_folder_swap_never_reads_outside() {
    let s = setup();
    let dir = s.store.path().join("plain");
    let sub = dir.join("sub");
    let decoy = dir.join("decoy");
    std::fs::create_dir_all(sub.join("etc")).unwrap();
    std::fs::write(sub.join("etc/passwd"), "inside-marker\n").unwrap();
    symlink("/", &decoy).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, sub, decoy) = (Arc::clone(&stop), sub.clone(), decoy.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &sub,
                    rustix::fs::CWD,
                    &decoy,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let rt = rt();
    let (mut inside, mut refused) = (0, 0);
    for _ in 0..5000 {
        let out = rt
            .block_on(
                s.tool
                    .call(json!({"name": "plain", "file": "sub/etc/passwd"}), &s.ctx),
            )
            .unwrap();
        assert!(
            !out.content.contains("root:"),
            "read outside: {}",
            out.content
        );
        if out.is_error {
            refused += 1;
        } else {
            assert_eq!(out.content, "inside-marker\n");
            inside += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        swaps > 1000,
        "only {swaps} swaps; the race was not exercised"
    );
    assert!(
        inside > 0,
        "never read the inside file; the test proves nothing"
    );
    assert!(
        refused > 0,
        "never saw the symlink; the test proves nothing"
    );
}
