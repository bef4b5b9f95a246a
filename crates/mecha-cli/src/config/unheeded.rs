//! What a project's `mecha.toml` asked for and cannot have, said out loud.
//!
//! A project file only narrows, so a wider mode or a higher limit in it
//! changes nothing, and what only the user may set (the provider, MCP
//! servers, hooks, agents, the sandbox's paths) it cannot set at all. The
//! one rule for both: the project's value is ignored, the user's stays,
//! and a warning names the file, the setting, what stays and why. Never an
//! error: a cloned repository that asks for too much must still be usable,
//! with the user's own settings.

use std::collections::BTreeSet;
use std::fmt::Display;
use std::path::Path;

use mecha_core::PermissionMode;

/// Applies a project's values on top of the user's, collecting a warning
/// for each one that cannot take effect.
pub(super) struct Narrowing<'a> {
    project_file: &'a Path,
    user_file: &'a Path,
    pub warnings: Vec<String>,
}

impl<'a> Narrowing<'a> {
    pub fn new(project_file: &'a Path, user_file: &'a Path) -> Self {
        Self {
            project_file,
            user_file,
            warnings: Vec::new(),
        }
    }

    /// Lowers `current` to `wanted`; a higher `wanted` leaves it, with a
    /// warning. `show` writes a value as the key takes it.
    pub fn limit<T: Ord + Copy, S: Display>(
        &mut self,
        key: &str,
        current: &mut T,
        wanted: Option<T>,
        show: impl Fn(T) -> S,
    ) {
        let Some(wanted) = wanted else { return };
        if wanted > *current {
            self.unheeded(
                key,
                show(wanted),
                show(*current),
                "a project may only lower limits",
            );
        }
        *current = (*current).min(wanted);
    }

    /// Makes `current` the stricter of it and `wanted`.
    pub fn mode(&mut self, current: &mut PermissionMode, wanted: Option<PermissionMode>) {
        let Some(wanted) = wanted else { return };
        if rank(wanted) > rank(*current) {
            self.unheeded(
                "[agent] permission_mode",
                format!("{:?}", wanted.as_str()),
                format!("{:?}", current.as_str()),
                "a project may only make the mode stricter (read-only, plan, ask, accept-edits, \
                 allow)",
            );
        }
        if rank(wanted) < rank(*current) {
            *current = wanted;
        }
    }

    /// Switches `current` on if `wanted` is true; a project's `false` cannot
    /// switch off what the user switched on.
    pub fn switch_on(&mut self, key: &str, current: &mut bool, wanted: Option<bool>) {
        match wanted {
            Some(true) => *current = true,
            Some(false) if *current => self.unheeded(
                key,
                false,
                true,
                "a project may only switch this protection on",
            ),
            _ => {}
        }
    }

    /// A setting only the user's file may make: the project's is ignored.
    /// `stays` says what is used instead.
    pub fn not_the_projects(&mut self, setting: &str, stays: &str, why: &str) {
        self.ignored(setting, stays, why);
    }

    /// Warns about each tool the project's `enabled` names that the user's
    /// layer leaves off: enabling cannot bring it back.
    pub fn enabled(
        &mut self,
        wanted: &[String],
        user_enabled: Option<&BTreeSet<String>>,
        user_disabled: &BTreeSet<String>,
    ) {
        for name in wanted {
            let why = if user_disabled.contains(name) {
                "disabled"
            } else if user_enabled.is_some_and(|e| !e.contains(name)) {
                "not enabled"
            } else {
                continue;
            };
            self.ignored(
                &format!("[tools] enabled naming `{name}`"),
                "it stays off",
                &format!("it is {why} in your file, and a project may only take tools away"),
            );
        }
    }

    /// A value wider than the user's: `stays` is the user's, as the key
    /// takes it.
    pub fn unheeded(&mut self, key: &str, wanted: impl Display, stays: impl Display, why: &str) {
        self.ignored(
            &format!("{key} = {wanted}"),
            &format!("it stays {stays}"),
            why,
        );
    }

    /// The one wording of the rule.
    fn ignored(&mut self, setting: &str, stays: &str, why: &str) {
        self.warnings.push(format!(
            "{}: {setting} has no effect; {stays}: {why} (change it in {})",
            self.project_file.display(),
            self.user_file.display()
        ));
    }
}

/// Strictest first: read-only, plan (which the person at the screen may
/// leave for a plan they approve), ask, accept-edits, allow.
fn rank(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::ReadOnly => 0,
        PermissionMode::Plan => 1,
        PermissionMode::Ask => 2,
        PermissionMode::AcceptEdits => 3,
        PermissionMode::Allow => 4,
    }
}
