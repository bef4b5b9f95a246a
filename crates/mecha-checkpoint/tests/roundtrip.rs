//! Any workspace, snapshotted, mutated any way and restored, comes back
//! byte for byte with its modes, its symlinks (their targets too), its
//! empty directories and its names that are not UTF-8.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mecha_checkpoint::{Known, Limits, Store, WorkspaceCheckpoints, restore};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(Vec<u8>, u32),
    Link(Vec<u8>),
    EmptyDir,
}

/// Paths as bytes, `/`-separated: names need not be UTF-8.
type Tree = BTreeMap<Vec<u8>, Node>;

fn tree() -> impl Strategy<Value = Tree> {
    // Two names that are not UTF-8 (a lone continuation byte, Latin-1),
    // and one that holds what their spelling in a manifest looks like.
    let name = prop_oneof![
        Just(b"a".to_vec()),
        Just(b"b".to_vec()),
        Just(b"c\xff".to_vec()),
        Just(b"\xe9t\xe9".to_vec()),
        Just(b"\\0ff".to_vec()),
    ];
    let path = proptest::collection::vec(name, 1..4).prop_map(|names| names.join(&b'/'));
    let mode = prop_oneof![Just(0o644u32), Just(0o755), Just(0o600)];
    let file = (proptest::collection::vec(any::<u8>(), 0..64), mode)
        .prop_map(|(bytes, mode)| Node::File(bytes, mode));
    let link = prop_oneof![
        Just(b"a".to_vec()),
        Just(b"../x".to_vec()),
        Just(b"/tmp".to_vec()),
        Just(b"../caf\xe9/\xff".to_vec()),
    ]
    .prop_map(Node::Link);
    let node = prop_oneof![4 => file, 1 => link, 1 => Just(Node::EmptyDir)];
    proptest::collection::btree_map(path, node, 0..8).prop_map(|nodes| {
        // A path cannot be both a file and a directory, nor an empty
        // directory hold anything.
        let names: Vec<Vec<u8>> = nodes.keys().cloned().collect();
        nodes
            .into_iter()
            .filter(|(p, _)| {
                let mut under = p.clone();
                under.push(b'/');
                !names.iter().any(|o| o.starts_with(&under))
            })
            .collect()
    })
}

fn native(root: &Path, path: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(path))
}

fn write(root: &Path, tree: &Tree) {
    for (path, node) in tree {
        let full = native(root, path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        match node {
            Node::File(bytes, mode) => {
                fs::write(&full, bytes).unwrap();
                fs::set_permissions(&full, fs::Permissions::from_mode(*mode)).unwrap();
            }
            Node::Link(target) => {
                std::os::unix::fs::symlink(OsStr::from_bytes(target), &full).unwrap()
            }
            Node::EmptyDir => fs::create_dir(&full).unwrap(),
        }
    }
}

fn read(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            if meta.is_dir() {
                if fs::read_dir(&path).unwrap().next().is_none() {
                    out.insert(rel, Node::EmptyDir);
                }
                walk(root, &path, out);
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(rel, Node::Link(target.as_os_str().as_bytes().to_vec()));
            } else {
                let mode = meta.permissions().mode() & 0o7777;
                out.insert(rel, Node::File(fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = Tree::new();
    walk(root, root, &mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn snapshot_mutate_restore_gives_back_the_same_tree(before in tree(), after in tree()) {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(ws.path(), &before);
        let store = Store::new(home.path());
        let checkpoints = WorkspaceCheckpoints::new(store.clone(), ws.path(), Limits::default());
        let (id, _, _) = checkpoints.snapshot().unwrap();
        for entry in fs::read_dir(ws.path()).unwrap() {
            let path = entry.unwrap().path();
            match fs::symlink_metadata(&path).unwrap().is_dir() {
                true => fs::remove_dir_all(&path).unwrap(),
                false => fs::remove_file(&path).unwrap(),
            }
        }
        write(ws.path(), &after);
        let (_, known, _) = checkpoints.snapshot().unwrap();
        restore(&store, ws.path(), &store.load(&id).unwrap(), Known::last(&known), false, Limits::default()).unwrap();
        prop_assert_eq!(read(ws.path()), before);
    }
}
