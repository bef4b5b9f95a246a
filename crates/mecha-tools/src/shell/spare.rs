//! A bash started ahead of the next call. Starting bash takes about a
//! millisecond (the exec, the dynamic loader, bash's own set-up), and more
//! on a CPU that idled while the model was answering; starting bwrap for a
//! confined call takes several more (namespaces, mounts). A spare started
//! as a call ends, while the model writes the next one, takes that off the
//! path from the model's answer to the call's result.
//!
//! The spare waits on a pipe. A call writes the workspace and its command
//! into the spare's own memory file (a regular file, so bash reads it in
//! one go, where it reads a pipe a byte at a time), then writes a line to
//! the pipe: the spare moves to the workspace and runs the command with
//! `eval`, as `bash -c` would, with no variable of its own left behind. If
//! mecha dies first, the pipe closes with nothing in the file and the
//! spare exits.
//!
//! A confined spare is a whole sandbox, set up for the workspace as it was
//! when the spare started. It says on a pipe of its own when it waits
//! inside, and only then takes a call. The sandbox decides whether a call
//! may run in it ([`Sandbox::place`]: nothing changed that would confine
//! the call differently, and every protection mount still holds); if not,
//! the call starts its own, and the spare is ended unused. An unused
//! spare's lease is released without a sweep: it ran nothing.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mecha_core::{ProcessGroup, Program, Spawned, spawn_program_group};
use mecha_sandbox::{ConfinedProgram, Lease, Placed, Sandbox, SandboxError};
use rustix::fs::{MemfdFlags, memfd_create};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::cancel::wait_gone;
use super::launch::{ConfinedCall, Launched, Running, unconfined_env};

/// A started bash, waiting for its command.
struct Spare {
    child: Spawned,
    group: ProcessGroup,
    output: pipe::Receiver,
    /// A line on it says go.
    go: io::PipeWriter,
    /// Holds the workspace and the command, NUL-terminated, for the spare
    /// to read from the start.
    script: File,
    /// Confined: its sandbox's lease. Declared last, so that the spare is
    /// killed before an unused lease is released.
    unused: Unused,
}

/// The lease of a confined spare that has not taken a call: released
/// unswept, once the spare is gone, if the spare is dropped so.
struct Unused {
    lease: Option<Lease>,
    pid: u32,
}

impl Drop for Unused {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            let proc_dir = PathBuf::from(format!("/proc/{}", self.pid));
            lease.release_in_background(move || wait_gone(&proc_dir));
        }
    }
}

/// How long a confined spare waits for a call before it is ended: it
/// holds a sandbox, and the placeholders its mounts need in the workspace,
/// which should not outlast a pause in the work for long.
const CONFINED_IDLE: Duration = Duration::from_secs(60);

/// How many confined spares in a row may go unused before no more are
/// started.
const GIVE_UP_AFTER: u32 = 3;

/// The spare of one `shell` tool, and whether one is being started.
pub(super) struct Spares {
    slot: Arc<Mutex<Slot>>,
    /// How long a confined spare may wait.
    idle: Duration,
}

impl Default for Spares {
    fn default() -> Self {
        Self {
            slot: Arc::default(),
            idle: CONFINED_IDLE,
        }
    }
}

#[derive(Default)]
struct Slot {
    spare: Option<Spare>,
    starting: bool,
    /// Starting one failed (no bash on PATH, no memory file, a sandbox
    /// that did not start): calls start their own bash, as they would
    /// without spares.
    failed: bool,
    /// How many spares were put here, so that an idle timer ends only
    /// the one it was set for.
    filled: u64,
    /// Confined spares gone unused since one was last used.
    misses: u32,
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    // Every change to `Slot` is whole by the time a panic could happen.
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

impl Spares {
    /// The waiting spare, if there is one.
    fn take(&self) -> Option<Spare> {
        lock(&self.slot).spare.take()
    }

