//! The paths inside the workspace a confined program must not change, and
//! the mounts that protect them.
//!
//! Git's hooks and config run and configure programs outside the sandbox
//! the next time the user runs git, a worktree's `.git` file says where
//! those live, and the workspace `mecha.toml` configures mecha itself. Each
//! is re-bound read-only over the writable workspace (see
//! [`GIT_DIR_PROTECTED`] for the list inside `.git`). Three details decide
//! whether that holds:
//!
//! - a directory between the workspace and a protected path could be
//!   renamed away and rebuilt (`mv .git x; mkdir -p .git/hooks`), so such a
//!   directory is pinned by binding it onto itself: a mount point cannot be
//!   renamed or removed;
//! - a protected path that does not exist yet would simply be created, so
//!   the first missing component gets a placeholder, bound
//!   read-only. bwrap would create that mount point through the workspace
//!   bind anyway; we create it ourselves so we know it is ours, and remove
//!   it when the last job holding it ends (see [`Placeholder`]);
//! - a mount follows a symlink, and the link itself stays replaceable, so a
//!   protected component that is a symlink is refused.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::{Lease, SandboxError};

/// Inside a `.git` directory: what runs programs, or says where to find
/// what does. `commondir`, absent in a plain repository, would make git
/// take hooks and config from any directory it names (a copy in the
/// workspace, say); `modules` holds each submodule's own gitdir, hooks and
/// config included, and one planted there is reused by the next
/// `git submodule update`.
///
/// A placeholder for a missing `commondir` holds `.` (the gitdir itself,
/// which is what its absence means): git reads the file whenever it
/// exists, and an empty one stops every git command.
const GIT_DIR_PROTECTED: [(&str, Kind); 4] = [
    ("hooks", Kind::Dir),
    ("config", Kind::File(b"")),
    ("commondir", Kind::File(b".\n")),
    ("modules", Kind::Dir),
];

/// One protection mount, applied after the workspace bind, in order.
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
enum Kind {
    /// A file, and what its placeholder holds.
    File(&'static [u8]),
    Dir,
}

/// Where one workspace lives: on the host (canonical, for every check and
/// placeholder) and inside (where the mounts go).
struct Workspace<'a> {
    host: &'a Path,
    inside: &'a Path,
    /// Host paths the program can write besides the workspace; a gitdir
    /// under one of them gets the same symlink check.
    writable: &'a [PathBuf],
}

/// The protection mounts for a workspace; placeholders created for it are
/// held in `lease`.
pub(crate) fn plan(
    host: &Path,
    inside: &Path,
    writable: &[PathBuf],
    lease: &mut Lease,
) -> Result<Vec<Mount>, SandboxError> {
    let ws = Workspace {
        host,
        inside,
        writable,
    };
    let mut mounts = Vec::new();
    let mut registry = placeholders();
    mounts.extend(ws.existing(Path::new("mecha.toml"))?);
    let dot_git = Path::new(".git");
    match fs::symlink_metadata(host.join(dot_git)) {
        Ok(meta) if meta.is_dir() && !registry.contains_key(&host.join(dot_git)) => {
            mounts.push(Mount::Pin {
                source: host.join(dot_git),
                dest: inside.join(dot_git),
            });
            for (name, kind) in GIT_DIR_PROTECTED {
                mounts.extend(ws.entry(&mut registry, &dot_git.join(name), kind, lease)?);
            }
        }
        Ok(meta) if meta.is_file() => {
            mounts.extend(ws.entry(&mut registry, dot_git, Kind::File(b""), lease)?);
            drop(registry);
            mounts.extend(ws.gitdir(&host.join(dot_git))?);
        }
        // Missing (or our own placeholder): one read-only empty directory
        // stands for `.git/hooks` and `.git/config` both; a symlink is
        // refused there.
        _ => mounts.extend(ws.entry(&mut registry, dot_git, Kind::Dir, lease)?),
    }
    Ok(mounts)
}

