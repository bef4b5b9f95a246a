//! Starting a program with `posix_spawn`, for a program that must find a
//! descriptor of mecha's at a fixed number (bwrap's seccomp program).
//!
//! The usual way to map a descriptor in runs code of ours between fork and
//! exec, so the spawn forks: it copies mecha's page tables and leaves every
//! page copy-on-write for both processes, about a millisecond of CPU per
//! shell call. `posix_spawn` starts the child in mecha's address space
//! until it execs, and its file actions place the descriptors (a `dup2`
//! onto the same number clears close-on-exec in the child only), so no
//! other program mecha starts meanwhile can inherit them.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
use nix::sys::signal::{SigSet, Signal as NixSignal};
use nix::unistd::Pid as NixPid;
use rustix::process::{Pid, Signal, WaitOptions, kill_process};
use tokio::signal::unix::{SignalKind, signal};

use super::{ProcessGroup, registry};

/// What to start: everything given, nothing inherited from mecha but
/// the descriptors named here.
#[derive(Debug)]
pub struct Program<'a> {
    /// An absolute path; nothing is looked up on a search path.
    pub path: &'a Path,
    /// The arguments after the program's name.
    pub args: &'a [OsString],
    /// The whole environment.
    pub env: &'a [(OsString, OsString)],
    /// Standard input; `/dev/null` when `None`.
    pub stdin: Option<BorrowedFd<'a>>,
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
    /// Descriptors the program finds open at their own numbers.
    pub keep: &'a [BorrowedFd<'a>],
}

/// A program started by [`spawn_program_group`]; SIGKILLed when dropped
/// before its exit was collected.
#[derive(Debug)]
pub struct Spawned {
    pid: Pid,
    status: Option<ExitStatus>,
}

impl Spawned {
    pub fn id(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// Waits for the program to exit and collects its status. Cancel-safe:
    /// dropped before the exit, a later call waits on.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        // Listening before the first look: an exit after it is a SIGCHLD
        // the stream holds for `recv`.
        let mut exits = signal(SignalKind::child())?;
        loop {
            if let Some(status) = self.collect()? {
                return Ok(status);
            }
            exits.recv().await;
        }
    }

    /// The exit status, if the program has exited. Its pid stays its own
    /// until then: mecha's reaper spares a registered leader.
    fn collect(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none()
            && let Some((_, status)) =
                rustix::process::waitpid(Some(self.pid), WaitOptions::NOHANG)?
        {
            self.status = Some(ExitStatus::from_raw(status.as_raw()));
            disown(self.pid);
        }
        Ok(self.status)
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let _ = kill_process(self.pid, Signal::KILL);
        // Nobody waits for it now: if it is not gone yet, the next reap
        // collects it.
        disown(self.pid);
        let _ = rustix::process::waitpid(Some(self.pid), WaitOptions::NOHANG);
    }
}

/// No longer a leader whose status someone will collect: the reaper may.
fn disown(pid: Pid) {
    registry().leaders.remove(&pid.as_raw_nonzero().get());
}

