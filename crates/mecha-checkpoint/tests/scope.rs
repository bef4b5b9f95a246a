//! What a snapshot takes in beyond plain files: ignored paths a user named,
//! empty directories, names that are not UTF-8; and stores written before
//! it did.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;

use mecha_checkpoint::{
    Change, Content, Known, Limits, Manifest, Store, WorkspaceCheckpoints, restore,
};

/// Puts `root` back as `target`, mecha having last seen it as `known`.
fn rewind(store: &Store, root: &std::path::Path, target: &Manifest, known: &Manifest) {
    restore(
        store,
        root,
        target,
        Known::last(known),
        false,
        Limits::default(),
    )
    .unwrap();
}

#[test]
fn include_ignored_takes_in_what_gitignore_leaves_out() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = ws.path();
    fs::write(root.join(".gitignore"), ".env\nbuild/\n*.log\n").unwrap();
    fs::write(root.join(".env"), b"TOKEN=1").unwrap();
    fs::write(root.join("x.log"), b"log").unwrap();
    for dir in ["build/keep", "build/other"] {
        fs::create_dir_all(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("out.o"), b"obj").unwrap();
    }
    fs::write(root.join("build/keep/run.log"), b"log").unwrap();
    let limits = Limits {
        include_ignored: vec![".env".into(), "build/keep/".into()],
        ..Limits::default()
    };
    let store = Store::new(home.path());
    let (_, manifest, _) = WorkspaceCheckpoints::new(store.clone(), root, limits.clone())
        .snapshot()
        .unwrap();
    let paths: Vec<&str> = manifest.files.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [".env", ".gitignore", "build/keep/out.o"],
        "an included directory is walked with its rules: its *.log stays out"
    );
    let (_, default, _) = WorkspaceCheckpoints::new(store, root, Limits::default())
        .snapshot()
        .unwrap();
    assert_eq!(default.files.keys().collect::<Vec<_>>(), [".gitignore"]);
}

#[test]
fn a_bad_include_glob_is_refused_naming_it() {
    let limits = Limits {
        include_ignored: vec!["[z-a]".into()],
        ..Limits::default()
    };
    let err = limits.check().unwrap_err().to_string();
    assert!(err.contains("`[z-a]`"), "{err}");
    assert!(err.contains("include_ignored"), "{err}");
}

#[test]
fn empty_directories_come_and_go_with_a_rewind() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = ws.path();
    fs::create_dir_all(root.join("kept/empty")).unwrap();
    fs::write(root.join("file"), b"x").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, before, _) = checkpoints.snapshot().unwrap();
    assert_eq!(before.files["kept/empty"].content, Content::Dir);
    assert!(
        !before.files.contains_key("kept"),
        "implied by what it holds"
    );

    fs::remove_dir_all(root.join("kept")).unwrap();
    fs::create_dir_all(root.join("made/inner")).unwrap();
    let (_, after, changed) = checkpoints.snapshot().unwrap();
    assert_eq!(
        changed,
        [
            Change::Removed("kept/empty".into()),
            Change::Added("made/inner".into())
        ]
    );
    let target = store.load(&id).unwrap();
    rewind(&store, root, &target, &after);
    assert!(root.join("kept/empty").is_dir(), "the removed one is back");
    assert!(!root.join("made").exists(), "the made one is gone, whole");
}

#[test]
fn an_empty_directory_that_fills_with_ignored_files_stays() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = ws.path();
    fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, _, _) = checkpoints.snapshot().unwrap();
    fs::create_dir(root.join("logs")).unwrap();
    let (_, _, changed) = checkpoints.snapshot().unwrap();
    assert_eq!(changed, [Change::Added("logs".into())]);
    fs::write(root.join("logs/run.log"), b"kept").unwrap();
    let (_, known, _) = checkpoints.snapshot().unwrap();
    rewind(&store, root, &store.load(&id).unwrap(), &known);
    assert_eq!(fs::read(root.join("logs/run.log")).unwrap(), b"kept");
}

#[test]
fn a_name_that_is_not_utf8_round_trips_byte_for_byte() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = ws.path();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    fs::create_dir(root.join(OsStr::from_bytes(b"d\xff"))).unwrap();
    let nested = root.join(OsStr::from_bytes(b"d\xff")).join(name);
    fs::write(root.join(name), b"latin-1").unwrap();
    fs::write(&nested, b"nested").unwrap();
    let store = Store::new(home.path());
    let checkpoints = WorkspaceCheckpoints::new(store.clone(), root, Limits::default());
    let (id, before, _) = checkpoints.snapshot().unwrap();
    assert_eq!(before.files.len(), 2, "{:?}", before.files.keys());

    fs::write(root.join(name), b"changed").unwrap();
    fs::remove_file(&nested).unwrap();
    let (_, known, changed) = checkpoints.snapshot().unwrap();
    // The directory, emptied, is recorded as such.
    assert_eq!(changed.len(), 3, "{changed:?}");
    rewind(&store, root, &store.load(&id).unwrap(), &known);
    assert_eq!(fs::read(root.join(name)).unwrap(), b"latin-1");
    assert_eq!(fs::read(&nested).unwrap(), b"nested");
}

#[test]
fn a_store_written_before_empty_directories_were_recorded_still_loads() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = ws.path();
    let store = Store::new(home.path());
    // A snapshot exactly as the previous format wrote it: a listing of
    // files and symlinks only.
    let content = store.put_blob(b"old").unwrap();
    let listing = format!(
        r#"{{"a":{{"content":{{"kind":"file","sha256":"{content}"}},"mode":420,"size":3,"mtime_ns":1,"inode":1}},"l":{{"content":{{"kind":"symlink","target":"a"}},"mode":511,"size":1,"mtime_ns":1,"inode":2}}}}"#
    );
    let listing = store.put_blob(listing.as_bytes()).unwrap();
    let text = format!(
        r#"{{"workspace":{:?},"started_ns":2,"dirs":{{"":"{listing}"}}}}"#,
        root.display().to_string()
    );
    let id = store.put_blob(text.as_bytes()).unwrap();
    fs::create_dir_all(home.path().join("snapshots")).unwrap();
    fs::write(home.path().join(format!("snapshots/{id}.json")), &text).unwrap();

    let old = store.load(&id).unwrap();
    assert_eq!(old.files.keys().collect::<Vec<_>>(), ["a", "l"]);
    fs::create_dir(root.join("new-and-empty")).unwrap();
    let (_, known, _) = WorkspaceCheckpoints::new(store.clone(), root, Limits::default())
        .snapshot()
        .unwrap();
    rewind(&store, root, &old, &known);
    assert_eq!(fs::read(root.join("a")).unwrap(), b"old");
    assert_eq!(fs::read_link(root.join("l")).unwrap().to_str(), Some("a"));
    assert!(!root.join("new-and-empty").exists());
}
