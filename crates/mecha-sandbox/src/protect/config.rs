//! What a repository's git config points git at: the hooks directory
//! `core.hooksPath` names, the files it includes, the template directory;
//! read from the repository's own config files and the user's global and
//! system ones, and from what they include, as git reads them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Kind, Target};
use crate::{SandboxError, gitconfig};

/// [`config_targets`], for a job: a config mecha cannot read refuses it.
pub(crate) fn config_targets_or_refuse(
    gitdir: &Path,
    worktree: &Path,
    home: Option<&Path>,
) -> Result<Vec<Target>, SandboxError> {
    match config_targets(gitdir, worktree, home) {
        (targets, unreadable) if unreadable.is_empty() => Ok(targets),
        (_, mut unreadable) => {
            let Unreadable { file, reason } = unreadable.swap_remove(0);
            Err(SandboxError::UnreadableGitConfig { path: file, reason })
        }
    }
}

/// A config file of a repository that mecha cannot read the way git does:
/// what it points git at is unknown, so nothing that could change it may
/// run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    pub file: PathBuf,
    pub reason: String,
}

/// The hooks directory `core.hooksPath` names (relative to the worktree,
/// as git runs hooks there) and every file `include.path` or
/// `includeIf.*.path` names (relative to the config file), in the config
/// files of `gitdir` and in the files they include. A missing one gets a
/// placeholder: a command could otherwise create what the config already
/// points at. And what a hook manager installed in one of those hooks
/// directories (or the git directory's own) runs from (managers.rs).
/// Beside them, each config file that exists and cannot be read.
pub(crate) fn config_targets(
    gitdir: &Path,
    worktree: &Path,
    home: Option<&Path>,
) -> (Vec<Target>, Vec<Unreadable>) {
    let (named, unreadable) = named_by_config(gitdir, worktree, home);
    let mut hooks: Vec<PathBuf> = named
        .iter()
        .filter(|(names, _)| *names == Names::Hooks)
        .map(|(_, path)| path.clone())
        .chain([gitdir.join("hooks")])
        .collect();
    hooks.dedup();
    let mut targets: Vec<Target> = named
        .into_iter()
        .map(|(names, path)| match names {
            Names::Include => Target::placeheld(path, Kind::File(b"")),
            Names::Hooks | Names::Template => Target::placeheld(path, Kind::Dir),
        })
        .collect();
    targets.extend(super::managers::targets(worktree, &hooks));
    (targets, unreadable)
}

/// The hooks directories git uses for the repository at `gitdir` with its
/// work tree at `worktree`: what `core.hooksPath` names, in its config or
/// the user's (the directory `hooks` of the git directory is git's own
/// choice besides).
pub(crate) fn hooks_dirs(gitdir: &Path, worktree: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    named_by_config(gitdir, worktree, home)
        .0
        .into_iter()
        .filter_map(|(names, path)| (names == Names::Hooks).then_some(path))
        .collect()
}

/// What a config entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Hooks,
    Include,
    Template,
}

/// Each path the config files name, with what for, and each config file
/// that exists and cannot be read.
fn named_by_config(
    gitdir: &Path,
    worktree: &Path,
    home: Option<&Path>,
) -> (Vec<(Names, PathBuf)>, Vec<Unreadable>) {
    let mut named = Vec::new();
    let mut unreadable = Vec::new();
    // Each config file to read, with how deep in includes it is: what an
    // included file sets counts as if the config set it (git follows ten
    // levels), and its own includes are relative to it.
    let mut pending: Vec<(PathBuf, usize)> = ["config", "config.worktree"]
        .iter()
        .map(|name| gitdir.join(name))
        .chain(user_configs(home))
        .map(|file| (file, 0))
        .collect();
    let mut read = std::collections::HashSet::new();
    while let Some((file, depth)) = pending.pop() {
        if !read.insert(file.clone()) {
            continue;
        }
        let entries = match read_config(&file) {
            Ok(Some(entries)) => entries,
            Ok(None) => continue,
            Err(reason) => {
                unreadable.push(Unreadable { file, reason });
                continue;
            }
        };
        let here = file.parent().unwrap_or(gitdir);
        for entry in entries {
            let Some(value) = entry.value.as_deref().filter(|v| !v.is_empty()) else {
                continue;
            };
            let (base, names) = match (entry.section.as_str(), entry.key.as_str()) {
                ("core", "hookspath") if entry.subsection.is_none() => (worktree, Names::Hooks),
                ("include" | "includeif", "path") => (here, Names::Include),
                // Copied into every repository `git init` or `git clone`
                // makes, hooks included.
                ("init", "templatedir") if entry.subsection.is_none() => (here, Names::Template),
                _ => continue,
            };
            let path = match (value.strip_prefix(b"~/"), home) {
                (Some(rest), Some(home)) => home.join(OsStr::from_bytes(rest)),
                _ => base.join(OsStr::from_bytes(value)),
            };
            let path = super::normalize(&path);
            if names == Names::Include && depth < MAX_INCLUDE_DEPTH {
                pending.push((path.clone(), depth + 1));
            }
            named.push((names, path));
        }
    }
    (named, unreadable)
}

/// The config files git reads for every repository besides its own, as
/// mecha's environment (which the user's shells share) chooses them: the
/// system's (unless `GIT_CONFIG_NOSYSTEM`), and the user's global ones. A
/// relative `core.hooksPath` there names a directory in each repository
/// (a team's `.githooks`).
fn user_configs(home: Option<&Path>) -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let mut files = Vec::new();
    if var("GIT_CONFIG_NOSYSTEM").is_none() {
        files.push(var("GIT_CONFIG_SYSTEM").map_or_else(|| "/etc/gitconfig".into(), PathBuf::from));
    }
    match var("GIT_CONFIG_GLOBAL") {
        Some(global) => files.push(PathBuf::from(global)),
        None => {
            let xdg = var("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".config")));
            files.extend(xdg.map(|x| x.join("git/config")));
            files.extend(home.map(|h| h.join(".gitconfig")));
        }
    }
    files
}

/// How deep git follows `include.path` before it gives up.
const MAX_INCLUDE_DEPTH: usize = 10;

/// The most of a config file mecha reads; git reads any size, so a bigger
/// one is one mecha cannot vouch for.
pub(crate) const CONFIG_LIMIT: u64 = 1 << 20;

/// A config file's entries; `None` where there is none (nothing there, or
/// nothing git would read: a directory, a FIFO, which would block the open
/// forever); why not, where one is there and mecha cannot read it as git
/// would.
pub(crate) fn read_config(file: &Path) -> Result<Option<Vec<gitconfig::Entry>>, String> {
    let bytes = match super::read_regular(file, CONFIG_LIMIT + 1) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
            return Ok(None);
        }
        Err(e) => {
            return Err(format!(
                "it cannot be read: {}",
                mecha_core::system_words(&e)
            ));
        }
    };
    if bytes.len() as u64 > CONFIG_LIMIT {
        return Err("it is larger than 1 MiB".into());
    }
    gitconfig::parse(&bytes)
        .map(Some)
        .ok_or_else(|| "its syntax is not one mecha is sure it reads as git does".into())
}
