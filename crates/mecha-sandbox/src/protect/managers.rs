//! Hook managers. The hook git runs is often a stub that runs the real
//! code from the work tree: husky's `.husky/_/pre-commit` runs
//! `.husky/pre-commit`; the pre-commit framework, lefthook and overcommit
//! install a hook that runs what a config file in the work tree lists.
//! Keeping the hooks directory read-only protects nothing then, so where
//! such a manager is installed, what it runs from is protected too.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Kind, Target};

/// What an installed hook says when a manager wrote it, and the work
/// tree's files and folders that manager runs from.
fn managers() -> Vec<(&'static str, Vec<(String, Kind)>)> {
    let file = |name: &str| (name.to_owned(), Kind::File(b""));
    // lefthook reads any of these names, in either folder, and merges the
    // `-local` ones in; its scripts live in `.lefthook/`.
    let mut lefthook = vec![
        (".lefthook".to_owned(), Kind::Dir),
        (".lefthook-local".to_owned(), Kind::Dir),
    ];
    for dir in ["", ".config/"] {
        for base in ["lefthook", ".lefthook", "lefthook-local", ".lefthook-local"] {
            for ext in ["yml", "yaml", "toml", "json"] {
                lefthook.push(file(&format!("{dir}{base}.{ext}")));
            }
        }
    }
    vec![
        ("pre-commit.com", vec![file(".pre-commit-config.yaml")]),
        ("lefthook", lefthook),
        ("overcommit", vec![file(".overcommit.yml")]),
    ]
}

/// What the hook managers installed in `hooks_dirs` run from, in
/// `worktree`: a husky directory whole (its `_` is what git runs), and the
/// config file of a manager whose hook is installed (a missing one gets a
/// placeholder: creating it would give the hook something to run).
pub(crate) fn targets(worktree: &Path, hooks_dirs: &[PathBuf]) -> Vec<Target> {
    let mut targets = Vec::new();
    for dir in hooks_dirs {
        if dir.file_name().is_some_and(|n| n == "_")
            && let Some(husky) = dir.parent().filter(|p| p.ends_with(".husky"))
        {
            targets.push(Target::placeheld(husky.to_path_buf(), Kind::Dir));
        }
        let installed = installed_hooks(dir);
        if installed.is_empty() {
            continue;
        }
        for (marker, runs_from) in managers() {
            if installed.iter().any(|text| text.contains(marker)) {
                targets.extend(
                    runs_from
                        .into_iter()
                        .map(|(name, kind)| Target::placeheld(worktree.join(name), kind)),
                );
            }
        }
    }
    targets
}

/// The start of each hook in `dir` (not the samples).
fn installed_hooks(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".sample"))
        .filter_map(|e| {
            let mut head = Vec::new();
            fs::File::open(e.path())
                .and_then(|f| f.take(4096).read_to_end(&mut head))
                .ok()?;
            Some(String::from_utf8_lossy(&head).into_owned())
        })
        .collect()
}
