//! Snapshots taken and restored on real directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use mecha_checkpoint::{
    Change, CheckpointError, Known, Limits, Store, WorkspaceCheckpoints, restore,
};

fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_restore_brings_back_bytes_modes_links_and_removes_what_came_after() {
    let (home, ws) = setup();
    let root = ws.path();
    fs::write(root.join("keep.txt"), b"one\n").unwrap();
    fs::create_dir(root.join("bin")).unwrap();
    fs::write(root.join("bin/run.sh"), b"#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("bin/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("keep.txt", root.join("link")).unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, before, _) = checkpoints.snapshot().unwrap();

    fs::write(root.join("keep.txt"), b"two\n").unwrap();
    fs::set_permissions(root.join("bin/run.sh"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::remove_file(root.join("link")).unwrap();
    fs::create_dir_all(root.join("new/deep")).unwrap();
    fs::write(root.join("new/deep/file"), b"x").unwrap();
    let (_, after, changed) = checkpoints.snapshot().unwrap();
    let changed: Vec<&str> = changed.iter().map(Change::path).collect();
    assert_eq!(changed, ["bin/run.sh", "keep.txt", "link", "new/deep/file"]);

    let target = store.load(&id).unwrap();
    assert_eq!(target, before);
    let done = restore(
        &store,
        root,
        &target,
        Known::last(&after),
        false,
        Limits::default(),
    )
    .unwrap();
    assert_eq!(done.changes.len(), 4);
    assert_eq!(fs::read(root.join("keep.txt")).unwrap(), b"one\n");
    assert_eq!(mode(&root.join("bin/run.sh")), 0o755);
    assert_eq!(
        fs::read_link(root.join("link")).unwrap(),
        Path::new("keep.txt")
    );
    assert!(!root.join("new").exists(), "directories left empty go too");
}

#[test]
fn ignored_files_and_dot_git_are_neither_taken_nor_removed() {
    let (home, ws) = setup();
    let root = ws.path();
    fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    fs::create_dir_all(root.join("target/debug")).unwrap();
    fs::write(root.join("target/debug/big"), b"build output").unwrap();
    fs::write(root.join("run.log"), b"log").unwrap();
    fs::create_dir(root.join(".git")).unwrap();
    fs::write(root.join(".git/HEAD"), b"ref: refs/heads/main\n").unwrap();
    fs::write(root.join("src.rs"), b"fn main() {}").unwrap();
    fs::write(root.join(".env"), b"hidden but not ignored").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (_, manifest, _) = checkpoints.snapshot().unwrap();
    let paths: Vec<&str> = manifest.files.keys().map(String::as_str).collect();
    assert_eq!(paths, [".env", ".gitignore", "src.rs"]);

    fs::write(root.join("target/debug/newer"), b"more").unwrap();
    let (_, known, _) = checkpoints.snapshot().unwrap();
    restore(
        &store,
        root,
        &manifest,
        Known::last(&known),
        false,
        Limits::default(),
    )
    .unwrap();
    assert!(
        root.join("target/debug/newer").exists(),
        "ignored files stay"
    );
    assert!(root.join(".git/HEAD").exists());
}

#[test]
fn files_over_the_caps_are_skipped_and_left_alone() {
    let (home, ws) = setup();
    let root = ws.path();
    fs::write(root.join("a-small"), b"12").unwrap();
    fs::write(root.join("b-huge"), vec![0u8; 64]).unwrap();
    fs::write(root.join("c-over-total"), b"1234").unwrap();
    let limits = Limits {
        max_file_bytes: 32,
        max_snapshot_bytes: 4,
        ..Limits::default()
    };
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, limits.clone());
    let (_, manifest, _) = checkpoints.snapshot().unwrap();
    assert_eq!(manifest.files.keys().collect::<Vec<_>>(), ["a-small"]);
    assert!(manifest.skipped["b-huge"].contains("per file"));
    assert!(manifest.skipped["c-over-total"].contains("per snapshot"));
    restore(
        &store,
        root,
        &manifest,
        Known::last(&manifest),
        false,
        limits.clone(),
    )
    .unwrap();
    assert!(root.join("b-huge").exists() && root.join("c-over-total").exists());
}

#[test]
fn a_file_changed_since_the_last_checkpoint_is_refused_unless_forced() {
    let (home, ws) = setup();
    let root = ws.path();
    fs::write(root.join("notes.md"), b"v1").unwrap();
    fs::write(root.join("other.md"), b"o1").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (first, _, _) = checkpoints.snapshot().unwrap();
    fs::write(root.join("notes.md"), b"v2 by the agent").unwrap();
    fs::write(root.join("other.md"), b"o2 by the agent").unwrap();
    let (_, known, _) = checkpoints.snapshot().unwrap();
    fs::write(root.join("notes.md"), b"v3 by hand").unwrap();

    let target = store.load(&first).unwrap();
    let refused = restore(
        &store,
        root,
        &target,
        Known::last(&known),
        false,
        Limits::default(),
    )
    .unwrap_err();
    let CheckpointError::Conflicts { paths } = &refused else {
        panic!("not a conflict: {refused}");
    };
    assert_eq!(paths, &["notes.md"]);
    assert!(refused.to_string().contains("--force"), "{refused}");
    assert_eq!(fs::read(root.join("notes.md")).unwrap(), b"v3 by hand");
    assert_eq!(
        fs::read(root.join("other.md")).unwrap(),
        b"o2 by the agent",
        "nothing half done"
    );

    let forced = restore(
        &store,
        root,
        &target,
        Known::last(&known),
        true,
        Limits::default(),
    )
    .unwrap();
    assert_eq!(fs::read(root.join("notes.md")).unwrap(), b"v1");
    let saved = store.load(&forced.before).unwrap();
    assert!(
        saved.files.contains_key("notes.md"),
        "the overwritten state is kept"
    );
}

fn blobs(store: &Store) -> usize {
    fs::read_dir(store.root().join("objects"))
        .unwrap()
        .map(|dir| fs::read_dir(dir.unwrap().path()).unwrap().count())
        .sum()
}

#[test]
fn only_changed_content_is_added_and_a_new_process_starts_from_the_head() {
    let (home, ws) = setup();
    let root = ws.path();
    fs::write(root.join("a"), b"same").unwrap();
    fs::write(root.join("b"), b"first").unwrap();
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/c"), b"untouched").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    checkpoints.snapshot().unwrap();
    // Three contents, and the listings of the two directories.
    assert_eq!(blobs(&store), 5);
    let (_, second, changed) = checkpoints.snapshot().unwrap();
    assert!(changed.is_empty());
    assert_eq!(blobs(&store), 5);
    fs::write(root.join("b"), b"second").unwrap();
    let later = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (_, third, changed) = later.snapshot().unwrap();
    assert_eq!(changed, [mecha_checkpoint::Change::Changed("b".into())]);
    assert_eq!(third.files["a"].content, second.files["a"].content);
    assert_eq!(
        blobs(&store),
        7,
        "the new content and its directory's listing; `sub` adds nothing"
    );
}

#[test]
fn a_repository_config_never_runs_during_a_snapshot() {
    let (home, ws) = setup();
    let root = ws.path();
    let marker = home.path().join("fsmonitor-ran");
    // A real repository (made with git here, in the test only), so that
    // any git run over it would read this config and start the monitor.
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(init.success());
    let script = home.path().join("evil");
    fs::write(&script, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let config = fs::read_to_string(root.join(".git/config")).unwrap();
    fs::write(
        root.join(".git/config"),
        format!("{config}[core]\n\tfsmonitor = {}\n", script.display()),
    )
    .unwrap();
    fs::write(root.join("tracked"), b"x").unwrap();
    let store = Store::new(home.path().join("store"));
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, manifest, _) = checkpoints.snapshot().unwrap();
    fs::write(root.join("tracked"), b"y").unwrap();
    let (_, known, _) = checkpoints.snapshot().unwrap();
    restore(
        &store,
        root,
        &store.load(&id).unwrap(),
        Known::last(&known),
        false,
        Limits::default(),
    )
    .unwrap();
    assert!(manifest.files.contains_key("tracked"));
    assert!(!marker.exists(), "the repository's fsmonitor ran");
}

#[test]
fn a_directory_swapped_for_a_symlink_comes_back_without_writing_through_it() {
    let (home, ws) = setup();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/file"), b"inside").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, _, _) = checkpoints.snapshot().unwrap();
    fs::remove_dir_all(root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
    let (_, known, _) = checkpoints.snapshot().unwrap();
    let target = store.load(&id).unwrap();
    restore(
        &store,
        root,
        &target,
        Known::last(&known),
        false,
        Limits::default(),
    )
    .unwrap();
    assert!(fs::symlink_metadata(root.join("sub")).unwrap().is_dir());
    assert_eq!(fs::read(root.join("sub/file")).unwrap(), b"inside");
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
}

#[test]
fn a_symlink_the_restore_does_not_remove_is_never_written_through() {
    let (home, ws) = setup();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    fs::write(root.join("a-first"), b"one").unwrap();
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/file"), b"inside").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, _, _) = checkpoints.snapshot().unwrap();
    // The link is ignored now, so the walk does not see it and the restore
    // would not remove it first.
    fs::write(root.join("a-first"), b"two").unwrap();
    fs::write(root.join(".gitignore"), "sub\n").unwrap();
    fs::remove_dir_all(root.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
    let (_, known, _) = checkpoints.snapshot().unwrap();
    let target = store.load(&id).unwrap();
    let refused = restore(
        &store,
        root,
        &target,
        Known::last(&known),
        true,
        Limits::default(),
    );
    assert!(
        matches!(refused, Err(CheckpointError::UnsafePath { ref path, .. }) if path == "sub/file"),
        "{refused:?}"
    );
    assert_eq!(
        fs::read(root.join("a-first")).unwrap(),
        b"two",
        "nothing half done"
    );
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
}
