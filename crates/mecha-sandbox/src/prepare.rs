//! What every backend works out for a job before its own command line:
//! the workspace on the host, the protection mounts (protect/) with the
//! baseline for the sweep, the mounts that hide mecha's credentials, and
//! the job's private `/tmp` (scratch.rs), the last three held in the job's
//! lease.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::protect::{self, Listings, Mount};
use crate::scratch::Scratch;
use crate::{HostEnv, Job, Lease, SandboxError};

pub(crate) struct Prepared {
    /// The workspace on the host, canonical.
    pub host_workspace: PathBuf,
    /// Applied after the writable mounts, in order.
    pub protected: Vec<Mount>,
    /// Applied after `protected`: an empty directory of the lease's over
    /// each credentials directory the job would see.
    pub hidden: Vec<Mount>,
    /// The job's `/tmp` on the host.
    pub tmp: PathBuf,
    pub lease: Lease,
}

/// The mounts that hide `job.hidden` where the job would see it: under
/// one of `roots` (the workspace, the `readable` and `writable` paths), an
/// empty directory of the lease's, bound read-only over it.
fn hide<'a>(
    job: &Job<'_>,
    host_workspace: &Path,
    roots: impl Iterator<Item = &'a Path> + Clone,
    lease: &mut Lease,
) -> std::io::Result<Vec<Mount>> {
    let shown: Vec<&PathBuf> = job
        .hidden
        .iter()
        .filter(|dir| dir.is_dir() && roots.clone().any(|root| dir.starts_with(root)))
        .collect();
    if shown.is_empty() {
        return Ok(Vec::new());
    }
    let empty = tempfile::Builder::new().prefix("mecha-hidden-").tempdir()?;
    let mounts = shown
        .into_iter()
        .map(|dir| Mount::ReadOnly {
            source: empty.path().to_owned(),
            dest: match dir.strip_prefix(host_workspace) {
                Ok(rel) => job.workspace.join(rel),
                Err(_) => dir.clone(),
            },
        })
        .collect();
    lease.hold(empty);
    Ok(mounts)
}

/// `readable` only the paths the backend will mount (those that exist).
pub(crate) fn prepare(
    job: &Job<'_>,
    readable: &[PathBuf],
    writable: &[PathBuf],
    host: &HostEnv,
    listings: &Arc<Listings>,
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
        listings,
    };
    let (protected, baseline) = protect::plan(&scope, &mut lease)?;
    lease.baseline = baseline;
    let roots = [host_workspace.as_path()]
        .into_iter()
        .chain(readable.iter().chain(writable).map(PathBuf::as_path));
    let hidden = hide(job, &host_workspace, roots, &mut lease).map_err(|e| {
        fail(format!(
            "could not make the directory that hides mecha's credentials: {e}"
        ))
    })?;
    let dests = protected.iter().chain(&hidden).map(|mount| match mount {
        Mount::Pin { dest, .. } | Mount::ReadOnly { dest, .. } => dest.as_path(),
    });
    let others = readable.iter().chain(writable).map(PathBuf::as_path);
    let scratch = Scratch::new(dests.chain(others).chain([job.workspace]))?;
    let tmp = scratch.path().to_owned();
    lease.scratch = Some(scratch);
    Ok(Prepared {
        host_workspace,
        protected,
        hidden,
        tmp,
        lease,
    })
}
