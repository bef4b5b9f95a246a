//! The docker backend: one container per job, `docker run --rm -i --init`
//! with the job as its program.
//!
//! A container per job is what makes a job's end final: the job runs in a
//! PID namespace of its own, so when it exits everything it started
//! (`setsid`, a double fork) dies with the namespace, and no job sees
//! another job's processes or a sandboxed MCP server's `/proc/N/environ`.
//! Killing the `docker run` client does not stop its container, though, so
//! each job's lease removes the container by name (`docker rm -f`) when it
//! is released or dropped, after a normal exit, a timeout or a
//! cancellation alike. The workspace's protected paths are bind-mounted
//! the way bwrap mounts them (protect.rs decides which).

mod argv;
mod client;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::prepare::{Prepared, prepare};
use crate::protect::Listings;
use crate::{ConfinedProgram, HostEnv, Job, SandboxConfig, SandboxError};
use client::{Client, blocking};

/// `docker version`, `image inspect`: an engine answers these in well
/// under a second.
const QUICK: Duration = Duration::from_secs(15);
/// Removing a running container can take a few seconds on a busy engine;
/// a hung one must not hold mecha for longer than this.
const SLOW: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub(crate) struct Docker {
    client: Arc<Client>,
    image: String,
    /// The names the image's `ENV` sets, dropped inside unless the job
    /// sets them itself.
    image_env: Vec<String>,
    user: String,
    label: String,
    /// `mecha-job-<pid>-<nonce>-`: with [`NEXT_JOB`], each job's
    /// container name. The nonce is for two mechas with one pid in two PID
    /// namespaces (containers sharing an engine), where a lease removing
    /// its container by name would otherwise remove the other's.
    name_prefix: String,
}

/// Process-wide, since two sandboxes of one process (a test's, an eval
/// shard's) share the prefix, and the engine refuses a name in use.
static NEXT_JOB: AtomicU64 = AtomicU64::new(1);

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
        let inspected = blocking(|| {
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
        let image_env = argv::image_env_names(&String::from_utf8_lossy(&inspected.stdout));
        if let (false, Some(exe)) = (config.allow_hosts.is_empty(), &host.bridge) {
            check_bridge(&client, &image, exe)?;
        }
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        let pid = std::process::id();
        Ok(Self {
            client: Arc::new(client),
            image,
            image_env,
            user: format!("{uid}:{gid}"),
            label: format!("mecha.run={pid}"),
            name_prefix: format!("mecha-job-{pid}-{:06x}-", nonce()),
        })
    }

    pub(crate) fn confine(
        &self,
        job: &Job<'_>,
        readable: &[PathBuf],
        writable: &[PathBuf],
        host: &HostEnv,
        listings: &Arc<Listings>,
    ) -> Result<ConfinedProgram, SandboxError> {
        let refuse = |reason: String| SandboxError::Confine {
            program: job.program.to_string_lossy().into_owned(),
            reason,
        };
        let present: Vec<PathBuf> = readable.iter().filter(|p| p.exists()).cloned().collect();
        let Prepared {
            host_workspace,
            mut protected,
            hidden,
            tmp,
            mut lease,
        } = prepare(job, &present, writable, host, listings)?;
        protected.extend(hidden);
        let mut env = job.env.clone();
        let bridge = crate::allow::route(job, host, &mut env, &mut lease)?;
        let env_file = write_env_file(&env).map_err(refuse)?;
        let env_names: BTreeSet<String> = env
            .keys()
            .map(|name| name.to_string_lossy().into_owned())
            .collect();
        let id = NEXT_JOB.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}{id}", self.name_prefix);
        let spec = argv::RunSpec {
            image: &self.image,
            user: &self.user,
            name: &name,
            label: &self.label,
            network: job.network == crate::Network::Full,
            env_file: env_file.path(),
            env_names: &env_names,
            image_env: &self.image_env,
            host_workspace: &host_workspace,
            workspace: job.workspace,
            readable: &present,
            writable,
            protected: &protected,
            tmp: &tmp,
            bridge: bridge.as_ref(),
        };
        let args = argv::run_args(&spec, job.program, job.args).map_err(refuse)?;
        lease.stop_with(Container {
            client: Arc::clone(&self.client),
            name,
            _env_file: env_file,
        });
        Ok(self.client.job_program(args, lease))
    }
}

/// One job's container, removed when this drops; and the env file, which
/// the client reads as it starts.
#[derive(Debug)]
struct Container {
    client: Arc<Client>,
    name: String,
    _env_file: tempfile::NamedTempFile,
}

impl Drop for Container {
    /// Synchronous, so that once a call has ended nothing it started still
    /// runs, and bounded, so that a hung engine cannot hold mecha. After a
    /// normal exit `--rm` has already removed the container, and this is
    /// one quick call that finds nothing.
    fn drop(&mut self) {
        let result = blocking(|| self.client.run(&argv::rm_args(&self.name), SLOW));
        match result {
            Ok(_) => {}
            Err(detail) if gone(&detail) => {}
            Err(detail) => tracing::warn!(
                container = self.name,
                "could not remove the sandbox container ({detail}); what the job started may \
                 still run: remove it with `docker rm -f {}`",
                self.name
            ),
        }
    }
}

/// Fails, with the kind of image that works, unless mecha's binary starts
/// in `image`: with `allow_hosts` it is the first program in every job.
fn check_bridge(client: &Client, image: &str, exe: &std::path::Path) -> Result<(), SandboxError> {
    let cannot = |detail: String| SandboxError::AllowHosts {
        reason: format!(
            "the image \"{image}\" cannot run mecha's own binary, which runs first in every \
             job as the bridge to the proxy ({detail}); use an image with glibc and libgcc_s \
             (Debian, Ubuntu, Fedora and their -slim variants have both), or kind = \"bwrap\""
        ),
    };
    let args = argv::bridge_check_args(image, exe).map_err(&cannot)?;
    blocking(|| client.run(&args, SLOW)).map_err(|detail| cannot(detail.trim().to_owned()))?;
    Ok(())
}

/// A few hex digits that differ between two processes: the clock's
/// nanoseconds at start-up.
fn nonce() -> u32 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.subsec_nanos() & 0xff_ffff
}

/// Whether a failed `docker rm -f` failed because the container is
/// already gone, or going (`--rm` got there first).
fn gone(detail: &str) -> bool {
    detail.contains("No such container") || detail.contains("is already in progress")
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
        .map_err(|e| format!("could not write the environment file for docker run: {e}"))?;
    file.write_all(&contents)
        .and_then(|()| file.flush())
        .map_err(|e| format!("could not write the environment file for docker run: {e}"))?;
    Ok(file)
}

#[cfg(test)]
mod tests;
