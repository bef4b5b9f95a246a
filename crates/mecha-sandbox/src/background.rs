//! Work a lease's caller need not wait for: the sweep of a program whose
//! caller is gone, and the removal of what a finished job held (its
//! private `/tmp`, its placeholders). Each runs on a thread of its own and
//! is counted until done, so that mecha can wait for all of it before it
//! exits ([`wait_for_background_sweeps`]).

use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Work started by [`run`] and not yet done.
static PENDING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

fn count(change: impl FnOnce(&mut usize)) {
    let (pending, done) = &PENDING;
    change(&mut pending.lock().unwrap_or_else(|p| p.into_inner()));
    done.notify_all();
}

/// Work mecha must not exit in the middle of, counted for as long as this
/// lives: a background thread's, or a lease set up ahead of its command,
/// which holds placeholders in the workspace until it goes.
#[derive(Debug)]
pub(crate) struct Pending(());

impl Pending {
    pub(crate) fn new() -> Self {
        count(|n| *n += 1);
        Self(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        count(|n| *n -= 1);
    }
}

/// Runs `work` on a thread named `name`, counted until it returns. If no
/// thread can be started, `work` is dropped unrun, and with it what it
/// holds, here and now.
pub(crate) fn run(name: &str, work: impl FnOnce() + Send + 'static) {
    let pending = Pending::new();
    let counted = move || {
        work();
        drop(pending);
    };
    if let Err(e) = std::thread::Builder::new().name(name.into()).spawn(counted) {
        tracing::warn!("could not start a thread for {name}: {e}");
    }
}

/// Waits, up to `limit`, for the work [`run`] started (the sweeps of
/// programs whose callers are gone, and the removal of what finished jobs
/// held) and for every lease set up ahead of its command to be gone. For a front end to call before the process exits.
pub fn wait_for_background_sweeps(limit: Duration) {
    let (pending, done) = &PENDING;
    let pending = pending.lock().unwrap_or_else(|p| p.into_inner());
    let _ = done.wait_timeout_while(pending, limit, |n| *n > 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn the_wait_lasts_until_the_work_is_done() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        run("test-work", move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, Ordering::SeqCst);
        });
        wait_for_background_sweeps(Duration::from_secs(10));
        assert!(done.load(Ordering::SeqCst));
    }
}
