//! Starting a server process: resolving its command against mecha's own
//! PATH, building its environment from the allowlist, running it in the
//! workspace in its own process group, and draining its stderr
//! (stderr_log.rs).
//!
//! The environment is the rule that matters most: a server is third-party
//! code, so it starts from `env_clear()` and gets only what is named.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mecha_core::{ProcessGroup, spawn_group};
use mecha_sandbox::{Allowlist, Job, Lease, Network, SYSTEM_PATH, Sandbox};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::config::McpServerConfig;
use crate::error::StartError;
use crate::stderr_log::StderrLog;

pub use mecha_core::BASE_ENV;

/// Lines of stderr kept for error messages.
pub(crate) const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept; a server that writes megabytes without a
/// newline must not grow memory.
pub(crate) const STDERR_MAX_LINE: usize = 2048;

/// What every server of a run shares: where it starts and what it may
/// inherit.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// The run's workspace: every server's working directory.
    pub workspace: PathBuf,
    /// `[agent] timezone`, handed to every server as `MECHA_TZ`.
    pub timezone: Option<String>,
    /// mecha's own environment: the only source of inherited variables and
    /// the PATH a bare command resolves against.
    pub parent_env: Vec<(OsString, OsString)>,
    /// The run's sandbox, for servers configured with `sandbox = true`.
    pub sandbox: Option<Sandbox>,
    /// Host paths a confined server must not write (mecha's home, the MCP
    /// servers files, the programs mecha runs unconfined): the sandbox
    /// re-binds them read-only, as it does for the shell. Canonical.
    pub read_only: Vec<PathBuf>,
    /// Where remote servers' OAuth logins are kept
    /// (`$MECHA_HOME/credentials`); `None`: no login is used.
    pub credentials: Option<PathBuf>,
}

impl SpawnOptions {
    /// Options for `workspace`, inheriting from this process's environment.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            timezone: None,
            parent_env: std::env::vars_os().collect(),
            sandbox: None,
            read_only: Vec::new(),
            credentials: None,
        }
    }

    #[must_use]
    pub fn with_credentials(mut self, dir: PathBuf) -> Self {
        self.credentials = Some(dir);
        self
    }

    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Option<Sandbox>) -> Self {
        self.sandbox = sandbox;
        self
    }

    #[must_use]
    pub fn with_read_only(mut self, paths: Vec<PathBuf>) -> Self {
        self.read_only = paths;
        self
    }

    #[must_use]
    pub fn with_timezone(mut self, timezone: impl Into<String>) -> Self {
        self.timezone = Some(timezone.into());
        self
    }

    /// Replaces the environment servers inherit from (tests; a front end
    /// that runs on behalf of someone else).
    #[must_use]
    pub fn with_parent_env<K, V>(mut self, env: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.parent_env = env.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self
    }

    /// The sandbox confining `config`'s server and what of the network it
    /// gets (its own `network`, else the `[sandbox]` section's: the switch
    /// or the allowlist); `None` when it runs unconfined.
    pub(crate) fn confinement(&self, config: &McpServerConfig) -> Option<(&Sandbox, Network)> {
        let sandbox = self.sandbox.as_ref().filter(|_| config.sandbox)?;
        let network = match (&config.allow_hosts, config.network) {
            // Checked when the config was read; a list that no longer
            // parses gives no network rather than more.
            (Some(hosts), _) => {
                Allowlist::parse(hosts).map_or(Network::None, |list| Network::Hosts(Arc::new(list)))
            }
            (None, Some(on)) => Network::from(on),
            (None, None) => sandbox.network().clone(),
        };
        Some((sandbox, network))
    }

    /// [`Self::confinement`] in the words of a tool's
    /// [`mecha_core::Tool::confinement`].
    pub(crate) fn confined(&self, config: &McpServerConfig) -> Option<mecha_core::Confinement> {
        let (sandbox, network) = self.confinement(config)?;
        Some(mecha_core::Confinement {
            backend: sandbox.kind().as_str().to_owned(),
            network: network == Network::Full,
            allowed_hosts: match &network {
                Network::Hosts(list) => list.len(),
                _ => 0,
            },
        })
    }

    fn parent_var(&self, name: &str) -> Option<&OsStr> {
        self.parent_env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }
}

