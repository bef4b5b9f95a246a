//! A confinement set up before its command is known, and the check that
//! lets a later job run in it.
//!
//! Starting bwrap costs several milliseconds of namespaces and mounts; a
//! caller that starts one ahead, while the model writes its next call,
//! takes that off the call's path ([`crate::Sandbox::confine_ahead`]). The
//! sandbox it starts waits with its mounts made for the workspace as it was
//! then. Before a job runs in it ([`crate::Sandbox::place`]), two things
//! must hold, or the job gets a fresh confinement instead:
//!
//! - the job would be confined exactly so now: the same workspace,
//!   environment, network, and the same protection mounts from a walk of
//!   the workspace made now (a repository that appeared meanwhile needs
//!   mounts the waiting sandbox lacks);
//! - every one of those mounts is still in place in the waiting sandbox.
//!   The host can undo a mount in another namespace: removing or
//!   replacing a directory that is a mount point there detaches the mount
//!   (`rmdir .git/hooks; mkdir .git/hooks` leaves the waiting sandbox a
//!   writable `hooks`, often with the very same inode number). So each
//!   mount point is looked up inside the sandbox (through its root in
//!   `/proc`, without following a symlink): it must still be the root of a
//!   mount, of the same file the host path is now, and read-only where it
//!   was bound read-only.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{
    AtFlags, CWD, Mode, OFlags, ResolveFlags, StatVfsMountFlags, StatxAttributes, StatxFlags,
};

use crate::background::Pending;
use crate::bwrap::Bwrap;
use crate::prepare::prepare;
use crate::protect::{Listings, Mount};
use crate::{ConfinedProgram, HostEnv, Job, Lease, Network, Placed, SandboxError};

impl Bwrap {
    /// [`Bwrap::confine`] for a program that waits for its command: bwrap
    /// also says, on a pipe the lease keeps, which process the sandbox
    /// started with, for [`Bwrap::place`] to look inside.
    pub(crate) fn confine_ahead(
        &self,
        job: &Job<'_>,
        readable: &[PathBuf],
        writable: &[PathBuf],
        host: &HostEnv,
        listings: &Arc<Listings>,
    ) -> Result<ConfinedProgram, SandboxError> {
        self.checked()?;
        let pending = Pending::new();
        let prepared = prepare(job, readable, writable, host, listings)?;
        let layout = Layout::of(
            job,
            &prepared.host_workspace,
            &prepared.protected,
            &prepared.hidden,
        );
        let hidden = prepared.hidden.clone();
        let (info, written) = std::io::pipe().map_err(|e| SandboxError::Confine {
            program: job.program.to_string_lossy().into_owned(),
            reason: format!("could not make a pipe for bwrap's --info-fd: {e}"),
        })?;
        let written = OwnedFd::from(written);
        let mut program = self.program(
            job,
            prepared,
            readable,
            writable,
            host,
            Some(written.as_raw_fd()),
        )?;
        program.keep.push(written);
        program.lease.ahead = Some(Ahead {
            layout,
            hidden,
            info: File::from(OwnedFd::from(info)),
            _pending: pending,
        });
        Ok(program)
    }

    /// Confines `job` in `waiting`, a sandbox [`Self::confine_ahead`] made
    /// that now waits, if the job would be confined exactly so now and
    /// every mount is still in place (ahead.rs); then `waiting` takes the
    /// baseline of the walk just made, for the sweep after the job.
    /// Otherwise, what to start instead, from that same walk.
    pub(crate) fn place(
        &self,
        job: &Job<'_>,
        waiting: &mut Lease,
        readable: &[PathBuf],
        writable: &[PathBuf],
        host: &HostEnv,
        listings: &Arc<Listings>,
    ) -> Result<Placed, SandboxError> {
        self.checked()?;
        let mut prepared = prepare(job, readable, writable, host, listings)?;
        let now = Layout::of(
            job,
            &prepared.host_workspace,
            &prepared.protected,
            &prepared.hidden,
        );
        if waiting.ahead.take().is_some_and(|ahead| ahead.holds(&now)) {
            waiting.baseline = std::mem::take(&mut prepared.lease.baseline);
            return Ok(Placed::Waiting);
        }
        self.program(job, prepared, readable, writable, host, None)
            .map(|program| Placed::Fresh(Box::new(program)))
    }
}

/// What a job's confinement is made of, for comparing the one a waiting
/// sandbox was made with against the one a job would get now. The
/// per-job directories (the private `/tmp`, the empty directory that
/// hides credentials, the proxy's socket) differ by design and are left
/// out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    inside: PathBuf,
    host_workspace: PathBuf,
    env: BTreeMap<OsString, OsString>,
    network: Network,
    read_only: Vec<PathBuf>,
    hidden_paths: Vec<PathBuf>,
    protected: Vec<Mount>,
    /// Where the hiding mounts go.
    hidden: Vec<PathBuf>,
}

impl Layout {
    pub(crate) fn of(
        job: &Job<'_>,
        host_workspace: &Path,
        protected: &[Mount],
        hidden: &[Mount],
    ) -> Self {
        Self {
            inside: job.workspace.to_owned(),
            host_workspace: host_workspace.to_owned(),
            env: job.env.clone(),
            network: job.network.clone(),
            read_only: job.read_only.to_vec(),
            hidden_paths: job.hidden.to_vec(),
            protected: protected.to_vec(),
            hidden: hidden.iter().map(|m| dest(m).to_owned()).collect(),
        }
    }
}

