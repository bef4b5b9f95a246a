//! The paths a confined program must not change, and the mounts that
//! protect them.
//!
//! Everything here is something that runs or configures programs outside
//! the sandbox later: git's hooks and config in every repository of the
//! workspace (git.rs, repos.rs), the user's start-up files and the
//! directories on mecha's PATH when a writable root holds them (home.rs),
//! the workspace `mecha.toml`, and whatever the caller names (mecha's
//! home, the MCP servers files, the programs mecha runs unconfined). Each
//! is re-bound read-only over the writable mounts. Three details decide
//! whether that holds:
//!
//! - a directory between a writable root and a protected path could be
//!   renamed away and rebuilt (`mv .git x; mkdir -p .git/hooks`), so every
//!   such directory is pinned by binding it onto itself: a mount point
//!   cannot be renamed or removed;
//! - a protected path that does not exist yet would simply be created, so
//!   where a placeholder is allowed the first missing component gets one,
//!   bound read-only (see placeholder.rs);
//! - a mount follows a symlink, and the link itself stays replaceable, so a
//!   protected path with a symlink between it and its root is refused;
//!   except for a start-up file or a PATH directory, which is followed to
//!   where it leads (follow.rs), each link on the way kept for the sweep
//!   to find unchanged and the directories above each link pinned.
//!
//! What the walk finds is also the baseline the sweep (sweep.rs) compares
//! against after the job: a repository that was not there before is one
//! the job made.

mod config;
mod follow;
mod git;
mod home;
mod listings;
mod managers;
mod placeholder;
mod repos;
mod sourced;

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::sweep::{Baseline, KeptLink};
use crate::{Lease, SandboxError};
pub(crate) use config::{CONFIG_LIMIT, hooks_dirs};
pub(crate) use git::{Found, common_dir, find, find_opening, is_git_directory, pointed};
pub(crate) use home::{STARTUP_FILES, relative_entry as relative_path_entry};
pub(crate) use listings::Listings;

/// One protection mount, applied after the writable mounts, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mount {
    /// Bound onto itself read-write, so it cannot be renamed away.
    Pin {
        source: PathBuf,
        dest: PathBuf,
    },
    ReadOnly {
        source: PathBuf,
        dest: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file, and what its placeholder holds.
    File(&'static [u8]),
    Dir,
}

/// One host path to keep read-only.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    host: PathBuf,
    /// Masked with a placeholder of this kind while missing; `None` for
    /// what is only protected when it exists.
    placeholder: Option<Kind>,
    /// Mounted (read-only) even outside every writable root, where git
    /// inside must see it: a worktree's git directory.
    shown: Option<PathBuf>,
    /// Reached the way the user's shell reaches it, often through a
    /// symlink into a dotfiles repository: where it leads is protected,
    /// instead of the symlink being refused (see follow.rs).
    follow: bool,
    /// A directory on mecha's PATH. One that is a whole writable root
    /// cannot be kept read-only without taking the root away: refused.
    on_path: bool,
}

impl Target {
    fn existing(host: PathBuf) -> Self {
        Self {
            host,
            placeholder: None,
            shown: None,
            follow: false,
            on_path: false,
        }
    }

    pub(crate) fn placeheld(host: PathBuf, kind: Kind) -> Self {
        Self {
            placeholder: Some(kind),
            ..Self::existing(host)
        }
    }

    pub(crate) fn followed(host: PathBuf, kind: Kind) -> Self {
        Self {
            follow: true,
            ..Self::placeheld(host, kind)
        }
    }

    pub(crate) fn on_path(host: PathBuf) -> Self {
        Self {
            on_path: true,
            ..Self::followed(host, Kind::Dir)
        }
    }
}

/// A tree the program can write: where it is on the host (canonical) and
/// inside.
struct Root<'a> {
    host: &'a Path,
    inside: &'a Path,
}

impl Root<'_> {
    fn inside(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(self.host) {
            Ok(rel) => self.inside.join(rel),
            Err(_) => path.to_path_buf(),
        }
    }

    /// Pins every directory between the root and `path`, shallow first.
    fn pin_above(&self, path: &Path, pins: &mut Vec<Mount>) {
        let mut between = Vec::new();
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(self.host) && *d != self.host) {
            between.push(d.to_path_buf());
            dir = d.parent();
        }
        for d in between.into_iter().rev() {
            push_new(
                pins,
                Mount::Pin {
                    dest: self.inside(&d),
                    source: d,
                },
            );
        }
    }
}

