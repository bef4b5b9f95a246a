//! After a confined job: nothing it left behind may be something git (or a
//! login shell) on the host will run. The mounts keep what existed
//! read-only; what a job can still do is make something new: a nested
//! repository with `core.fsmonitor`, a bare layout at the root with
//! `core.worktree`, a `.git` file naming a fake git directory, a hook in a
//! new repository, or a replaced symlink where a start-up file was.
//!
//! So every repository that was not there before the job (by device and
//! inode) is checked: config keys outside [`gitconfig::Entry::is_inert`]
//! are removed (the original is kept beside it, renamed, for the user to
//! read), and hooks are renamed so git no longer runs them. A plain
//! `git init` writes nothing that is touched. Every change is reported,
//! so the result of the command says what was undone and why.
//!
//! The sweep works through directory descriptors opened beneath the
//! workspace without following symlinks, so a concurrent job that swaps a
//! directory for a link cannot turn a rename or a rewrite against a file
//! elsewhere.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use crate::gitconfig;
use crate::protect::{Found, find};

/// What renamed-aside files are called: git reads none of them.
const QUARANTINE: &str = ".mecha-quarantine";

/// The repositories of a workspace before a job, and the start-up links
/// it must find unchanged.
#[derive(Debug, Default)]
pub(crate) struct Baseline {
    workspace: PathBuf,
    known: HashSet<(u64, u64)>,
    links: Vec<(PathBuf, PathBuf)>,
}

impl Baseline {
    pub(crate) fn of(workspace: &Path, found: &[Found]) -> Self {
        let mut baseline = Self {
            workspace: workspace.to_path_buf(),
            ..Self::default()
        };
        for dir in gitdirs(found) {
            baseline.know(&dir);
        }
        baseline
    }

    fn know(&mut self, dir: &Path) {
        if let Ok(meta) = std::fs::metadata(dir) {
            self.known.insert((meta.dev(), meta.ino()));
        }
    }

    fn is_known(&self, dir: &Path) -> bool {
        std::fs::symlink_metadata(dir).is_ok_and(|m| self.known.contains(&(m.dev(), m.ino())))
    }

    /// A symlink among the start-up files, to be found the same after.
    pub(crate) fn keep_link(&mut self, link: PathBuf, target: PathBuf) {
        self.links.push((link, target));
    }

    /// Undoes what the job left that the host would run, and says what.
    pub(crate) fn sweep(&self) -> Vec<String> {
        let mut undone = Vec::new();
        for (link, target) in &self.links {
            restore_link(link, target, &mut undone);
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
        let mut seen = HashSet::new();
        let mut queue = gitdirs(&find(&self.workspace));
        while let Some(dir) = queue.pop() {
            let Ok(rel) = dir.strip_prefix(&self.workspace) else {
                continue;
            };
            if self.is_known(&dir) || !seen.insert(dir.clone()) {
                continue;
            }
            let Some(fd) = open_dir(&root, rel) else {
                continue;
            };
            let shown = rel.display().to_string();
            let shown = if shown.is_empty() { ".".into() } else { shown };
            for name in ["config", "config.worktree"] {
                sanitize_config(&fd, &shown, name, &mut undone);
            }
            quarantine_hooks(&fd, &shown, &mut undone);
            // A linked worktree's entries, and the common directory each
            // (or the repository itself) names: a fake one is new too.
            queue.extend(commondir(&dir));
            for entry in std::fs::read_dir(dir.join("worktrees"))
                .into_iter()
                .flatten()
                .flatten()
            {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    queue.push(entry.path());
                }
            }
        }
        undone
    }
}

/// The git directories `found` names, within reach of a `.git` file too.
fn gitdirs(found: &[Found]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for repo in found {
        match repo {
            Found::GitDir(dir) => dirs.push(dir.clone()),
            Found::GitFile(file) => {
                if let Ok(Some(named)) = crate::protect::gitfile_dirs(file) {
                    dirs.push(named.gitdir.1);
                    dirs.extend(named.common.map(|c| c.1));
                }
            }
        }
    }
    dirs
}

fn commondir(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("commondir")).ok()?;
    std::fs::canonicalize(crate::protect::normalize(&dir.join(text.trim()))).ok()
}

