//! After a confined job: nothing it left behind may be something git (or a
//! login shell) on the host will run. The mounts keep what existed
//! read-only; what a job can still do is make something new: a nested
//! repository with `core.fsmonitor`, a bare layout with `core.worktree`
//! (at the root, or above or inside a repository), a `.git` file or
//! symlink leading to a fake git directory (hidden inside an existing
//! `.git`, say), a hook in a new repository or in one of its submodules'
//! git directories, or a replaced symlink where a start-up file was.
//!
//! So every git directory that was not there before the job (by device
//! and inode) is checked, with the linked worktrees' and submodules' git
//! directories it holds: config keys outside
//! [`gitconfig::Entry::is_inert`] are removed (the original is kept beside
//! it, renamed, for the user to read), and hooks are renamed so git no
//! longer runs them (fix.rs). A plain `git init` writes nothing that is
//! touched. What leads out of the workspace (a `.git` or a `commondir`) is
//! moved aside unless it and what it leads to were there before: the
//! sweep does not reach outside the workspace to check a repository there.
//! Every change is reported, so the result of the command says what was
//! undone and why. What a sweep finds new it writes down first (made.rs),
//! and every later sweep treats it as new too, known or not: a job that
//! overlaps the one that made a repository may hold a descriptor for it.
//!
//! The sweep works through directory descriptors opened beneath the
//! workspace (or, for a start-up link, the root holding it) without
//! following symlinks, so a job that swaps a directory for a link cannot
//! turn a rename or a rewrite against a file elsewhere.

mod access;
mod fix;
mod links;
pub(crate) mod made;

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use crate::protect::{
    Found, Listings, Scope, common_dir, find_opening, hooks_dirs, is_git_directory, pointed,
};
use access::Opened;
pub(crate) use links::KeptLink;
use made::{Id, Made, id_of};

/// What renamed-aside files are called: git reads none of them.
const QUARANTINE: &str = ".mecha-quarantine";

/// The repositories of a workspace before a job, and the start-up links
/// it must find unchanged.
#[derive(Debug, Default)]
pub(crate) struct Baseline {
    workspace: PathBuf,
    /// The git directories, and the `.git` files and symlinks, that were
    /// there, by device and inode.
    known: HashSet<(u64, u64)>,
    links: Vec<KeptLink>,
    /// Where what a job made is written down.
    made: Made,
    /// The user's home directory, for the git config there.
    home: Option<PathBuf>,
    /// What the walk before the job listed, for the walk after it.
    listings: Arc<Listings>,
}

impl Baseline {
    /// The repositories `found` in the scope's workspace before a job.
    pub(crate) fn of(scope: &Scope<'_>, found: &[Found]) -> Self {
        let mut baseline = Self {
            workspace: scope.host.to_path_buf(),
            made: Made::in_dir(scope.records),
            home: scope.home.map(Path::to_path_buf),
            listings: scope.listings.clone(),
            ..Self::default()
        };
        for repo in found {
            if let Found::File(pointer) | Found::Link(pointer) = repo {
                baseline.know(std::fs::symlink_metadata(pointer));
            }
            for dir in gitdirs(repo) {
                baseline.know(std::fs::metadata(dir));
            }
        }
        baseline
    }

    fn know(&mut self, meta: std::io::Result<std::fs::Metadata>) {
        if let Ok(meta) = meta {
            self.known.insert((meta.dev(), meta.ino()));
        }
    }

    /// A placeholder the job gets read-only (protect/placeholder.rs): it
    /// cannot make of it anything git would run, so no sweep takes it for
    /// a repository the job made, nor writes it down as one.
    pub(crate) fn know_placeholder(&mut self, path: &Path) {
        self.know(std::fs::symlink_metadata(path));
    }

