//! What a confinement hands its caller: the confined program (as a tokio
//! command, or as what to start) and the lease that holds what the program
//! needs while it runs, with what finishing it found.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use command_fds::{CommandFdExt, FdMapping};

use crate::ahead::Ahead;
use crate::{SandboxError, allow, background, scratch, sweep};

/// A confined program, ready to be given stdio and spawned.
#[derive(Debug)]
pub struct Confined {
    pub command: tokio::process::Command,
    /// Keep until the program has exited: it holds what the confinement
    /// needs for as long as it runs.
    pub lease: Lease,
}

/// A confined program as what to start, for a caller that spawns it
/// itself (the shell tool, with [`mecha_core::spawn_program_group`]):
/// exactly this program, arguments and environment, with `keep` open at
/// their own numbers.
#[derive(Debug)]
pub struct ConfinedProgram {
    /// An absolute path.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// Descriptors the program reads at start (bwrap's seccomp program).
    pub keep: Vec<OwnedFd>,
    /// Keep until the program has exited, as [`Confined::lease`].
    pub lease: Lease,
}

impl ConfinedProgram {
    /// As a tokio command, for a caller that needs one (an MCP transport).
    /// `keep` is mapped in between fork and exec, so such a spawn forks.
    pub fn into_confined(self) -> Result<Confined, SandboxError> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().cloned());
        let mappings = self
            .keep
            .into_iter()
            .map(|fd| {
                let child_fd = fd.as_raw_fd();
                FdMapping {
                    parent_fd: fd,
                    child_fd,
                }
            })
            .collect();
        command
            .fd_mappings(mappings)
            .map_err(|e| SandboxError::Confine {
                program: self.program.to_string_lossy().into_owned(),
                reason: e.to_string(),
            })?;
        Ok(Confined {
            command,
            lease: self.lease,
        })
    }
}

/// What one confined program holds while it runs; dropping it releases
/// that (and, for a container, kills what is left of the program).
#[derive(Debug, Default)]
pub struct Lease {
    /// What ends the program when dropped (a container's removal).
    /// Declared first so that it drops first: the placeholders in `parts`
    /// are mounted in the program's container, and must outlive it.
    pub(crate) stop: Option<Box<dyn std::fmt::Debug + Send + Sync>>,
    pub(crate) parts: Vec<Box<dyn std::fmt::Debug + Send + Sync>>,
    pub(crate) baseline: sweep::Baseline,
    /// The job's private `/tmp`, where the backend gives it one.
    pub(crate) scratch: Option<scratch::Scratch>,
    /// The `allow_hosts` proxy the job's connections go through.
    pub(crate) proxy: Option<allow::Proxy>,
    /// Set up ahead of its command: what [`crate::Sandbox::place`] checks.
    pub(crate) ahead: Option<Ahead>,
}

impl Lease {
    pub(crate) fn hold(&mut self, part: impl std::fmt::Debug + Send + Sync + 'static) {
        self.parts.push(Box::new(part));
    }

    pub(crate) fn stop_with(&mut self, stop: impl std::fmt::Debug + Send + Sync + 'static) {
        self.stop = Some(Box::new(stop));
    }

    /// Once the program has exited (and before the lease drops): undoes
    /// whatever it left in the workspace that git or a login shell on the
    /// host would run (a new repository's hooks and executable config, a
    /// replaced start-up link), and says what, one sentence each, for the
    /// caller to pass on. A long-running program (an MCP server) is swept
    /// after each of its calls.
    pub fn sweep(&self) -> Vec<String> {
        self.baseline.sweep()
    }

    /// Where the job's connections went through the `allow_hosts` proxy
    /// since this was last asked (a long-running server is asked after
    /// each call): a sentence per refused destination, then one naming
    /// those reached. Empty without a proxy, or when nothing was asked of
    /// it.
    pub fn network_report(&self) -> Vec<String> {
        self.proxy
            .as_ref()
            .map(allow::Proxy::report)
            .unwrap_or_default()
    }

    /// For a program that is done (exited, or its process killed): ends
    /// whatever of it may still run, then sweeps, and says what it left in
    /// its private `/tmp` (which goes with the lease). With bwrap nothing
    /// of a job outlives its process; a container does (killing the
    /// `docker run` client leaves it running), and a sweep while it runs
    /// could be undone by it a moment later. Blocking: it may wait on the
    /// engine.
    ///
    /// What the job held (its private `/tmp`, its placeholders) is removed
    /// after this returns, on a thread of its own: nothing in the result
    /// waits for it, and a job that starts meanwhile shares or remakes a
    /// placeholder as it would beside any other job.
    pub fn finish(mut self) -> Finished {
        drop(self.stop.take());
        let finished = Finished {
            network: self.network_report(),
            undone: self.sweep(),
            left_in_tmp: self
                .scratch
                .as_ref()
                .and_then(scratch::Scratch::left_behind),
        };
        background::run("mecha-release", move || drop(self));
        finished
    }
}

impl Lease {
    /// For a program whose caller is gone (a cancelled call, a server that
    /// stopped): in the background, `first` (waiting for the program to be
    /// gone), then [`Lease::finish`], then `report` with what it found.
    /// mecha waits for this before it exits ([`wait_for_background_sweeps`]),
    /// so a Ctrl-C that ends the run does not end the sweep with it.
    pub fn finish_in_background(
        self,
        first: impl FnOnce() + Send + 'static,
        report: impl FnOnce(Finished) + Send + 'static,
    ) {
        background::run("mecha-sweep", move || {
            first();
            report(self.finish());
        });
    }

    /// For a program that never ran a job (one started ahead and not
    /// used): in the background, `first` (waiting for it to be gone),
    /// then what it held is released, with no sweep. Its baseline is as
    /// old as the program, and a repository the user made since is not
    /// the program's doing.
    pub fn release_in_background(self, first: impl FnOnce() + Send + 'static) {
        background::run("mecha-release", move || {
            first();
            drop(self);
        });
    }
}

/// What [`Lease::finish`] found once a one-off program was done.
#[derive(Debug, Default)]
pub struct Finished {
    /// What the `allow_hosts` proxy refused and let through
    /// ([`Lease::network_report`]).
    pub network: Vec<String>,
    /// What the sweep undid, one sentence each.
    pub undone: Vec<String>,
    /// One sentence naming what the program left in its `/tmp`, which is
    /// gone, or `None` if it left nothing.
    pub left_in_tmp: Option<String>,
}
