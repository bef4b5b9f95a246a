//! mecha's sandbox: a policy and a command in, a confined command out.
//!
//! [`Sandbox::start`] turns the `[sandbox]` section into a checked policy
//! (the backend is there and works, every `writable` path exists), or an
//! error that names the fix: what cannot be honoured is never quietly run
//! unconfined. [`Sandbox::confine`] wraps one program (a shell command, an
//! MCP server) so that it sees the system directories read-only, the
//! workspace it is given read-write (its git hooks and config read-only,
//! even when they do not exist yet, and its mecha.toml), the configured
//! extra paths, and no network unless the job asks for it (all of it, or
//! only the `allow_hosts` through mecha's proxy: allow/), under a seccomp
//! filter as a second layer. [`Sandbox::egress`] is the one place
//! that says what confinement does to a tool's capabilities.
//! [`Sandbox::confine_ahead`] confines a program before its command is
//! known, and [`Sandbox::place`] decides whether a job may run in it once
//! it waits (ahead.rs).
//!
//! It does not decide which tools are confined (the shell tool and the MCP
//! hub ask for it), it does not spawn the confined program (the caller
//! does, in its own process group; only the docker backend runs short
//! `docker` calls of its own, to check the engine at start and to remove
//! each job's container after it), and it holds no secrets: the
//! environment inside is exactly the one the caller hands over.

mod ahead;
mod allow;
mod background;
mod bwrap;
mod config;
mod confined;
mod docker;
mod error;
mod gitconfig;
mod hint;
mod job;
mod prepare;
mod probe;
mod protect;
mod scratch;
mod seccomp;
mod sweep;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mecha_core::Egress;
use protect::Listings;

pub use allow::{Allowlist, BRIDGE_ARG, Policy, Proxy, run_bridge};
pub use background::wait_for_background_sweeps;
pub use config::{SandboxConfig, SandboxKind};
pub use confined::{Confined, ConfinedProgram, Finished, Lease};
pub use error::SandboxError;
pub use job::{Job, Network, Placed};

/// The system directories a confined program sees, read-only, and the
/// PATH it gets from them.
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// The host directories a confined program sees, read-only. A merged-/usr
/// system has `/bin` and friends as symlinks, recreated as symlinks.
pub(crate) const SYSTEM_DIRS: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// What the sandbox needs to know about the machine mecha runs on.
#[derive(Debug, Clone)]
pub struct HostEnv {
    /// mecha's own PATH: where bwrap and docker are looked up, and where a
    /// program a confined command could not find is looked for.
    pub path: OsString,
    /// The user's home directory, for `~/` in config and in hints.
    pub home: Option<PathBuf>,
    /// A directory no confined program can write (mecha's home keeps it),
    /// where the sweep writes down the repositories confined commands
    /// made, for every mecha process's later sweeps; `None` keeps that
    /// record in this process only.
    pub records: Option<PathBuf>,
    /// mecha's own executable, which runs inside the sandbox as the bridge
    /// to the `allow_hosts` proxy (it is started with [`BRIDGE_ARG`] and
    /// calls [`run_bridge`]); `None` where there is none, and then
    /// `allow_hosts` cannot be honoured.
    pub bridge: Option<PathBuf>,
}

impl HostEnv {
    /// This process's PATH and HOME, with no records directory.
    pub fn current() -> Self {
        Self {
            path: std::env::var_os("PATH").unwrap_or_default(),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            records: None,
            bridge: None,
        }
    }

    /// With this process's own executable as the allowlist bridge.
    pub fn bridged_by_this_executable(self) -> Self {
        Self {
            bridge: std::env::current_exe().ok(),
            ..self
        }
    }

    /// With the sweep's record kept in `dir`.
    pub fn keeping_records_in(self, dir: PathBuf) -> Self {
        Self {
            records: Some(dir),
            ..self
        }
    }
}

/// A checked policy, shared by the shell tool and every sandboxed MCP
/// server of a run. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: SandboxKind,
    network: Network,
    readable: Vec<PathBuf>,
    writable: Vec<PathBuf>,
    host: HostEnv,
    backend: Backend,
    /// What the walks for repositories listed, for the next job's walks.
    listings: Arc<Listings>,
}

#[derive(Debug)]
enum Backend {
    Bwrap(bwrap::Bwrap),
    Docker(docker::Docker),
}

/// When bwrap is tried on this machine (one confined `true`, a few ms).
/// Its absence, and docker's engine and image, are always checked at start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Check {
    /// Before anything runs: a run that could not confine stops at once,
    /// not at its first shell call.
    #[default]
    AtStart,
    /// Before the first confined job, if one comes: for commands that list
    /// what a run would have and may run nothing confined at all.
    AtFirstJob,
}

impl Sandbox {
    /// The policy `config` asks for, checked against this machine; `None`
    /// when no backend is configured (everything runs unconfined).
    pub fn start(config: &SandboxConfig, host: HostEnv) -> Result<Option<Self>, SandboxError> {
        Self::start_checking(config, host, Check::AtStart)
    }

