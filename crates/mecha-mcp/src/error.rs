//! Why a server is not running: what statuses and call failures report.

use crate::config::ConfigError;

/// Why a server could not be started (or restarted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "command `{command}` not found on PATH ({path}); install it, or set `command` to its \
         absolute path"
    )]
    NotOnPath { command: String, path: String },
    #[error("command `{command}` is a relative path that no config file anchors; make it absolute")]
    RelativeCommand { command: String },
    #[error("command `{path}` does not exist or is not an executable file")]
    NotExecutable { path: String },
    #[error(
        "it runs in the sandbox, where PATH holds only the system directories, so the bare \
         command `{command}` cannot be found there; set `command` to an absolute path{found}"
    )]
    BareCommandInSandbox { command: String, found: String },
    #[error(
        "it runs in the sandbox, which does not show its {what} `{path}`; add `readable = \
         [{readable}]` to [sandbox] in your config to bring it in, or drop `sandbox = true`"
    )]
    HiddenInSandbox {
        /// `command`, or `argument`.
        what: &'static str,
        path: String,
        /// The `readable` value that shows it: `"~/.nvm"`.
        readable: String,
    },
    #[error("the sandbox could not confine it: {0}")]
    Sandbox(String),
    #[error("could not start `{command}`: {error}")]
    Spawn { command: String, error: String },
    #[error("it exited during start-up ({status})")]
    Exited { status: String },
    #[error(
        "it did not finish starting (the MCP handshake and tools/list) within {secs} s; raise \
         `startup_timeout_s` if it is just slow"
    )]
    Timeout { secs: u64 },
    #[error("the MCP handshake failed: {detail}")]
    Handshake { detail: String },
    #[error("listing its tools failed: {detail}")]
    ListTools { detail: String },
    /// A remote server that cannot be reached as configured.
    #[error("{detail}")]
    Remote { detail: String },
}

impl StartError {
    /// Whether the text quotes the server: a handshake or a listing it
    /// answered with an error carries whatever the server chose to write.
    pub(crate) fn quotes_the_server(&self) -> bool {
        matches!(self, Self::Handshake { .. } | Self::ListTools { .. })
    }
}

/// A failure with the evidence a person needs to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub error: StartError,
    pub stderr_tail: Vec<String>,
}

impl Failure {
    pub fn bare(error: impl Into<StartError>) -> Self {
        Self {
            error: error.into(),
            stderr_tail: Vec::new(),
        }
    }
}