impl Workspace<'_> {
    /// The read-only mount for `rel` if it exists; nothing if it does not.
    /// For the workspace's `mecha.toml`: a project file can only narrow,
    /// so one a command creates can take away but never grant, while a
    /// placeholder would be picked up by every `git add -A` run inside.
    fn existing(&self, rel: &Path) -> Result<Option<Mount>, SandboxError> {
        let host = self.host.join(rel);
        match fs::symlink_metadata(&host) {
            Ok(meta) if meta.file_type().is_symlink() => {
                Err(SandboxError::ProtectedSymlink { path: host })
            }
            Ok(_) => Ok(Some(Mount::ReadOnly {
                source: host,
                dest: self.inside.join(rel),
            })),
            Err(_) => Ok(None),
        }
    }

    /// The read-only mount for `rel`, creating a placeholder if it is
    /// missing. The registry lock is held across the check and the create,
    /// so two jobs starting at once agree on who created it.
    fn entry(
        &self,
        registry: &mut Registry,
        rel: &Path,
        kind: Kind,
        lease: &mut Lease,
    ) -> Result<Option<Mount>, SandboxError> {
        let host = self.host.join(rel);
        let mount = Mount::ReadOnly {
            source: host.clone(),
            dest: self.inside.join(rel),
        };
        if let Some(held) = registry.get_mut(&host) {
            held.count += 1;
            lease.hold(Placeholder { path: host });
            return Ok(Some(mount));
        }
        match fs::symlink_metadata(&host) {
            Ok(meta) if meta.file_type().is_symlink() => {
                Err(SandboxError::ProtectedSymlink { path: host })
            }
            Ok(_) => Ok(Some(mount)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let created = match kind {
                    Kind::Dir => fs::create_dir(&host),
                    Kind::File(content) => fs::File::create_new(&host)
                        .and_then(|mut file| std::io::Write::write_all(&mut file, content)),
                }
                .and_then(|()| fs::symlink_metadata(&host));
                let meta = match created {
                    Ok(meta) => meta,
                    // What mecha cannot create here, the program (same
                    // user, no capabilities) cannot either: nothing to mask.
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
                        ) =>
                    {
                        return Ok(None);
                    }
                    Err(e) => return Err(protect_failed(&host, &e)),
                };
                registry.insert(
                    host.clone(),
                    Held {
                        count: 1,
                        dev: meta.dev(),
                        ino: meta.ino(),
                        dir: kind == Kind::Dir,
                        len: meta.len(),
                    },
                );
                lease.hold(Placeholder { path: host });
                Ok(Some(mount))
            }
            Err(e) => Err(protect_failed(&host, &e)),
        }
    }

    /// A worktree's (or submodule's) `.git` file names its gitdir, and a
    /// worktree's gitdir names the common directory holding hooks, config
    /// and objects: both read-only, the common one first.
    fn gitdir(&self, dot_git: &Path) -> Result<Vec<Mount>, SandboxError> {
        let mut text = String::new();
        fs::File::open(dot_git)
            .and_then(|f| f.take(4096).read_to_string(&mut text))
            .map_err(|e| protect_failed(dot_git, &e))?;
        let Some(named) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
            // Not a gitfile git understands: git inside fails, and the file
            // itself is already read-only.
            return Ok(Vec::new());
        };
        let named = Path::new(named.trim());
        let (host, inside) = self.locate(dot_git, self.host, self.inside, named)?;
        let mut mounts = Vec::new();
        let commondir = host.join("commondir");
        if let Ok(common) = fs::read_to_string(&commondir) {
            let named = Path::new(common.trim());
            let (common_host, common_inside) = self.locate(&commondir, &host, &inside, named)?;
            mounts.push(Mount::ReadOnly {
                source: common_host,
                dest: common_inside,
            });
        }
        mounts.push(Mount::ReadOnly {
            source: host,
            dest: inside,
        });
        Ok(mounts)
    }

    /// `named` (as written in `file`, relative to `base`) on the host,
    /// canonical, and where git inside will look for it.
    fn locate(
        &self,
        file: &Path,
        base_host: &Path,
        base_inside: &Path,
        named: &Path,
    ) -> Result<(PathBuf, PathBuf), SandboxError> {
        let lexical = normalize(&base_host.join(named));
        let host = fs::canonicalize(&lexical).map_err(|e| SandboxError::Confine {
            program: file.display().to_string(),
            reason: format!(
                "it names `{}`, which cannot be opened ({e}); repair the worktree with \
                     `git worktree repair`, or remove the file",
                lexical.display()
            ),
        })?;
        for root in std::iter::once(self.host).chain(self.writable.iter().map(PathBuf::as_path)) {
            if lexical.starts_with(root) {
                refuse_symlinks_below(root, &lexical)?;
            }
        }
        Ok((host, normalize(&base_inside.join(named))))
    }
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

/// Placeholders this process created, by host path, and how many running
/// jobs hold each: two concurrent jobs on one workspace share one, and only
/// the last to end removes it.
type Registry = HashMap<PathBuf, Held>;

#[derive(Debug)]
struct Held {
    count: usize,
    dev: u64,
    ino: u64,
    dir: bool,
    /// What a file placeholder held when created.
    len: u64,
}

static PLACEHOLDERS: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

fn placeholders() -> MutexGuard<'static, Registry> {
    // A panic while the lock was held leaves the counts as they were, which
    // is still the best record of what exists.
    PLACEHOLDERS
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

/// One job's hold on a placeholder; the last drop removes it, if it is
/// still the placeholder we created, unchanged (never anything else).
#[derive(Debug)]
pub(crate) struct Placeholder {
    path: PathBuf,
}

