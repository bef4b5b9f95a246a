//! The machine check: one confined `true` with the flags every job uses,
//! so a machine that cannot confine fails with an error naming the fix, at
//! start-up for a run rather than on its first shell call, and before the
//! first confined job for a listing (`Check`). It costs one bwrap run, a
//! few ms.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use command_fds::{CommandFdExt, FdMapping};

use crate::SandboxError;
use crate::bwrap::Bwrap;

impl Bwrap {
    pub(crate) fn probe(&self) -> Result<(), SandboxError> {
        let seccomp = self.filters.fd(false)?;
        let mut args = self.base_args(false, seccomp.as_raw_fd());
        args.extend(["--".into(), "true".into()]);
        let mut command = Command::new(&self.program);
        command
            .args(args)
            .env_clear()
            .env("PATH", crate::SYSTEM_PATH)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let fd = seccomp.as_raw_fd();
        command
            .fd_mappings(vec![FdMapping {
                parent_fd: seccomp,
                child_fd: fd,
            }])
            .map_err(|e| SandboxError::BwrapFailed {
                detail: e.to_string(),
            })?;
        let output = command.output().map_err(|e| SandboxError::BwrapFailed {
            detail: format!("cannot run {}: {e}", self.program.display()),
        })?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(diagnose(&stderr, Path::new("/proc/sys"), &self.program))
    }
}

/// The sysctls that refuse user namespaces, each with the command that
/// allows them, in the order they are checked.
const USERNS_SYSCTLS: [(&str, &str, &str); 3] = [
    (
        "kernel/unprivileged_userns_clone",
        "0",
        "sysctl -w kernel.unprivileged_userns_clone=1",
    ),
    (
        "user/max_user_namespaces",
        "0",
        "sysctl -w user.max_user_namespaces=15000",
    ),
    (
        "kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
    ),
];

/// What a failed probe means, from bwrap's stderr and the sysctl tree
/// (`/proc/sys`, or a fake one in tests).
pub(crate) fn diagnose(stderr: &str, sysctl: &Path, bwrap: &Path) -> SandboxError {
    let detail = stderr
        .lines()
        .map(|l| l.trim().trim_start_matches("bwrap: "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if detail.contains("Can't mount proc") {
        return SandboxError::ProcUnavailable { detail };
    }
    let userns = [
        "new namespace",
        "namespace failed",
        "uid map",
        "user namespace",
    ];
    if userns.iter().any(|s| detail.contains(s)) {
        for (file, refusing, fix) in USERNS_SYSCTLS {
            let value = std::fs::read_to_string(sysctl.join(file)).unwrap_or_default();
            if value.trim() == refusing {
                return SandboxError::UserNamespaces {
                    cause: format!("{} = {refusing}", file.replace('/', ".")),
                    fix: fix.to_owned(),
                    bwrap: bwrap.to_owned(),
                };
            }
        }
    }
    if detail.contains("Unknown option") {
        return SandboxError::BwrapFailed {
            detail: format!("{detail}; mecha needs bubblewrap 0.8 or newer, upgrade the package"),
        };
    }
    SandboxError::BwrapFailed { detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFUSED: &str = "bwrap: No permissions to create new namespace, likely because the \
        kernel does not allow non-privileged user namespaces. See <https://deb.li/bubblewrap>.\n";

    fn sysctl(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (file, value) in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, format!("{value}\n")).unwrap();
        }
        dir
    }

    fn diagnosed(stderr: &str, files: &[(&str, &str)]) -> SandboxError {
        let dir = sysctl(files);
        diagnose(stderr, dir.path(), Path::new("/usr/bin/bwrap"))
    }

    #[test]
    fn each_refusing_sysctl_is_named_with_its_fix() {
        let cases = [
            (
                "kernel/unprivileged_userns_clone",
                "0",
                "kernel.unprivileged_userns_clone=1",
            ),
            (
                "user/max_user_namespaces",
                "0",
                "user.max_user_namespaces=15000",
            ),
            (
                "kernel/apparmor_restrict_unprivileged_userns",
                "1",
                "kernel.apparmor_restrict_unprivileged_userns=0",
            ),
        ];
        for (file, value, fix) in cases {
            let allowed = [
                ("kernel/unprivileged_userns_clone", "1"),
                ("user/max_user_namespaces", "63000"),
                ("kernel/apparmor_restrict_unprivileged_userns", "0"),
            ];
            let mut files: Vec<_> = allowed.into_iter().filter(|(f, _)| *f != file).collect();
            files.push((file, value));
            let message = diagnosed(REFUSED, &files).to_string();
            let name = file.replace('/', ".");
            assert!(
                message.contains(&format!("({name} = {value})")),
                "{message}"
            );
            assert!(message.contains(&format!("`sysctl -w {fix}`")), "{message}");
            assert!(message.contains("chmod u+s /usr/bin/bwrap"), "{message}");
        }
    }

    #[test]
    fn the_uid_map_and_enospc_failures_count_as_refused_namespaces() {
        for stderr in [
            "bwrap: setting up uid map: Permission denied",
            "bwrap: Creating new namespace failed: No space left on device",
        ] {
            let err = diagnosed(stderr, &[("user/max_user_namespaces", "0")]);
            assert!(matches!(err, SandboxError::UserNamespaces { .. }), "{err}");
        }
    }

    #[test]
    fn no_refusing_sysctl_quotes_bwrap() {
        let err = diagnosed(REFUSED, &[("user/max_user_namespaces", "63000")]);
        let SandboxError::BwrapFailed { detail } = &err else {
            panic!("{err}");
        };
        assert!(
            detail.starts_with("No permissions to create new namespace"),
            "{detail}"
        );
    }

    #[test]
    fn a_container_without_proc_names_the_fix_and_no_fallback() {
        let err = diagnosed(
            "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n",
            &[],
        );
        let message = err.to_string();
        assert!(matches!(err, SandboxError::ProcUnavailable { .. }));
        assert!(message.contains("systempaths=unconfined"), "{message}");
        assert!(
            message.contains("Can't mount proc on /newroot/proc"),
            "{message}"
        );
    }

    #[test]
    fn an_old_bwrap_is_told_to_upgrade() {
        let err = diagnosed("bwrap: Unknown option --disable-userns\n", &[]);
        assert!(err.to_string().contains("0.8 or newer"), "{err}");
    }
}
