//! `[checkpoint]`: whether a run snapshots the workspace for `mecha rewind`
//! and `mecha diff`, and how much a snapshot takes in. A project's
//! `mecha.toml` may switch checkpoints off and lower the caps; what it asks
//! beyond the user's is ignored with a warning.

use mecha_checkpoint::Limits;
use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::Settings;
use super::unheeded::Narrowing;

/// `[checkpoint]` as either file writes it. Each value is checked as it is
/// read, so a bad one is an error naming its line.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSection {
    pub enabled: Option<bool>,
    pub max_file_bytes: Option<Bytes>,
    pub max_snapshot_bytes: Option<Bytes>,
    pub include_ignored: Option<Vec<Glob>>,
}

/// A cap in bytes: a whole number above zero.
#[derive(Debug, Clone, Copy)]
pub struct Bytes(u64);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wrong = || {
            de::Error::custom(
                "a cap is a whole number of bytes above 0 (10 MiB is 10485760); to take no \
                 snapshots at all, set enabled = false",
            )
        };
        match toml::Value::deserialize(deserializer)? {
            toml::Value::Integer(n) if n > 0 => u64::try_from(n).map(Bytes).map_err(|_| wrong()),
            _ => Err(wrong()),
        }
    }
}

/// One `include_ignored` glob, checked to be one.
#[derive(Debug, Clone)]
pub struct Glob(String);

impl<'de> Deserialize<'de> for Glob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let glob = String::deserialize(deserializer)?;
        let limits = Limits {
            include_ignored: vec![glob.clone()],
            ..Limits::default()
        };
        limits.check().map_err(de::Error::custom)?;
        Ok(Glob(glob))
    }
}

/// The checkpoint settings a run and `rewind` use, after both files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointSettings {
    /// Off: a run takes no snapshots, so its session cannot be rewound.
    pub enabled: bool,
    pub limits: Limits,
}

impl CheckpointSettings {
    /// The user's `[checkpoint]`, over mecha's defaults.
    pub(super) fn from_user(section: CheckpointSection) -> Self {
        let defaults = Limits::default();
        Self {
            enabled: section.enabled.unwrap_or(true),
            limits: Limits {
                max_file_bytes: section
                    .max_file_bytes
                    .map_or(defaults.max_file_bytes, |b| b.0),
                max_snapshot_bytes: section
                    .max_snapshot_bytes
                    .map_or(defaults.max_snapshot_bytes, |b| b.0),
                include_ignored: section
                    .include_ignored
                    .unwrap_or_default()
                    .into_iter()
                    .map(|g| g.0)
                    .collect(),
            },
        }
    }
}

impl Settings {
    /// A project's `[checkpoint]`: it may switch checkpoints off and lower
    /// the caps, and nothing else.
    pub(super) fn narrow_checkpoint(
        &mut self,
        project: CheckpointSection,
        narrowing: &mut Narrowing,
    ) {
        let ours = &mut self.checkpoint;
        match project.enabled {
            Some(false) => ours.enabled = false,
            Some(true) if !ours.enabled => narrowing.unheeded(
                "[checkpoint] enabled",
                true,
                false,
                "a project may only switch checkpoints off",
            ),
            _ => {}
        }
        narrowing.limit(
            "[checkpoint] max_file_bytes",
            &mut ours.limits.max_file_bytes,
            project.max_file_bytes.map(|b| b.0),
            |b| b,
        );
        narrowing.limit(
            "[checkpoint] max_snapshot_bytes",
            &mut ours.limits.max_snapshot_bytes,
            project.max_snapshot_bytes.map(|b| b.0),
            |b| b,
        );
        if project.include_ignored.is_some() {
            narrowing.not_the_projects(
                "[checkpoint] include_ignored",
                "yours stays",
                "a cloned repository must not choose which of its ignored files are copied \
                 into your checkpoint store",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::tests::load;

    #[test]
    fn defaults_and_the_users_values() {
        let s = load(None, None).unwrap();
        assert!(s.checkpoint.enabled);
        assert_eq!(s.checkpoint.limits, mecha_checkpoint::Limits::default());
        let s = load(
            Some(
                "[checkpoint]\nenabled = false\nmax_file_bytes = 1000\nmax_snapshot_bytes = \
                 5000\ninclude_ignored = [\".env\"]\n",
            ),
            None,
        )
        .unwrap();
        assert!(!s.checkpoint.enabled);
        assert_eq!(s.checkpoint.limits.max_file_bytes, 1000);
        assert_eq!(s.checkpoint.limits.max_snapshot_bytes, 5000);
        assert_eq!(s.checkpoint.limits.include_ignored, [".env"]);
    }

    #[test]
    fn a_project_may_switch_off_and_lower_but_never_widen() {
        let user = "[checkpoint]\nmax_file_bytes = 1000\n";
        let s = load(
            Some(user),
            Some("[checkpoint]\nenabled = false\nmax_file_bytes = 10\n"),
        )
        .unwrap();
        assert!(!s.checkpoint.enabled);
        assert_eq!(s.checkpoint.limits.max_file_bytes, 10);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);

        let s = load(
            Some("[checkpoint]\nenabled = false\nmax_file_bytes = 1000\n"),
            Some(
                "[checkpoint]\nenabled = true\nmax_file_bytes = 99999\ninclude_ignored = \
                 [\"secrets/\"]\n",
            ),
        )
        .unwrap();
        assert!(!s.checkpoint.enabled, "a project cannot switch them on");
        assert_eq!(s.checkpoint.limits.max_file_bytes, 1000);
        assert!(s.checkpoint.limits.include_ignored.is_empty());
        let warnings = s.warnings.join("\n");
        for said in [
            "[checkpoint] enabled = true has no effect; it stays false",
            "[checkpoint] max_file_bytes = 99999 has no effect; it stays 1000",
            "[checkpoint] include_ignored has no effect",
        ] {
            assert!(warnings.contains(said), "{said}: {warnings}");
        }
    }

    #[test]
    fn a_bad_value_names_its_line_and_the_fix() {
        for (text, says) in [
            ("max_file_bytes = 0", "whole number of bytes above 0"),
            ("max_snapshot_bytes = -1", "whole number of bytes above 0"),
            ("max_file_bytes = \"10MB\"", "10 MiB is 10485760"),
            ("include_ignored = [\"[z-a]\"]", "include_ignored: `[z-a]`"),
            ("enabled = \"yes\"", "invalid type"),
            ("max_bytes = 5", "unknown field `max_bytes`"),
        ] {
            let global = format!("[checkpoint]\n{text}\n");
            let err = load(Some(&global), None).unwrap_err().to_string();
            assert!(err.contains("config.toml:2:"), "{err}");
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