/// The exact environment `config`'s server gets: the base allowlist,
/// `MECHA_TZ`, `env_passthrough`, then the literal `env`, which wins.
pub fn server_env(config: &McpServerConfig, opts: &SpawnOptions) -> BTreeMap<OsString, OsString> {
    let mut env = BTreeMap::new();
    for name in BASE_ENV {
        if let Some(value) = opts.parent_var(name) {
            env.insert(OsString::from(name), value.to_owned());
        }
    }
    if let Some(tz) = &opts.timezone {
        env.insert(OsString::from("MECHA_TZ"), OsString::from(tz));
    }
    for name in &config.env_passthrough {
        match opts.parent_var(name) {
            Some(value) => {
                env.insert(OsString::from(name), value.to_owned());
            }
            None => tracing::debug!(
                server = %config.name,
                var = %name,
                "env_passthrough names a variable mecha's environment does not have"
            ),
        }
    }
    for (name, value) in &config.env {
        env.insert(OsString::from(name), OsString::from(value));
    }
    env
}

/// Finds the program: a bare name on mecha's PATH (never the server's, and
/// never the current directory through an empty PATH entry), a path as is.
pub(crate) fn resolve_command(command: &str, opts: &SpawnOptions) -> Result<PathBuf, StartError> {
    if command.contains('/') {
        let path = Path::new(command);
        // Config files anchor a relative path at their own directory; one
        // that is still relative has nothing to mean, and must not mean
        // wherever mecha was started.
        if path.is_relative() {
            return Err(StartError::RelativeCommand {
                command: command.to_owned(),
            });
        }
        let path = path.to_owned();
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(StartError::NotExecutable {
                path: path.display().to_string(),
            })
        };
    }
    let path_var = opts.parent_var("PATH").unwrap_or_default();
    std::env::split_paths(path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| StartError::NotOnPath {
            command: command.to_owned(),
            path: path_var.to_string_lossy().into_owned(),
        })
}

/// What a server runs unconfined that a writer in the workspace could
/// change for its next start: its program and every argument that names an
/// existing regular file (a script: `node server.js`), resolved against the
/// workspace as the server's working directory. Directories are never
/// named here: a server handed the workspace itself must not freeze it.
/// Nothing for a server that runs confined, where a planted change stays
/// confined too.
pub fn unconfined_programs(config: &McpServerConfig, opts: &SpawnOptions) -> Vec<PathBuf> {
    if opts.confinement(config).is_some() {
        return Vec::new();
    }
    let mut paths: Vec<PathBuf> = resolve_command(&config.command, opts).into_iter().collect();
    for arg in &config.args {
        let path = opts.workspace.join(arg);
        if !arg.is_empty() && std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            paths.push(path);
        }
    }
    paths
}

