//! The bubblewrap backend: the argument vector that confines one job.
//!
//! Mount order matters, because a later mount wins: the system directories
//! read-only (never all of `/`, so HOME, `/root`, `/run`, the host's `/tmp`
//! and every socket in them are simply absent), a fresh `/proc` (read-only)
//! and `/dev`, the job's own empty `/tmp` (scratch.rs), the extra paths, the
//! workspace read-write, and last the protected paths inside it
//! (protect.rs).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::allow::{self, BRIDGE_INSIDE, Bridge, SOCKET_INSIDE};
use crate::prepare::{Prepared, prepare};
use crate::protect::{self, Listings, Mount};
use crate::seccomp::Filters;
use crate::{Check, ConfinedProgram, HostEnv, Job, Network, SYSTEM_DIRS, SandboxError};

/// The host paths one job's mounts are made of.
struct JobPaths<'a> {
    /// The workspace, canonical.
    workspace: &'a Path,
    /// The job's private /tmp (scratch.rs).
    tmp: &'a Path,
    readable: &'a [PathBuf],
    writable: &'a [PathBuf],
    protected: &'a [Mount],
    /// With `allow_hosts`: the bridge's program and the proxy's socket on
    /// the host, bound in at their fixed places.
    bridge: Option<&'a Bridge>,
}

#[derive(Debug)]
pub(crate) struct Bwrap {
    pub(crate) program: PathBuf,
    pub(crate) filters: Filters,
    /// The system directories and the fresh /proc and /dev: the
    /// same for every job, so worked out once.
    layout: Vec<OsString>,
    /// What DNS needs beyond /etc, for jobs with network.
    dns: Vec<OsString>,
    /// The probe's verdict, once it has run (at start, or before the
    /// first job: see [`Check`]).
    checked: OnceLock<Result<(), SandboxError>>,
}

impl Bwrap {
    pub(crate) fn start(host: &HostEnv, check: Check) -> Result<Self, SandboxError> {
        let program = std::env::split_paths(&host.path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("bwrap"))
            .find(|candidate| candidate.is_file())
            .ok_or(SandboxError::BwrapMissing)?;
        let bwrap = Self {
            program,
            filters: Filters::compile()?,
            layout: layout(),
            dns: resolv_conf(Path::new("/etc/resolv.conf")),
            checked: OnceLock::new(),
        };
        if check == Check::AtStart {
            bwrap.checked()?;
        }
        Ok(bwrap)
    }

    /// Whether this machine can confine: the probe, run once.
    pub(crate) fn checked(&self) -> Result<(), SandboxError> {
        self.checked.get_or_init(|| self.probe()).clone()
    }

    /// The namespaces, the seccomp program on `seccomp_fd`, and the layout:
    /// what every job gets, the start-up probe included.
    pub(crate) fn base_args(&self, network: bool, seccomp_fd: RawFd) -> Vec<OsString> {
        // --unshare-all includes the pid namespace, and with it a fresh
        // /proc shows no host process. It only *tries* a user namespace,
        // which as root it would skip, so that one is asked for; inside,
        // no further user namespace and no capabilities (root keeps them
        // by default).
        let mut args: Vec<OsString> = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
            // setsid: no TIOCSTI into the terminal mecha runs in.
            "--new-session",
            "--die-with-parent",
        ]
        .map(OsString::from)
        .into();
        if network {
            args.push("--share-net".into());
        }
        args.extend(["--seccomp".into(), seccomp_fd.to_string().into()]);
        args.extend(self.layout.iter().cloned());
        if network {
            args.extend(self.dns.iter().cloned());
        }
        args
    }

    pub(crate) fn confine(
        &self,
        job: &Job<'_>,
        readable: &[PathBuf],
        writable: &[PathBuf],
        host: &HostEnv,
        listings: &Arc<Listings>,
    ) -> Result<ConfinedProgram, SandboxError> {
        self.checked()?;
        let prepared = prepare(job, readable, writable, host, listings)?;
        self.program(job, prepared, readable, writable, host, None)
    }

    /// The program line for a prepared job, with bwrap's `--info-fd` on
    /// `info_fd` when given.
    pub(crate) fn program(
        &self,
        job: &Job<'_>,
        prepared: Prepared,
        readable: &[PathBuf],
        writable: &[PathBuf],
        host: &HostEnv,
        info_fd: Option<RawFd>,
    ) -> Result<ConfinedProgram, SandboxError> {
        let Prepared {
            host_workspace: host_ws,
            mut protected,
            hidden,
            tmp,
            mut lease,
        } = prepared;
        protected.extend(hidden);
        let full = job.network == Network::Full;
        let seccomp = self.filters.fd(full)?;
        let fd = seccomp.as_raw_fd();
        let mut env = job.env.clone();
        let bridge = allow::route(job, host, &mut env, &mut lease)?;
        let paths = JobPaths {
            workspace: &host_ws,
            tmp: &tmp,
            readable,
            writable,
            protected: &protected,
            bridge: bridge.as_ref(),
        };
        let args = self.args(job, &paths, fd, info_fd);
        Ok(ConfinedProgram {
            program: self.program.clone(),
            args,
            env: env.into_iter().collect(),
            keep: vec![seccomp],
            lease,
        })
    }

    fn args(
        &self,
        job: &Job<'_>,
        paths: &JobPaths<'_>,
        seccomp_fd: RawFd,
        info_fd: Option<RawFd>,
    ) -> Vec<OsString> {
        let mut args = self.base_args(job.network == Network::Full, seccomp_fd);
        let mut bind = |flag: &str, source: &Path, dest: &Path| {
            args.extend([flag.into(), source.into(), dest.into()]);
        };
        bind("--bind", paths.tmp, Path::new("/tmp"));
        for path in paths.readable {
            bind("--ro-bind-try", path, path);
        }
        for path in paths.writable {
            bind("--bind", path, path);
        }
        bind("--bind", paths.workspace, job.workspace);
        for mount in paths.protected {
            match mount {
                Mount::Pin { source, dest } => bind("--bind", source, dest),
                Mount::ReadOnly { source, dest } => bind("--ro-bind", source, dest),
            }
        }
        if let Some(bridge) = paths.bridge {
            bind("--ro-bind", &bridge.exe, Path::new(BRIDGE_INSIDE));
            bind("--bind", &bridge.socket, Path::new(SOCKET_INSIDE));
        }
        if let Some(fd) = info_fd {
            args.extend(["--info-fd".into(), fd.to_string().into()]);
        }
        args.extend(["--chdir".into(), job.workspace.into(), "--".into()]);
        match paths.bridge {
            Some(_) => args.extend(allow::bridged(job.program, job.args)),
            None => {
                args.push(job.program.into());
                args.extend(job.args.iter().cloned());
            }
        }
        args
    }
}

