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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::tests::load;

    #[test]
    fn agents_md_then_claude_md_by_default_and_a_project_list_replaces_the_users() {
        assert_eq!(
            load(None, None).unwrap().instructions_files,
            ["AGENTS.md", "CLAUDE.md"]
        );
        let user = "[agent]\ninstructions_files = [\"docs/AGENTS.md\"]\n";
        assert_eq!(
            load(Some(user), None).unwrap().instructions_files,
            ["docs/AGENTS.md"]
        );
        let project = "[agent]\ninstructions_files = []\n";
        assert!(
            load(Some(user), Some(project))
                .unwrap()
                .instructions_files
                .is_empty()
        );
    }

    #[test]
    fn an_entry_that_leaves_the_workspace_root_is_an_error_naming_file_and_key() {
        for (entry, why) in [
            ("/etc/motd", "is absolute"),
            ("../AGENTS.md", "climbs out with `..`"),
            ("", "is empty"),
        ] {
            let config = format!("[agent]\ninstructions_files = [{entry:?}]\n");
            let err = load(Some(&config), None).unwrap_err().to_string();
            assert!(
                err.contains("config.toml: [agent] instructions_files: ") && err.contains(why),
                "{entry}: {err}"
            );
            let err = load(None, Some(&config)).unwrap_err().to_string();
            assert!(
                err.contains("mecha.toml: [agent] instructions_files"),
                "{err}"
            );
        }
    }
}
