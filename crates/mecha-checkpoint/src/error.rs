use std::path::PathBuf;

/// What can go wrong taking, reading or restoring a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(
        "checkpoint store: cannot {action} {path}: {source}. Check the path's permissions and free space"
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "checkpoint store: {path} is damaged ({reason}); prune the store with `mecha rewind --prune` or remove the file"
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "no checkpoint `{id}` in the store at {store}: it was pruned, or the session ran with another MECHA_HOME"
    )]
    Missing { id: String, store: PathBuf },
    #[error(
        "{} changed since mecha last saw {}, and restoring would overwrite {}:\n  {}\nSave what you want to keep, or pass --force to overwrite",
        if .paths.len() == 1 { "a file" } else { "files" },
        if .paths.len() == 1 { "it" } else { "them" },
        if .paths.len() == 1 { "it" } else { "them" },
        .paths.join("\n  ")
    )]
    Conflicts { paths: Vec<String> },
    #[error(
        "[checkpoint] include_ignored: `{glob}` is not a glob mecha can read ({reason}); write it \
         as a .gitignore line would be, e.g. \".env\" or \"config/*.local\""
    )]
    BadGlob { glob: String, reason: String },
    #[error("refusing to restore `{path}`: {reason}")]
    UnsafePath { path: String, reason: String },
}

impl CheckpointError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}