/// Where one job runs, as the protection sees it.
pub(crate) struct Scope<'a> {
    /// The workspace on the host, canonical.
    pub host: &'a Path,
    /// The workspace inside, where the mounts go.
    pub inside: &'a Path,
    /// Host paths the program can write besides the workspace.
    pub writable: &'a [PathBuf],
    /// The caller's own protected paths, canonical.
    pub caller: &'a [PathBuf],
    /// The user's home directory, for the start-up files.
    pub home: Option<&'a Path>,
    /// mecha's PATH, which the user's own shells share: a program put in
    /// one of its directories runs on the host the next time it is called.
    pub search_path: &'a OsStr,
    /// Where the sweep writes down the repositories jobs made.
    pub records: Option<&'a Path>,
    /// What earlier walks of the workspace listed.
    pub listings: &'a Arc<Listings>,
}

/// The hosts of [`config::config_targets`] for the git directory of
/// `workspace`'s own `.git` (a directory, or what a `.git` file names).
/// A config it cannot read adds nothing here: the file tools cannot write
/// the config itself, and the sandbox refuses every command while it
/// stays unreadable.
pub(crate) fn root_config_targets(workspace: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let dot_git = workspace.join(".git");
    let gitdir = match git::pointed(&dot_git) {
        Ok(Some(named)) => named.gitdir.1,
        _ if dot_git.is_dir() => dot_git,
        _ => return Vec::new(),
    };
    config::config_targets(&gitdir, workspace, home)
        .0
        .into_iter()
        .map(|target| target.host)
        .collect()
}

/// The protection mounts for a job (pins first, then the read-only
/// mounts), and the repositories that existed before it; placeholders
/// created for it are held in `lease`.
pub(crate) fn plan(
    scope: &Scope<'_>,
    lease: &mut Lease,
) -> Result<(Vec<Mount>, Baseline), SandboxError> {
    let mut roots = vec![Root {
        host: scope.host,
        inside: scope.inside,
    }];
    roots.extend(scope.writable.iter().map(|w| Root {
        host: w.as_path(),
        inside: w.as_path(),
    }));
    let found = find(scope.host, scope.listings);
    let mut baseline = Baseline::of(scope, &found);
    let records = placeholder::Records::in_dir(scope.records);
    let mut targets = vec![Target::existing(scope.host.join("mecha.toml"))];
    targets.extend(repos::repository_targets(scope, &found, &records)?);
    if let Some(home) = scope.home {
        targets.extend(home::targets(home));
        // Only read when a job could write there.
        if roots
            .iter()
            .any(|r| home.starts_with(r.host) || r.host.starts_with(home))
        {
            targets.extend(sourced::targets(home));
        }
    }
    targets.extend(home::search_path_targets(scope.search_path));
    targets.extend(scope.caller.iter().cloned().map(Target::existing));

    let mut pins: Vec<Mount> = Vec::new();
    let mut read_only: Vec<Mount> = Vec::new();
    let mut lookups = follow::Lookups::default();
    for mut target in targets {
        if target.follow {
            let Some(followed) = lookups.follow(&target.host) else {
                continue;
            };
            for (link, to) in followed.links {
                keep_link(&roots, link, to, &mut pins, &mut baseline);
            }
            target.host = followed.resolved;
        }
        let root = roots.iter().find(|r| target.host.starts_with(r.host));
        let Some(root) = root else {
            if let Some(dest) = target.shown {
                push_new(
                    &mut read_only,
                    Mount::ReadOnly {
                        source: target.host,
                        dest,
                    },
                );
            }
            continue;
        };
        if target.on_path && target.host == root.host {
            return Err(SandboxError::WritableOnPath { path: target.host });
        }
        refuse_symlinks_below(root.host, &target.host)?;
        let Some(MaskPoint {
            at: host,
            placeholder,
        }) = masked_at(&records, root.host, &target, lease)?
        else {
            continue;
        };
        if placeholder {
            baseline.know_placeholder(&host);
        }
        root.pin_above(&host, &mut pins);
        let dest = target.shown.unwrap_or_else(|| root.inside(&host));
        push_new(&mut read_only, Mount::ReadOnly { source: host, dest });
    }
    // A pin under a read-only mount is covered by it, and would only be
    // noise; the rest go shallow first.
    pins.retain(|pin| {
        let Mount::Pin { source, .. } = pin else {
            return true;
        };
        !read_only
            .iter()
            .any(|ro| matches!(ro, Mount::ReadOnly { source: s, .. } if source.starts_with(s)))
    });
    pins.sort_by_key(|pin| match pin {
        Mount::Pin { source, .. } | Mount::ReadOnly { source, .. } => source.components().count(),
    });
    pins.extend(read_only);
    Ok((pins, baseline))
}