/// The program of a confined server: an absolute path (inside, PATH holds
/// only the system directories, so a bare name would mean something else
/// or nothing), which the sandbox shows, as it shows every absolute path
/// among the arguments that exists here (`node /srv/mcp/server.js`):
/// a hidden one would only make the server exit at start with a status.
fn confined_command(
    config: &McpServerConfig,
    opts: &SpawnOptions,
    sandbox: &Sandbox,
) -> Result<PathBuf, StartError> {
    if !config.command.contains('/') {
        let found = resolve_command(&config.command, opts)
            .map(|path| format!(" (on your PATH it is {})", path.display()))
            .unwrap_or_default();
        return Err(StartError::BareCommandInSandbox {
            command: config.command.clone(),
            found,
        });
    }
    let program = resolve_command(&config.command, opts)?;
    let arguments = config
        .args
        .iter()
        .map(Path::new)
        .filter(|arg| arg.is_absolute() && arg.exists())
        .map(|arg| ("argument", arg));
    for (what, path) in std::iter::once(("command", program.as_path())).chain(arguments) {
        if let Some(readable) = sandbox.readable_to_show(path, &opts.workspace) {
            return Err(StartError::HiddenInSandbox {
                what,
                path: path.display().to_string(),
                readable,
            });
        }
    }
    Ok(program)
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A started server: its pipes, and the process it runs in.
pub(crate) struct Spawned {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub process: ServerProcess,
}

/// Starts `config`'s server in `opts.workspace`, in a new process group,
/// confined when it is configured with `sandbox = true`.
pub(crate) fn spawn(config: &McpServerConfig, opts: &SpawnOptions) -> Result<Spawned, StartError> {
    let (mut cmd, program, lease) = match opts.confinement(config) {
        None => {
            let program = resolve_command(&config.command, opts)?;
            let mut cmd = Command::new(&program);
            cmd.args(&config.args)
                .env_clear()
                .envs(server_env(config, opts))
                .current_dir(&opts.workspace);
            (cmd, program, None)
        }
        Some((sandbox, network)) => {
            let program = confined_command(config, opts, sandbox)?;
            let mut env = server_env(config, opts);
            env.insert(OsString::from("PATH"), OsString::from(SYSTEM_PATH));
            let args: Vec<OsString> = config.args.iter().map(OsString::from).collect();
            let confined = sandbox
                .confine(Job {
                    program: program.as_os_str(),
                    args: &args,
                    workspace: &opts.workspace,
                    env,
                    network,
                    read_only: &opts.read_only,
                    hidden: opts.credentials.as_slice(),
                })
                .map_err(|e| StartError::Sandbox(e.to_string()))?;
            (confined.command, program, Some(confined.lease))
        }
    };
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its group is spared when a shell command's leftovers are reaped, and
    // killed whole when the connection goes, so an `npx` launcher's real
    // server dies with it.
    let (mut child, group) = spawn_group(&mut cmd).map_err(|e| StartError::Spawn {
        command: program.display().to_string(),
        error: e.to_string(),
    })?;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (exit_tx, exit_rx) = watch::channel(None);
    // The waiter owns the child; the group guard is what kills it.
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = exit_tx.send(status);
    });
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(StartError::Spawn {
            command: program.display().to_string(),
            error: "its stdio pipes were not created".into(),
        });
    };
    let stderr = StderrLog::drain(stderr, config.name.clone());
    Ok(Spawned {
        stdin,
        stdout,
        process: ServerProcess {
            group,
            exit: exit_rx,
            stderr,
            lease,
        },
    })
}

/// The server's process group and its stderr; dropping it kills the group.
pub(crate) struct ServerProcess {
    group: ProcessGroup,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: StderrLog,
    /// What the sandbox holds while a confined server runs.
    lease: Option<Lease>,
}

impl ServerProcess {
    /// What a confined server left for programs on the host to run later,
    /// undone (see `mecha_sandbox::Lease::sweep`); nothing unconfined.
    pub fn sweep(&self) -> Vec<String> {
        self.lease.as_ref().map(Lease::sweep).unwrap_or_default()
    }

    /// See [`Lease::network_report`].
    pub fn network_report(&self) -> Vec<String> {
        self.lease
            .as_ref()
            .map(Lease::network_report)
            .unwrap_or_default()
    }

    /// The exit status, once the server has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits up to `limit` for the server to exit.
    pub async fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.exit_status(),
        }
    }

    /// Kills the whole group now.
    pub fn kill(&self) {
        self.group.kill();
    }

    /// The last lines of stderr, after giving the reader up to `limit` to
    /// catch up with a server that has just exited or been killed.
    pub async fn stderr_tail(&self, limit: Duration) -> Vec<String> {
        self.stderr.settle(limit).await;
        self.stderr.tail()
    }
}

