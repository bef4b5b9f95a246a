//! The file tools' behaviour, through the tool interface the model uses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mecha_core::{Tool, ToolCtx, ToolOutput};
use mecha_tools::{FsEdit, FsList, FsRead, FsWrite};
use serde_json::{Value, json};

fn ws() -> (tempfile::TempDir, ToolCtx) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCtx::new(dir.path(), 64 * 1024).unwrap();
    (dir, ctx)
}

async fn call(tool: &dyn Tool, input: Value, ctx: &ToolCtx) -> ToolOutput {
    tool.call(input, ctx).await.unwrap()
}

#[tokio::test]
async fn fs_write_creates_parents_and_reports_created_then_replaced() {
    let (dir, ctx) = ws();
    let out = call(
        &FsWrite,
        json!({"path": "a/b/c.txt", "content": "one"}),
        &ctx,
    )
    .await;
    assert!(
        !out.is_error && out.content.starts_with("created"),
        "{}",
        out.content
    );
    let out = call(
        &FsWrite,
        json!({"path": "a/b/c.txt", "content": "two"}),
        &ctx,
    )
    .await;
    assert!(out.content.starts_with("replaced"), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "two"
    );
}

#[tokio::test]
async fn fs_write_keeps_permissions_and_leaves_no_temp_files() {
    let (dir, ctx) = ws();
    let path = dir.path().join("run.sh");
    std::fs::write(&path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    call(
        &FsWrite,
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        &ctx,
    )
    .await;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("run.sh")]);
}

#[tokio::test]
async fn fs_write_refuses_a_directory_target() {
    let (dir, ctx) = ws();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let out = call(&FsWrite, json!({"path": "d", "content": "x"}), &ctx).await;
    assert!(out.is_error, "{}", out.content);
}

/// A reader racing the writer sees the old contents or the new, never a mix
/// or a short file.
#[test]
fn fs_write_is_atomic_for_concurrent_readers() {
    let (dir, ctx) = ws();
    let path = dir.path().join("big.txt");
    let size = 1 << 20;
    std::fs::write(&path, "a".repeat(size)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, path) = (Arc::clone(&stop), path.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(text.len(), size, "a reader saw a short file");
                let first = text.as_bytes()[0];
                assert!(text.bytes().all(|b| b == first), "a reader saw a mix");
                reads += 1;
            }
            reads
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..50 {
            let fill = if i % 2 == 0 { "b" } else { "a" };
            let out = call(
                &FsWrite,
                json!({"path": "big.txt", "content": fill.repeat(size)}),
                &ctx,
            )
            .await;
            assert!(!out.is_error, "{}", out.content);
        }
    });
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}

#[tokio::test]
async fn fs_edit_zero_one_and_many_matches() {
    let (dir, ctx) = ws();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "alpha\nbeta\nbeta\nbeta\ngamma\n").unwrap();

    let out = call(
        &FsEdit,
        json!({"path": "f.txt", "old": "delta", "new": "x"}),
        &ctx,
    )
    .await;
    assert!(
        out.is_error && out.content.contains("does not appear"),
        "{}",
        out.content
    );

    let out = call(
        &FsEdit,
        json!({"path": "f.txt", "old": "beta", "new": "x"}),
        &ctx,
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.content,
        "`old` appears 3 times; include more surrounding context to make it unique"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "alpha\nbeta\nbeta\nbeta\ngamma\n"
    );

    let out = call(
        &FsEdit,
        json!({"path": "f.txt", "old": "beta\ngamma", "new": "omega"}),
        &ctx,
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("line 4"), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "alpha\nbeta\nbeta\nomega\n"
    );
}

#[tokio::test]
async fn fs_edit_on_a_missing_file_names_the_file() {
    let (_dir, ctx) = ws();
    let out = call(
        &FsEdit,
        json!({"path": "notes/missing.md", "old": "a", "new": "b"}),
        &ctx,
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("cannot read notes/missing.md"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn fs_read_numbers_lines_and_refuses_binary_and_directories() {
    let (dir, ctx) = ws();
    std::fs::write(dir.path().join("t.txt"), "one\ntwo\nthree\n").unwrap();
    let out = call(
        &FsRead,
        json!({"path": "t.txt", "offset": 2, "limit": 1}),
        &ctx,
    )
    .await;
    assert_eq!(
        out.content,
        "     2\ttwo\n[showing lines 2-2; more follow: continue with offset 3]\n"
    );

    std::fs::write(dir.path().join("b.bin"), [0u8, 1, 2, 3]).unwrap();
    let out = call(&FsRead, json!({"path": "b.bin"}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("binary file (4 bytes)"),
        "{}",
        out.content
    );

    let out = call(&FsRead, json!({"path": "."}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("use fs_list"),
        "{}",
        out.content
    );

    let out = call(&FsRead, json!({"path": "nope.txt"}), &ctx).await;
    assert!(
        out.is_error && out.content.contains("nope.txt"),
        "{}",
        out.content
    );

    let out = call(&FsRead, json!({"offset": 1}), &ctx).await;
    assert!(out.is_error && out.content.contains("missing required argument `path`"));
}

#[tokio::test]
async fn fs_read_of_a_huge_file_stays_within_the_budget() {
    let (dir, _) = ws();
    let ctx = ToolCtx::new(dir.path(), 8192).unwrap();
    let text: String = (0..200_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("huge.txt"), text).unwrap();
    let out = call(&FsRead, json!({"path": "huge.txt"}), &ctx).await;
    assert!(out.content.len() <= 8192, "{}", out.content.len());
    assert!(
        out.content.contains("continue with offset"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn fs_list_shows_kinds_sizes_depth_and_glob() {
    let (dir, ctx) = ws();
    std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    std::fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("src/deep/lib.rs"), "").unwrap();
    std::fs::write(dir.path().join("README.md"), "hi\n").unwrap();
    std::os::unix::fs::symlink("README.md", dir.path().join("readme")).unwrap();

    let out = call(&FsList, json!({}), &ctx).await;
    assert_eq!(
        out.content,
        "dir           -  .git/\nfile          3  README.md\nlink          -  readme -> README.md\ndir           -  src/\n"
    );
    let out = call(&FsList, json!({"depth": 3}), &ctx).await;
    assert!(
        out.content.contains("file         13  src/main.rs"),
        "{}",
        out.content
    );
    assert!(out.content.contains("src/deep/lib.rs"), "{}", out.content);
    assert!(
        !out.content.contains("objects"),
        "descended into .git: {}",
        out.content
    );

    let out = call(&FsList, json!({"glob": "**/*.rs"}), &ctx).await;
    assert_eq!(
        out.content,
        "file          0  src/deep/lib.rs\nfile         13  src/main.rs\n"
    );

    let out = call(&FsList, json!({"glob": "[oops"}), &ctx).await;
    assert!(out.is_error && out.content.contains("not a valid glob"));
}
