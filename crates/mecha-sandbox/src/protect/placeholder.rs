//! Placeholders: what mecha creates where a protected path is missing, so
//! there is something to bind read-only over (bwrap would create that
//! mount point through the workspace bind anyway; creating it ourselves
//! means we know it is ours). Reference-counted across the jobs of this
//! process, and removed when the last job holding one ends, only if it is
//! still the same, unchanged inode.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, MutexGuard};

use super::{Kind, protect_failed};
use crate::{Lease, SandboxError};

/// Placeholders this process created, by host path, and how many running
/// jobs hold each: two concurrent jobs on one workspace share one, and only
/// the last to end removes it.
pub(super) type Registry = HashMap<PathBuf, Held>;

#[derive(Debug)]
pub(super) struct Held {
    count: usize,
    dev: u64,
    ino: u64,
    dir: bool,
    /// What a file placeholder held when created.
    len: u64,
}

static PLACEHOLDERS: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

/// The registry, locked: held across a check and a create, so two jobs
/// starting at once agree on who created a placeholder.
pub(super) fn registry() -> MutexGuard<'static, Registry> {
    // A panic while the lock was held leaves the counts as they were, which
    // is still the best record of what exists.
    PLACEHOLDERS
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

/// If `path` is a placeholder of ours, one more hold on it for `lease`:
/// the job that created it must not remove it from under this one.
pub(super) fn hold_if_ours(registry: &mut Registry, path: &Path, lease: &mut Lease) -> bool {
    let Some(held) = registry.get_mut(path) else {
        return false;
    };
    held.count += 1;
    lease.hold(Placeholder {
        path: path.to_owned(),
    });
    true
}

/// Creates a placeholder of `kind` at the missing `path`, held by `lease`.
/// `false` where mecha may not create it: then the program (same user, no
/// capabilities) cannot either, and there is nothing to mask.
pub(super) fn create(
    registry: &mut Registry,
    path: &Path,
    kind: Kind,
    lease: &mut Lease,
) -> Result<bool, SandboxError> {
    let created = match kind {
        Kind::Dir => fs::create_dir(path),
        Kind::File(content) => fs::File::create_new(path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, content)),
    }
    .and_then(|()| fs::symlink_metadata(path));
    let meta = match created {
        Ok(meta) => meta,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
            ) =>
        {
            return Ok(false);
        }
        Err(e) => return Err(protect_failed(path, &e)),
    };
    registry.insert(
        path.to_owned(),
        Held {
            count: 1,
            dev: meta.dev(),
            ino: meta.ino(),
            dir: kind == Kind::Dir,
            len: meta.len(),
        },
    );
    lease.hold(Placeholder {
        path: path.to_owned(),
    });
    Ok(true)
}

/// One job's hold on a placeholder; the last drop removes it, if it is
/// still the placeholder we created, unchanged (never anything else).
#[derive(Debug)]
pub(crate) struct Placeholder {
    path: PathBuf,
}

impl Drop for Placeholder {
    fn drop(&mut self) {
        let mut registry = registry();
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
