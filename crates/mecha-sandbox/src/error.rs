//! Why a sandbox cannot be honoured; every message names the fix.

use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "[sandbox] lists `{}`, which is not an absolute path; write it as /abs/path or ~/path",
        path.display()
    )]
    RelativePath { path: PathBuf },
    #[error(
        "[sandbox] writable lists `{}`, which does not exist; create it, or remove the line",
        path.display()
    )]
    MissingWritable { path: PathBuf },
    #[error(
        "[sandbox] kind = \"bwrap\" needs bubblewrap, which is not on PATH; install the \
         `bubblewrap` package (apt-get install bubblewrap, dnf install bubblewrap), or remove \
         [sandbox] kind to run unconfined"
    )]
    BwrapMissing,
    #[error("the sandbox could not confine `{program}`: {reason}")]
    Confine { program: String, reason: String },
    #[error("{0}")]
    Docker(String),
}