    /// [`Sandbox::start`], with bwrap tried when `check` says.
    pub fn start_checking(
        config: &SandboxConfig,
        host: HostEnv,
        check: Check,
    ) -> Result<Option<Self>, SandboxError> {
        let Some(kind) = config.kind else {
            return Ok(None);
        };
        let expand = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths.iter().map(|p| expand_home(p, &host)).collect()
        };
        let readable = expand(&config.readable);
        let writable = expand(&config.writable);
        for path in readable.iter().chain(&writable) {
            if !path.is_absolute() {
                return Err(SandboxError::RelativePath { path: path.clone() });
            }
        }
        if let Some(missing) = writable.iter().find(|p| !p.exists()) {
            return Err(SandboxError::MissingWritable {
                path: missing.clone(),
            });
        }
        if let Some(entry) = protect::relative_path_entry(&host.path) {
            return Err(SandboxError::RelativeOnPath { entry });
        }
        let network = network_of(config, &host)?;
        let backend = match kind {
            SandboxKind::Bwrap => Backend::Bwrap(bwrap::Bwrap::start(&host, check)?),
            SandboxKind::Docker => Backend::Docker(docker::Docker::start(config, &host)?),
        };
        Ok(Some(Self {
            inner: Arc::new(Inner {
                kind,
                network,
                readable,
                writable,
                host,
                backend,
                listings: Arc::default(),
            }),
        }))
    }

    pub fn kind(&self) -> SandboxKind {
        self.inner.kind
    }

    /// What `[sandbox]` gives confined commands of the network
    /// (`network`, `allow_hosts`).
    pub fn network(&self) -> &Network {
        &self.inner.network
    }

    /// What confinement makes of a declared egress: without network there
    /// is no way out, so nothing is sent; through the allowlist it leaves
    /// only to a destination the config fixed (a blind send); with the
    /// whole network, the declaration stands.
    pub fn egress(&self, declared: Egress, network: &Network) -> Egress {
        match network {
            Network::None => Egress::None,
            Network::Hosts(_) if declared == Egress::None => Egress::None,
            Network::Hosts(_) => Egress::Blind,
            Network::Full => declared,
        }
    }

    /// A few words for a status line: `bwrap (network: 2 hosts)`.
    pub fn brief(&self) -> String {
        format!(
            "{} ({})",
            self.inner.kind.as_str(),
            self.inner.network.describe()
        )
    }

    /// One line for `mecha tools`.
    pub fn describe(&self) -> String {
        let inner = &self.inner;
        let mut line = format!("{} ({}", inner.kind.as_str(), inner.network.describe());
        if let Network::Hosts(list) = &inner.network {
            line.push_str(&format!(
                ": {}",
                list.written().collect::<Vec<_>>().join(", ")
            ));
        }
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !inner.readable.is_empty() {
            line.push_str(&format!("; readable: {}", list(&inner.readable)));
        }
        if !inner.writable.is_empty() {
            line.push_str(&format!("; writable: {}", list(&inner.writable)));
        }
        line.push(')');
        line
    }

    /// The PATH a confined program gets: the system directories, then the
    /// entries of mecha's PATH that a `readable` or `writable` line brings
    /// inside (so listing `~/.cargo` makes `cargo` work).
    pub fn path_inside(&self) -> OsString {
        let mut dirs: Vec<PathBuf> = std::env::split_paths(SYSTEM_PATH).collect();
        for dir in std::env::split_paths(&self.inner.host.path) {
            if dir.is_absolute() && !dirs.contains(&dir) && self.lists(&dir) {
                dirs.push(dir);
            }
        }
        std::env::join_paths(dirs).unwrap_or_else(|_| OsString::from(SYSTEM_PATH))
    }

    /// Whether a program at `path` on the host is visible inside, for a job
    /// in `workspace`.
    pub fn shows(&self, path: &Path, workspace: &Path) -> bool {
        path.starts_with(workspace) || self.shows_in_any_workspace(path)
    }

    /// Whether `[sandbox]` lists any `readable` or `writable` path.
    pub fn lists_paths(&self) -> bool {
        !(self.inner.readable.is_empty() && self.inner.writable.is_empty())
    }

    /// Visible whatever the workspace: a system directory or a listed
    /// path. A container shows whatever its image holds, which only the
    /// image can say.
    fn shows_in_any_workspace(&self, path: &Path) -> bool {
        self.inner.kind == SandboxKind::Docker
            || SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
            || self.lists(path)
    }

    /// Whether a host path is inside a `readable` or `writable` line.
    fn lists(&self, path: &Path) -> bool {
        let inner = &self.inner;
        inner
            .readable
            .iter()
            .chain(&inner.writable)
            .any(|root| path.starts_with(root))
    }

    /// For a confined command's output that says a program was not found
    /// (`bash: line 1: cargo: command not found`) which exists on mecha's
    /// PATH where the sandbox does not show it: one sentence naming the
    /// `[sandbox] readable` line that brings it in.
    pub fn missing_program_hint(&self, output: &str) -> Option<String> {
        let host = &self.inner.host;
        hint::missing_program_hint(output, &host.path, host.home.as_deref(), |path| {
            self.shows_in_any_workspace(path)
        })
    }

    /// For a host path a job in `workspace` is handed (an MCP server's
    /// program, or a path among its arguments) that the sandbox does not
    /// show: the value of the `[sandbox] readable` line that would, as
    /// `"~/.nvm"` or `"/srv/mcp"`. `None` when it is shown.
    pub fn readable_to_show(&self, path: &Path, workspace: &Path) -> Option<String> {
        let home = self.inner.host.home.as_deref();
        hint::readable_to_show(path, home, |p| self.shows(p, workspace))
    }

    /// Wraps `job` in the confinement, as a tokio command.
    pub fn confine(&self, job: Job<'_>) -> Result<Confined, SandboxError> {
        self.confine_program(job)?.into_confined()
    }

    /// Wraps `job` in the confinement before its command is known, for a
    /// caller that starts a program to wait for it (a shell that reads its
    /// command from a pipe) while the model writes the call. `None` where
    /// the backend starts nothing ahead (a container starts per job).
    /// Hand the lease to [`Sandbox::place`] once the program waits.
    pub fn confine_ahead(&self, job: Job<'_>) -> Result<Option<ConfinedProgram>, SandboxError> {
        let inner = &self.inner;
        match &inner.backend {
            Backend::Bwrap(bwrap) => bwrap
                .confine_ahead(
                    &job,
                    &inner.readable,
                    &inner.writable,
                    &inner.host,
                    &inner.listings,
                )
                .map(Some),
            Backend::Docker(_) => Ok(None),
        }
    }

    /// Where `job` runs: in `waiting`, the lease of a program
    /// [`Sandbox::confine_ahead`] confined that now waits for its command,
    /// when `job` would be confined exactly so now and every mount made
    /// back then still holds; otherwise in a fresh confinement, and the
    /// waiting program is the caller's to end (then release its lease with
    /// [`Lease::release_in_background`]).
    pub fn place(&self, job: Job<'_>, waiting: &mut Lease) -> Result<Placed, SandboxError> {
        let inner = &self.inner;
        match &inner.backend {
            Backend::Bwrap(bwrap) => bwrap.place(
                &job,
                waiting,
                &inner.readable,
                &inner.writable,
                &inner.host,
                &inner.listings,
            ),
            Backend::Docker(_) => self
                .confine_program(job)
                .map(|p| Placed::Fresh(Box::new(p))),
        }
    }

    /// Wraps `job` in the confinement, as what to start.
    pub fn confine_program(&self, job: Job<'_>) -> Result<ConfinedProgram, SandboxError> {
        let inner = &self.inner;
        match &inner.backend {
            Backend::Bwrap(bwrap) => bwrap.confine(
                &job,
                &inner.readable,
                &inner.writable,
                &inner.host,
                &inner.listings,
            ),
            Backend::Docker(docker) => docker.confine(
                &job,
                &inner.readable,
                &inner.writable,
                &inner.host,
                &inner.listings,
            ),
        }
    }
}

