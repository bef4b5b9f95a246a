//! The bubblewrap backend: the argument vector that confines one job.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Confined, HostEnv, Job, Lease, SYSTEM_DIRS, SandboxError};

#[derive(Debug)]
pub(crate) struct Bwrap {
    program: PathBuf,
}

impl Bwrap {
    pub(crate) fn start(host: &HostEnv) -> Result<Self, SandboxError> {
        let program = std::env::split_paths(&host.path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("bwrap"))
            .find(|candidate| candidate.is_file())
            .ok_or(SandboxError::BwrapMissing)?;
        Ok(Self { program })
    }

    pub(crate) fn confine(
        &self,
        job: &Job<'_>,
        readable: &[PathBuf],
        writable: &[PathBuf],
    ) -> Result<Confined, SandboxError> {
        let mut args: Vec<OsString> = Vec::new();
        let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(|s| s.into()));
        push(&[
            "--unshare-all".as_ref(),
            "--unshare-user".as_ref(),
            "--disable-userns".as_ref(),
            "--new-session".as_ref(),
            "--die-with-parent".as_ref(),
        ]);
        if job.network {
            push(&["--share-net".as_ref()]);
        }
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::read_link(path) {
                Ok(target) => push(&["--symlink".as_ref(), target.as_os_str(), path.as_os_str()]),
                Err(_) if path.is_dir() => {
                    push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()])
                }
                Err(_) => {}
            }
        }
        push(&[
            "--proc".as_ref(),
            "/proc".as_ref(),
            "--dev".as_ref(),
            "/dev".as_ref(),
            "--tmpfs".as_ref(),
            "/tmp".as_ref(),
        ]);
        for path in readable {
            push(&["--ro-bind-try".as_ref(), path.as_os_str(), path.as_os_str()]);
        }
        for path in writable {
            push(&["--bind".as_ref(), path.as_os_str(), path.as_os_str()]);
        }
        let workspace = job.workspace.as_os_str();
        push(&["--bind".as_ref(), workspace, workspace]);
        push(&["--chdir".as_ref(), workspace, "--".as_ref(), job.program]);
        args.extend(job.args.iter().cloned());

        let mut command = tokio::process::Command::new(&self.program);
        command.args(args).env_clear().envs(&job.env);
        Ok(Confined {
            command,
            lease: Lease::default(),
        })
    }
}
