//! The path jail, attacked: every way out of the workspace a model could
//! name, through the real file tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_tools::{FsEdit, FsList, FsRead, FsWrite};
use serde_json::{Value, json};

struct Setup {
    _root: tempfile::TempDir,
    ws: std::path::PathBuf,
    outside: std::path::PathBuf,
    ctx: ToolCtx,
}

fn setup() -> Setup {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::write(ws.join("inside.txt"), "hello").unwrap();
    let ctx = ToolCtx::new(&ws, 64 * 1024).unwrap();
    Setup {
        _root: root,
        ws,
        outside,
        ctx,
    }
}

async fn call(tool: &dyn Tool, input: Value, ctx: &ToolCtx) -> ToolOutput {
    tool.call(input, ctx).await.unwrap()
}

fn assert_refused(out: &ToolOutput) {
    assert!(out.is_error, "expected a refusal, got: {}", out.content);
    assert!(
        !out.content.contains("TOP-SECRET"),
        "leaked: {}",
        out.content
    );
    assert!(!out.external, "a refusal is the harness's own words");
}

#[tokio::test]
async fn dot_dot_is_refused() {
    let s = setup();
    std::fs::create_dir(s.ws.join("sub")).unwrap();
    for path in [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "./../outside/secret.txt",
    ] {
        let out = call(&FsRead, json!({"path": path}), &s.ctx).await;
        assert_refused(&out);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
    }
}

#[tokio::test]
async fn absolute_paths_outside_are_refused_and_inside_allowed() {
    let s = setup();
    let outside = s.outside.join("secret.txt");
    assert_refused(&call(&FsRead, json!({"path": outside}), &s.ctx).await);
    assert_refused(&call(&FsRead, json!({"path": "/etc/passwd"}), &s.ctx).await);
    let inside = s.ws.join("inside.txt");
    let out = call(&FsRead, json!({"path": inside}), &s.ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("hello"));
}

#[tokio::test]
async fn dot_dot_through_a_missing_directory_is_refused() {
    let s = setup();
    let out = call(
        &FsWrite,
        json!({"path": "nope/../../outside/planted.txt", "content": "x"}),
        &s.ctx,
    )
    .await;
    assert_refused(&out);
    assert!(!s.outside.join("planted.txt").exists());
}

#[tokio::test]
async fn symlink_to_an_outside_file_is_refused_for_every_tool() {
    let s = setup();
    symlink(s.outside.join("secret.txt"), s.ws.join("link")).unwrap();
    assert_refused(&call(&FsRead, json!({"path": "link"}), &s.ctx).await);
    assert_refused(
        &call(
            &FsWrite,
            json!({"path": "link", "content": "pwned"}),
            &s.ctx,
        )
        .await,
    );
    assert_refused(
        &call(
            &FsEdit,
            json!({"path": "link", "old": "TOP", "new": "pwned"}),
            &s.ctx,
        )
        .await,
    );
    assert_eq!(
        std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(),
        "TOP-SECRET"
    );
}

#[tokio::test]
async fn symlink_to_an_outside_directory_with_a_new_target_is_refused() {
    let s = setup();
    symlink(&s.outside, s.ws.join("dir")).unwrap();
    let out = call(
        &FsWrite,
        json!({"path": "dir/new/file.txt", "content": "x"}),
        &s.ctx,
    )
    .await;
    assert_refused(&out);
    assert!(!s.outside.join("new").exists());
    assert_refused(&call(&FsList, json!({"path": "dir"}), &s.ctx).await);
    assert_refused(&call(&FsRead, json!({"path": "dir/secret.txt"}), &s.ctx).await);
}

#[tokio::test]
async fn dangling_symlink_pointing_outside_is_refused() {
    let s = setup();
    symlink(
        s.outside.join("created-by-attack.txt"),
        s.ws.join("dangling"),
    )
    .unwrap();
    let out = call(
        &FsWrite,
        json!({"path": "dangling", "content": "x"}),
        &s.ctx,
    )
    .await;
    assert_refused(&out);
    assert!(!s.outside.join("created-by-attack.txt").exists());
}

