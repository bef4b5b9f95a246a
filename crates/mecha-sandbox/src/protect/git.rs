//! The git repositories a workspace holds, found by walking it, and the
//! paths in each that git on the host runs or reads configuration from.
//!
//! Git finds a repository from wherever it is run, so a nested one
//! (`vendor/lib/.git`), any directory git would take for a git directory
//! (a bare layout, the workspace's root included, with more below it), and
//! a `.git` file or symlink leading to a git directory all count, not only
//! the root's `.git`. The checks mirror git's own (see
//! [`is_git_directory`], [`pointed`]): where this reads a layout
//! differently from git, a repository goes unseen. Inside each git
//! directory, [`GIT_DIR_PROTECTED`]; and from its config, the directory
//! `core.hooksPath` names and the files `include.path` names, which live
//! in the writable tree as often as not (`.husky`).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fs::Access;

use super::listings::{self, DotGit, Listings};
use super::{Kind, Target};
use crate::SandboxError;

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
    /// A `.git` directory, or a directory git takes for a git directory.
    Dir(PathBuf),
    /// A `.git` file, which names a git directory elsewhere.
    File(PathBuf),
    /// A `.git` symlink, which git follows: to a git directory, or to a
    /// file it reads as a `.git` file.
    Link(PathBuf),
}

/// Every repository under `root`, the root itself included: every `.git`
/// (directory, file or symlink), and every directory git would take for a
/// git directory when run inside it, inside a `.git` too (a command can
/// make one there, and lead git to it through a symlink: git finds a
/// repository from the real path it runs in). Symlinks are not followed.
/// In a git directory, what the sandbox keeps read-only
/// ([`READ_ONLY_INSIDE`]) is not entered, nor its object store's fan-out
/// (`objects/ab`, `objects/pack`), which in a real one holds nothing but
/// objects and can be large. Directories unchanged since an earlier walk
/// are not listed again ([`Listings`]).
pub(crate) fn find(root: &Path, listings: &Listings) -> Vec<Found> {
    find_opening(root, false, listings, &mut |_| false)
}

/// The entries of a git directory a job cannot change, so not walked.
const READ_ONLY_INSIDE: [&str; 3] = ["hooks", "modules", "worktrees"];

/// Where a directory of the walk is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Plain,
    /// A `.git` directory, already counted.
    DotGit,
    /// A git directory's `objects`.
    ObjectStore,
}

/// [`find`], or, when `thorough` (after a job, which could have hidden a
/// git directory anywhere it could write), into every part of every git
/// directory too: its object store's fan-out, and the hooks, modules and
/// worktrees, which no mount kept read-only in a repository the job made
/// itself. Each directory it cannot list (or search) goes to `open_up`,
/// and is listed again when that made it listable.
pub(crate) fn find_opening(
    root: &Path,
    thorough: bool,
    listings: &Listings,
    open_up: &mut dyn FnMut(&Path) -> bool,
) -> Vec<Found> {
    let walk = listings.walk(root);
    let mut found = Vec::new();
    let mut pending = vec![(root.to_path_buf(), Place::Plain)];
    while let Some((dir, place)) = pending.pop() {
        let listed = walk.entries(&dir, || match listings::read(&dir) {
            Some(entries) if searchable(&dir) => Some((entries, true)),
            _ if open_up(&dir) => listings::read(&dir).map(|entries| (entries, false)),
            listed => listed.map(|entries| (entries, false)),
        });
        let Some(entries) = listed else {
            continue;
        };
        if let Some(kind) = entries.dot_git {
            let path = dir.join(".git");
            match kind {
                DotGit::Dir => {
                    found.push(Found::Dir(path.clone()));
                    pending.push((path, Place::DotGit));
                }
                DotGit::Link => found.push(Found::Link(path)),
                DotGit::File => found.push(Found::File(path)),
            }
        }
        let gitdir = place == Place::DotGit || (entries.head && is_git_directory(&dir));
        if gitdir && place != Place::DotGit {
            found.push(Found::Dir(dir.clone()));
        }
        for name in &entries.subdirs {
            if !thorough && place == Place::ObjectStore && is_fan_out(name) {
                continue;
            }
            let place = match name.to_str() {
                Some("objects") if gitdir => Place::ObjectStore,
                Some(name) if gitdir && !thorough && READ_ONLY_INSIDE.contains(&name) => continue,
                _ => Place::Plain,
            };
            pending.push((dir.join(name), place));
        }
    }
    found
}

/// Whether what is in `dir` can be looked at, not only named: a directory
/// its owner can read but not search lists its names and hides what each
/// is.
fn searchable(dir: &Path) -> bool {
    rustix::fs::access(dir, Access::EXEC_OK).is_ok()
}

/// `pack`, or a loose objects directory (two hex digits).
fn is_fan_out(name: &OsStr) -> bool {
    let name = name.as_bytes();
    name == b"pack" || (name.len() == 2 && name.iter().all(u8::is_ascii_hexdigit))
}