/// A link on the way to a followed target, inside a writable root: the
/// directories above it are pinned (so it cannot be moved away with its
/// parent, or the parent swapped for a link), and it is kept for the
/// sweep to restore if the job replaced it. A link outside every root is
/// out of the job's reach.
fn keep_link(
    roots: &[Root<'_>],
    link: PathBuf,
    target: PathBuf,
    pins: &mut Vec<Mount>,
    baseline: &mut Baseline,
) {
    let Some(root) = roots.iter().find(|r| link.starts_with(r.host)) else {
        return;
    };
    let (Ok(rel), Some(parent)) = (link.strip_prefix(root.host), link.parent()) else {
        return;
    };
    let Ok(meta) = fs::metadata(parent) else {
        return;
    };
    root.pin_above(&link, pins);
    baseline.keep_link(KeptLink {
        root: root.host.to_path_buf(),
        rel: rel.to_path_buf(),
        target,
        parent: (meta.dev(), meta.ino()),
    });
}

fn push_new(mounts: &mut Vec<Mount>, mount: Mount) {
    if !mounts.contains(&mount) {
        mounts.push(mount);
    }
}

/// Where `target` is masked, held for the job (see placeholder.rs): itself
/// if it exists, else its first missing component (a placeholder created
/// for it), else nothing to mount.
/// Where a target is mounted read-only: the target itself, or a
/// placeholder (made now, or another job's) where it or a folder above it
/// is missing.
struct MaskPoint {
    at: PathBuf,
    placeholder: bool,
}

fn masked_at(
    records: &placeholder::Records,
    root: &Path,
    target: &Target,
    lease: &mut Lease,
) -> Result<Option<MaskPoint>, SandboxError> {
    // A placeholder another job removed while this one took hold of it is
    // made again on the next look.
    for _ in 0..3 {
        let Some(point) = mask_point(records, root, target)? else {
            return Ok(None);
        };
        match placeholder::hold(&point.at, records)? {
            placeholder::Held::Yes(hold) => lease.hold(hold),
            placeholder::Held::Nothing => {}
            placeholder::Held::Moved => continue,
        }
        return Ok(Some(point));
    }
    Err(protect_failed(
        &target.host,
        &io::Error::other("it kept changing while mecha protected it"),
    ))
}

fn mask_point(
    records: &placeholder::Records,
    root: &Path,
    target: &Target,
) -> Result<Option<MaskPoint>, SandboxError> {
    let found = |at: PathBuf, placeholder: bool| Some(MaskPoint { at, placeholder });
    let Some(kind) = target.placeholder else {
        return Ok(target
            .host
            .symlink_metadata()
            .is_ok()
            .then(|| target.host.clone())
            .and_then(|at| found(at, false)));
    };
    let rest = target.host.strip_prefix(root).unwrap_or(Path::new(""));
    let mut at = root.to_path_buf();
    for part in rest.components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            // Someone's placeholder already masks it all.
            Ok(_) if records.is_placeholder(&at) => return Ok(found(at, true)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let kind = if at == target.host { kind } else { Kind::Dir };
                let created = placeholder::create(&at, kind, records)?;
                return Ok(created.then(|| found(at, true)).flatten());
            }
            Err(e) => return Err(protect_failed(&at, &e)),
        }
    }
    Ok(found(at, false))
}

/// A symlink between `root` and `path` would let the program move what a
/// mount at `path` protects.
fn refuse_symlinks_below(root: &Path, path: &Path) -> Result<(), SandboxError> {
    let Ok(rest) = path.strip_prefix(root) else {
        return Ok(());
    };
    let mut at = root.to_path_buf();
    for part in rest.components() {
        at.push(part);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(SandboxError::ProtectedSymlink { path: at });
        }
    }
    Ok(())
}

/// A regular file's first `limit` bytes; `None` for anything else there
/// (a FIFO, which would block a plain open forever; a device; a
/// directory). Opened without blocking, so nothing a job left can stall it.
pub(crate) fn read_regular(file: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(file)?;
    if !opened.metadata()?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    opened.take(limit).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// `.` and `..` resolved without the filesystem, as git resolves a
/// relative gitdir against the directory it was found in.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn protect_failed(path: &Path, e: &io::Error) -> SandboxError {
    SandboxError::Confine {
        program: path.display().to_string(),
        reason: format!(
            "it must be protected read-only but cannot be ({e}); check the workspace's permissions"
        ),
    }
}

#[cfg(test)]
mod tests;
