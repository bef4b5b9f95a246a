//! The path jail: every path a model supplies is judged here before anything
//! touches the filesystem, and the handle it yields opens beneath the root.
//!
//! Two layers. [`Jail::judge`] canonicalizes and proves containment, which
//! gives the model a clear refusal. The [`cap_std::fs::Dir`] it hands out
//! then opens with `openat2(RESOLVE_BENEATH)`, so a directory swapped for a
//! symlink between the check and the open still cannot lead outside.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// Why a model-supplied path was refused.
#[derive(Debug, thiserror::Error)]
pub enum JailError {
    #[error("empty path; pass a path relative to the workspace")]
    Empty,
    #[error(
        "`{requested}` resolves to {resolved}, which is outside the workspace {root}; \
         use a path inside the workspace"
    )]
    Outside {
        requested: String,
        resolved: PathBuf,
        root: PathBuf,
    },
    #[error(
        "`{requested}` uses `..` after a directory that does not exist; \
         write the path without `..`"
    )]
    ClimbsFromMissing { requested: String },
    #[error(
        "`{requested}` goes through the symlink {link}, whose target does not exist; \
         refusing to follow it"
    )]
    DanglingSymlink { requested: String, link: PathBuf },
    #[error(
        "`{requested}` resolves to {resolved}, inside {protected}, which mecha keeps from every \
         writer: it is where mecha keeps its own config, skills, hooks and sessions, or \
         something that runs outside the sandbox later (a program mecha starts, a start-up \
         file of your shell, a hook or config file your repository's git config names); no \
         tool may write there. Ask the user to make this change \
         themselves"
    )]
    Protected {
        requested: String,
        resolved: PathBuf,
        protected: PathBuf,
    },
    #[error(
        "`{requested}` resolves to {resolved}, inside {sealed}, where mecha keeps the tokens of \
         the servers the user logged into; no tool may read or write there"
    )]
    Sealed {
        requested: String,
        resolved: PathBuf,
        sealed: PathBuf,
    },
    #[error(
        "`{requested}` resolves to {resolved}, inside a git directory, whose hooks and config \
         git on this machine runs; the file tools do not write there. Change it with git \
         commands in the shell, or ask the user"
    )]
    GitDir {
        requested: String,
        resolved: PathBuf,
    },
    #[error("cannot resolve `{requested}`: {source}")]
    Io {
        requested: String,
        #[source]
        source: io::Error,
    },
}

impl JailError {
    /// A few words for a one-line status: why the path was refused, without
    /// the paths themselves (the whole message says those).
    pub fn summary(&self) -> &'static str {
        match self {
            Self::Empty => "an empty path",
            Self::Outside { .. } => "outside the workspace",
            Self::ClimbsFromMissing { .. } => "`..` after a missing directory",
            Self::DanglingSymlink { .. } => "through a dangling symlink",
            Self::Protected { .. } => "in mecha's own files",
            Self::Sealed { .. } => "in mecha's credentials",
            Self::GitDir { .. } => "inside a git directory",
            Self::Io { .. } => "a path that cannot be resolved",
        }
    }

    /// [`JailError::summary`] of a refusal known only by its message (a
    /// front end sees the gate's verdict as text). Each variant's message
    /// holds words no other holds; a test keeps them in step.
    pub fn summary_in(message: &str) -> Option<&'static str> {
        const MARKS: [(&str, &str); 8] = [
            ("empty path;", "an empty path"),
            ("which is outside the workspace", "outside the workspace"),
            (
                "after a directory that does not exist",
                "`..` after a missing directory",
            ),
            ("whose target does not exist", "through a dangling symlink"),
            ("where mecha keeps its own config", "in mecha's own files"),
            ("where mecha keeps the tokens", "in mecha's credentials"),
            (
                "inside a git directory, whose hooks",
                "inside a git directory",
            ),
            ("cannot resolve `", "a path that cannot be resolved"),
        ];
        MARKS
            .iter()
            .find(|(mark, _)| message.contains(mark))
            .map(|(_, summary)| *summary)
    }
}

/// A directory tree that paths are confined to.
#[derive(Debug, Clone)]
pub struct Jail {
    root: PathBuf,
    dir: Arc<Dir>,
}

impl Jail {
    /// Opens `root` as a jail. The root is canonicalized once, here.
    pub fn open(root: &Path) -> io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Self {
            root,
            dir: Arc::new(dir),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Judges `requested` against this jail alone, as the file tools judge
    /// a model's path (for files mecha reads itself from the workspace).
    pub fn resolve(&self, requested: &str) -> Result<ResolvedPath, JailError> {
        resolve_in(&[self], requested)
    }

    /// Where `canonical` sits inside this jail, if it does.
    fn confine(&self, canonical: &Path) -> Option<ResolvedPath> {
        let rel = canonical.strip_prefix(&self.root).ok()?;
        Some(ResolvedPath {
            absolute: canonical.to_path_buf(),
            relative: if rel.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                rel.to_path_buf()
            },
            dir: Arc::clone(&self.dir),
        })
    }
}

