//! Making a session file durable off the caller's path. Between a turn's
//! results and its next request the loop only needs the records written
//! (a crash of mecha cannot lose what the kernel already has); the
//! `fdatasync` that guards against a power cut can run beside the request
//! instead of before it. One thread per writer, started at the first ask,
//! runs the syncs; dropping the syncer waits for every one asked for.

use std::fs::File;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// The thread's stack: it calls one system call in a loop.
const STACK_BYTES: usize = 64 * 1024;

pub(crate) struct Syncer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Syncs asked for, and run, counted from the start: each one run
    /// covers every ask before it began.
    asked: u64,
    done: u64,
    closing: bool,
    /// The first failure since it was last taken.
    error: Option<io::Error>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // Every change to `State` is whole by the time a panic could happen.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Syncer {
    /// Starts the thread that syncs `file` (a descriptor of the session
    /// file's own).
    pub(crate) fn start(file: File) -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mecha-journal".into())
            .stack_size(STACK_BYTES)
            .spawn(move || serve(&file, &theirs))?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Asks for everything written so far to be made durable; returns at
    /// once.
    pub(crate) fn ask(&self) {
        let mut state = self.shared.state();
        state.asked += 1;
        self.shared.changed.notify_all();
    }

    /// The first failure of a sync since the last call, if any.
    pub(crate) fn take_error(&self) -> Option<io::Error> {
        self.shared.state().error.take()
    }

    /// Waits until every sync asked for has run.
    pub(crate) fn wait(&self) {
        let mut state = self.shared.state();
        while state.done < state.asked {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Syncer {
    /// Runs every sync asked for, then ends the thread.
    fn drop(&mut self) {
        self.shared.state().closing = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(file: &File, shared: &Shared) {
    let mut state = shared.state();
    loop {
        if state.done < state.asked {
            let covered = state.asked;
            drop(state);
            let synced = file.sync_data();
            state = shared.state();
            state.done = covered;
            if let Err(e) = synced {
                state.error.get_or_insert(e);
            }
            shared.changed.notify_all();
        } else if state.closing {
            return;
        } else {
            state = shared
                .changed
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_failed_sync_is_kept_until_taken_and_every_ask_is_run() {
        // fdatasync on a pipe fails with EINVAL, as it would with EIO on a
        // failing disk.
        let (_reader, writer) = io::pipe().unwrap();
        let syncer = Syncer::start(File::from(std::os::fd::OwnedFd::from(writer))).unwrap();
        syncer.ask();
        syncer.ask();
        syncer.wait();
        assert!(syncer.take_error().is_some(), "the failure is kept");
        assert!(syncer.take_error().is_none(), "and handed over once");
        syncer.ask();
        drop(syncer);
    }

    #[test]
    fn a_sync_asked_for_has_run_once_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = File::create(dir.path().join("s.jsonl")).unwrap();
        let syncer = Syncer::start(file.try_clone().unwrap()).unwrap();
        for _ in 0..50 {
            file.write_all(b"{}\n").unwrap();
            syncer.ask();
        }
        syncer.wait();
        let state = syncer.shared.state();
        assert_eq!(state.done, 50);
        assert!(state.error.is_none());
    }
}
