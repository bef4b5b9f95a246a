//! The git repositories a workspace holds, found by walking it, and the
//! paths in each that git on the host runs or reads configuration from.
//!
//! Git finds a repository from wherever it is run, so a nested one
//! (`vendor/lib/.git`), a bare layout (`HEAD`, `objects`, `refs` in any
//! directory, the workspace's root included) and a `.git` file naming a
//! git directory all count, not only the root's `.git`. Inside each git
//! directory, [`GIT_DIR_PROTECTED`]; and from its config, the directory
//! `core.hooksPath` names and the files `include.path` names, which live
//! in the writable tree as often as not (`.husky`).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Kind, Target};
use crate::gitconfig;

/// Inside a git directory: what runs programs, or says where to find what
/// does. `commondir`, absent in a plain repository, would make git take
/// hooks and config from any directory it names; `modules` holds each
/// submodule's own gitdir, hooks and config included; `worktrees` holds
/// each linked worktree's pointers (`commondir`, `gitdir`), which a
/// command could aim at a fake common directory; `config.worktree` is read
/// as config once `extensions.worktreeConfig` is set.
///
/// A placeholder for a missing `commondir` holds `.` (the gitdir itself,
/// which is what its absence means): git reads the file whenever it
/// exists, and an empty one stops every git command.
pub(crate) const GIT_DIR_PROTECTED: [(&str, Kind); 6] = [
    ("hooks", Kind::Dir),
    ("config", Kind::File(b"")),
    ("config.worktree", Kind::File(b"")),
    ("commondir", Kind::File(b".\n")),
    ("modules", Kind::Dir),
    ("worktrees", Kind::Dir),
];

/// A repository found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A `.git` directory, or a directory laid out as a bare repository.
    GitDir(PathBuf),
    /// A `.git` file, which names a git directory elsewhere.
    GitFile(PathBuf),
}

/// Every repository under `root`, the root itself included, without
/// following a symlink and without descending into a git directory.
pub(crate) fn find(root: &Path) -> Vec<Found> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut subdirs = Vec::new();
        let (mut head, mut objects, mut refs) = (false, false, false);
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            match (name.to_str(), kind.is_dir(), kind.is_file()) {
                (Some(".git"), true, _) => found.push(Found::GitDir(entry.path())),
                (Some(".git"), _, true) => found.push(Found::GitFile(entry.path())),
                (Some("HEAD"), _, true) => head = true,
                (Some("objects"), true, _) => objects = true,
                (Some("refs"), true, _) => refs = true,
                (_, true, _) => subdirs.push(entry.path()),
                _ => {}
            }
        }
        if head && objects && refs {
            found.push(Found::GitDir(dir));
        } else {
            pending.extend(subdirs);
        }
    }
    found
}

/// What a `.git` file names: the git directory, and the common directory
/// its `commondir` names, each as written (lexically resolved against the
/// file's directory, which is where git inside looks) and canonical on the
/// host.
#[derive(Debug)]
pub(crate) struct Named {
    pub gitdir: (PathBuf, PathBuf),
    pub common: Option<(PathBuf, PathBuf)>,
}

/// What `.git` file `file` names, or why it names nothing usable: not a
/// gitfile git would read, or a directory that cannot be opened.
pub(crate) fn gitfile_dirs(file: &Path) -> Result<Option<Named>, (PathBuf, std::io::Error)> {
    let mut text = String::new();
    if fs::File::open(file)
        .and_then(|f| f.take(4096).read_to_string(&mut text))
        .is_err()
    {
        return Ok(None);
    }
    let Some(named) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
        return Ok(None);
    };
    let base = file.parent().unwrap_or(Path::new("/"));
    let lexical = super::normalize(&base.join(named.trim()));
    let gitdir = fs::canonicalize(&lexical).map_err(|e| (lexical.clone(), e))?;
    let common = match fs::read_to_string(gitdir.join("commondir")) {
        Ok(text) => {
            let lexical = super::normalize(&lexical.join(text.trim()));
            let canonical = fs::canonicalize(&lexical).map_err(|e| (lexical.clone(), e))?;
            Some((lexical, canonical))
        }
        Err(_) => None,
    };
    Ok(Some(Named {
        gitdir: (lexical, gitdir),
        common,
    }))
}

/// The protection targets of a git directory: its [`GIT_DIR_PROTECTED`]
/// entries, and what its config points at.
pub(crate) fn gitdir_targets(gitdir: &Path, worktree: &Path, home: Option<&Path>) -> Vec<Target> {
    let mut targets: Vec<Target> = GIT_DIR_PROTECTED
        .iter()
        .map(|(name, kind)| Target::placeheld(gitdir.join(name), *kind))
        .collect();
    targets.extend(config_targets(gitdir, worktree, home));
    targets
}

/// The hooks directory `core.hooksPath` names (relative to the worktree,
/// as git runs hooks there) and every file `include.path` or
/// `includeIf.*.path` names (relative to the config file), in the config
/// files of `gitdir`. A missing one gets a placeholder: a command could
/// otherwise create what the config already points at.
pub(crate) fn config_targets(gitdir: &Path, worktree: &Path, home: Option<&Path>) -> Vec<Target> {
    let mut targets = Vec::new();
    for name in ["config", "config.worktree"] {
        let file = gitdir.join(name);
        let Some(entries) = read_config(&file) else {
            continue;
        };
        for entry in entries {
            let Some(value) = entry.value.as_deref().filter(|v| !v.is_empty()) else {
                continue;
            };
            let (base, kind) = match (entry.section.as_str(), entry.key.as_str()) {
                ("core", "hookspath") if entry.subsection.is_none() => (worktree, Kind::Dir),
                ("include" | "includeif", "path") => (gitdir, Kind::File(b"")),
                _ => continue,
            };
            let path = match (value.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => base.join(value),
            };
            targets.push(Target::placeheld(super::normalize(&path), kind));
        }
    }
    targets
}

/// A config file's entries, bounded (a config is small; a huge one is no
/// config git would be given to read here).
pub(crate) fn read_config(file: &Path) -> Option<Vec<gitconfig::Entry>> {
    let mut text = String::new();
    fs::File::open(file)
        .and_then(|f| f.take(1 << 20).read_to_string(&mut text))
        .ok()?;
    gitconfig::parse(&text)
}
