//! Refusals of the file tools: mecha's own words, so they add no taint, and
//! never a hang. A FIFO nobody writes to is the adversarial case: opened the
//! ordinary way it blocks the call forever.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use mecha_core::{Taint, Tool, ToolCtx, ToolOutput};
use mecha_tools::{FsEdit, FsList, FsRead, FsWrite};
use serde_json::{Value, json};

fn ws() -> (tempfile::TempDir, ToolCtx) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 64 * 1024).unwrap();
    (dir, ctx)
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// One call, failing the test instead of hanging it if the call blocks.
async fn call(tool: &dyn Tool, input: Value, ctx: &ToolCtx) -> ToolOutput {
    tokio::time::timeout(Duration::from_secs(10), tool.call(input, ctx))
        .await
        .unwrap_or_else(|_| panic!("{} blocked", tool.name()))
        .unwrap()
}

#[track_caller]
fn assert_refusal_adds_no_taint(tool: &dyn Tool, out: &ToolOutput) {
    assert!(out.is_error && !out.external, "{out:?}");
    assert!(out.harness, "mecha's own words are a refusal: {out:?}");
    let mut taint = Taint::default();
    taint.record(tool.capabilities(), out);
    assert_eq!(taint, Taint::default(), "a refusal added taint");
}

#[tokio::test]
async fn a_fifo_is_refused_by_every_tool_that_expects_a_file() {
    let (dir, ctx) = ws();
    mkfifo(&dir.path().join("pipe"));
    let cases: [(&dyn Tool, Value); 3] = [
        (&FsRead, json!({"path": "pipe"})),
        (&FsEdit, json!({"path": "pipe", "old": "a", "new": "b"})),
        (&FsWrite, json!({"path": "pipe", "content": "replaced"})),
    ];
    for (tool, input) in cases {
        let out = call(tool, input, &ctx).await;
        assert_refusal_adds_no_taint(tool, &out);
        assert!(
            out.content
                .contains("named pipe (FIFO), not a regular file"),
            "{}: {}",
            tool.name(),
            out.content
        );
    }
    let kind = std::fs::symlink_metadata(dir.path().join("pipe"))
        .unwrap()
        .file_type();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&kind),
        "fs_write replaced the FIFO"
    );
}

#[tokio::test]
async fn a_socket_and_a_device_are_refused_by_name() {
    let (dir, ctx) = ws();
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    let out = call(&FsRead, json!({"path": "sock"}), &ctx).await;
    assert_refusal_adds_no_taint(&FsRead, &out);
    assert!(out.content.contains("it is a socket"), "{}", out.content);
    let out = call(&FsWrite, json!({"path": "sock", "content": "x"}), &ctx).await;
    assert_refusal_adds_no_taint(&FsWrite, &out);

    // A device: a workspace rooted where one is at hand.
    let ctx = ToolCtx::new(Path::new("/dev"), 64 * 1024).unwrap();
    let out = call(&FsRead, json!({"path": "null"}), &ctx).await;
    assert_refusal_adds_no_taint(&FsRead, &out);
    assert!(out.content.contains("it is a device"), "{}", out.content);
}

#[tokio::test]
async fn a_directory_where_a_file_is_expected_is_a_refusal() {
    let (dir, ctx) = ws();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let out = call(&FsRead, json!({"path": "d"}), &ctx).await;
    assert_refusal_adds_no_taint(&FsRead, &out);
    assert!(out.content.contains("use fs_list"), "{}", out.content);
    let out = call(&FsWrite, json!({"path": "d", "content": "x"}), &ctx).await;
    assert_refusal_adds_no_taint(&FsWrite, &out);
    assert!(dir.path().join("d").is_dir());
}

/// A jail refusal is mecha judging the path, wholly in its own words: it
/// carries nothing from the file system's contents, so it adds no taint.
#[tokio::test]
async fn jail_refusals_are_refusals_for_every_tool() {
    let (_dir, ctx) = ws();
    let cases: [(&dyn Tool, Value); 4] = [
        (&FsRead, json!({"path": "../../etc/passwd"})),
        (&FsList, json!({"path": "/"})),
        (&FsWrite, json!({"path": "/tmp/x", "content": "x"})),
        (&FsEdit, json!({"path": "../x", "old": "a", "new": "b"})),
    ];
    for (tool, input) in cases {
        let out = call(tool, input, &ctx).await;
        assert_refusal_adds_no_taint(tool, &out);
        assert!(
            out.content.contains("outside the workspace"),
            "{}: {}",
            tool.name(),
            out.content
        );
    }
}

/// Errors that can carry what the file system holds still taint: only the
/// harness's own words are exempt.
#[tokio::test]
async fn a_missing_file_is_still_an_ordinary_error() {
    let (_dir, ctx) = ws();
    let out = call(&FsRead, json!({"path": "missing.txt"}), &ctx).await;
    assert!(out.is_error && !out.harness, "{out:?}");
}
