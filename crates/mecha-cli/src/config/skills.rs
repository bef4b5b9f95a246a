//! `[skills]` of both layers: where the store is and which of its skills a
//! run carries. A project narrows (its `enabled` intersects, its `disabled`
//! adds) and cannot move the store.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::expand_home;
use super::model::SkillsSection;
use super::unheeded::Narrowing;

/// The layered `[skills]`.
#[derive(Debug, Clone)]
pub struct SkillSettings {
    /// The store: `$MECHA_HOME/skills` unless the user's file says.
    pub dir: PathBuf,
    /// One set per layer that named any; a skill must be in every one.
    enabled: Vec<(PathBuf, BTreeSet<String>)>,
    /// Each disabled name with the file that disabled it.
    disabled: Vec<(PathBuf, String)>,
}

impl SkillSettings {
    pub(super) fn from_user(section: &SkillsSection, home: &Path, file: &Path) -> Self {
        let dir = section
            .dir
            .as_ref()
            .map_or_else(|| home.join("skills"), |d| expand_home(home, d));
        let mut settings = Self {
            dir,
            enabled: Vec::new(),
            disabled: Vec::new(),
        };
        settings.add_layer(section, file);
        settings
    }

    /// Applies a project's `[skills]`; its `dir` is ignored, with a warning.
    pub(super) fn narrow_by_project(
        &mut self,
        section: &SkillsSection,
        file: &Path,
        narrowing: &mut Narrowing,
    ) {
        self.add_layer(section, file);
        if let Some(dir) = &section.dir {
            narrowing.not_the_projects(
                &format!("[skills] dir = {:?}", dir.display().to_string()),
                "yours stays",
                "the skill store is yours alone, so a project can only narrow which skills a \
                 run carries",
            );
        }
    }

    fn add_layer(&mut self, section: &SkillsSection, file: &Path) {
        if !section.enabled.is_empty() {
            let names = section.enabled.iter().cloned().collect();
            self.enabled.push((file.to_path_buf(), names));
        }
        for name in &section.disabled {
            self.disabled.push((file.to_path_buf(), name.clone()));
        }
    }

    /// Why config withholds the skill `name`, or `None` if it may be
    /// carried. `disabled` wins over `enabled`.
    pub fn withholds(&self, name: &str) -> Option<String> {
        if let Some((file, _)) = self.disabled.iter().find(|(_, n)| n == name) {
            return Some(format!("[skills] disabled in {}", file.display()));
        }
        self.enabled
            .iter()
            .find(|(_, names)| !names.contains(name))
            .map(|(file, _)| format!("not in [skills] enabled in {}", file.display()))
    }

    /// Every name `[skills]` mentions, for calling out the ones that match
    /// nothing on disk.
    pub fn named(&self) -> BTreeSet<&str> {
        let enabled = self.enabled.iter().flat_map(|(_, names)| names);
        let disabled = self.disabled.iter().map(|(_, name)| name);
        enabled.chain(disabled).map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(enabled: &[&str], disabled: &[&str]) -> SkillsSection {
        SkillsSection {
            enabled: enabled.iter().map(|s| (*s).to_owned()).collect(),
            disabled: disabled.iter().map(|s| (*s).to_owned()).collect(),
            dir: None,
        }
    }

    /// The spec's combinations: (user enabled, user disabled, project
    /// enabled, project disabled) -> which of a, b, c are carried.
    #[test]
    fn layers_only_narrow() {
        type Names = &'static [&'static str];
        let table: [(Names, Names, Names, Names, Names); 6] = [
            (&[], &[], &[], &[], &["a", "b", "c"]),
            (&[], &["b"], &[], &[], &["a", "c"]),
            (&["a", "b"], &[], &[], &[], &["a", "b"]),
            (&["a", "b"], &["b"], &[], &[], &["a"]),
            // The project intersects: `c` stays out although it asks.
            (&["a", "b"], &[], &["b", "c"], &[], &["b"]),
            // The project adds to disabled, and cannot re-enable.
            (&[], &["a"], &["a", "b"], &["b"], &[]),
        ];
        let user_file = Path::new("/home/u/.mecha/config.toml");
        let project_file = Path::new("/ws/mecha.toml");
        for (ue, ud, pe, pd, carried) in table {
            let mut settings =
                SkillSettings::from_user(&section(ue, ud), Path::new("/home/u/.mecha"), user_file);
            let mut narrowing = Narrowing::new(project_file, user_file);
            settings.narrow_by_project(&section(pe, pd), project_file, &mut narrowing);
            assert!(narrowing.warnings.is_empty());
            let got: Vec<&str> = ["a", "b", "c"]
                .into_iter()
                .filter(|n| settings.withholds(n).is_none())
                .collect();
            assert_eq!(got, carried, "{ue:?} {ud:?} {pe:?} {pd:?}");
        }
    }

    #[test]
    fn the_reason_names_the_file_and_a_projects_dir_is_dropped_loudly() {
        let mut settings = SkillSettings::from_user(
            &section(&[], &["noisy"]),
            Path::new("/h"),
            Path::new("/h/config.toml"),
        );
        assert_eq!(settings.dir, Path::new("/h/skills"));
        assert_eq!(
            settings.withholds("noisy").unwrap(),
            "[skills] disabled in /h/config.toml"
        );
        let mut project = section(&["x"], &[]);
        project.dir = Some("/ws/skills".into());
        let project_file = Path::new("/ws/mecha.toml");
        let mut narrowing = Narrowing::new(project_file, Path::new("/h/config.toml"));
        settings.narrow_by_project(&project, project_file, &mut narrowing);
        let warnings = narrowing.warnings;
        assert!(
            warnings[0].starts_with(
                "/ws/mecha.toml: [skills] dir = \"/ws/skills\" has no effect; yours stays"
            ),
            "{warnings:?}"
        );
        assert_eq!(settings.dir, Path::new("/h/skills"));
        assert_eq!(
            settings.withholds("y").unwrap(),
            "not in [skills] enabled in /ws/mecha.toml"
        );
    }
}