    /// Runs `command` confined as `call` on the confined spare, if there
    /// is one and the sandbox puts the call there; otherwise what to
    /// start instead. After [`GIVE_UP_AFTER`] spares in a row go unused,
    /// no more are started: a workspace that keeps changing under them, or
    /// a kernel too old to show that a mount is still in place, would
    /// have every call start two sandboxes.
    pub(super) fn run_confined(
        &self,
        sandbox: &Sandbox,
        call: &ConfinedCall,
        command: &str,
    ) -> Result<Result<Launched, ConfinedProgram>, SandboxError> {
        // A NUL would end the command early in the spare's file; bwrap's
        // own argument vector refuses one, as `bash -c` does.
        let spare = if command.contains('\0') {
            None
        } else {
            self.take()
        };
        let Some(spare) = spare else {
            let args = [OsString::from("-c"), OsString::from(command)];
            return sandbox
                .confine_program(call.job(OsStr::new("bash"), &args, sandbox))
                .map(Err);
        };
        let placed = spare.place(sandbox, call, command)?;
        let mut slot = lock(&self.slot);
        match placed {
            Ok(_) => slot.misses = 0,
            Err(_) => {
                slot.misses += 1;
                slot.failed |= slot.misses >= GIVE_UP_AFTER;
            }
        }
        Ok(placed)
    }

    /// Runs `command` in `cwd` on the unconfined spare, if there is one
    /// and it takes the command; `None` means the caller starts its own
    /// bash.
    pub(super) fn run(&self, command: &str, cwd: &Path) -> Option<Launched> {
        // A NUL would end the command early; `bash -c` refuses one anyway.
        if command.contains('\0') {
            return None;
        }
        self.take()?.run(command, cwd).ok()
    }

    /// Claims the slot for a new spare, unless there is one, one is being
    /// started, or starting one failed before.
    fn claim(&self) -> Option<Arc<Mutex<Slot>>> {
        let mut slot = lock(&self.slot);
        if slot.spare.is_some() || slot.starting || slot.failed {
            return None;
        }
        slot.starting = true;
        Some(Arc::clone(&self.slot))
    }

    /// Starts an unconfined spare on the blocking pool, unless [`claim`]
    /// says not to; returns at once.
    ///
    /// [`claim`]: Self::claim
    pub(super) fn refill(&self, hidden_env: &[String]) {
        let Some(slot) = self.claim() else { return };
        let env = unconfined_env(hidden_env);
        tokio::task::spawn_blocking(move || fill(&slot, Spare::spawn(&env)));
    }