/// Starts `program` as the leader of a new process group, registered as
/// [`super::spawn_group`] registers a tokio child.
pub fn spawn_program_group(program: &Program<'_>) -> io::Result<(Spawned, ProcessGroup)> {
    let argv = std::iter::once(program.path.as_os_str().to_owned())
        .chain(program.args.iter().cloned())
        .map(c_string)
        .collect::<io::Result<Vec<CString>>>()?;
    let envp = program
        .env
        .iter()
        .map(|(name, value)| {
            let mut pair = name.clone();
            pair.push("=");
            pair.push(value);
            c_string(pair)
        })
        .collect::<io::Result<Vec<CString>>>()?;
    let null = match program.stdin {
        Some(_) => None,
        None => Some(std::fs::File::open("/dev/null")?),
    };
    let stdin = match (&null, program.stdin) {
        (_, Some(fd)) => fd.as_raw_fd(),
        (Some(file), None) => file.as_raw_fd(),
        (None, None) => unreachable!("/dev/null is opened when no stdin is given"),
    };
    let mut actions = PosixSpawnFileActions::init()?;
    let moves: Vec<(RawFd, RawFd)> = [
        (stdin, 0),
        (program.stdout.as_raw_fd(), 1),
        (program.stderr.as_raw_fd(), 2),
    ]
    .into_iter()
    .chain(
        program
            .keep
            .iter()
            .map(|fd| (fd.as_raw_fd(), fd.as_raw_fd())),
    )
    .collect();
    for (from, to) in moves {
        actions.add_dup2(from, to)?;
    }
    let mut attr = PosixSpawnAttr::init()?;
    // Its own group, no blocked signals, and SIGPIPE back to its default
    // (Rust ignores it in mecha).
    attr.set_pgroup(NixPid::from_raw(0))?;
    attr.set_sigmask(&SigSet::empty())?;
    let mut defaults = SigSet::empty();
    defaults.add(NixSignal::SIGPIPE);
    attr.set_sigdefault(&defaults)?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETPGROUP
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )?;
    let mut reg = registry();
    let pid = posix_spawn(program.path, &actions, &attr, &argv, &envp)?;
    let pid = Pid::from_raw(pid.as_raw())
        .filter(|pid| pid.as_raw_nonzero().get() > 1)
        .ok_or_else(|| io::Error::other("posix_spawn returned no usable pid"))?;
    let raw = pid.as_raw_nonzero().get();
    reg.groups.insert(raw);
    reg.leaders.insert(raw);
    drop(reg);
    let spawned = Spawned { pid, status: None };
    Ok((spawned, ProcessGroup { pgid: Some(raw) }))
}

/// Where `name` is found on mecha's PATH: the first regular, executable
/// file of that name, as a shell would run it.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn c_string(text: OsString) -> io::Result<CString> {
    CString::new(text.into_vec()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or variable holds a NUL byte",
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read, Seek, Write};
    use std::os::fd::AsFd;

    use super::*;

    /// Runs `script` under `/bin/sh` with one variable and one kept
    /// descriptor (a file holding "kept"), and its output in a file.
    async fn run(script: &str) -> (ExitStatus, String, u32) {
        let _children = super::super::TEST_CHILDREN.lock().await;
        let mut kept = tempfile::tempfile().unwrap();
        kept.write_all(b"kept").unwrap();
        kept.rewind().unwrap();
        let mut out = tempfile::tempfile().unwrap();
        let fd = kept.as_raw_fd().to_string();
        let args = ["-c".into(), script.into(), "sh".into(), fd.into()];
        let (mut child, group) = spawn_program_group(&Program {
            path: Path::new("/bin/sh"),
            args: &args,
            env: &[("ONLY".into(), "this".into())],
            stdin: None,
            stdout: out.as_fd(),
            stderr: out.as_fd(),
            keep: &[kept.as_fd()],
        })
        .unwrap();
        let status = child.wait().await.unwrap();
        group.finish().await;
        let mut text = String::new();
        out.rewind().unwrap();
        out.read_to_string(&mut text).unwrap();
        (status, text, child.id())
    }

    #[tokio::test]
    async fn the_program_gets_its_arguments_environment_and_kept_descriptor_only() {
        let (status, text, pid) = run(
            "echo \"env=$(env | grep -v '^PWD=' | grep -v '^SHLVL=' | grep -v '^_=' | tr '\\n' ' ')\"; \
             echo \"kept=$(cat /proc/$$/fd/$1)\"; echo \"stdin=$(cat)\"; \
             echo \"group=$(cut -d' ' -f5 /proc/$$/stat) pid=$$\"; exit 3",
        )
        .await;
        assert_eq!(status.code(), Some(3), "{text}");
        assert!(text.contains("env=ONLY=this \n"), "{text}");
        assert!(text.contains("kept=kept\n"), "{text}");
        assert!(text.contains("stdin=\n"), "{text}");
        assert!(text.contains(&format!("group={pid} pid={pid}")), "{text}");
    }

    #[tokio::test]
    async fn a_dropped_program_is_killed_and_collected() {
        let _children = super::super::TEST_CHILDREN.lock().await;
        let out = tempfile::tempfile().unwrap();
        let args = ["-c".into(), "sleep 30".into()];
        let (child, group) = spawn_program_group(&Program {
            path: Path::new("/bin/sh"),
            args: &args,
            env: &[],
            stdin: None,
            stdout: out.as_fd(),
            stderr: out.as_fd(),
            keep: &[],
        })
        .unwrap();
        let pid = child.id();
        drop(child);
        group.finish().await;
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "neither the program nor its zombie outlives it"
        );
    }
}
