//! The docker client program: found on mecha's PATH, always started from a
//! cleared environment, and, for the short management calls, waited for
//! with a bound.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::{ConfinedProgram, HostEnv, Lease, SandboxError};

/// What the client needs from mecha's environment to find its engine and
/// its config, and nothing else: the job's environment reaches the
/// container through `--env-file`, mecha's own (API keys) never does.
const CLIENT_VARS: [&str; 5] = [
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
];

#[derive(Debug)]
pub(super) struct Client {
    program: PathBuf,
    env: Vec<(OsString, OsString)>,
}

impl Client {
    /// The `docker` on `host.path`, with the client's environment taken
    /// from `lookup` (the process environment, outside tests).
    pub(super) fn find(
        host: &HostEnv,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, SandboxError> {
        let program = std::env::split_paths(&host.path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("docker"))
            .find(|candidate| candidate.is_file())
            .ok_or(SandboxError::DockerMissing)?;
        let mut env = vec![(OsString::from("PATH"), host.path.clone())];
        if let Some(home) = &host.home {
            env.push(("HOME".into(), home.into()));
        }
        env.extend(
            CLIENT_VARS
                .iter()
                .filter_map(|name| lookup(name).map(|value| (OsString::from(name), value))),
        );
        Ok(Self { program, env })
    }

    /// The client program for a job, to be spawned by the caller with
    /// exactly this environment.
    pub(super) fn job_program(&self, args: Vec<OsString>, lease: Lease) -> ConfinedProgram {
        ConfinedProgram {
            program: self.program.clone(),
            args,
            env: self.env.clone(),
            keep: Vec::new(),
            lease,
        }
    }

    /// Runs one management call to the end, or kills it after `timeout`;
    /// the error is the client's own first line of complaint.
    pub(super) fn run(&self, args: &[OsString], timeout: Duration) -> Result<Output, String> {
        let mut child = Command::new(&self.program)
            .args(args)
            .env_clear()
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", self.program.display()))?;
        // Readers on their own threads, so a chatty client cannot fill a
        // pipe and stall while we wait for it to exit.
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let status = wait_bounded(&mut child, timeout)?;
        let output = Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        };
        if output.status.success() {
            Ok(output)
        } else {
            Err(complaint(&output))
        }
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Polls, since std has no wait with a timeout; the first polls are short
/// because most calls take tens of milliseconds.
fn wait_bounded(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Result<std::process::ExitStatus, String> {
    let deadline = std::time::Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the docker client did not finish within {} s",
                    timeout.as_secs()
                ));
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(25));
            }
            Err(e) => return Err(format!("could not wait for the docker client: {e}")),
        }
    }
}

/// The first non-empty line the client printed on stderr, or its status.
fn complaint(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("the docker client exited with {}", output.status))
}

/// Runs a blocking docker call from sync code that may sit on a tokio
/// worker: on the multi-threaded runtime the worker hands its other tasks
/// off while it waits; elsewhere the call simply blocks (it is bounded).
pub(super) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
