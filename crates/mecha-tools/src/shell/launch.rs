//! Starting `bash -c command`: unconfined, with mecha's environment minus
//! the model API keys, or confined by the sandbox, with an allowlist.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use mecha_core::{ProcessGroup, Program, Spawned, spawn_group, spawn_program_group};
use mecha_sandbox::{Job, Lease, Sandbox};

use super::spare::Spares;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

/// Variables a confined command gets from mecha's environment, when set:
/// what locale-aware and terminal-aware programs need, nothing that
/// authenticates anyone.
const CONFINED_ENV: [&str; 7] = [
    "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
];

/// A running command: the child, its group, the read end of its output,
/// and (confined) what the sandbox holds while it runs.
pub(super) struct Launched {
    pub child: Running,
    pub group: ProcessGroup,
    pub output: pipe::Receiver,
    pub lease: Option<Lease>,
}

/// bash, started by tokio (unconfined) or by posix_spawn (confined: the
/// sandbox's seccomp descriptor is handed over without a fork).
pub(super) enum Running {
    Tokio(Child),
    Spawned(Spawned),
}

impl Running {
    pub fn id(&self) -> Option<u32> {
        match self {
            Self::Tokio(child) => child.id(),
            Self::Spawned(spawned) => Some(spawned.id()),
        }
    }

    /// Cancel-safe, as both waits are.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Self::Tokio(child) => child.wait().await,
            Self::Spawned(spawned) => spawned.wait().await,
        }
    }
}

/// Why a command did not start.
#[derive(Debug, thiserror::Error)]
pub(super) enum LaunchError {
    #[error("{0}")]
    Io(io::Error),
    #[error("{0}")]
    Sandbox(mecha_sandbox::SandboxError),
}

/// Where a confined call runs and what it keeps from the command: the
/// call's workspace, mecha's own files (read-only even where the workspace
/// contains them) and its credentials (unreadable).
#[derive(Debug, Clone)]
pub(super) struct ConfinedCall {
    pub workspace: PathBuf,
    pub protected: Vec<PathBuf>,
    pub sealed: Vec<PathBuf>,
}

impl ConfinedCall {
    /// `program args` as this call's job in `sandbox`.
    pub fn job<'a>(
        &'a self,
        program: &'a OsStr,
        args: &'a [OsString],
        sandbox: &Sandbox,
    ) -> Job<'a> {
        Job {
            program,
            args,
            workspace: &self.workspace,
            env: confined_env(sandbox),
            network: sandbox.network().clone(),
            read_only: &self.protected,
            hidden: &self.sealed,
        }
    }
}

/// Starts `bash -c command` unconfined in `cwd`, in its own registered
/// process group, with stdout and stderr on one pipe.
pub(super) fn launch(
    command: &str,
    cwd: &Path,
    hidden_env: &[String],
) -> Result<Launched, LaunchError> {
    let (writer, reader) = pipe::pipe().map_err(LaunchError::Io)?;
    let writer = writer.into_blocking_fd().map_err(LaunchError::Io)?;
    let mut cmd = unconfined(command, cwd, hidden_env);
    cmd.stdin(Stdio::null())
        .stdout(writer.try_clone().map_err(LaunchError::Io)?)
        .stderr(writer);
    let (child, group) = spawn_group(&mut cmd).map_err(LaunchError::Io)?;
    // `cmd` still owns our copies of the write end; dropping it here is
    // what lets the reader see end-of-file once the command's side closes.
    drop(cmd);
    Ok(Launched {
        child: Running::Tokio(child),
        group,
        output: reader,
        lease: None,
    })
}

/// Starts `bash -c command` confined as `call`: on the spare of `spares`
/// if the sandbox lets it run there, or in a sandbox of its own.
pub(super) fn launch_confined(
    command: &str,
    call: &ConfinedCall,
    sandbox: &Sandbox,
    spares: &Spares,
) -> Result<Launched, LaunchError> {
    let program = match spares.run_confined(sandbox, call, command) {
        Ok(Ok(launched)) => return Ok(launched),
        Ok(Err(program)) => program,
        Err(e) => return Err(LaunchError::Sandbox(e)),
    };
    let (writer, reader) = pipe::pipe().map_err(LaunchError::Io)?;
    let writer = writer.into_blocking_fd().map_err(LaunchError::Io)?;
    let keep: Vec<BorrowedFd<'_>> = program.keep.iter().map(AsFd::as_fd).collect();
    let (spawned, group) = spawn_program_group(&Program {
        path: &program.program,
        args: &program.args,
        env: &program.env,
        stdin: None,
        stdout: writer.as_fd(),
        stderr: writer.as_fd(),
        keep: &keep,
    })
    .map_err(LaunchError::Io)?;
    // Our write end and the seccomp descriptor close here, so the reader
    // sees end-of-file once the command's side closes.
    drop(writer);
    drop(keep);
    Ok(Launched {
        child: Running::Spawned(spawned),
        group,
        output: reader,
        lease: Some(program.lease),
    })
}

fn unconfined(command: &str, cwd: &Path, hidden_env: &[String]) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .envs(unconfined_env(hidden_env));
    cmd
}

/// What the bash of an unconfined call inherits: mecha's environment
/// without the model API keys, and git never asking on the terminal (it
/// asks for credentials there, not on stdin, so a push to a private remote
/// would sit stopped until the timeout).
pub(super) fn unconfined_env(hidden_env: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| {
            name != "GIT_TERMINAL_PROMPT" && !hidden_env.iter().any(|h| name == h.as_str())
        })
        .chain([("GIT_TERMINAL_PROMPT".into(), "0".into())])
        .collect()
}

/// The whole environment inside the sandbox: the allowlist, the PATH the
/// sandbox can serve, and a /tmp that exists there.
pub(super) fn confined_env(sandbox: &Sandbox) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = CONFINED_ENV
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|v| (OsString::from(name), v)))
        .collect();
    env.insert("PATH".into(), sandbox.path_inside());
    env.insert("TMPDIR".into(), "/tmp".into());
    env.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
    env
}
