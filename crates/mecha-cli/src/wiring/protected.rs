//! What no writer a model drives may change: the file tools refuse it, and
//! the sandbox re-binds it read-only for the shell and every confined MCP
//! server. One list, so the two can never disagree.
//!
//! Each entry is something mecha itself reads or runs later, outside any
//! sandbox: its home (config, skills, hooks, sessions), which a run whose
//! workspace contains it could otherwise rewrite for the next run; the
//! skill store wherever `[skills] dir` puts it and wherever its symlinks
//! lead; every MCP servers file the config or `--mcp-file` names, which
//! would start whatever a model planted there; and the programs mecha runs
//! unconfined (hooks, and servers without `sandbox = true`, with their
//! script arguments), which a confined command could otherwise rewrite so
//! that the next start runs its code as the user; in a workspace that
//! holds the home directory, the user's start-up files; and what the
//! workspace repository's config names for git to run or read (its
//! `core.hooksPath` directory, its `include.path` files). (Git directories
//! are refused to the file tools by the jail itself, wherever they are.)
//! The credentials directory, where remote servers' OAuth tokens are kept,
//! is sealed: refused to every file tool, readers included, and hidden
//! from confined programs.

use std::path::{Path, PathBuf};

use mecha_core::{ToolCtx, canonical_protected};
use mecha_mcp::{SpawnOptions, unconfined_programs};
use mecha_sandbox::Sandbox;

use crate::Failure;
use crate::commands::mcp_login::credentials_dir;
use crate::config::Settings;

/// The protected paths of a run, canonical.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    paths: Vec<PathBuf>,
    /// Refused to readers too: the credentials directory.
    sealed: Vec<PathBuf>,
}

impl Protected {
    /// Everything `settings` makes mecha read or run later, for a run in
    /// `workspace` with `sandbox`. mecha's home and the servers files must
    /// be protected or the run stops; a skill store or a program that
    /// cannot be resolved is a warning (a broken store loads no skill,
    /// which start-up says, and must not stop the run too).
    pub fn of(
        settings: &Settings,
        workspace: &Path,
        sandbox: Option<&Sandbox>,
    ) -> Result<Self, Failure> {
        let mut protected = Self::default();
        let home = crate::config::mecha_home()?;
        let credentials = credentials_dir()?;
        protected
            .sealed
            .push(canonical_protected(&credentials).map_err(|e| {
                Failure::Run(anyhow::anyhow!(
                    "cannot keep {} from the file tools: {e}",
                    credentials.display()
                ))
            })?);
        let server_files = settings.mcp.iter().map(|s| PathBuf::from(&s.source));
        for path in std::iter::once(home).chain(server_files) {
            let canonical = canonical_protected(&path).map_err(|e| {
                Failure::Run(anyhow::anyhow!(
                    "cannot protect {} from the file tools: {e}",
                    path.display()
                ))
            })?;
            protected.add(canonical);
        }
        let options = bare_options(settings, workspace, sandbox);
        let programs = settings
            .mcp
            .iter()
            .flat_map(|server| unconfined_programs(&server.config, &options))
            .chain(settings.hooks.usable().programs().map(Path::to_path_buf));
        for path in skill_store_paths(&settings.skills.dir)
            .into_iter()
            .chain(programs)
            .chain(startup_files_within(workspace))
            .chain(repository_config_targets(workspace))
        {
            match canonical_protected(&path) {
                Ok(canonical) => protected.add(canonical),
                Err(e) => crate::output::warning(&format!(
                    "cannot protect {} from the file tools: {e}",
                    path.display()
                )),
            }
        }
        Ok(protected)
    }

    fn add(&mut self, path: PathBuf) {
        if !self.paths.contains(&path) {
            self.paths.push(path);
        }
    }

    /// `ctx` with every protected path refused to its writers, and the
    /// sealed ones to every tool.
    pub fn apply(&self, ctx: ToolCtx) -> ToolCtx {
        // Already canonical, so neither can fail on it again; if the
        // filesystem changed under it, the original stands.
        let ctx = self
            .paths
            .iter()
            .fold(ctx, |ctx, path| ctx.clone().protecting(path).unwrap_or(ctx));
        self.sealed
            .iter()
            .fold(ctx, |ctx, path| ctx.clone().sealing(path).unwrap_or(ctx))
    }
}

/// The user's start-up files when the workspace holds the home directory
/// (a workspace at `~`): a file tool must not add a line to `~/.bashrc`
/// that the next terminal runs, any more than a confined command may.
fn startup_files_within(workspace: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .and_then(|h| std::fs::canonicalize(h).ok());
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned());
    match home {
        Some(home) if home.starts_with(&workspace) => mecha_sandbox::startup_files(&home),
        _ => Vec::new(),
    }
}

/// What the workspace repository's config names for git to run or read
/// (`core.hooksPath`, `include.path`), which the sandbox keeps read-only
/// and so must the file tools: a hook or a `core.fsmonitor` line written
/// there runs at the user's next `git status`.
fn repository_config_targets(workspace: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    mecha_sandbox::git_config_targets(workspace, home.as_deref())
}

/// How the run's servers are started: in `workspace`, with `sandbox` for
/// the `sandbox = true` ones, `[agent] timezone` as `MECHA_TZ`, and (when
/// confined) the protected paths read-only.
pub fn spawn_options(
    settings: &Settings,
    workspace: &Path,
    sandbox: Option<&Sandbox>,
) -> Result<SpawnOptions, Failure> {
    let read_only = match sandbox {
        Some(_) => Protected::of(settings, workspace, sandbox)?.paths,
        None => Vec::new(),
    };
    Ok(bare_options(settings, workspace, sandbox).with_read_only(read_only))
}

fn bare_options(settings: &Settings, workspace: &Path, sandbox: Option<&Sandbox>) -> SpawnOptions {
    let mut options = SpawnOptions::new(workspace).with_sandbox(sandbox.cloned());
    if let Ok(dir) = credentials_dir() {
        // Canonical, as the sandbox compares it with its mounts.
        options = options.with_credentials(canonical_protected(&dir).unwrap_or(dir));
    }
    if let Some(tz) = &settings.timezone {
        options = options.with_timezone(tz.clone());
    }
    options
}

/// The skill store, and each place a symlinked skill folder in it leads:
/// a write through the link lands there, outside the store.
fn skill_store_paths(store: &Path) -> Vec<PathBuf> {
    let mut paths = vec![link_target(store)];
    for entry in std::fs::read_dir(store).into_iter().flatten().flatten() {
        // The directory entry's own type: no lstat per skill folder.
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            paths.push(link_target(&entry.path()));
        }
    }
    paths
}

/// `path`, or where it leads when it is a symlink to nothing yet: that
/// cannot be canonicalized, and a write could create what it names.
fn link_target(path: &Path) -> PathBuf {
    match (path.exists(), std::fs::read_link(path)) {
        (false, Ok(target)) => path.parent().map_or(target.clone(), |p| p.join(&target)),
        _ => path.to_path_buf(),
    }
}
