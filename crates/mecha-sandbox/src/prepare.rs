//! What every backend works out for a job before its own command line:
//! the workspace on the host, the protection mounts (protect/) with the
//! baseline for the sweep, and the job's private `/tmp` (scratch.rs), the
//! last two held in the job's lease.

use std::path::PathBuf;

use crate::protect::{self, Mount};
use crate::scratch::Scratch;
use crate::{HostEnv, Job, Lease, SandboxError};

pub(crate) struct Prepared {
    /// The workspace on the host, canonical.
    pub host_workspace: PathBuf,
    /// Applied after the writable mounts, in order.
    pub protected: Vec<Mount>,
    /// The job's `/tmp` on the host.
    pub tmp: PathBuf,
    pub lease: Lease,
}

/// `readable` only the paths the backend will mount (those that exist).
pub(crate) fn prepare(
    job: &Job<'_>,
    readable: &[PathBuf],
    writable: &[PathBuf],
    host: &HostEnv,
) -> Result<Prepared, SandboxError> {
    let fail = |reason: String| SandboxError::Confine {
        program: job.program.to_string_lossy().into_owned(),
        reason,
    };
    let shown = job.workspace.display();
    if !job.workspace.is_absolute() {
        return Err(fail(format!(
            "the workspace `{shown}` is not an absolute path"
        )));
    }
    let host_workspace = std::fs::canonicalize(job.workspace)
        .map_err(|e| fail(format!("the workspace `{shown}` cannot be opened: {e}")))?;
    let mut lease = Lease::default();
    let scope = protect::Scope {
        host: &host_workspace,
        inside: job.workspace,
        writable,
        caller: job.read_only,
        home: host.home.as_deref(),
        search_path: &host.path,
        records: host.records.as_deref(),
    };
    let (protected, baseline) = protect::plan(&scope, &mut lease)?;
    lease.baseline = baseline;
    let dests = protected.iter().map(|mount| match mount {
        Mount::Pin { dest, .. } | Mount::ReadOnly { dest, .. } => dest.as_path(),
    });
    let others = readable.iter().chain(writable).map(PathBuf::as_path);
    let scratch = Scratch::new(dests.chain(others).chain([job.workspace]))?;
    let tmp = scratch.path().to_owned();
    lease.scratch = Some(scratch);
    Ok(Prepared {
        host_workspace,
        protected,
        tmp,
        lease,
    })
}
