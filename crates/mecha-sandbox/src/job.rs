//! What a caller hands the sandbox to confine ([`Job`], with its
//! [`Network`]), and where [`crate::Sandbox::place`] put one.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Allowlist, ConfinedProgram};

/// One program to confine.
#[derive(Debug)]
pub struct Job<'a> {
    /// An absolute path, or a name found on the PATH in `env`.
    pub program: &'a OsStr,
    pub args: &'a [OsString],
    /// Mounted read-write, and the working directory: the calling
    /// context's workspace, so a re-rooted context is what gets mounted.
    pub workspace: &'a Path,
    /// The whole environment inside, exactly; nothing of mecha's own
    /// environment is added.
    pub env: BTreeMap<OsString, OsString>,
    /// What of the network this program reaches.
    pub network: Network,
    /// Host paths the caller keeps from every writer (mecha's own home,
    /// the MCP servers files it reads): re-bound read-only wherever the
    /// job could otherwise write them (under the workspace or a `writable`
    /// path). Canonical, as `ToolCtx::protected` holds them.
    pub read_only: &'a [PathBuf],
    /// Host directories no confined program may read (mecha's
    /// credentials): wherever the job's mounts would show one, an empty
    /// directory is bound over it, read-only. Canonical.
    pub hidden: &'a [PathBuf],
}

/// Where [`Sandbox::place`] put a job.
#[derive(Debug)]
pub enum Placed {
    /// In the waiting program: hand it the command.
    Waiting,
    /// Start this instead.
    Fresh(Box<ConfinedProgram>),
}

/// What of the network a confined program reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// Nothing: a network namespace with only its own loopback.
    #[default]
    None,
    /// Only these hosts, through mecha's proxy; nothing else leaves.
    Hosts(Arc<Allowlist>),
    /// The host's network, all of it.
    Full,
}

impl From<bool> for Network {
    /// `network = true` or `false`.
    fn from(on: bool) -> Self {
        if on { Network::Full } else { Network::None }
    }
}

impl Network {
    /// For a status line or a box: `no network`, `network: 2 hosts`,
    /// `network on`.
    pub fn describe(&self) -> String {
        match self {
            Network::None => "no network".into(),
            Network::Hosts(list) if list.len() == 1 => "network: 1 host".into(),
            Network::Hosts(list) => format!("network: {} hosts", list.len()),
            Network::Full => "network on".into(),
        }
    }
}
