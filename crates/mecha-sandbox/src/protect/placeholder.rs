//! Placeholders: what mecha creates where a protected path is missing, so
//! there is something to bind read-only over (bwrap would create that
//! mount point through the workspace bind anyway; creating it ourselves
//! means we know it is ours). Removed when the last job holding it ends,
//! only if it is still the same, unchanged inode.
//!
//! "The last job" counts the jobs of every mecha process on the workspace,
//! not only this one's: unlinking a file that is a mount point in another
//! mount namespace detaches that mount, so a placeholder removed while
//! another process's job has it bound read-only would leave that job free
//! to write what it stood for (`.git/commondir`, `.git/hooks`). So every
//! job holds each protected path it mounts by a shared `flock` on it, and
//! a placeholder is removed only by a job that can take the lock
//! exclusively, which no other job can then take. Which inodes are
//! placeholders is written down where every mecha process (and no job)
//! can read and write it: in memory, and in mecha's home.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;

use super::{Kind, protect_failed};
use crate::SandboxError;
use crate::sweep::made::{Id, id_of};

/// The records' directory under the records directory.
const DIR: &str = "placeholders";

/// How long a job waits for a protected path another holds exclusively
/// (a job ending removes a placeholder in well under this).
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// What a placeholder was when created: a directory, or a file of this
/// many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Dir,
    File(u64),
}

/// The placeholders this process created and has not removed.
static IN_MEMORY: Mutex<Vec<(Id, PathBuf, Shape)>> = Mutex::new(Vec::new());

/// Where placeholders are written down: memory, and the records directory
/// when there is one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Records {
    dir: Option<PathBuf>,
}

impl Records {
    pub(crate) fn in_dir(records: Option<&Path>) -> Self {
        Self {
            dir: records.map(|d| d.join(DIR)),
        }
    }

    /// Whether `path` is a placeholder some mecha created (not followed).
    pub(crate) fn is_placeholder(&self, path: &Path) -> bool {
        fs::symlink_metadata(path).is_ok_and(|meta| self.shape(id_of(&meta), path).is_some())
    }

    fn shape(&self, id: Id, path: &Path) -> Option<Shape> {
        let memory = IN_MEMORY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, shape)) = memory.iter().find(|(i, p, _)| *i == id && p == path) {
            return Some(*shape);
        }
        drop(memory);
        let bytes = fs::read(self.file(id)?).ok()?;
        let (shape, recorded) = parse(&bytes)?;
        (recorded == path).then_some(shape)
    }

    fn file(&self, id: Id) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}-{}-{}", id.0, id.1, id.2)))
    }

    fn write(&self, id: Id, path: &Path, shape: Shape) {
        IN_MEMORY
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, path.to_owned(), shape));
        let Some(file) = self.file(id) else {
            return;
        };
        // Written whole, then renamed into place: a reader sees all of it
        // or nothing.
        let partial = file.with_extension(format!("partial-{}", std::process::id()));
        let written = file
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| fs::write(&partial, render(path, shape)))
            .and_then(|()| fs::rename(&partial, &file));
        if let Err(e) = written {
            tracing::warn!(
                "could not record the placeholder {} in {}: {e}; another mecha will keep it",
                path.display(),
                file.display()
            );
        }
    }

    fn forget(&self, id: Id) {
        IN_MEMORY
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, _, _)| *i != id);
        if let Some(file) = self.file(id) {
            let _ = fs::remove_file(file);
        }
    }
}

fn render(path: &Path, shape: Shape) -> Vec<u8> {
    let mut out = match shape {
        Shape::Dir => b"dir\n".to_vec(),
        Shape::File(len) => format!("file {len}\n").into_bytes(),
    };
    out.extend_from_slice(path.as_os_str().as_bytes());
    out
}

fn parse(bytes: &[u8]) -> Option<(Shape, PathBuf)> {
    let newline = bytes.iter().position(|b| *b == b'\n')?;
    let (head, path) = (
        std::str::from_utf8(&bytes[..newline]).ok()?,
        &bytes[newline + 1..],
    );
    let shape = match head.split_once(' ') {
        None if head == "dir" => Shape::Dir,
        Some(("file", len)) => Shape::File(len.parse().ok()?),
        _ => return None,
    };
    Some((shape, PathBuf::from(OsStr::from_bytes(path))))
}