    /// Whether `path` (not followed) was there before the job, and no job
    /// made it: the user's own.
    fn is_users(&self, path: &Path, made: &HashSet<Id>) -> bool {
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| self.known.contains(&(m.dev(), m.ino())) && !made.contains(&id_of(&m)))
    }

    /// A symlink a start-up file or PATH directory is reached through.
    pub(crate) fn keep_link(&mut self, link: KeptLink) {
        self.links.push(link);
    }

    /// Undoes what the job left that the host would run, and says what.
    pub(crate) fn sweep(&self) -> Vec<String> {
        let mut undone = Vec::new();
        for link in &self.links {
            links::restore(link, &mut undone);
        }
        if self.workspace.as_os_str().is_empty() {
            return undone;
        }
        let Ok(root) = rustix::fs::open(
            &self.workspace,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return undone;
        };
        let made = self.made.load();
        // Put back as they were once the sweep is done (see access.rs).
        let mut opened = Opened::default();
        let mut queue = Vec::new();
        // The work tree of each git directory a `.git` file or symlink
        // names (`--separate-git-dir`, a linked worktree).
        let mut worktrees: HashMap<PathBuf, PathBuf> = HashMap::new();
        for repo in find_opening(&self.workspace, true, &self.listings, &mut |dir| {
            opened.open_up_dir(dir)
        }) {
            match repo {
                Found::Dir(dir) => queue.push(dir),
                Found::File(pointer) | Found::Link(pointer) => {
                    if let Some(worktree) = pointer.parent() {
                        for gitdir in pointed_dirs(&pointer) {
                            worktrees.insert(gitdir, worktree.to_path_buf());
                        }
                    }
                    self.through(&root, &pointer, &made, &mut queue, &mut opened, &mut undone);
                }
            }
        }
        let mut seen = HashSet::new();
        while let Some(dir) = queue.pop() {
            let Ok(rel) = dir.strip_prefix(&self.workspace) else {
                continue;
            };
            if self.is_users(&dir, &made) || !seen.insert(dir.clone()) {
                continue;
            }
            let shown = shown(rel);
            let fd = match open_dir(&root, rel) {
                Ok(fd) => fd,
                Err(e) => {
                    undone.push(fix::could_not(&shown, "look inside it", e));
                    continue;
                }
            };
            self.made.record(&dir);
            for name in ["config", "config.worktree"] {
                fix::sanitize_config(&fd, &shown, name, &mut opened, &mut undone);
            }
            fix::quarantine_hooks(&fd, "hooks", &shown, &mut opened, &mut undone);
            // Where its hooks run: its work tree, or, bare, itself.
            let worktree = match worktrees.get(&dir) {
                Some(worktree) => worktree.clone(),
                None if dir.file_name().is_some_and(|n| n == ".git") => {
                    dir.parent().unwrap_or(&dir).to_path_buf()
                }
                None => dir.clone(),
            };
            self.quarantine_user_hooks(&root, &dir, &worktree, &mut opened, &mut undone);
            // The common directory it names: a fake one inside the
            // workspace is new too; one elsewhere, or none that exists, the
            // sweep cannot vouch for.
            if rustix::fs::statat(&fd, "commondir", AtFlags::SYMLINK_NOFOLLOW).is_ok() {
                match common_dir(&dir) {
                    Some(common) if common.starts_with(&self.workspace) => queue.push(common),
                    _ => {
                        if opened
                            .rename_in(&fd, "commondir", &aside("commondir"))
                            .is_ok()
                        {
                            undone.push(format!(
                                "{shown}/commondir named a directory outside the workspace, or \
                                 none, in a repository the command made; moved aside to {}, \
                                 since git on the host would take hooks and config from there",
                                aside("commondir")
                            ));
                        }
                    }
                }
            }
            queue.extend(held_gitdirs(&dir, &mut opened));
        }
        undone
    }

    /// The hooks a new repository's work tree holds where the user's own
    /// git config points every repository (`core.hooksPath = .githooks`):
    /// git on the host runs those, not its `hooks`.
    fn quarantine_user_hooks(
        &self,
        root: &OwnedFd,
        gitdir: &Path,
        worktree: &Path,
        opened: &mut Opened,
        undone: &mut Vec<String>,
    ) {
        for hooks in hooks_dirs(gitdir, worktree, self.home.as_deref()) {
            let Ok(rel) = hooks.strip_prefix(&self.workspace) else {
                continue;
            };
            let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
                continue;
            };
            if let Ok(dir) = open_dir(root, parent) {
                let name = name.to_string_lossy();
                fix::quarantine_hooks(&dir, &name, &shown(parent), opened, undone);
            }
        }
    }

    /// A `.git` file or symlink: the git directories it leads to inside
    /// the workspace are checked like any other. One that leads outside
    /// stays only if it and everything it leads to were there before the
    /// job (then it is the user's own); otherwise it is moved aside.
    fn through(
        &self,
        root: &OwnedFd,
        pointer: &Path,
        made: &HashSet<Id>,
        queue: &mut Vec<PathBuf>,
        opened: &mut Opened,
        undone: &mut Vec<String>,
    ) {
        let (inside, outside): (Vec<_>, Vec<_>) = pointed_dirs(pointer)
            .into_iter()
            .partition(|d| d.starts_with(&self.workspace));
        let users_own =
            self.is_users(pointer, made) && outside.iter().all(|d| self.is_users(d, made));
        // One the job made that mecha cannot follow (it names nothing yet,
        // or something only git's reading finds) goes aside too.
        let followed = !inside.is_empty() || !outside.is_empty();
        if users_own || (outside.is_empty() && followed) {
            queue.extend(inside);
            return;
        }
        let Ok(rel) = pointer.strip_prefix(&self.workspace) else {
            return;
        };
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return;
        };
        let name = name.to_string_lossy();
        let moved =
            open_dir(root, parent).and_then(|dir| opened.rename_in(&dir, &name, &aside(&name)));
        self.made.record(pointer);
        if let Err(e) = moved {
            undone.push(fix::could_not(&shown(rel), "move it aside", e));
            return;
        }
        let why = match outside.first() {
            Some(elsewhere) => format!(
                "it leads outside the workspace, to `{}`, which the command may have made or \
                 changed and the sweep does not check",
                elsewhere.display()
            ),
            None => "the command made it, and it names no git directory mecha can follow and \
                     check"
                .to_owned(),
        };
        undone.push(format!(
            "{}: {why}; moved aside to {}, so git on the host does not use that repository \
             from here",
            shown(rel),
            aside(&name)
        ));
    }
}

