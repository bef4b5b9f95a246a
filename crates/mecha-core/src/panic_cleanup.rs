//! What a panic must still clean up.
//!
//! The release build aborts on panic (`panic = "abort"`: a smaller, faster
//! binary, and no half-unwound state to reason about), and an abort runs no
//! destructor: no process group guard kills its group, no spill directory
//! removes itself. So the binary installs a panic hook that does their work
//! first: it kills every registered process group and every orphan, and
//! removes every live spill directory. In a build that unwinds (tests,
//! debug), the destructors run and the hook stays out of the way, because
//! the panic may be caught and the run go on.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::process_tree;

/// Spill directories that exist right now.
static SPILL_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn spill_dirs() -> MutexGuard<'static, Vec<PathBuf>> {
    SPILL_DIRS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Installs the hook, keeping the current one (the message) in front of
/// it. Call once, early in `main`.
pub fn install_panic_cleanup() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if cfg!(panic = "abort") {
            clean_up_after_panic();
        }
    }));
}

/// Kills every registered process group and every orphan, and removes every
/// live spill directory, whatever their guards think. For a process that is
/// about to die without running destructors.
pub fn clean_up_after_panic() {
    process_tree::kill_everything();
    // The panic may have struck while the list was locked on this very
    // thread; `try_lock` then skips the directories rather than deadlock.
    let dirs = match SPILL_DIRS.try_lock() {
        Ok(dirs) => dirs.clone(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => Vec::new(),
    };
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Keeps a spill directory on the list while it lives.
#[derive(Debug)]
pub(crate) struct TrackedDir(PathBuf);

impl TrackedDir {
    pub(crate) fn new(path: &Path) -> Self {
        spill_dirs().push(path.to_owned());
        Self(path.to_owned())
    }
}

impl Drop for TrackedDir {
    fn drop(&mut self) {
        let mut dirs = spill_dirs();
        if let Some(i) = dirs.iter().position(|d| *d == self.0) {
            dirs.swap_remove(i);
        }
    }
}