#[tokio::test]
async fn symlinks_that_stay_inside_are_followed() {
    let s = setup();
    symlink(s.ws.join("inside.txt"), s.ws.join("alias")).unwrap();
    let out = call(&FsRead, json!({"path": "alias"}), &s.ctx).await;
    assert!(
        !out.is_error && out.content.contains("hello"),
        "{}",
        out.content
    );
}

/// A hard link cannot be told from the file by its path. Writes replace the
/// directory entry (temp file + rename), so the link is cut and the outside
/// file keeps its contents; reads of it are allowed, as the inode is one the
/// workspace already holds.
#[tokio::test]
async fn writing_through_a_hard_link_never_changes_the_outside_file() {
    let s = setup();
    std::fs::hard_link(s.outside.join("secret.txt"), s.ws.join("hard")).unwrap();
    let out = call(
        &FsWrite,
        json!({"path": "hard", "content": "overwritten"}),
        &s.ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    let out = call(
        &FsEdit,
        json!({"path": "hard", "old": "overwritten", "new": "edited"}),
        &s.ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(),
        "TOP-SECRET"
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.join("hard")).unwrap(),
        "edited"
    );
}

#[tokio::test]
async fn the_spill_directory_is_readable_but_not_writable() {
    let s = setup();
    let spill_file = s.ctx.spill().path().unwrap().join("x.txt");
    std::fs::write(&spill_file, "spilled").unwrap();
    let out = call(&FsRead, json!({"path": spill_file}), &s.ctx).await;
    assert!(out.content.contains("spilled"), "{}", out.content);
    let out = call(
        &FsWrite,
        json!({"path": spill_file, "content": "x"}),
        &s.ctx,
    )
    .await;
    assert_refused(&out);
}

#[tokio::test]
async fn a_rerooted_context_cannot_read_the_old_spill() {
    let s = setup();
    let spill_file = s.ctx.spill().path().unwrap().join("case-a.txt");
    std::fs::write(&spill_file, "TOP-SECRET").unwrap();
    let other_ws = tempfile::tempdir().unwrap();
    let other = s.ctx.rerooted(other_ws.path()).unwrap();
    // Before the new context has spilled, and after.
    assert_refused(&call(&FsRead, json!({"path": spill_file}), &other).await);
    assert_ne!(other.spill().path().unwrap(), s.ctx.spill().path().unwrap());
    assert_refused(&call(&FsRead, json!({"path": spill_file}), &other).await);
}

/// Another thread swaps a directory for a symlink to `/` while fs_read reads
/// through it thousands of times. The check sees a real directory; by the
/// open it may be a symlink. Zero reads may land outside, because the open
/// itself is confined beneath the root.
#[test]
fn racing_a_directory_swap_never_reads_outside() {
    let s = setup();
    let sub = s.ws.join("sub");
    let decoy = s.ws.join("decoy");
    std::fs::create_dir_all(sub.join("etc")).unwrap();
    std::fs::write(sub.join("etc/passwd"), "inside-marker\n").unwrap();
    symlink("/", &decoy).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, sub, decoy) = (Arc::clone(&stop), sub.clone(), decoy.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Atomic exchange: `sub` is always either the real directory
                // or the symlink to `/`, never missing.
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (mut inside, mut refused) = (0, 0);
    rt.block_on(async {
        for _ in 0..5000 {
            let out = call(&FsRead, json!({"path": "sub/etc/passwd"}), &s.ctx).await;
            assert!(
                !out.content.contains("root:"),
                "read outside the jail: {}",
                out.content
            );
            if out.is_error {
                refused += 1;
            } else {
                assert!(out.content.contains("inside-marker"), "{}", out.content);
                inside += 1;
            }
        }
    });
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(
        swaps > 1000,
        "only {swaps} swaps; the race was not exercised"
    );
    assert!(
        inside > 0,
        "the race never read the inside file; the test proves nothing"
    );
    assert!(
        refused > 0,
        "the race never saw the symlink; the test proves nothing"
    );
}
