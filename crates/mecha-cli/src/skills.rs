//! Which skills of the store a run carries: the store as loaded, narrowed
//! by `[skills]` and then by `--skill` / `--no-skills`. Withheld skills are
//! kept with the reason, so every listing can mark them rather than leave
//! them out: a withheld skill and one the model chose not to load look the
//! same from outside, and only one is a configuration mistake.

use std::path::PathBuf;

use mecha_skills::{LoadFailure, Skill, SkillTool, Store};

use crate::config::{SkillSettings, ToolFilter};

/// What this run's flags ask of the skills.
#[derive(Debug, Clone, Default)]
pub struct SkillFlags {
    /// `--skill NAME`: only these (narrows config, never widens it).
    pub only: Vec<String>,
    /// `--no-skills`: none.
    pub none: bool,
}

/// The store, sorted out for one run.
#[derive(Debug, Default)]
pub struct Selection {
    /// The store's folder (`$MECHA_HOME/skills` unless config moved it).
    pub store: PathBuf,
    /// Carried: the level-1 block lists them and the skill tool serves them.
    pub carried: Vec<Skill>,
    /// Loaded but not carried, and why.
    pub withheld: Vec<(Skill, String)>,
    /// Folders whose SKILL.md did not load.
    pub failures: Vec<LoadFailure>,
    /// Why the store itself could not be read, if it could not.
    pub unreadable: Option<String>,
    /// Worth telling the user: a skill loaded leniently, a name in config
    /// or `--skill` that matches nothing on disk.
    pub warnings: Vec<String>,
}

impl Selection {
    /// Loads the store and applies config, then the flags.
    pub fn load(settings: &SkillSettings, flags: &SkillFlags) -> Self {
        let store = Store::load(&settings.dir);
        let mut warnings = store.warnings;
        // A folder that failed to load still answers to its name.
        let on_disk: Vec<&str> = store
            .skills
            .iter()
            .map(|s| s.name.as_str())
            .chain(store.failures.iter().map(|f| f.dir_name.as_str()))
            .collect();
        let dir = settings.dir.display();
        for name in settings
            .named()
            .into_iter()
            .filter(|n| !on_disk.contains(n))
        {
            warnings.push(format!(
                "[skills] names `{name}`, but no skill in {dir} is called that; check the spelling"
            ));
        }
        for name in flags.only.iter().filter(|n| !on_disk.contains(&n.as_str())) {
            warnings.push(format!(
                "--skill {name}: no skill in {dir} is called that; check the spelling"
            ));
        }
        let mut selection = Self {
            store: settings.dir.clone(),
            failures: store.failures,
            unreadable: store.unreadable,
            warnings,
            ..Self::default()
        };
        for skill in store.skills {
            let why = if flags.none {
                Some("--no-skills".to_owned())
            } else if let Some(why) = settings.withholds(&skill.name) {
                Some(why)
            } else if !flags.only.is_empty() && !flags.only.contains(&skill.name) {
                Some("not named by --skill".to_owned())
            } else {
                None
            };
            match why {
                None => selection.carried.push(skill),
                Some(why) => selection.withheld.push((skill, why)),
            }
        }
        selection
    }

    /// As [`without_skill_tool`](Self::without_skill_tool) when `filter`
    /// leaves the skill tool out, for what lists a run without building it.
    pub fn narrow_to_tools(&mut self, filter: &ToolFilter) {
        if !filter.keeps_name(SkillTool::NAME) {
            self.without_skill_tool();
        }
    }

    /// A run whose tools leave out the skill tool can load no skill: each
    /// one that would be carried is withheld instead, saying so, rather
    /// than listed as carried by a run that cannot serve it.
    pub fn without_skill_tool(&mut self) {
        let why = "the `skill` tool is not among this run's tools ([tools] enabled or disabled, \
                   --tool, or --plan when config forces it to change things)";
        for skill in self.carried.drain(..) {
            self.withheld.push((skill, why.to_owned()));
        }
    }

    /// Whether anything failed: a skill, or the store itself.
    pub fn failed(&self) -> bool {
        !self.failures.is_empty() || self.unreadable.is_some()
    }

    /// The start-up report: every failure and warning, one line each.
    pub fn report_lines(&self) -> Vec<String> {
        let store = self.unreadable.iter().map(|why| format!("mecha: {why}"));
        let failures = self.failures.iter().map(|f| format!("mecha: {f}"));
        let warnings = self.warnings.iter().map(|w| format!("mecha: warning: {w}"));
        store.chain(failures).chain(warnings).collect()
    }
}

/// The level-1 block's share of the context window above which start-up
/// and `mecha skills` say so (the spec's 2%).
pub const LEVEL1_SHARE: f64 = 0.02;

/// Bytes per token, roughly, for sizing the level-1 block against a
/// window counted in tokens.
const BYTES_PER_TOKEN: u64 = 4;

/// A warning when the level-1 block takes more than [`LEVEL1_SHARE`] of
/// `window` tokens.
pub fn level1_warning(block: &str, window: Option<u64>) -> Option<String> {
    let window = window?;
    let tokens = u64::try_from(block.len()).unwrap_or(u64::MAX) / BYTES_PER_TOKEN;
    #[allow(clippy::cast_precision_loss)]
    let share = tokens as f64 / window as f64;
    (share > LEVEL1_SHARE).then(|| {
        format!(
            "the skills list in the system prompt is {} bytes (about {tokens} tokens), {:.1}% of \
             the {window}-token context window, above the 2% it should take; every request \
             pays for it. Disable skills you do not need with [skills] disabled, or shorten \
             their descriptions",
            block.len(),
            share * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_one_block_is_called_out_above_two_percent_of_the_window() {
        // 8,000 bytes is about 2,000 tokens: 2% of a 100,000-token window.
        let at_the_line = "x".repeat(8_000);
        assert_eq!(level1_warning(&at_the_line, Some(100_000)), None);
        let over = "x".repeat(8_100);
        let warning = level1_warning(&over, Some(100_000)).unwrap();
        assert!(
            warning.contains("8100 bytes (about 2025 tokens), 2.0%"),
            "{warning}"
        );
        // No window known: nothing to compare with.
        assert_eq!(level1_warning(&over, None), None);
    }
}
