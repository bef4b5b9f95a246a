//! `[agent] instructions_files`: which workspace files hold the project's
//! instructions for agents, the first that exists being the one read.
//!
//! A project's `mecha.toml` may set its own list, replacing the user's: the
//! files are read through the same jail the file tools use, so a project can
//! only name its own files, which the model could read anyway, and their
//! text is labelled private data whichever file it is. Naming another file
//! (or none) widens nothing.

use std::path::{Component, Path};

use super::ConfigError;

/// AGENTS.md is the cross-harness convention; CLAUDE.md is what a project
/// written for Claude Code has instead.
const DEFAULT_INSTRUCTIONS_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// The list a layer sets, checked: each entry a path relative to the
/// workspace root that stays beneath it.
pub(super) fn check(
    path: &Path,
    files: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(files) = files else {
        return Ok(None);
    };
    for file in &files {
        let why = if file.is_empty() {
            Some("is empty")
        } else if Path::new(file).is_absolute() {
            Some("is absolute")
        } else if Path::new(file)
            .components()
            .any(|c| matches!(c, Component::ParentDir))
        {
            Some("climbs out with `..`")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "[agent] instructions_files: `{file}` {why}; name a file relative to the \
                     workspace root, e.g. \"AGENTS.md\""
                ),
            });
        }
    }
    Ok(Some(files))
}

/// The default list, as config would spell it.
pub(super) fn default_files() -> Vec<String> {
    DEFAULT_INSTRUCTIONS_FILES.map(str::to_owned).to_vec()
}