impl Drop for ServerProcess {
    /// A confined server is swept once more when it goes (shut down,
    /// crashed, killed): what it wrote after its last call, or between
    /// calls, must not stay for git on the host. The group is killed
    /// first, and the sweep waits (briefly) for the server to be gone.
    fn drop(&mut self) {
        self.group.kill();
        let Some(lease) = self.lease.take() else {
            return;
        };
        let exit = self.exit.clone();
        lease.finish_in_background(
            move || {
                let deadline = std::time::Instant::now() + Duration::from_secs(2);
                while exit.borrow().is_none() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
            },
            |finished| {
                for line in finished.undone {
                    tracing::warn!("after a confined MCP server stopped: {line}");
                }
            },
        );
    }
}

/// Locks, shrugging off poisoning: every critical section here leaves the
/// data consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn opts(env: &[(&str, &str)]) -> SpawnOptions {
        SpawnOptions::new("/tmp").with_parent_env(env.iter().map(|(k, v)| (*k, *v)))
    }

    fn names(env: &BTreeMap<OsString, OsString>) -> Vec<&str> {
        env.keys().map(|k| k.to_str().unwrap()).collect()
    }

    #[test]
    fn env_is_the_allowlist_plus_what_is_named() {
        let parent = opts(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LANG", "C.UTF-8"),
            ("ANTHROPIC_API_KEY", "sk-secret"),
            ("LD_PRELOAD", "/evil.so"),
            ("NOTES_API_TOKEN", "tok"),
        ])
        .with_timezone("Europe/Berlin");
        let mut config = McpServerConfig::new("notes", "notes-mcp");
        config.env_passthrough = vec!["NOTES_API_TOKEN".into(), "ABSENT".into()];
        config.env.insert("NOTES_REGION".into(), "us".into());
        let env = server_env(&config, &parent);
        assert_eq!(
            names(&env),
            [
                "HOME",
                "LANG",
                "MECHA_TZ",
                "NOTES_API_TOKEN",
                "NOTES_REGION",
                "PATH"
            ]
        );
        assert_eq!(env[OsStr::new("MECHA_TZ")], "Europe/Berlin");
    }

    #[test]
    fn an_explicit_mecha_tz_wins() {
        let mut config = McpServerConfig::new("t", "t");
        config.env.insert("MECHA_TZ".into(), "UTC".into());
        let env = server_env(&config, &opts(&[]).with_timezone("Asia/Tokyo"));
        assert_eq!(env[OsStr::new("MECHA_TZ")], "UTC");
        assert_eq!(names(&env), ["MECHA_TZ"]);
    }

    #[test]
    fn bare_names_resolve_on_mechas_path_only() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("my-mcp");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.path().display());
        assert_eq!(
            resolve_command("my-mcp", &opts(&[("PATH", &path)])).unwrap(),
            exe
        );
        let e = resolve_command("my-mcp", &opts(&[("PATH", "/usr/bin")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "command `my-mcp` not found on PATH (/usr/bin); install it, or set `command` to its \
             absolute path"
        );
        // A relative PATH entry would mean "wherever mecha was started".
        let e = resolve_command("my-mcp", &opts(&[("PATH", "")])).unwrap_err();
        assert!(matches!(e, StartError::NotOnPath { .. }));
        // A relative path never resolves against the current directory.
        assert!(matches!(
            resolve_command("./my-mcp", &opts(&[("PATH", &path)])),
            Err(StartError::RelativeCommand { .. })
        ));
        // Not executable.
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(resolve_command("my-mcp", &opts(&[("PATH", &path)])).is_err());
        assert!(matches!(
            resolve_command(exe.to_str().unwrap(), &opts(&[])),
            Err(StartError::NotExecutable { .. })
        ));
    }
}
