use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::protect::{Found, find};

/// Whether the walk may keep listings under `dir` (its file system is one
/// whose change times are trusted).
fn keeps_listings(dir: &Path) -> bool {
    Listings::default().walk(dir).device.is_some()
}

fn sorted(mut found: Vec<Found>) -> Vec<Found> {
    found.sort_by_key(|f| format!("{f:?}"));
    found
}

fn settle() {
    std::thread::sleep(SETTLED + Duration::from_millis(20));
}

#[test]
fn only_directories_that_have_settled_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path();
    for dir in ["a/b", "c"] {
        fs::create_dir_all(ws.join(dir)).unwrap();
    }
    let listings = Listings::default();
    find(ws, &listings);
    assert_eq!(
        listings.len(),
        0,
        "a directory changed just now is listed again"
    );
    settle();
    find(ws, &listings);
    let kept = if keeps_listings(ws) { 4 } else { 0 };
    assert_eq!(listings.len(), kept);
    // A change makes its directory's listing stale, and that one only.
    fs::create_dir(ws.join("a/b/.git")).unwrap();
    let found = find(ws, &listings);
    assert_eq!(found, [Found::Dir(ws.join("a/b/.git"))]);
}

/// A change to the tree, by index into its directories.
#[derive(Debug, Clone)]
enum Change {
    Mkdir(usize, u8),
    DotGitDir(usize),
    DotGitFile(usize),
    DotGitLink(usize),
    /// `HEAD`, `objects` and `refs`: git takes it for a git directory.
    Bare(usize),
    /// `HEAD` alone, then `objects` and `refs` into a directory that
    /// already had it.
    Head(usize),
    RemoveTree(usize),
    Rename(usize, usize),
    Replace(usize),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (any::<usize>(), 0u8..4).prop_map(|(d, n)| Change::Mkdir(d, n)),
        any::<usize>().prop_map(Change::DotGitDir),
        any::<usize>().prop_map(Change::DotGitFile),
        any::<usize>().prop_map(Change::DotGitLink),
        any::<usize>().prop_map(Change::Bare),
        any::<usize>().prop_map(Change::Head),
        any::<usize>().prop_map(Change::RemoveTree),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Change::Rename(a, b)),
        any::<usize>().prop_map(Change::Replace),
    ]
}

/// Every directory under `root` (itself first), symlinks not followed.
fn dirs(root: &Path) -> Vec<std::path::PathBuf> {
    let mut all = vec![root.to_path_buf()];
    let mut at = 0;
    while at < all.len() {
        if let Ok(entries) = fs::read_dir(&all[at]) {
            let mut subdirs: Vec<_> = entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            subdirs.sort();
            all.extend(subdirs);
        }
        at += 1;
    }
    all
}

fn apply(root: &Path, change: &Change) {
    let all = dirs(root);
    let pick = |i: usize| all[i % all.len()].clone();
    let _ = match change {
        Change::Mkdir(d, n) => fs::create_dir(pick(*d).join(format!("d{n}"))),
        Change::DotGitDir(d) => fs::create_dir(pick(*d).join(".git")),
        Change::DotGitFile(d) => fs::write(pick(*d).join(".git"), "gitdir: elsewhere\n"),
        Change::DotGitLink(d) => symlink("..", pick(*d).join(".git")),
        Change::Bare(d) => {
            let dir = pick(*d);
            let _ = fs::write(dir.join("HEAD"), "ref: refs/heads/main\n");
            let _ = fs::create_dir(dir.join("objects"));
            fs::create_dir(dir.join("refs"))
        }
        Change::Head(d) => fs::write(pick(*d).join("HEAD"), "ref: refs/heads/main\n"),
        Change::RemoveTree(d) => match pick(*d) {
            dir if dir == root => Ok(()),
            dir => fs::remove_dir_all(dir),
        },
        Change::Rename(a, b) => {
            let (from, to) = (pick(*a), pick(*b));
            if from == root || to.starts_with(&from) {
                Ok(())
            } else {
                fs::rename(&from, to.join(format!("moved{}", all.len())))
            }
        }
        // The same name, another directory: a new inode where the old was.
        Change::Replace(d) => match pick(*d) {
            dir if dir == root => Ok(()),
            dir => fs::remove_dir_all(&dir).and_then(|()| fs::create_dir(&dir)),
        },
    };
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever changes after a walk, and however soon, the next walk
    /// finds what a walk that keeps nothing finds.
    #[test]
    fn a_walk_after_changes_finds_what_a_fresh_walk_finds(
        before in prop::collection::vec(change(), 1..12),
        after in prop::collection::vec(change(), 1..8),
        later in prop::collection::vec(change(), 0..4),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        for c in &before {
            apply(ws, c);
        }
        settle();
        let listings = Listings::default();
        find(ws, &listings);
        for c in &after {
            apply(ws, c);
        }
        prop_assert_eq!(sorted(find(ws, &listings)), sorted(find(ws, &Listings::default())));
        settle();
        find(ws, &listings);
        for c in &later {
            apply(ws, c);
        }
        prop_assert_eq!(sorted(find(ws, &listings)), sorted(find(ws, &Listings::default())));
    }
}