/// A path proven to lie inside a jail, with the handle to open it through.
#[derive(Debug, Clone)]
pub struct ResolvedPath {
    absolute: PathBuf,
    relative: PathBuf,
    dir: Arc<Dir>,
}

impl ResolvedPath {
    /// The canonical absolute path, for messages to the model.
    pub fn absolute(&self) -> &Path {
        &self.absolute
    }

    /// The path relative to the jail root (`.` for the root itself).
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    /// The jail's root directory; open `relative()` through it, never
    /// `absolute()` through `std::fs`.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The directory that holds this path, opened one component at a time
    /// without following any symlink (missing ones created when `create`),
    /// so it is the very directory that was judged. The judgement ran on
    /// the canonical path, which has no symlink in it; a directory swapped
    /// for a symlink since (into mecha's home, say, by a confined command
    /// racing the write) fails the open instead of being followed. Writers
    /// open the file itself through this handle, by its bare name.
    pub fn open_parent(&self, create: bool) -> io::Result<Dir> {
        let mut dir = self.dir.try_clone()?;
        let Some(parent) = self.relative.parent() else {
            return Ok(dir);
        };
        for component in parent.components() {
            match component {
                Component::CurDir => {}
                Component::Normal(name) => dir = open_child_dir(&dir, name, create)?,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "a judged path holds only plain components",
                    ));
                }
            }
        }
        Ok(dir)
    }
}

/// `name` in `dir`, a directory and not a symlink, made first if missing
/// and `create`.
fn open_child_dir(dir: &Dir, name: &std::ffi::OsStr, create: bool) -> io::Result<Dir> {
    use rustix::fs::{Mode, OFlags, mkdirat, openat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let open = || openat(dir, name, flags, Mode::empty());
    let fd = match open() {
        Err(rustix::io::Errno::NOENT) if create => {
            match mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            open()
        }
        other => other,
    }
    .map_err(|e| match e {
        // O_NOFOLLOW on a symlink, or O_DIRECTORY on something else.
        rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => io::Error::new(
            io::ErrorKind::NotADirectory,
            format!(
                "`{}` was replaced by a symlink or a file while this call ran; \
                 check what changed it and try again",
                name.to_string_lossy()
            ),
        ),
        e => e.into(),
    })?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

/// Canonicalizes `requested` against `base` the way the spec describes:
/// join, canonicalize the nearest existing ancestor, re-append the rest.
pub(crate) fn canonicalize_lenient(base: &Path, requested: &str) -> Result<PathBuf, JailError> {
    if requested.is_empty() {
        return Err(JailError::Empty);
    }
    canonicalize_joined(&base.join(requested), requested)
}

/// [`canonicalize_lenient`] of an already joined path; `requested` is how
/// error messages name it.
fn canonicalize_joined(joined: &Path, requested: &str) -> Result<PathBuf, JailError> {
    let mut existing = joined;
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(canonical) => {
                let mut out = canonical;
                out.extend(tail.iter().rev());
                return Ok(out);
            }
            Err(e) if is_missing(&e) => {
                if existing.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
                    return Err(JailError::DanglingSymlink {
                        requested: requested.to_owned(),
                        link: existing.to_path_buf(),
                    });
                }
                match existing.components().next_back() {
                    Some(Component::Normal(name)) => tail.push(name),
                    Some(Component::CurDir) => {}
                    _ => {
                        return Err(JailError::ClimbsFromMissing {
                            requested: requested.to_owned(),
                        });
                    }
                }
                existing = match existing.parent() {
                    Some(parent) => parent,
                    None => {
                        return Err(JailError::Io {
                            requested: requested.to_owned(),
                            source: e,
                        });
                    }
                };
            }
            Err(source) => {
                return Err(JailError::Io {
                    requested: requested.to_owned(),
                    source,
                });
            }
        }
    }
}

fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Resolves `requested` into the first of `jails` that contains it; the
/// first jail is the one relative paths are joined to.
pub(crate) fn resolve_in(jails: &[&Jail], requested: &str) -> Result<ResolvedPath, JailError> {
    let Some(primary) = jails.first() else {
        return Err(JailError::Empty);
    };
    let canonical = canonicalize_lenient(primary.root(), requested)?;
    jails
        .iter()
        .find_map(|jail| jail.confine(&canonical))
        .ok_or_else(|| JailError::Outside {
            requested: requested.to_owned(),
            resolved: canonical,
            root: primary.root().to_path_buf(),
        })
}