/// Whether git takes `dir` for a git directory, checked the way git does:
/// a `HEAD` that is not a directory (git reads a symlinked one without
/// following it), and an `objects` and a `refs` it can search, following
/// symlinks, in the directory `commondir` names when there is one. Git
/// checks no more before it reads the directory's config, so neither does
/// this (a `HEAD` that git would find malformed still counts).
pub(crate) fn is_git_directory(dir: &Path) -> bool {
    if fs::symlink_metadata(dir.join("HEAD")).map_or(true, |m| m.is_dir()) {
        return false;
    }
    // A `commondir` beside a `HEAD` counts whatever it names: one mecha
    // cannot read or resolve may be one git follows, and one that names
    // nothing yet is a git directory as soon as a writer fills what it
    // names (which no check of that writer's own path would see).
    if fs::symlink_metadata(dir.join("commondir")).is_ok() {
        return true;
    }
    // A symlink counts as well, wherever it leads: one that leads nowhere
    // yet makes a git directory as soon as a writer makes where it leads.
    ["objects", "refs"].iter().all(|name| {
        let path = dir.join(name);
        rustix::fs::access(&path, Access::EXEC_OK).is_ok()
            || fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// What `dir/commondir` says, as git reads it (see [`read_pointer`]).
pub(crate) fn read_commondir(dir: &Path) -> Option<PathBuf> {
    let text = read_pointer(&dir.join("commondir"))?;
    Some(PathBuf::from(OsString::from_vec(text)))
}

/// A pointer file (`commondir`, a `.git` file) as git reads one: the line
/// ends at the end of the whole file taken off, and then the rest as a C
/// string, to its first NUL. In that order: `c\n\0x` is `c\n` to git.
fn read_pointer(file: &Path) -> Option<Vec<u8>> {
    let mut text = trim_line_ends(read_small(file)?);
    if let Some(nul) = text.iter().position(|b| *b == 0) {
        text.truncate(nul);
    }
    Some(text)
}

/// The common directory `commondir` in `gitdir` names, canonical (git
/// resolves it on the filesystem, a `..` after a symlink included).
pub(crate) fn common_dir(gitdir: &Path) -> Option<PathBuf> {
    fs::canonicalize(gitdir.join(read_commondir(gitdir)?)).ok()
}

/// A small regular file's bytes, as git would read a pointer: anything
/// else (a FIFO, which would block the open forever; a device) is no
/// pointer git follows.
fn read_small(file: &Path) -> Option<Vec<u8>> {
    super::read_regular(file, 1 << 16).ok().flatten()
}

fn trim_line_ends(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last().is_some_and(|b| matches!(b, b'\n' | b'\r')) {
        bytes.pop();
    }
    bytes
}

/// What a `.git` file or symlink leads to: the git directory, and the
/// common directory its `commondir` names, each as written (lexically
/// resolved against the `.git`'s directory, which is where git inside
/// looks) and canonical on the host.
#[derive(Debug)]
pub(crate) struct Named {
    pub gitdir: (PathBuf, PathBuf),
    pub common: Option<(PathBuf, PathBuf)>,
}

/// Where `.git` file or symlink `dot_git` leads, read as git reads it: a
/// symlink to a directory is that git directory; a file, or a symlink to
/// one, names it on a `gitdir: ` line, relative to the directory the
/// `.git` is in. `None` for what names nothing git would use; an error,
/// with the path as written, for a directory that cannot be opened.
pub(crate) fn pointed(dot_git: &Path) -> Result<Option<Named>, (PathBuf, std::io::Error)> {
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let named = match fs::metadata(dot_git) {
        Ok(meta) if meta.is_dir() => match fs::read_link(dot_git) {
            Ok(target) => target,
            Err(_) => return Ok(None),
        },
        Ok(_) => match gitfile_target(dot_git) {
            Some(named) => named,
            None => return Ok(None),
        },
        // A symlink that leads nowhere (yet).
        Err(e) => match fs::read_link(dot_git) {
            Ok(target) => return Err((super::normalize(&base.join(target)), e)),
            Err(_) => return Ok(None),
        },
    };
    let lexical = super::normalize(&base.join(&named));
    let gitdir = fs::canonicalize(base.join(&named)).map_err(|e| (lexical.clone(), e))?;
    let common = match read_commondir(&gitdir) {
        Some(text) => {
            let lexical = super::normalize(&lexical.join(&text));
            let canonical =
                fs::canonicalize(gitdir.join(&text)).map_err(|e| (lexical.clone(), e))?;
            Some((lexical, canonical))
        }
        None => None,
    };
    Ok(Some(Named {
        gitdir: (lexical, gitdir),
        common,
    }))
}

/// The path on a gitfile's `gitdir: ` line: the whole file less its line
/// ends, byte for byte, as git takes it (a second space is part of the
/// path).
fn gitfile_target(file: &Path) -> Option<PathBuf> {
    let text = read_pointer(file)?;
    let named = text.strip_prefix(b"gitdir: ")?;
    (!named.is_empty()).then(|| PathBuf::from(OsString::from_vec(named.to_vec())))
}

/// The protection targets of a git directory: its [`GIT_DIR_PROTECTED`]
/// entries, and what its config points at.
pub(crate) fn gitdir_targets(
    gitdir: &Path,
    worktree: &Path,
    home: Option<&Path>,
) -> Result<Vec<Target>, SandboxError> {
    let mut targets: Vec<Target> = GIT_DIR_PROTECTED
        .iter()
        .map(|(name, kind)| Target::placeheld(gitdir.join(name), *kind))
        .collect();
    targets.extend(super::config::config_targets_or_refuse(
        gitdir, worktree, home,
    )?);
    Ok(targets)
}