    /// Starts a confined spare for `call`'s workspace, unless [`claim`]
    /// says not to; returns at once. bwrap is started on this runtime's
    /// own thread, not the blocking pool's: it dies with the thread that
    /// started it (`--die-with-parent`), and a pool thread ends when idle.
    ///
    /// [`claim`]: Self::claim
    pub(super) fn refill_confined(&self, sandbox: &Sandbox, call: ConfinedCall) {
        let Some(slot) = self.claim() else { return };
        let sandbox = sandbox.clone();
        let idle = self.idle;
        tokio::spawn(async move {
            let started = Spare::spawn_confined(sandbox, call).await;
            let Some(filled) = fill(&slot, started) else {
                return;
            };
            // Not keeping the slot alive: a tool dropped meanwhile takes
            // its spare with it at once.
            let weak = Arc::downgrade(&slot);
            drop(slot);
            tokio::time::sleep(idle).await;
            if let Some(slot) = weak.upgrade() {
                let mut slot = lock(&slot);
                let expired = (slot.filled == filled).then(|| slot.spare.take());
                drop(slot);
                drop(expired);
            }
        });
    }
}

/// Puts a started spare in the slot; which one it was, or `None` if none
/// started.
fn fill(slot: &Mutex<Slot>, started: io::Result<Spare>) -> Option<u64> {
    let mut slot = lock(slot);
    slot.starting = false;
    match started {
        Ok(spare) => {
            slot.spare = Some(spare);
            slot.filled += 1;
            Some(slot.filled)
        }
        Err(e) => {
            tracing::debug!(error = %e, "no spare bash");
            slot.failed = true;
            None
        }
    }
}

/// `bash -c` of this, with `$0` as a fresh `bash -c` has it.
fn waiting_args(go: i32, script: i32, ready: Option<i32>) -> [OsString; 3] {
    // Inside a sandbox, saying so once the mounts are made and bash runs.
    let ready = ready
        .map(|r| format!("printf r >&{r}; exec {r}>&-; "))
        .unwrap_or_default();
    // `read` fails only at end of file with nothing read: mecha is gone.
    let waiting = format!(
        "{ready}IFS= read -r _ <&{go} || exit 0; exec {go}<&-; \
         IFS= read -r -d '' d <&{script}; IFS= read -r -d '' c <&{script}; exec {script}<&-; \
         cd -- \"$d\" || exit 126; eval \"unset -v d c; $c\""
    );
    [
        OsString::from("-c"),
        OsString::from(waiting),
        OsString::from("bash"),
    ]
}

/// The descriptors a spare is started with, besides what its program
/// keeps of its own.
struct Plumbing {
    script: File,
    wait: OwnedFd,
    go: io::PipeWriter,
    writer: OwnedFd,
    output: pipe::Receiver,
}

impl Plumbing {
    fn new() -> io::Result<Self> {
        let script = File::from(memfd_create("mecha-command", MemfdFlags::CLOEXEC)?);
        let (wait, go) = io::pipe()?;
        let (writer, output) = pipe::pipe()?;
        Ok(Self {
            script,
            wait: OwnedFd::from(wait),
            go,
            writer: writer.into_blocking_fd()?,
            output,
        })
    }

    /// Starts `path args` with these descriptors and `keep`.
    fn spawn(
        self,
        path: &Path,
        args: &[OsString],
        env: &[(OsString, OsString)],
        keep: &[BorrowedFd<'_>],
        lease: Option<Lease>,
    ) -> io::Result<Spare> {
        let mut kept = vec![self.wait.as_fd(), self.script.as_fd()];
        kept.extend_from_slice(keep);
        let (child, group) = spawn_program_group(&Program {
            path,
            args,
            env,
            stdin: None,
            stdout: self.writer.as_fd(),
            stderr: self.writer.as_fd(),
            keep: &kept,
        })?;
        let pid = child.id();
        Ok(Spare {
            child,
            group,
            output: self.output,
            go: self.go,
            script: self.script,
            unused: Unused { lease, pid },
        })
    }
}

impl Spare {
    /// An unconfined spare, with `env`.
    fn spawn(env: &[(OsString, OsString)]) -> io::Result<Self> {
        let bash = mecha_core::on_path("bash")
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no bash on PATH"))?;
        let plumbing = Plumbing::new()?;
        let args = waiting_args(plumbing.wait.as_raw_fd(), plumbing.script.as_raw_fd(), None);
        plumbing.spawn(&bash, &args, env, &[], None)
    }

    /// A spare inside a sandbox set up for `call` now, once it waits there.
    async fn spawn_confined(sandbox: Sandbox, call: ConfinedCall) -> io::Result<Self> {
        let plumbing = Plumbing::new()?;
        let (ready_writer, mut ready) = pipe::pipe()?;
        let ready_writer = ready_writer.into_blocking_fd()?;
        let args = waiting_args(
            plumbing.wait.as_raw_fd(),
            plumbing.script.as_raw_fd(),
            Some(ready_writer.as_raw_fd()),
        );
        // The walk for repositories and the placeholders: blocking work.
        let confined = tokio::task::spawn_blocking(move || {
            sandbox.confine_ahead(call.job(OsStr::new("bash"), &args, &sandbox))
        })
        .await
        .map_err(io::Error::other)?
        .map_err(io::Error::other)?
        .ok_or_else(|| io::Error::other("this sandbox starts nothing ahead"))?;
        let mut keep: Vec<BorrowedFd<'_>> = confined.keep.iter().map(AsFd::as_fd).collect();
        keep.push(ready_writer.as_fd());
        let spare = plumbing.spawn(
            &confined.program,
            &confined.args,
            &confined.env,
            &keep,
            Some(confined.lease),
        )?;
        drop(keep);
        drop(ready_writer);
        // One byte once bash runs inside; end of file if bwrap gave up.
        let mut byte = [0u8; 1];
        match ready.read(&mut byte).await? {
            1 => Ok(spare),
            _ => Err(io::Error::other("the sandbox of a spare did not start")),
        }
    }