/// One job's hold on a protected path: a shared lock on it for as long as
/// the job runs. The last to let go of a placeholder removes it, if it is
/// still the placeholder that was created, unchanged (never anything else).
#[derive(Debug)]
pub(crate) struct Hold {
    path: PathBuf,
    file: File,
    records: Records,
}

/// What holding a path found.
pub(super) enum Held {
    Yes(Hold),
    /// Nothing there to hold (not a file or directory mecha can open):
    /// nothing of mecha's, so nothing that will be removed.
    Nothing,
    /// The path changed while the lock was taken (a placeholder removed
    /// under it): look again.
    Moved,
}

/// A shared hold on `path`, waiting out a job that holds it exclusively
/// while it removes it.
pub(super) fn hold(path: &Path, records: &Records) -> Result<Held, SandboxError> {
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path);
    let Ok(file) = opened else {
        return Ok(Held::Nothing);
    };
    match file.metadata() {
        Ok(meta) if meta.is_dir() || meta.is_file() => {}
        _ => return Ok(Held::Nothing),
    }
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                return Err(protect_failed(
                    path,
                    &io::Error::other(format!(
                        "it is locked by another job ({})",
                        mecha_core::system_words(&e.into())
                    )),
                ));
            }
        }
    }
    let same = match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(held), Ok(now)) => id_of(&held) == id_of(&now),
        _ => false,
    };
    if !same {
        return Ok(Held::Moved);
    }
    Ok(Held::Yes(Hold {
        path: path.to_owned(),
        file,
        records: records.clone(),
    }))
}

/// Creates a placeholder of `kind` at the missing `path` and writes it
/// down. `Ok(false)` where mecha may not create it: then the program
/// (same user, no capabilities) cannot either, and there is nothing to
/// mask; `Ok(true)` also when another job created it first.
pub(super) fn create(path: &Path, kind: Kind, records: &Records) -> Result<bool, SandboxError> {
    let created = match kind {
        Kind::Dir => fs::create_dir(path),
        Kind::File(content) => fs::File::create_new(path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, content)),
    }
    .and_then(|()| fs::symlink_metadata(path));
    let meta = match created {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(true),
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
    let shape = match kind {
        Kind::Dir => Shape::Dir,
        Kind::File(_) => Shape::File(meta.len()),
    };
    records.write(id_of(&meta), path, shape);
    Ok(true)
}

impl Drop for Hold {
    fn drop(&mut self) {
        // Another job still holds it (or is removing it): theirs to end.
        if rustix::fs::flock(&self.file, FlockOperation::NonBlockingLockExclusive).is_err() {
            return;
        }
        let Ok(held) = self.file.metadata() else {
            return;
        };
        let id = id_of(&held);
        let Some(shape) = self.records.shape(id, &self.path) else {
            return;
        };
        let now = fs::symlink_metadata(&self.path);
        let still_there = now.as_ref().is_ok_and(|m| id_of(m) == id);
        let unchanged = now
            .as_ref()
            .is_ok_and(|m| shape == Shape::Dir || shape == Shape::File(m.len()));
        // remove_dir refuses a directory that is no longer empty, so
        // anything put there is kept.
        let removed = match (still_there && unchanged, shape) {
            (false, _) => Ok(()),
            (true, Shape::Dir) => fs::remove_dir(&self.path),
            (true, Shape::File(_)) => fs::remove_file(&self.path),
        };
        // Gone, changed (then it is someone else's), or removed: no longer
        // a placeholder. One kept for what is in it stays written down.
        match removed {
            Ok(()) => self.records.forget(id),
            Err(e) => tracing::debug!(path = %self.path.display(), "placeholder kept: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back() {
        for shape in [Shape::Dir, Shape::File(2)] {
            let path = Path::new("/w/.git/with space\nand newline");
            assert_eq!(parse(&render(path, shape)), Some((shape, path.to_owned())));
        }
        assert_eq!(parse(b"file x\n/p"), None);
        assert_eq!(parse(b"link\n/p"), None);
    }
}