/// The git directories (canonical) one found repository stands for: the
/// directory itself and the common directory it names, or what a `.git`
/// file or symlink leads to.
fn gitdirs(repo: &Found) -> Vec<PathBuf> {
    match repo {
        Found::Dir(dir) => std::iter::once(dir.clone())
            .chain(common_dir(dir))
            .collect(),
        Found::File(pointer) | Found::Link(pointer) => pointed_dirs(pointer),
    }
}

/// The git and common directories a `.git` file or symlink leads to;
/// none when it leads nowhere (git there fails; a later sweep looks again
/// once it leads somewhere).
fn pointed_dirs(pointer: &Path) -> Vec<PathBuf> {
    match pointed(pointer) {
        Ok(Some(named)) => std::iter::once(named.gitdir.1)
            .chain(named.common.map(|c| c.1))
            .collect(),
        _ => Vec::new(),
    }
}

/// The git directories a repository holds for others: each linked
/// worktree's (`worktrees/*`) and each submodule's (`modules/<name>`, a
/// name that can hold slashes, of a submodule that can have submodules of
/// its own). Everything below `modules` is looked at but the object
/// stores: new repositories are small.
fn held_gitdirs(dir: &Path, opened: &mut Opened) -> Vec<PathBuf> {
    let mut held = subdirs(&dir.join("worktrees"), opened);
    let mut pending = subdirs(&dir.join("modules"), opened);
    while let Some(sub) = pending.pop() {
        // Listed first: that is what opens it up, if the job closed it.
        let below = subdirs(&sub, opened);
        let gitdir = is_git_directory(&sub);
        pending.extend(
            below
                .into_iter()
                .filter(|d| !(gitdir && d.file_name().is_some_and(|n| n == "objects"))),
        );
        if gitdir {
            held.push(sub);
        }
    }
    held
}

/// The directories in `dir`, symlinks not followed.
fn subdirs(dir: &Path, opened: &mut Opened) -> Vec<PathBuf> {
    let listed = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && opened.open_up_dir(dir) => {
            std::fs::read_dir(dir)
        }
        listed => listed,
    };
    listed
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .map(|entry| entry.path())
        .collect()
}

/// `rel` as the report names it.
fn shown(rel: &Path) -> String {
    match rel.display().to_string() {
        shown if shown.is_empty() => ".".into(),
        shown => shown,
    }
}

/// The directory `rel` below `root`, opened without leaving it and without
/// following a symlink on the way.
fn open_dir(root: &OwnedFd, rel: &Path) -> Result<OwnedFd, rustix::io::Errno> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    rustix::fs::openat2(
        root,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
}

fn aside(name: &str) -> String {
    format!("{name}{QUARANTINE}")
}