/// What a lease of a sandbox started ahead keeps for the check.
#[derive(Debug)]
pub(crate) struct Ahead {
    pub(crate) layout: Layout,
    /// The hiding mounts as made, with their own empty directory.
    pub(crate) hidden: Vec<Mount>,
    /// The read end of bwrap's `--info-fd`, where it writes the pid and
    /// namespaces of the sandbox's first process.
    pub(crate) info: File,
    /// Its placeholders are in the workspace until the lease goes, which
    /// may be on a thread mecha's exit would not wait for (a spare still
    /// starting as the run ends): counted, so that it does.
    pub(crate) _pending: Pending,
}

impl Ahead {
    /// Whether a job that would be confined as `now` can run in the
    /// waiting sandbox.
    pub(crate) fn holds(&self, now: &Layout) -> bool {
        if self.layout != *now {
            return false;
        }
        let Some(root) = self.sandbox_root() else {
            return false;
        };
        let layout = &self.layout;
        let workspace = Point {
            dest: &layout.inside,
            source: &layout.host_workspace,
            read_only: false,
        };
        let mounts = self.layout.protected.iter().chain(&self.hidden);
        std::iter::once(workspace)
            .chain(mounts.map(Point::of))
            .all(|point| point.holds(&root))
    }

    /// The root directory of the waiting sandbox, if its first process is
    /// still the one bwrap started, in the mount namespace it made.
    fn sandbox_root(&self) -> Option<OwnedFd> {
        let info = Info::read(&self.info)?;
        let proc = PathBuf::from(format!("/proc/{}", info.pid));
        let root = rustix::fs::open(
            proc.join("root"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        // A pid the sandbox no longer holds could be anyone's by now.
        let ns = rustix::fs::stat(proc.join("ns/mnt")).ok()?;
        (ns.st_ino == info.mnt_namespace).then_some(root)
    }
}

fn dest(mount: &Mount) -> &Path {
    match mount {
        Mount::Pin { dest, .. } | Mount::ReadOnly { dest, .. } => dest,
    }
}

/// One mount of a waiting sandbox, as it must still be.
struct Point<'a> {
    dest: &'a Path,
    source: &'a Path,
    read_only: bool,
}

impl<'a> Point<'a> {
    fn of(mount: &'a Mount) -> Self {
        match mount {
            Mount::Pin { source, dest } => Self {
                dest,
                source,
                read_only: false,
            },
            Mount::ReadOnly { source, dest } => Self {
                dest,
                source,
                read_only: true,
            },
        }
    }

    fn holds(&self, root: &OwnedFd) -> bool {
        let Ok(rel) = self.dest.strip_prefix("/") else {
            return false;
        };
        let Ok(inside) = rustix::fs::openat2(
            root,
            rel,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT | ResolveFlags::NO_SYMLINKS,
        ) else {
            return false;
        };
        let Ok(seen) = rustix::fs::statx(
            &inside,
            "",
            AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
            StatxFlags::BASIC_STATS,
        ) else {
            return false;
        };
        let Ok(host) = rustix::fs::statat(CWD, self.source, AtFlags::SYMLINK_NOFOLLOW) else {
            return false;
        };
        // A kernel too old to say (before 5.8) cannot show the mount is
        // there: no waiting sandbox is used.
        let mount_root = seen
            .stx_attributes_mask
            .contains(StatxAttributes::MOUNT_ROOT)
            && seen.stx_attributes.contains(StatxAttributes::MOUNT_ROOT);
        let same = rustix::fs::makedev(seen.stx_dev_major, seen.stx_dev_minor) == host.st_dev
            && seen.stx_ino == host.st_ino;
        let read_only = !self.read_only
            || rustix::fs::fstatvfs(&inside)
                .is_ok_and(|vfs| vfs.f_flag.contains(StatVfsMountFlags::RDONLY));
        mount_root && same && read_only
    }
}

/// What bwrap's `--info-fd` says of the sandbox's first process.
struct Info {
    pid: u32,
    mnt_namespace: u64,
}

impl Info {
    /// What is in the pipe now: bwrap writes it whole once the sandbox's
    /// first process exists, well before the program inside starts.
    fn read(mut pipe: &File) -> Option<Self> {
        let fd = rustix::fs::fcntl_getfl(pipe).ok()?;
        rustix::fs::fcntl_setfl(pipe, fd | OFlags::NONBLOCK).ok()?;
        let mut text = Vec::new();
        let mut buf = [0u8; 512];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            text.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(text).ok()?;
        Some(Self {
            pid: u32::try_from(number(&text, "child-pid")?).ok()?,
            mnt_namespace: number(&text, "mnt-namespace")?,
        })
    }
}

/// The number after `"key":` in bwrap's flat JSON object.
fn number(text: &str, key: &str) -> Option<u64> {
    let quoted = format!("\"{key}\"");
    let rest = text[text.find(&quoted)? + quoted.len()..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_info_numbers_are_read_by_key() {
        let text = "{\n    \"child-pid\": 10715,\n    \"mnt-namespace\": 4026532175,\n    \"net-namespace\": 4026532180\n}\n";
        assert_eq!(number(text, "child-pid"), Some(10715));
        assert_eq!(number(text, "mnt-namespace"), Some(4026532175));
        assert_eq!(number(text, "pid-namespace"), None);
        assert_eq!(number("{\"child-pid\": x}", "child-pid"), None);
    }
}