/// The system directories as they are on this machine, then the fresh
/// /proc and /dev.
fn layout() -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        match std::fs::read_link(path) {
            Ok(target) => args.extend(["--symlink".into(), target.into(), path.into()]),
            Err(_) if path.is_dir() => args.extend(["--ro-bind".into(), path.into(), path.into()]),
            Err(_) => {}
        }
    }
    for (flag, dest) in [("--proc", "/proc"), ("--dev", "/dev")] {
        args.extend([flag.into(), dest.into()]);
    }
    // The whole of /proc read-only. As root, the user namespace maps uid 0
    // to the host's 0, and the kernel checks a sysctl write by uid, not by
    // capability: `kernel.core_pattern` would make the host kernel run a
    // workspace program as host root. bwrap covers /proc/sys only where
    // its own access check says it is writable, which it does not as root.
    // Nothing under /proc that writes kernel state stays writable this way
    // (sysrq-trigger, /proc/sys, /proc/self/*); writes through the
    // descriptors in /proc/self/fd reach their files, not /proc.
    args.extend(["--remount-ro".into(), "/proc".into()]);
    args
}

/// /etc/resolv.conf is often a symlink into /run (systemd-resolved,
/// resolvconf), which is not mounted: bind just the file it resolves to,
/// at its own path and where the link points, so the chain resolves
/// inside whichever directories it passes through.
fn resolv_conf(link: &Path) -> Vec<OsString> {
    let (Ok(target), Ok(real)) = (std::fs::read_link(link), std::fs::canonicalize(link)) else {
        return Vec::new();
    };
    let parent = link.parent().unwrap_or(Path::new("/"));
    let lexical = protect::normalize(&parent.join(target));
    let shown = |p: &Path| SYSTEM_DIRS.iter().any(|dir| p.starts_with(dir));
    let mut args: Vec<OsString> = Vec::new();
    for dest in [&real, &lexical] {
        if !shown(dest) && !args.iter().any(|a| a == dest.as_os_str()) {
            args.extend(["--ro-bind".into(), real.as_os_str().into(), dest.into()]);
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ffi::OsStr;

    use super::*;

    fn bwrap() -> Bwrap {
        Bwrap {
            program: "/usr/bin/bwrap".into(),
            filters: Filters::compile().unwrap(),
            layout: layout(),
            dns: vec!["--ro-bind".into(), "/run/r".into(), "/run/r".into()],
            // The argument vectors only: nothing here runs bwrap.
            checked: OnceLock::from(Ok(())),
        }
    }

    fn argv(network: bool) -> Vec<String> {
        argv_bridged(network, None)
    }

    fn argv_bridged(network: bool, bridge: Option<&Bridge>) -> Vec<String> {
        let args = [OsString::from("-c"), OsString::from("true")];
        let job = Job {
            program: OsStr::new("bash"),
            args: &args,
            workspace: Path::new("/ws"),
            env: BTreeMap::new(),
            network: network.into(),
            read_only: &[],
            hidden: &[],
        };
        let protected = [
            Mount::Pin {
                source: "/real/ws/.git".into(),
                dest: "/ws/.git".into(),
            },
            Mount::ReadOnly {
                source: "/real/ws/.git/hooks".into(),
                dest: "/ws/.git/hooks".into(),
            },
        ];
        let paths = JobPaths {
            workspace: Path::new("/real/ws"),
            tmp: Path::new("/host/tmp/mecha-tmp-1"),
            readable: &["/r".into()],
            writable: &["/w".into()],
            protected: &protected,
            bridge,
        };
        bwrap()
            .args(&job, &paths, 7, None)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn an_allowlisted_job_runs_under_the_bridge_with_no_network_of_its_own() {
        let bridge = Bridge {
            exe: "/opt/mecha".into(),
            socket: "/tmp/mecha-proxy-1/proxy.sock".into(),
        };
        let argv = argv_bridged(false, Some(&bridge));
        at(&argv, &["--ro-bind", "/opt/mecha", "/run/mecha/bridge"]);
        at(
            &argv,
            &[
                "--bind",
                "/tmp/mecha-proxy-1/proxy.sock",
                "/run/mecha/proxy.sock",
            ],
        );
        at(
            &argv,
            &[
                "--",
                "/run/mecha/bridge",
                "__sandbox-bridge",
                "/run/mecha/proxy.sock",
                "--",
                "bash",
                "-c",
                "true",
            ],
        );
        assert!(!argv.contains(&"--share-net".to_owned()));
        assert!(!argv.contains(&"/run/r".to_owned()), "no DNS");
    }

    fn at(argv: &[String], seq: &[&str]) -> usize {
        argv.windows(seq.len())
            .position(|w| w == seq)
            .unwrap_or_else(|| panic!("{seq:?} not in {argv:?}"))
    }

    #[test]
    fn mounts_come_in_the_order_that_makes_protection_win() {
        let argv = argv(false);
        let order = [
            at(&argv, &["--ro-bind", "/usr", "/usr"]),
            at(&argv, &["--proc", "/proc"]),
            at(&argv, &["--dev", "/dev"]),
            at(&argv, &["--bind", "/host/tmp/mecha-tmp-1", "/tmp"]),
            at(&argv, &["--ro-bind-try", "/r", "/r"]),
            at(&argv, &["--bind", "/w", "/w"]),
            at(&argv, &["--bind", "/real/ws", "/ws"]),
            at(&argv, &["--bind", "/real/ws/.git", "/ws/.git"]),
            at(
                &argv,
                &["--ro-bind", "/real/ws/.git/hooks", "/ws/.git/hooks"],
            ),
            at(&argv, &["--chdir", "/ws", "--", "bash", "-c", "true"]),
        ];
        assert!(order.is_sorted(), "{order:?} in {argv:?}");
        assert_eq!(argv.last().map(String::as_str), Some("true"));
    }

    #[test]
    fn the_flags_isolate_and_only_a_network_job_shares_the_network() {
        for network in [false, true] {
            let argv = argv(network);
            for flag in [
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--new-session",
            ] {
                at(&argv, &[flag]);
            }
            at(&argv, &["--die-with-parent"]);
            at(&argv, &["--cap-drop", "ALL"]);
            at(&argv, &["--seccomp", "7"]);
            assert_eq!(argv.contains(&"--share-net".to_owned()), network);
            assert_eq!(
                argv.contains(&"/run/r".to_owned()),
                network,
                "DNS only with network"
            );
            let root = argv
                .windows(3)
                .any(|w| w[1] == "/" && w[0].contains("bind"));
            assert!(!root, "never all of /: {argv:?}");
            for absent in ["/root", "/run", "/home", "/var"] {
                assert!(!argv.contains(&absent.to_owned()), "{absent} in {argv:?}");
            }
        }
    }

    #[test]
    fn a_resolv_conf_link_into_run_binds_only_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let etc = tmp.path().join("etc");
        let run = tmp.path().join("run/systemd/resolve");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("stub-resolv.conf"), "nameserver 127.0.0.53\n").unwrap();
        let link = etc.join("resolv.conf");
        std::os::unix::fs::symlink("../run/systemd/resolve/stub-resolv.conf", &link).unwrap();
        let target = run.join("stub-resolv.conf");
        let expected: Vec<OsString> =
            vec!["--ro-bind".into(), target.clone().into(), target.into()];
        assert_eq!(resolv_conf(&link), expected);
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "nameserver 10.0.0.1\n").unwrap();
        assert!(
            resolv_conf(&link).is_empty(),
            "a plain file comes with /etc"
        );
    }
}
