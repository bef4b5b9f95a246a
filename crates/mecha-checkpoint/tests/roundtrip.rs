//! Any workspace, snapshotted, mutated any way and restored, comes back
//! byte for byte with its modes and its symlinks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use mecha_checkpoint::{Known, Limits, Store, WorkspaceCheckpoints, restore};
use proptest::prelude::*;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(Vec<u8>, u32),
    Link(String),
}

type Tree = BTreeMap<String, Node>;

fn tree() -> impl Strategy<Value = Tree> {
    let path = "(a|b|c)(/(d|e))?(/f)?";
    let mode = prop_oneof![Just(0o644u32), Just(0o755), Just(0o600)];
    let file = (proptest::collection::vec(any::<u8>(), 0..64), mode)
        .prop_map(|(bytes, mode)| Node::File(bytes, mode));
    let link = "(a|b|\\.\\./x|/tmp)".prop_map(Node::Link);
    let node = prop_oneof![4 => file, 1 => link];
    proptest::collection::btree_map(path, node, 0..8).prop_map(|files| {
        // A path cannot be both a file and a directory.
        let names: Vec<String> = files.keys().cloned().collect();
        files
            .into_iter()
            .filter(|(p, _)| !names.iter().any(|o| o.starts_with(&format!("{p}/"))))
            .collect()
    })
}

fn write(root: &Path, tree: &Tree) {
    for (path, node) in tree {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        match node {
            Node::File(bytes, mode) => {
                fs::write(&full, bytes).unwrap();
                fs::set_permissions(&full, fs::Permissions::from_mode(*mode)).unwrap();
            }
            Node::Link(target) => std::os::unix::fs::symlink(target, &full).unwrap(),
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
                .to_str()
                .unwrap()
                .to_owned();
            if meta.is_dir() {
                walk(root, &path, out);
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(rel, Node::Link(target.to_str().unwrap().to_owned()));
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
        for path in before.keys() {
            fs::remove_file(ws.path().join(path)).unwrap();
        }
        for entry in fs::read_dir(ws.path()).unwrap() {
            fs::remove_dir_all(entry.unwrap().path()).unwrap();
        }
        write(ws.path(), &after);
        let (_, known, _) = checkpoints.snapshot().unwrap();
        restore(&store, ws.path(), &store.load(&id).unwrap(), Known::last(&known), false, Limits::default()).unwrap();
        prop_assert_eq!(read(ws.path()), before);
    }
}