fn open_dir(root: &OwnedFd, rel: &Path) -> Option<OwnedFd> {
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
    .ok()
}

fn aside(name: &str) -> String {
    format!("{name}{QUARANTINE}")
}

/// Keeps only the inert entries of `dir/name`; the original goes aside.
fn sanitize_config(dir: &OwnedFd, shown: &str, name: &str, undone: &mut Vec<String>) {
    let file = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    );
    let file = match file {
        Ok(file) => std::fs::File::from(file),
        Err(rustix::io::Errno::LOOP) => {
            if rustix::fs::renameat(dir, name, dir, aside(name)).is_ok() {
                undone.push(format!(
                    "{shown}/{name} was a symlink in a repository the command made; moved aside \
                     to {}, since git on the host would read it as config",
                    aside(name)
                ));
            }
            return;
        }
        Err(_) => return,
    };
    let mut text = String::new();
    let read = file.take(1 << 20).read_to_string(&mut text);
    let (keep, removed) = match read.ok().and_then(|_| gitconfig::parse(&text)) {
        Some(entries) => {
            let (keep, bad): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| e.is_inert());
            if bad.is_empty() {
                return;
            }
            let names: Vec<String> = bad.iter().map(gitconfig::Entry::name).collect();
            (keep, format!("removed {}", names.join(", ")))
        }
        None => (
            Vec::new(),
            "emptied it (it is not config mecha can read)".into(),
        ),
    };
    if rustix::fs::renameat(dir, name, dir, aside(name)).is_err() {
        return;
    }
    let written = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(std::io::Error::from)
    .map(std::fs::File::from)
    .and_then(|mut f| f.write_all(gitconfig::render(&keep).as_bytes()));
    if let Err(e) = written {
        tracing::warn!("could not write the cleaned {shown}/{name}: {e}");
    }
    undone.push(format!(
        "{shown}/{name}: {removed}, in a repository the command made (git on the host would \
         run or include what they name); the original is kept as {}",
        aside(name)
    ));
}

/// Renames every hook of a new repository (a `.sample` runs never), or the
/// hooks directory itself when it is a symlink.
fn quarantine_hooks(dir: &OwnedFd, shown: &str, undone: &mut Vec<String>) {
    let hooks = rustix::fs::openat(
        dir,
        "hooks",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let hooks = match hooks {
        Ok(hooks) => hooks,
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            if rustix::fs::renameat(dir, "hooks", dir, aside("hooks")).is_ok() {
                undone.push(format!(
                    "{shown}/hooks was not a directory in a repository the command made; moved \
                     aside to {}, so git on the host runs nothing from it",
                    aside("hooks")
                ));
            }
            return;
        }
        Err(_) => return,
    };
    let Ok(mut listing) = rustix::fs::Dir::read_from(&hooks) else {
        return;
    };
    let mut names = Vec::new();
    while let Some(Ok(entry)) = listing.read() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." && !name.ends_with(".sample") && !name.ends_with(QUARANTINE)
        {
            names.push(name);
        }
    }
    for name in names {
        if rustix::fs::renameat(&hooks, OsStr::new(&name), &hooks, aside(&name)).is_ok() {
            undone.push(format!(
                "{shown}/hooks/{name}: renamed to {}, a hook in a repository the command made \
                 (git on the host would run it)",
                aside(&name)
            ));
        }
    }
}

/// A start-up file that was a symlink is one again, to where it led.
fn restore_link(link: &Path, target: &Path, undone: &mut Vec<String>) {
    if std::fs::read_link(link).is_ok_and(|t| t == target) {
        return;
    }
    let moved = match std::fs::symlink_metadata(link) {
        Ok(_) => {
            let mut aside = link.as_os_str().to_owned();
            aside.push(QUARANTINE);
            std::fs::rename(link, &aside).is_ok()
        }
        Err(_) => true,
    };
    if moved && std::os::unix::fs::symlink(target, link).is_ok() {
        undone.push(format!(
            "{}: the command replaced this start-up file's symlink; restored it to {}, and kept \
             what it wrote as {}{QUARANTINE}",
            link.display(),
            target.display(),
            link.display()
        ));
    }
}