/// The user's start-up files under `home` (what a login shell, git, ssh or
/// a desktop session runs or trusts), for writers outside the sandbox to
/// refuse too: the sandbox keeps them read-only wherever a writable path
/// holds them.
pub fn startup_files(home: &Path) -> Vec<PathBuf> {
    protect::STARTUP_FILES
        .iter()
        .map(|(rel, _)| home.join(rel))
        .collect()
}

/// What the config of the workspace's own repository names for git to run
/// or read (the `core.hooksPath` directory, the `include.path` files), for
/// writers outside the sandbox to refuse too: such a file often lives in
/// the writable tree (`.husky`, a shared `.gitconfig`), and a line added to
/// it runs at the user's next `git status`. Only the root repository's:
/// the sandbox walks for nested ones before each command, which a run's
/// start cannot afford.
pub fn git_config_targets(workspace: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    protect::root_config_targets(workspace, home)
}

/// What `[sandbox] network` and `allow_hosts` give confined commands, or
/// why they cannot be had together or honoured here.
fn network_of(config: &SandboxConfig, host: &HostEnv) -> Result<Network, SandboxError> {
    if config.allow_hosts.is_empty() {
        return Ok(Network::from(config.network));
    }
    if config.network {
        return Err(SandboxError::NetworkAndHosts);
    }
    let list = Allowlist::parse(&config.allow_hosts)
        .map_err(|reason| SandboxError::AllowHosts { reason })?;
    if !host.bridge.as_deref().is_some_and(Path::is_file) {
        return Err(SandboxError::AllowHosts {
            reason: "needs mecha's own executable to run inside the sandbox, and it cannot \
                     be found; run mecha from its installed path"
                .into(),
        });
    }
    Ok(Network::Hosts(Arc::new(list)))
}

/// `~/x` against the user's home, as people write it in config.
fn expand_home(path: &Path, host: &HostEnv) -> PathBuf {
    match (path.strip_prefix("~"), &host.home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_owned(),
    }
}
