//! Output budgets and the spill directory.
//!
//! A result bigger than its share of the turn's budget is saved to the
//! context's spill directory and its transcript copy is cut, with a marker
//! that tells the model exactly where the rest is and how to read it.
//! [`SpillingSink`] does this while the bytes stream in, so a gigabyte of
//! shell output costs one budget's worth of memory, and at most
//! [`SpillDir::max_file_bytes`] of disk.
//!
//! The directory is private to the user (0700, files 0600, created so), and
//! it remembers which of its files hold content from outside the machine, so
//! reading one back is labelled external again.

mod sink;

use std::collections::HashSet;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::jail::Jail;
use crate::panic_cleanup::TrackedDir;
use crate::tool::sanitize_tool_name;

pub use sink::SpillingSink;
pub(crate) use sink::fit_text;

/// How much of one result a spill file keeps when `[tools] spill_max_bytes`
/// is unset: hundreds of times any turn budget, so only a runaway (a
/// command printing without end) reaches it, and that cannot fill the disk.
pub const DEFAULT_SPILL_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// A file's identity (device and inode), so a second name for a spill file,
/// such as a hard link into the workspace, is still known to be one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(file: &File) -> io::Result<Self> {
        let meta = file.metadata()?;
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// The spill files one call wrote. Whether their content came from outside
/// is known only once the call returns its output, so the batch labels them
/// then, through [`SpillDir::label_external`].
#[derive(Debug, Default)]
pub(crate) struct CallSpills(Mutex<Vec<FileId>>);

impl CallSpills {
    fn add(&self, id: FileId) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(id);
    }
}

/// A fresh, private directory for one context's oversized outputs.
///
/// Made at the first spill, since most runs never spill and a directory
/// made and removed costs every run a `mkdir` and an `rmdir` (on a busy
/// ext4, with `discard`, a millisecond or more each); removed when the
/// context is dropped. Each context gets its own, so two contexts (two
/// eval cases, say) cannot read each other's output.
#[derive(Debug)]
pub struct SpillDir {
    made: OnceLock<Made>,
    counter: AtomicU64,
    max_file_bytes: u64,
    /// The files holding content from outside the machine.
    external: Mutex<HashSet<FileId>>,
}

/// The directory, once made.
#[derive(Debug)]
struct Made {
    /// So a panic hook can remove the directory when no destructor runs.
    _tracked: TrackedDir,
    _temp: tempfile::TempDir,
    jail: Jail,
}

impl SpillDir {
    /// A spill directory to be made under the system temp dir at the first
    /// spill, mode 0700 from the start: tool output is often private, and
    /// the system temp dir is shared by every local user. Each file keeps
    /// at most `max_file_bytes`.
    pub fn new(max_file_bytes: u64) -> Self {
        Self {
            made: OnceLock::new(),
            counter: AtomicU64::new(0),
            max_file_bytes,
            external: Mutex::new(HashSet::new()),
        }
    }

    fn made(&self) -> io::Result<&Made> {
        if let Some(made) = self.made.get() {
            return Ok(made);
        }
        let temp = tempfile::Builder::new()
            .prefix("mecha-spill-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?;
        let jail = Jail::open(temp.path())?;
        let made = Made {
            _tracked: TrackedDir::new(temp.path()),
            _temp: temp,
            jail,
        };
        // Two first spills at once: the one that lost removes its own.
        drop(self.made.set(made));
        self.made
            .get()
            .ok_or_else(|| io::Error::other("the spill directory was not kept"))
    }

    /// The canonical path of the directory, made now if nothing has
    /// spilled yet.
    pub fn path(&self) -> io::Result<&Path> {
        Ok(self.made()?.jail.root())
    }

    /// The most one spill file holds.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// The directory as a jail, once something has spilled into it.
    pub(crate) fn jail(&self) -> Option<&Jail> {
        self.made.get().map(|made| &made.jail)
    }

    /// Creates a new file, mode 0600, named after the tool and turn, e.g.
    /// `shell-t1-9f2c1a04.txt`, and notes it as written by `call`. `ext` is
    /// what the file holds (`txt`, or an image's own format, so a person
    /// or a program opening it knows what it is).
    pub(crate) fn create_file(
        &self,
        tool: &str,
        turn: u32,
        call: &CallSpills,
        ext: &str,
    ) -> io::Result<(PathBuf, File)> {
        let seq = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(seq);
        let tag = hasher.finish() as u32;
        let safe_tool = sanitize_tool_name(tool);
        let path = self
            .path()?
            .join(format!("{safe_tool}-t{turn}-{tag:08x}.{ext}"));
        let file = File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        call.add(FileId::of(&file)?);
        Ok((path, file))
    }

    /// Remembers that the files `call` wrote hold content from outside.
    pub(crate) fn label_external(&self, call: &CallSpills) {
        let written = call.0.lock().unwrap_or_else(PoisonError::into_inner);
        self.external
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(written.iter().copied());
    }

    /// Whether `file` (opened by whatever name) is one of this directory's
    /// files holding content from outside the machine. A file whose
    /// identity cannot be read counts as external: the label errs towards
    /// distrust.
    pub(crate) fn holds_external(&self, file: &File) -> bool {
        let external = self.external.lock().unwrap_or_else(PoisonError::into_inner);
        if external.is_empty() {
            return false;
        }
        FileId::of(file).map_or(true, |id| external.contains(&id))
    }
}

#[cfg(test)]
mod tests;
