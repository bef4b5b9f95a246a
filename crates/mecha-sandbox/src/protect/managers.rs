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
/// tree's files that manager runs from.
const MANAGERS: &[(&str, &[&str])] = &[
    ("pre-commit.com", &[".pre-commit-config.yaml"]),
    (
        "lefthook",
        &[
            "lefthook.yml",
            ".lefthook.yml",
            "lefthook.yaml",
            ".lefthook.yaml",
            "lefthook-local.yml",
            ".lefthook-local.yml",
        ],
    ),
    ("overcommit", &[".overcommit.yml"]),
];

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
        for (marker, files) in MANAGERS {
            if installed.iter().any(|text| text.contains(marker)) {
                targets.extend(
                    files
                        .iter()
                        .map(|f| Target::placeheld(worktree.join(f), Kind::File(b""))),
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
