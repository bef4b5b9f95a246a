//! What the walk for repositories (git.rs) saw in each directory, kept
//! from one job to the next. Every confined command walks the workspace
//! twice (before, for the repositories to protect; after, for those it
//! made), and listing every directory of a large tree cost tens of
//! milliseconds a call. A directory whose entries are unchanged need not
//! be listed again, and its change time says whether they are: creating,
//! removing or renaming an entry (or changing the directory's owner or
//! mode) sets it, and nothing a job can do sets it back, as only a change
//! of the system clock could.
//!
//! So each directory is still visited (one `statx`, not followed), and a
//! listing is reused only when the directory is the same one (device and
//! inode) with the same change time. Two things could make that stale:
//!
//! - timestamps come from a clock that ticks in steps of up to 10 ms, so a
//!   change in the same step as the one the listing saw would leave the
//!   change time as it was. A listing is kept only when the directory's
//!   change time is older than [`SETTLED`] when the listing begins: every
//!   later change then carries a later time;
//! - a file system whose times come from elsewhere (a network server with
//!   its own clock) or in coarse steps (FAT's two seconds) breaks that
//!   rule, so only directories on the workspace's own device are kept, and
//!   only when it is one of [`TRUSTED`].
//!
//! What is kept is what the walk needs of a listing: its subdirectories,
//! its `.git` (and what kind), and whether it holds a `HEAD`. Whether
//! such a directory is a git directory is worked out afresh every walk.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, CWD, FileType, StatxFlags, statx};

/// How old a directory's change time must be for its listing to be kept.
pub(crate) const SETTLED: Duration = Duration::from_millis(50);

/// Directories kept at most (a few hundred bytes each): past this, a tree
/// is listed as before, directory by directory.
const MOST: usize = 200_000;

/// File systems (by `statfs` magic) whose change times are the kernel's
/// own, in nanoseconds: ext2/3/4, XFS, Btrfs, tmpfs, F2FS, bcachefs, ZFS.
const TRUSTED: [i64; 7] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0xF2F5_2010,
    0xCA45_1A4E,
    0x2FC1_2FC1,
];

/// What a directory held when it was listed, as the walk reads it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Entries {
    /// The `.git` in it, if any.
    pub dot_git: Option<DotGit>,
    /// The names of its subdirectories (symlinks not included), `.git`
    /// left out.
    pub subdirs: Vec<OsString>,
    /// Whether it holds an entry named `HEAD` that is not a directory.
    pub head: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DotGit {
    Dir,
    File,
    Link,
}

/// A directory as `statx` saw it, without following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: (u32, u32),
    ino: u64,
    ctime: (i64, u32),
}

#[derive(Debug)]
struct Kept {
    stamp: Stamp,
    entries: Arc<Entries>,
}

/// The listings kept for one sandbox's jobs, shared by their walks.
#[derive(Debug, Default)]
pub(crate) struct Listings {
    kept: Mutex<HashMap<PathBuf, Kept>>,
}

/// One walk's use of [`Listings`]: the device whose directories it may
/// keep (none when the workspace's file system is not trusted).
pub(crate) struct Walk<'a> {
    listings: &'a Listings,
    device: Option<(u32, u32)>,
}

impl Listings {
    /// Starts a walk of the tree under `root`.
    pub(crate) fn walk(&self, root: &Path) -> Walk<'_> {
        // `f_type`'s width is the architecture's (a C long).
        #[allow(clippy::unnecessary_cast)]
        let device = rustix::fs::statfs(root)
            .ok()
            .filter(|fs| TRUSTED.contains(&(fs.f_type as i64)))
            .and_then(|_| stamp(root))
            .map(|s| s.dev);
        Walk {
            listings: self,
            device,
        }
    }

    /// How many listings are kept (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Walk<'_> {
    /// What `dir` holds: the kept listing while the directory is unchanged,
    /// else what `list` reads (`None`: it could not be listed), kept when
    /// the directory has settled and `keep` says the listing is a plain
    /// one (not made after opening the directory up).
    pub(crate) fn entries(
        &self,
        dir: &Path,
        list: impl FnOnce() -> Option<(Entries, bool)>,
    ) -> Option<Arc<Entries>> {
        let Some(device) = self.device else {
            return list().map(|(entries, _)| Arc::new(entries));
        };
        let began = SystemTime::now();
        let before = stamp(dir).filter(|s| s.dev == device);
        if let Some(before) = before
            && let Some(kept) = self.listings.lock().get(dir)
            && kept.stamp == before
        {
            return Some(kept.entries.clone());
        }
        let (entries, keep) = list()?;
        let entries = Arc::new(entries);
        if let Some(before) = before
            && keep
            && settled(before.ctime, began)
        {
            let mut kept = self.listings.lock();
            if kept.len() < MOST || kept.contains_key(dir) {
                kept.insert(
                    dir.to_path_buf(),
                    Kept {
                        stamp: before,
                        entries: entries.clone(),
                    },
                );
            }
        }
        Some(entries)
    }
}

/// Whether a change time is older than [`SETTLED`] at `now`.
fn settled((secs, nanos): (i64, u32), now: SystemTime) -> bool {
    let Ok(now) = now.duration_since(UNIX_EPOCH) else {
        return false;
    };
    let Ok(secs) = u64::try_from(secs) else {
        return false;
    };
    Duration::new(secs, nanos) + SETTLED < now
}

fn stamp(dir: &Path) -> Option<Stamp> {
    let wanted = StatxFlags::TYPE | StatxFlags::INO | StatxFlags::CTIME;
    let st = statx(CWD, dir, AtFlags::SYMLINK_NOFOLLOW, wanted).ok()?;
    let is_dir = FileType::from_raw_mode(st.stx_mode.into()) == FileType::Directory;
    (StatxFlags::from_bits_retain(st.stx_mask).contains(wanted) && is_dir).then_some(Stamp {
        dev: (st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
    })
}

/// Reads `dir` for the walk; `None` when it cannot be read.
pub(crate) fn read(dir: &Path) -> Option<Entries> {
    let mut entries = Entries::default();
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        if name == ".git" {
            entries.dot_git = if kind.is_dir() {
                Some(DotGit::Dir)
            } else if kind.is_symlink() {
                Some(DotGit::Link)
            } else if kind.is_file() {
                Some(DotGit::File)
            } else {
                None
            };
        } else if kind.is_dir() {
            entries.subdirs.push(name);
        } else if name == "HEAD" {
            entries.head = true;
        }
    }
    Some(entries)
}

#[cfg(test)]
#[path = "listings_tests.rs"]
mod tests;