impl Drop for Placeholder {
    fn drop(&mut self) {
        let mut registry = placeholders();
        let Some(held) = registry.get_mut(&self.path) else {
            return;
        };
        held.count -= 1;
        if held.count > 0 {
            return;
        }
        if let Some(held) = registry.remove(&self.path) {
            let ours = fs::symlink_metadata(&self.path).is_ok_and(|m| {
                m.dev() == held.dev && m.ino() == held.ino && (held.dir || m.len() == held.len)
            });
            // remove_dir refuses a directory that is no longer empty, so
            // anything put there is kept.
            let removed = match (ours, held.dir) {
                (false, _) => Ok(()),
                (true, true) => fs::remove_dir(&self.path),
                (true, false) => fs::remove_file(&self.path),
            };
            if let Err(e) = removed {
                tracing::debug!(path = %self.path.display(), "placeholder kept: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_in(ws: &Path) -> (Vec<Mount>, Lease) {
        let mut lease = Lease::default();
        let mounts = plan(ws, Path::new("/in"), &[], &mut lease).unwrap();
        (mounts, lease)
    }

    fn ro(rel: &str, host: &Path) -> Mount {
        Mount::ReadOnly {
            source: host.join(rel),
            dest: Path::new("/in").join(rel),
        }
    }

    #[test]
    fn a_repository_pins_dot_git_before_its_hooks_and_config() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::write(ws.join(".git/config"), "").unwrap();
        fs::write(ws.join("mecha.toml"), "").unwrap();
        let (mounts, _lease) = plan_in(ws);
        let pin = Mount::Pin {
            source: ws.join(".git"),
            dest: "/in/.git".into(),
        };
        assert_eq!(
            mounts,
            [
                ro("mecha.toml", ws),
                pin,
                ro(".git/hooks", ws),
                ro(".git/config", ws),
                ro(".git/commondir", ws),
                ro(".git/modules", ws),
            ]
        );
        assert!(ws.join(".git/commondir").is_file(), "masked while missing");
        assert!(ws.join(".git/modules").is_dir(), "masked while missing");
    }

    #[test]
    fn missing_paths_get_placeholders_removed_by_the_last_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        let (first, lease) = plan_in(ws);
        assert_eq!(first, [ro(".git", ws)]);
        assert!(ws.join(".git").is_dir() && !ws.join("mecha.toml").exists());
        let (second, other) = plan_in(ws);
        assert_eq!(
            second, first,
            "a placeholder is protected like the real thing"
        );
        drop(lease);
        assert!(ws.join(".git").is_dir(), "still held by the second job");
        drop(other);
        assert_eq!(fs::read_dir(ws).unwrap().count(), 0, "nothing left behind");
    }

    #[test]
    fn a_placeholder_someone_filled_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        fs::create_dir(ws.join(".git")).unwrap();
        let (_, lease) = plan_in(ws);
        fs::write(ws.join(".git/hooks/keep"), "x").unwrap();
        fs::write(ws.join("mecha.toml"), "[agent]").unwrap();
        drop(lease);
        assert!(ws.join(".git/hooks/keep").is_file());
        assert!(ws.join("mecha.toml").is_file());
        for gone in [".git/config", ".git/commondir", ".git/modules"] {
            assert!(!ws.join(gone).exists(), "the empty {gone} is removed");
        }
    }

    #[test]
    fn a_symlinked_protected_component_is_refused() {
        for link in [".git", "mecha.toml"] {
            let tmp = tempfile::tempdir().unwrap();
            let ws = tmp.path();
            std::os::unix::fs::symlink("/tmp", ws.join(link)).unwrap();
            let err = plan(ws, ws, &[], &mut Lease::default()).unwrap_err();
            assert_eq!(
                err,
                SandboxError::ProtectedSymlink {
                    path: ws.join(link)
                }
            );
        }
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        fs::create_dir(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink("/tmp", ws.join(".git/hooks")).unwrap();
        let err = plan(ws, ws, &[], &mut Lease::default()).unwrap_err();
        assert!(err.to_string().contains(".git/hooks"), "{err}");
    }

    #[test]
    fn a_worktree_binds_its_gitdir_and_common_dir_read_only() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        let gitdir = main.join(".git/worktrees/wt");
        fs::create_dir_all(&gitdir).unwrap();
        fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        let ws = tmp.path().join("wt");
        fs::create_dir(&ws).unwrap();
        fs::write(ws.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        let mut lease = Lease::default();
        let mounts = plan(&ws, &ws, &[], &mut lease).unwrap();
        let same = |p: PathBuf| Mount::ReadOnly {
            source: p.clone(),
            dest: p,
        };
        assert_eq!(
            mounts,
            [same(ws.join(".git")), same(main.join(".git")), same(gitdir)]
        );
    }

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/b/../c/./d")), Path::new("/a/c/d"));
    }
}
