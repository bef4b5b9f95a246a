//! `[[hook]]`: the user's policy programs, from the user's file only.

use std::path::Path;

use mecha_hooks::{HookConfig, HookSet};

use super::ConfigError;

/// Checks the user's hooks at load, so a broken one stops the start.
pub(super) fn compile(
    path: &Path,
    config_dir: &Path,
    hooks: &[HookConfig],
) -> Result<HookSet, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    HookSet::compile(hooks, config_dir).map_err(|e| invalid(e.to_string()))
}

/// A project's file may not add hooks: a hook is a program mecha runs on
/// every tool call, and a cloned repository must not choose it.
pub(super) fn refuse_in_project(
    path: &Path,
    found: Option<&toml::Value>,
) -> Result<(), ConfigError> {
    match found {
        None => Ok(()),
        Some(_) => Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: "a project's mecha.toml cannot add [[hook]]s: a cloned repository must not \
                      run programs of its choosing. Put hooks in $MECHA_HOME/config.toml; a \
                      project may narrow with [[rule]] forbid or prompt instead"
                .to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use super::super::Settings;

    /// A home with `guard.sh` in it, a workspace, and the two files.
    fn load(global: &str, project: Option<&str>) -> (tempfile::TempDir, Result<Settings, String>) {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let guard: PathBuf = home.join("guard.sh");
        std::fs::write(&guard, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(home.join("config.toml"), global).unwrap();
        if let Some(p) = project {
            std::fs::write(ws.join("mecha.toml"), p).unwrap();
        }
        let settings = Settings::load(&home, &ws).map_err(|e| e.to_string());
        (tmp, settings)
    }

    #[test]
    fn user_hooks_are_compiled_at_load_relative_to_the_config_dir() {
        let (_tmp, s) = load(
            "[[hook]]\nevent = \"pre_tool\"\nmatcher = \"shell\"\ncommand = \"./guard.sh\"\n\
             timeout_s = 5\non_error = \"allow\"\n",
            None,
        );
        let lines = s.unwrap().hooks.describe();
        assert_eq!(lines.len(), 1);
        assert_eq!(
            lines[0].to_string(),
            "pre_tool  matcher=shell  command=./guard.sh  timeout=5s  on_error=allow"
        );
    }

    #[test]
    fn a_hook_of_every_event_loads() {
        for event in [
            "pre_tool",
            "post_tool",
            "user_prompt",
            "stop",
            "session_start",
        ] {
            let (_tmp, s) = load(
                &format!("[[hook]]\nevent = \"{event}\"\ncommand = \"./guard.sh\"\n"),
                None,
            );
            let lines = s.unwrap().hooks.describe();
            assert_eq!(lines[0].event.to_string(), event);
        }
    }

    #[test]
    fn no_hooks_is_an_empty_set() {
        let (_tmp, s) = load("", None);
        assert!(s.unwrap().hooks.is_empty());
    }

    #[test]
    fn a_bad_hook_is_an_error_naming_the_file_and_the_hook() {
        let (_tmp, s) = load(
            "[[hook]]\nevent = \"pre_tool\"\nmatcher = \"(\"\ncommand = \"./guard.sh\"\n",
            None,
        );
        let err = s.unwrap_err();
        assert!(
            err.contains("config.toml: [[hook]] #1 (`./guard.sh`)"),
            "{err}"
        );
        let (_tmp, s) = load(
            "[[hook]]\nevent = \"pre_tool\"\ncommand = \"./gone.sh\"\n",
            None,
        );
        let err = s.unwrap_err();
        assert!(
            err.contains("config.toml") && err.contains("gone.sh"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_event_or_key_names_the_file_and_line() {
        let (_tmp, s) = load(
            "[[hook]]\nevent = \"pre_tol\"\ncommand = \"./guard.sh\"\n",
            None,
        );
        let err = s.unwrap_err();
        assert!(err.contains("config.toml:2:"), "{err}");
        assert!(err.contains("pre_tool"), "{err}");
        let (_tmp, s) = load(
            "[[hook]]\nevent = \"pre_tool\"\ncommand = \"./guard.sh\"\nwhen = 1\n",
            None,
        );
        let err = s.unwrap_err();
        assert!(
            err.contains("config.toml:4:") && err.contains("`when`"),
            "{err}"
        );
    }

    #[test]
    fn a_project_file_with_a_hook_is_refused_saying_where_hooks_go() {
        let (_tmp, s) = load(
            "",
            Some("[[hook]]\nevent = \"pre_tool\"\ncommand = \"./evil.sh\"\n"),
        );
        let err = s.unwrap_err();
        assert!(err.contains("mecha.toml"), "{err}");
        assert!(
            err.contains("must not run programs of its choosing"),
            "{err}"
        );
        assert!(err.contains("$MECHA_HOME/config.toml"), "{err}");
    }
}