/// Canonicalizes a directory no tool may write to, once, leniently (it may
/// not exist yet, and a write could create it).
pub fn canonical_protected(dir: &Path) -> Result<PathBuf, JailError> {
    let named = dir.display().to_string();
    let absolute = std::path::absolute(dir).map_err(|source| JailError::Io {
        requested: named.clone(),
        source,
    })?;
    canonicalize_joined(&absolute, &named)
}

/// Whether a directory holding the written path (the workspace root
/// included) is, or with this write becomes, laid out as git finds a
/// repository without any `.git`: a `HEAD` beside `objects` and `refs`,
/// or beside a `commondir` (which names where git finds those, and the
/// config). A file tool could otherwise build a bare repository with a
/// `core.fsmonitor` one file at a time.
fn makes_a_git_directory(resolved: &ResolvedPath) -> bool {
    let target = resolved.relative.as_path();
    let present = |dir: &Path, name: &str| {
        let path = dir.join(name);
        target.starts_with(&path) || resolved.dir.symlink_metadata(&path).is_ok()
    };
    target.ancestors().skip(1).any(|dir| {
        present(dir, "HEAD")
            && (present(dir, "commondir") || (present(dir, "objects") && present(dir, "refs")))
    })
}

/// Refuses a write into a git directory (or of a `.git` file): git on the
/// host runs its hooks and what its config names, so a file tool writing
/// there plants a program for the user's next `git status`. The path is
/// canonical, so every spelling of it has the same components.
pub(crate) fn refuse_git_dir(
    resolved: ResolvedPath,
    requested: &str,
) -> Result<ResolvedPath, JailError> {
    if resolved
        .relative
        .components()
        .any(|c| c.as_os_str() == ".git")
        || makes_a_git_directory(&resolved)
    {
        return Err(JailError::GitDir {
            requested: requested.to_owned(),
            resolved: resolved.absolute,
        });
    }
    Ok(resolved)
}

/// The first of `dirs` (canonical) that `resolved` is at or under.
/// Canonical forms on both sides, so a symlink or `..` into one is caught.
fn first_holding<'a>(dirs: &'a [PathBuf], resolved: &ResolvedPath) -> Option<&'a PathBuf> {
    dirs.iter().find(|dir| resolved.absolute.starts_with(dir))
}

/// Refuses `resolved` if it is at or under one of the `sealed`
/// directories (canonical), for readers and writers alike.
pub(crate) fn refuse_sealed(
    resolved: ResolvedPath,
    sealed: &[PathBuf],
    requested: &str,
) -> Result<ResolvedPath, JailError> {
    match first_holding(sealed, &resolved) {
        Some(dir) => Err(JailError::Sealed {
            requested: requested.to_owned(),
            resolved: resolved.absolute,
            sealed: dir.clone(),
        }),
        None => Ok(resolved),
    }
}

/// Refuses `resolved` if it is at or under one of the `protected`
/// directories (canonical, from [`canonical_protected`]). Canonical forms
/// on both sides, so a symlink or `..` into one is caught.
pub(crate) fn refuse_protected(
    resolved: ResolvedPath,
    protected: &[PathBuf],
    requested: &str,
) -> Result<ResolvedPath, JailError> {
    match first_holding(protected, &resolved) {
        Some(dir) => Err(JailError::Protected {
            requested: requested.to_owned(),
            resolved: resolved.absolute,
            protected: dir.clone(),
        }),
        None => Ok(resolved),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every refusal's message leads back to its own summary, so a message
    /// reworded without its mark fails here, not on the user's screen.
    #[test]
    fn each_message_is_known_by_its_summary() {
        let path = || PathBuf::from("/w/x");
        let requested = || "x".to_owned();
        let all = [
            JailError::Empty,
            JailError::Outside {
                requested: requested(),
                resolved: path(),
                root: path(),
            },
            JailError::ClimbsFromMissing {
                requested: requested(),
            },
            JailError::DanglingSymlink {
                requested: requested(),
                link: path(),
            },
            JailError::Protected {
                requested: requested(),
                resolved: path(),
                protected: path(),
            },
            JailError::Sealed {
                requested: requested(),
                resolved: path(),
                sealed: path(),
            },
            JailError::GitDir {
                requested: requested(),
                resolved: path(),
            },
            JailError::Io {
                requested: requested(),
                source: io::Error::other("boom"),
            },
        ];
        for error in all {
            assert_eq!(
                JailError::summary_in(&error.to_string()),
                Some(error.summary()),
                "{error}"
            );
        }
        assert_eq!(JailError::summary_in("unknown tool `x`"), None);
    }
}
