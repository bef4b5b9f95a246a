//! A confined command runs as the user, so it can take the user's own
//! permissions away from what it made: `chmod 111` on a directory hides
//! what is in it from a listing (git only needs to search it), `chmod 555`
//! on a new `.git` stops every rename of the undo, `chmod 000` on a config
//! keeps it from being read. As root none of that stops mecha; as an
//! ordinary user it would stop the sweep silently. So where the owner's
//! permission is what stops it, the sweep gives the owner back what it
//! needs (search and read on a directory, write to rename in it, read on a
//! file), does its work, and puts every mode back as it found it.
//!
//! Modes are changed through a descriptor for the inode itself (an
//! `O_PATH` one, named through `/proc/self/fd`), never through a path a
//! job overlapping the sweep could swap for a symlink.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// What the sweep opened up, to put back when it is done.
#[derive(Debug, Default)]
pub(super) struct Opened {
    changed: Vec<(OwnedFd, Mode)>,
}

impl Opened {
    /// Gives the owner search and read on directory `dir` (not followed),
    /// if mecha owns it; whether it changed anything.
    pub(super) fn open_up_dir(&mut self, dir: &Path) -> bool {
        let Ok(fd) = rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return false;
        };
        self.add(fd, Mode::RUSR | Mode::XUSR)
    }

    /// [`Opened::open_up_dir`] for `name` in `dir`, a file or directory,
    /// with `wanted` for its owner.
    pub(super) fn open_up_at(&mut self, dir: &impl AsFd, name: &str, wanted: Mode) -> bool {
        let Ok(fd) = rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return false;
        };
        self.add(fd, wanted)
    }

    fn add(&mut self, fd: OwnedFd, wanted: Mode) -> bool {
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            return false;
        };
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        if !matches!(
            kind,
            rustix::fs::FileType::Directory | rustix::fs::FileType::RegularFile
        ) || stat.st_uid != rustix::process::geteuid().as_raw()
        {
            return false;
        }
        let mode = Mode::from_raw_mode(stat.st_mode & 0o7777);
        if mode.contains(wanted) {
            return false;
        }
        if chmod_fd(&fd, mode | wanted).is_err() {
            return false;
        }
        self.changed.push((fd, mode));
        true
    }

    /// Renames `from` to `to` in `dir`, giving the owner write on `dir`
    /// for it when that is what stops it.
    pub(super) fn rename_in(&mut self, dir: &OwnedFd, from: &str, to: &str) -> Result<(), Errno> {
        match rustix::fs::renameat(dir, from, dir, to) {
            Err(Errno::ACCESS) => {}
            done => return done,
        }
        let Ok(fd) = rustix::fs::openat(
            dir,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return Err(Errno::ACCESS);
        };
        if !self.add(fd, Mode::WUSR | Mode::XUSR) {
            return Err(Errno::ACCESS);
        }
        rustix::fs::renameat(dir, from, dir, to)
    }
}

impl Drop for Opened {
    /// Every mode back, the deepest first.
    fn drop(&mut self) {
        for (fd, mode) in self.changed.drain(..).rev() {
            if let Err(e) = chmod_fd(&fd, mode) {
                tracing::warn!("could not put a mode back after the sweep: {e}");
            }
        }
    }
}

/// `chmod` of the inode `fd` (an `O_PATH` descriptor, which `fchmod`
/// refuses) through its `/proc/self/fd` name, which is that inode.
fn chmod_fd(fd: &OwnedFd, mode: Mode) -> Result<(), Errno> {
    rustix::fs::chmod(format!("/proc/self/fd/{}", fd.as_raw_fd()), mode)
}