    /// Runs `call` on this confined spare if the sandbox puts it there;
    /// otherwise what to start instead (and the spare goes unused).
    fn place(
        mut self,
        sandbox: &Sandbox,
        call: &ConfinedCall,
        command: &str,
    ) -> Result<Result<Launched, ConfinedProgram>, SandboxError> {
        let args = [OsString::from("-c"), OsString::from(command)];
        let job = call.job(OsStr::new("bash"), &args, sandbox);
        let Some(lease) = self.unused.lease.as_mut() else {
            return sandbox.confine_program(job).map(Err);
        };
        match sandbox.place(job, lease)? {
            Placed::Fresh(program) => Ok(Err(*program)),
            Placed::Waiting => match self.hand_over(command, &call.workspace) {
                Ok(()) => {
                    let lease = self.unused.lease.take();
                    Ok(Ok(self.launched(lease)))
                }
                // It died after the check: nothing ran in it.
                Err(_) => {
                    let job = call.job(OsStr::new("bash"), &args, sandbox);
                    sandbox.confine_program(job).map(Err)
                }
            },
        }
    }

    /// Runs `command` in `cwd` on this unconfined spare; fails if it died
    /// while it waited.
    fn run(mut self, command: &str, cwd: &Path) -> io::Result<Launched> {
        self.hand_over(command, cwd)?;
        Ok(self.launched(None))
    }

    /// Hands over the command and says go.
    fn hand_over(&mut self, command: &str, cwd: &Path) -> io::Result<()> {
        let mut text = Vec::with_capacity(cwd.as_os_str().len() + command.len() + 2);
        text.extend_from_slice(cwd.as_os_str().as_bytes());
        text.push(0);
        text.extend_from_slice(command.as_bytes());
        text.push(0);
        // At the file's start, leaving the offset the spare reads from at 0.
        self.script.write_all_at(&text, 0)?;
        // A spare that died while it waited has closed its end: EPIPE.
        self.go.write_all(b"\n")
    }

    fn launched(self, lease: Option<Lease>) -> Launched {
        let Self {
            child,
            group,
            output,
            ..
        } = self;
        Launched {
            child: Running::Spawned(child),
            group,
            output,
            lease,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use mecha_sandbox::{HostEnv, SandboxConfig, SandboxError, SandboxKind};

    #[tokio::test]
    async fn a_confined_spare_left_waiting_is_ended_and_its_placeholders_go() {
        let config = SandboxConfig {
            kind: Some(SandboxKind::Bwrap),
            ..SandboxConfig::default()
        };
        let sandbox = match Sandbox::start(&config, HostEnv::current()) {
            Ok(sandbox) => sandbox.unwrap(),
            Err(SandboxError::BwrapMissing) if std::env::var_os("CI").is_none() => return,
            Err(e) => panic!("{e}"),
        };
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        let spares = Spares {
            slot: Arc::default(),
            idle: Duration::from_millis(300),
        };
        let call = ConfinedCall {
            workspace: workspace.clone(),
            protected: Vec::new(),
            sealed: Vec::new(),
        };
        spares.refill_confined(&sandbox, call);
        let waiting = || lock(&spares.slot).spare.is_some();
        for _ in 0..100 {
            if waiting() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(waiting(), "no spare started");
        assert!(workspace.join(".git").is_dir(), "its placeholder is there");
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!waiting(), "the spare outlived its idle time");
        mecha_sandbox::wait_for_background_sweeps(Duration::from_secs(10));
        assert!(!workspace.join(".git").exists(), "its placeholder stayed");
    }
}
