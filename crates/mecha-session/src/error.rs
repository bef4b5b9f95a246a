//! What can go wrong with a session, each in words that say what to do.

use std::io;
use std::path::PathBuf;

use crate::SCHEMA_VERSION;

/// A session that cannot be created, found or read.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no session `{0}` here; `mecha sessions list` shows the ids")]
    Unknown(String),
    #[error(
        "`{prefix}` is the start of {} session ids ({}); give more of the id \
         (`mecha sessions list` shows them)",
        ids.len(),
        ids.join(", ")
    )]
    Ambiguous { prefix: String, ids: Vec<String> },
    #[error(
        "{} is {what}: mecha stopped before it wrote the session's header, so there is \
         nothing in it to resume or show; delete the file",
        path.display()
    )]
    Empty { path: PathBuf, what: &'static str },
    #[error(
        "{}, line {line}: {problem}. Something other than mecha changed this file; \
         `mecha sessions show` shows what can still be read, and the session resumes again \
         once that line is repaired or it and everything after it are removed",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    #[error(
        "{} is in session format {found} (written by mecha {mecha}), and this mecha reads \
         format {SCHEMA_VERSION}: use that mecha to resume it",
        path.display()
    )]
    Schema {
        path: PathBuf,
        found: u64,
        mecha: String,
    },
    #[error(
        "{} is in use by another mecha that is still running; wait for it to finish, or \
         start a new session",
        path.display()
    )]
    Busy { path: PathBuf },
    #[error(
        "{} changed after it was loaded, or had lines that could not be read; load it again \
         before resuming it",
        path.display()
    )]
    Stale { path: PathBuf },
}

impl SessionError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
