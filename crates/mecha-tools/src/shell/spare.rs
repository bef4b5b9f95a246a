//! A bash started ahead of the next unconfined call. Starting bash takes
//! about a millisecond (the exec, the dynamic loader, bash's own set-up),
//! and more on a CPU that idled while the model was answering; a spare
//! started as a call ends, while the model writes the next one, takes that
//! off the path from the model's answer to the call's result.
//!
//! The spare waits on a pipe. A call writes the workspace and its command
//! into the spare's own memory file (a regular file, so bash reads it in
//! one go, where it reads a pipe a byte at a time), then closes the pipe:
//! the spare moves to the workspace and runs the command with `eval`, as
//! `bash -c` would, with no variable of its own left behind. If mecha dies
//! first, the pipe closes with nothing in the file and the spare exits.
//! Confined calls never use one: each sandbox is set up for its own call.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use mecha_core::{ProcessGroup, Program, Spawned, spawn_program_group};
use rustix::fs::{MemfdFlags, memfd_create};
use tokio::net::unix::pipe;

use super::launch::{Launched, Running, unconfined_env};

/// A started bash, waiting for its command.
struct Spare {
    child: Spawned,
    group: ProcessGroup,
    output: pipe::Receiver,
    /// Closing it says go.
    go: io::PipeWriter,
    /// Holds the workspace and the command, NUL-terminated, for the spare
    /// to read from the start.
    script: File,
}

/// The spare of one `shell` tool, and whether one is being started.
#[derive(Default)]
pub(super) struct Spares {
    slot: Arc<Mutex<Slot>>,
}

#[derive(Default)]
struct Slot {
    spare: Option<Spare>,
    starting: bool,
    /// Starting one failed (no bash on PATH, no memory file): calls start
    /// their own bash, as they would without spares.
    failed: bool,
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    // Every change to `Slot` is whole by the time a panic could happen.
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

impl Spares {
    /// Runs `command` in `cwd` on the spare, if there is one and it takes
    /// the command; `None` means the caller starts its own bash.
    pub(super) fn run(&self, command: &str, cwd: &Path) -> Option<Launched> {
        // A NUL would end the command early; `bash -c` refuses one anyway.
        if command.contains('\0') {
            return None;
        }
        let spare = lock(&self.slot).spare.take()?;
        spare.start(command, cwd).ok()
    }

    /// Starts a spare on the blocking pool, unless there is one, one is
    /// being started, or starting one failed before; returns at once.
    pub(super) fn refill(&self, hidden_env: &[String]) {
        {
            let mut slot = lock(&self.slot);
            if slot.spare.is_some() || slot.starting || slot.failed {
                return;
            }
            slot.starting = true;
        }
        let slot = Arc::clone(&self.slot);
        let env = unconfined_env(hidden_env);
        tokio::task::spawn_blocking(move || {
            let started = Spare::spawn(&env);
            let mut slot = lock(&slot);
            slot.starting = false;
            match started {
                Ok(spare) => slot.spare = Some(spare),
                Err(e) => {
                    tracing::debug!(error = %e, "no spare bash");
                    slot.failed = true;
                }
            }
        });
    }
}

impl Spare {
    fn spawn(env: &[(OsString, OsString)]) -> io::Result<Self> {
        let bash = mecha_core::on_path("bash")
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no bash on PATH"))?;
        let script = File::from(memfd_create("mecha-command", MemfdFlags::CLOEXEC)?);
        let (wait, go) = io::pipe()?;
        let (writer, output) = pipe::pipe()?;
        let writer = writer.into_blocking_fd()?;
        let wait = OwnedFd::from(wait);
        let (g, s) = (wait.as_raw_fd(), script.as_raw_fd());
        // `read` fails only at end of file with nothing read: mecha is gone.
        let waiting = format!(
            "IFS= read -r _ <&{g} || exit 0; exec {g}<&-; \
             IFS= read -r -d '' d <&{s}; IFS= read -r -d '' c <&{s}; exec {s}<&-; \
             cd -- \"$d\" || exit 126; eval \"unset -v d c; $c\""
        );
        // `$0` as a fresh `bash -c` has it (posix_spawn's would be the path).
        let args = [
            OsString::from("-c"),
            OsString::from(waiting),
            OsString::from("bash"),
        ];
        let keep = [wait.as_fd(), script.as_fd()];
        let (child, group) = spawn_program_group(&Program {
            path: &bash,
            args: &args,
            env,
            stdin: None,
            stdout: writer.as_fd(),
            stderr: writer.as_fd(),
            keep: &keep,
        })?;
        Ok(Self {
            child,
            group,
            output,
            go,
            script,
        })
    }

    /// Hands over the command and says go.
    fn start(self, command: &str, cwd: &Path) -> io::Result<Launched> {
        let mut text = Vec::with_capacity(cwd.as_os_str().len() + command.len() + 2);
        text.extend_from_slice(cwd.as_os_str().as_bytes());
        text.push(0);
        text.extend_from_slice(command.as_bytes());
        text.push(0);
        // At the file's start, leaving the offset the spare reads from at 0.
        self.script.write_all_at(&text, 0)?;
        let Self {
            child,
            group,
            output,
            mut go,
            ..
        } = self;
        // A spare that died while it waited has closed its end: EPIPE.
        go.write_all(b"\n")?;
        drop(go);
        Ok(Launched {
            child: Running::Spawned(child),
            group,
            output,
            lease: None,
        })
    }
}
