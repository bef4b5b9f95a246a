//! `[[hook]]`: the user's policy programs, from the user's file only.

use std::path::{Path, PathBuf};

use mecha_hooks::{HookConfig, HookSet};

use super::ConfigError;

/// `[[hook]]` of the user's file, checked at load. A run needs every hook
/// to work ([`Hooks::for_a_run`]): it would otherwise go without a guard
/// its user configured. The commands that show or try hooks take the ones
/// that work ([`Hooks::usable`]) and report the rest ([`Hooks::problems`]),
/// so a missing program hides nothing and stops only runs.
#[derive(Debug, Default)]
pub struct Hooks {
    usable: HookSet,
    /// Each hook that cannot be used: the hook, what is wrong, the fix.
    broken: Vec<String>,
    file: PathBuf,
}

impl Hooks {
    /// Every hook, or the error naming each broken one.
    pub fn for_a_run(&self) -> Result<&HookSet, ConfigError> {
        if self.broken.is_empty() {
            return Ok(&self.usable);
        }
        Err(ConfigError::Invalid {
            path: self.file.clone(),
            message: format!(
                "{}\nA run needs every hook it is configured with; `mecha hooks` lists them",
                self.broken.join("\n")
            ),
        })
    }

    /// The hooks that work, for the commands that show or try hooks, and
    /// for what protects their programs.
    pub fn usable(&self) -> &HookSet {
        &self.usable
    }

    /// One warning per broken hook: the file, the hook, the fix, and what
    /// it stops.
    pub fn problems(&self) -> Vec<String> {
        self.broken
            .iter()
            .map(|hook| {
                format!(
                    "{}: {hook}. Until it is fixed, `mecha run`, `mecha chat` and the screen \
                     refuse to start",
                    self.file.display()
                )
            })
            .collect()
    }
}

/// Checks the user's hooks at load, keeping each one that cannot be used
/// as the reason why.
pub(super) fn compile(path: &Path, config_dir: &Path, hooks: &[HookConfig]) -> Hooks {
    let (usable, broken) = match HookSet::compile(hooks, config_dir) {
        Ok(set) => (set, Vec::new()),
        Err(e) => (e.usable, e.errors.iter().map(ToString::to_string).collect()),
    };
    Hooks {
        usable,
        broken,
        file: path.to_path_buf(),
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
        let lines = s.unwrap().hooks.usable().describe();
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
            let lines = s.unwrap().hooks.usable().describe();
            assert_eq!(lines[0].event.to_string(), event);
        }
    }

    #[test]
    fn no_hooks_is_an_empty_set() {
        let (_tmp, s) = load("", None);
        assert!(s.unwrap().hooks.for_a_run().unwrap().is_empty());
    }

    /// A run's error, and the warnings of the commands that show hooks.
    fn broken(global: &str) -> (String, Vec<String>) {
        let (_tmp, s) = load(global, None);
        let hooks = s.unwrap().hooks;
        let err = hooks.for_a_run().unwrap_err().to_string();
        (err, hooks.problems())
    }

    #[test]
    fn a_bad_hook_stops_a_run_naming_the_file_and_the_hook_and_the_rest_are_shown() {
        let (err, problems) =
            broken("[[hook]]\nevent = \"pre_tool\"\nmatcher = \"(\"\ncommand = \"./guard.sh\"\n");
        assert!(
            err.contains("config.toml: [[hook]] #1 (`./guard.sh`)"),
            "{err}"
        );
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("config.toml: [[hook]] #1 (`./guard.sh`)"),
            "{problems:?}"
        );
        let (_tmp, s) = load(
            "[[hook]]\nevent = \"pre_tool\"\ncommand = \"./gone.sh\"\n\
             [[hook]]\nevent = \"stop\"\ncommand = \"./guard.sh\"\n",
            None,
        );
        let hooks = s.unwrap().hooks;
        let err = hooks.for_a_run().unwrap_err().to_string();
        assert!(
            err.contains("config.toml") && err.contains("gone.sh"),
            "{err}"
        );
        assert_eq!(hooks.usable().describe().len(), 1);
        assert!(hooks.problems()[0].contains("refuse to start"));
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
    fn a_project_files_hook_is_ignored_with_a_warning_saying_where_hooks_go() {
        let (_tmp, s) = load(
            "",
            Some("[[hook]]\nevent = \"pre_tool\"\ncommand = \"./evil.sh\"\n"),
        );
        let s = s.unwrap();
        assert!(s.hooks.for_a_run().unwrap().is_empty());
        let warning = s.warnings.join("\n");
        assert!(
            warning.contains("mecha.toml: [[hook]] has no effect"),
            "{warning}"
        );
        assert!(
            warning.contains("must not run programs of its choosing"),
            "{warning}"
        );
        assert!(warning.contains("(change it in "), "{warning}");
    }
}
