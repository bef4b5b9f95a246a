//! Putting back a symlink a start-up file or a PATH directory is reached
//! through, when the job replaced it (a link is no mount point, so the
//! mounts cannot keep it).
//!
//! The plan pins the directories above each such link, so a job cannot
//! move them; this is the second layer, for when that did not hold: every
//! step happens through a descriptor for the link's directory, opened
//! beneath its root without following a symlink and checked to be the
//! same directory as before the job. A job that swapped that directory, or
//! one above it, for a link to somewhere else gets nothing renamed or
//! created there, and the sweep says so.

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use super::aside;

/// One kept link.
#[derive(Debug, Clone)]
pub(crate) struct KeptLink {
    /// The writable root it is in, canonical.
    pub root: PathBuf,
    /// Where it is below `root`; nothing on the way there is a symlink.
    pub rel: PathBuf,
    /// What it says.
    pub target: PathBuf,
    /// The directory holding it, by device and inode.
    pub parent: (u64, u64),
}

/// The link is one again, to where it led, with what replaced it kept
/// aside; or, where its directory is no longer the one it was in, nothing
/// is touched and that is reported.
pub(super) fn restore(link: &KeptLink, undone: &mut Vec<String>) {
    let shown = link.root.join(&link.rel);
    let Some(name) = link.rel.file_name() else {
        return;
    };
    let Some(dir) = parent(link) else {
        undone.push(format!(
            "{}: the directory holding this start-up link was moved, removed or replaced by the \
             command, so the link was not checked or restored (nothing is followed to wherever \
             it leads now); look at {} yourself",
            shown.display(),
            shown.parent().unwrap_or(&shown).display()
        ));
        return;
    };
    let now = rustix::fs::readlinkat(&dir, name, Vec::new());
    if now.is_ok_and(|now| now.as_bytes() == link.target.as_os_str().as_bytes()) {
        return;
    }
    let name = name.to_string_lossy();
    let moved = match rustix::fs::statat(&dir, &*name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => rustix::fs::renameat(&dir, &*name, &dir, aside(&name)).is_ok(),
        Err(_) => true,
    };
    if moved && rustix::fs::symlinkat(&link.target, &dir, &*name).is_ok() {
        undone.push(format!(
            "{}: the command replaced this start-up file's symlink; restored it to {}, and kept \
             what it wrote as {}",
            shown.display(),
            link.target.display(),
            aside(&name)
        ));
    } else {
        undone.push(format!(
            "{}: the command replaced this start-up file's symlink (it led to {}), and it could \
             not be restored; put it back yourself",
            shown.display(),
            link.target.display()
        ));
    }
}

/// The directory holding the link, if it is still the one it was.
fn parent(link: &KeptLink) -> Option<File> {
    let root = rustix::fs::open(
        &link.root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let rel = match link.rel.parent() {
        Some(rel) if !rel.as_os_str().is_empty() => rel,
        _ => Path::new("."),
    };
    let dir = rustix::fs::openat2(
        &root,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
    .ok()?;
    let dir = File::from(dir);
    let meta = dir.metadata().ok()?;
    ((meta.dev(), meta.ino()) == link.parent).then_some(dir)
}
