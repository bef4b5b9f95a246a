//! `[sandbox]`: which backend confines shell commands and sandboxed MCP
//! servers, and what they may see beyond the system directories and the
//! workspace.

use std::path::PathBuf;

use serde::Deserialize;

/// Which confinement a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    /// bubblewrap: namespaces on this machine, no daemon.
    Bwrap,
    /// One container per run, commands run in it with `docker exec`.
    Docker,
}

impl SandboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bwrap => "bwrap",
            Self::Docker => "docker",
        }
    }
}

/// The user's `[sandbox]` section, as written. `~/` in a path means the
/// user's home directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Unset means unconfined.
    pub kind: Option<SandboxKind>,
    /// Extra paths mounted read-only (a toolchain under HOME, say).
    #[serde(default)]
    pub readable: Vec<PathBuf>,
    /// Extra paths mounted read-write; each must exist.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// Whether confined commands reach the network; off by default, and
    /// off is what makes a confined shell unable to send.
    #[serde(default)]
    pub network: bool,
    /// The only hosts confined commands reach, through mecha's proxy
    /// (`name`, `*.name`, an IP literal, each with an optional `:PORT`).
    /// Exclusive with `network`; empty means no network.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// The container image (docker only).
    pub image: Option<String>,
}
