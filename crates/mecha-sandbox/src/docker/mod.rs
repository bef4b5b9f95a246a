//! The docker backend: one container per run and network setting, made at
//! the first job that needs it; every job a `docker exec` into it.
//!
//! Killing a `docker exec` client does not kill what it started in the
//! container, so each job's lease runs a second `docker exec` that kills
//! the job's session when the lease drops (after a normal exit, a timeout
//! or a cancellation alike). The containers go (`docker rm -f`) when the
//! last clone of the [`crate::Sandbox`] drops.

mod argv;
mod client;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::{Confined, HostEnv, Job, Lease, SandboxConfig, SandboxError};
use client::{Client, blocking};

/// `docker version`, `image inspect`, a job's kill: an engine answers these
/// in well under a second.
const QUICK: Duration = Duration::from_secs(15);
/// Creating or removing a container can take a few seconds on a busy
/// engine; the image is already there (`--pull never`).
const SLOW: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub(crate) struct Docker {
    client: Arc<Client>,
    image: String,
    user: String,
    label: String,
    /// Container ids by (workspace, network).
    containers: Mutex<BTreeMap<(PathBuf, bool), String>>,
    next_job: AtomicU64,
    /// Set once the containers are removed: a job outliving the sandbox
    /// (an MCP server at the end of the run) died with its container.
    removed: Arc<AtomicBool>,
}

impl Docker {
    pub(crate) fn start(config: &SandboxConfig, host: &HostEnv) -> Result<Self, SandboxError> {
        Self::start_with(config, host, |name| std::env::var_os(name))
    }

    /// `start`, with the client's environment read through `lookup`.
    fn start_with(
        config: &SandboxConfig,
        host: &HostEnv,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, SandboxError> {
        let image = checked_image(config.image.as_deref())?;
        let client = Client::find(host, lookup)?;
        blocking(|| {
            client
                .run(&argv::version_args(), QUICK)
                .map_err(|detail| SandboxError::DockerEngine { detail })?;
            client
                .run(&argv::image_args(&image), QUICK)
                .map_err(|detail| SandboxError::DockerImageAbsent {
                    image: image.clone(),
                    detail,
                })
        })?;
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        Ok(Self {
            client: Arc::new(client),
            image,
            user: format!("{uid}:{gid}"),
            label: format!("mecha.run={}", std::process::id()),
            containers: Mutex::new(BTreeMap::new()),
            next_job: AtomicU64::new(1),
            removed: Arc::new(AtomicBool::new(false)),
        })
    }

    pub(crate) fn confine(
        &self,
        job: &Job<'_>,
        readable: &[PathBuf],
        writable: &[PathBuf],
    ) -> Result<Confined, SandboxError> {
        let refuse = |reason: String| SandboxError::Confine {
            program: job.program.to_string_lossy().into_owned(),
            reason,
        };
        let env_file = write_env_file(&job.env).map_err(refuse)?;
        let container = self.container(job.workspace, job.network, readable, writable)?;
        let id = self.next_job.fetch_add(1, Ordering::Relaxed);
        let args = argv::exec_args(
            &container,
            job.workspace,
            env_file.path(),
            id,
            &job.env,
            job.program,
            job.args,
        );
        let command = self.client.job_command(args);
        let mut lease = Lease::default();
        lease.hold(JobGuard {
            client: Arc::clone(&self.client),
            container,
            id,
            removed: Arc::clone(&self.removed),
            _env_file: env_file,
        });
        Ok(Confined { command, lease })
    }

    /// The container for (workspace, network), started now if this is the
    /// first job to need it. A failed start is not remembered, so the next
    /// job tries again.
    fn container(
        &self,
        workspace: &Path,
        network: bool,
        readable: &[PathBuf],
        writable: &[PathBuf],
    ) -> Result<String, SandboxError> {
        blocking(|| {
            let mut containers = self
                .containers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let key = (workspace.to_owned(), network);
            if let Some(id) = containers.get(&key) {
                return Ok(id.clone());
            }
            let present: Vec<PathBuf> = readable.iter().filter(|p| p.exists()).cloned().collect();
            let spec = argv::RunSpec {
                image: &self.image,
                user: &self.user,
                workspace,
                network,
                readable: &present,
                writable,
                label: &self.label,
            };
            let output = self
                .client
                .run(&argv::run_args(&spec), SLOW)
                .map_err(|detail| SandboxError::DockerRun { detail })?;
            let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if !is_container_id(&id) {
                return Err(SandboxError::DockerRun {
                    detail: format!("`docker run -d` printed `{id}` instead of a container id"),
                });
            }
            containers.insert(key, id.clone());
            Ok(id)
        })
    }
}

impl Drop for Docker {
    /// Synchronous, so that nothing of the run is left running once the
    /// sandbox is gone, and bounded, so that a hung engine cannot hold
    /// mecha's exit.
    fn drop(&mut self) {
        let containers = self
            .containers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let ids: Vec<String> = std::mem::take(containers).into_values().collect();
        if ids.is_empty() {
            return;
        }
        self.removed.store(true, Ordering::Release);
        if let Err(detail) = blocking(|| self.client.run(&argv::rm_args(&ids), SLOW)) {
            tracing::warn!(
                containers = ids.join(" "),
                "could not remove the sandbox containers ({detail}); remove them with docker rm -f"
            );
        }
    }
}

/// What one job holds: the env file (docker exec reads it at start) and
/// the way to kill the job inside the container.
#[derive(Debug)]
struct JobGuard {
    client: Arc<Client>,
    container: String,
    id: u64,
    removed: Arc<AtomicBool>,
    _env_file: tempfile::NamedTempFile,
}

impl Drop for JobGuard {
    /// Synchronous, so that once a call has ended nothing it started still
    /// runs; a job that already exited costs one quick `docker exec`.
    fn drop(&mut self) {
        if self.removed.load(Ordering::Acquire) {
            return;
        }
        let args = argv::kill_args(&self.container, self.id);
        if let Err(detail) = blocking(|| self.client.run(&args, QUICK)) {
            tracing::warn!(
                container = self.container,
                job = self.id,
                "could not kill a sandboxed job's processes: {detail}"
            );
        }
    }
}

/// The configured image, or an error naming what to write. An image that
/// begins with `-` would be read by docker as an option, so the accepted
/// form is the reference syntax and nothing else.
fn checked_image(image: Option<&str>) -> Result<String, SandboxError> {
    let image = image.unwrap_or_default();
    if image.trim().is_empty() {
        return Err(SandboxError::DockerImageMissing);
    }
    let valid = image.starts_with(|c: char| c.is_ascii_alphanumeric())
        && image
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c));
    if !valid {
        return Err(SandboxError::DockerImageInvalid {
            image: image.to_owned(),
        });
    }
    Ok(image.to_owned())
}

/// A 0600 file (tempfile's default) holding the job's environment, so that
/// no value is on the host's command lines.
fn write_env_file(env: &BTreeMap<OsString, OsString>) -> Result<tempfile::NamedTempFile, String> {
    let contents = argv::env_file(env)?;
    let mut file = tempfile::Builder::new()
        .prefix("mecha-docker-env-")
        .tempfile()
        .map_err(|e| format!("could not write the environment file for docker exec: {e}"))?;
    file.write_all(&contents)
        .and_then(|()| file.flush())
        .map_err(|e| format!("could not write the environment file for docker exec: {e}"))?;
    Ok(file)
}

/// What `docker run -d` prints: the full hex id. Checked because the id is
/// put on later command lines, where anything else could be read as an
/// option.
fn is_container_id(id: &str) -> bool {
    (12..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests;
