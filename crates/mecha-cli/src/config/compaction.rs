//! The compaction threshold a run uses: the user's `[provider]
//! compact_at_tokens`, or one derived from the provider's window, lowered by
//! a project's `compact_at_tokens`.
//!
//! A project may set nothing else in `[provider]` (that would let a cloned
//! repository choose where the conversation goes), but compacting sooner
//! takes nothing away from the user: it costs a summary request to the same
//! provider, and the threshold still fits the window.

use std::path::Path;

use mecha_core::{ThresholdError, checked_compact_at, compaction_threshold, reply_reserve};

use super::unheeded::Narrowing;
use super::{ConfigError, Settings};

/// The only `[provider]` key a project may set.
const PROJECT_KEY: &str = "compact_at_tokens";

/// The threshold, and what a project asked for that could not take effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threshold {
    /// Compact when the conversation reaches this many tokens.
    pub tokens: u64,
    /// A project's `compact_at_tokens` above the user's threshold, which
    /// changes nothing: say so, as for any limit a project cannot raise.
    pub warning: Option<String>,
}

/// A project's `[provider]` table: `compact_at_tokens` or nothing. Any
/// other key is ignored with a warning; 0, which would compact before every
/// turn, is an error.
pub(super) fn project_compact_at(
    path: &Path,
    provider: Option<toml::Value>,
    narrowing: &mut Narrowing,
) -> Result<Option<u64>, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let Some(provider) = provider else {
        return Ok(None);
    };
    let table = match provider {
        toml::Value::Table(table) => table,
        _ => {
            return Err(invalid(format!(
                "[provider] must be a table, holding only {PROJECT_KEY}"
            )));
        }
    };
    for (key, value) in table.iter().filter(|(k, _)| *k != PROJECT_KEY) {
        narrowing.not_the_projects(
            &format!("[provider] {key} = {value}"),
            "yours stays",
            &format!(
                "a project may set only [provider] {PROJECT_KEY}, to compact sooner: choosing \
                 the model or its endpoint would let a cloned repository decide where your \
                 conversation goes"
            ),
        );
    }
    match table.get(PROJECT_KEY) {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if *n > 0 => Ok(u64::try_from(*n).ok()),
        Some(toml::Value::Integer(0)) => Err(invalid(format!(
            "[provider] {PROJECT_KEY} = 0 would compact before every turn; set a positive number \
             of tokens, or remove it"
        ))),
        Some(other) => Err(invalid(format!(
            "[provider] {PROJECT_KEY} must be a positive whole number of tokens, not {other}"
        ))),
    }
}

impl Settings {
    /// The threshold for a provider with this context window and reply
    /// size (`Provider::context_window`, `Provider::max_output_tokens`),
    /// with the turn budget as it stands after
    /// [`adopt_context_window`](Self::adopt_context_window). `None`: no
    /// window and no `compact_at_tokens`, so nothing to compact at.
    ///
    /// The user's `compact_at_tokens` is checked against the window (no
    /// window: taken as it is); without one the threshold derives from the
    /// window. A project's value then only lowers it.
    pub fn compaction_threshold(
        &self,
        window: Option<u64>,
        max_output_tokens: Option<u64>,
    ) -> Result<Option<Threshold>, ThresholdError> {
        let budget = self.turn_budget;
        let users = match (self.provider.compact_at_tokens, window) {
            (Some(at), Some(window)) => Some(checked_compact_at(
                at,
                window,
                reply_reserve(max_output_tokens, window),
                budget,
            )?),
            (Some(0), None) => return Err(ThresholdError::Zero { largest: None }),
            (Some(at), None) => Some(at),
            (None, Some(window)) => Some(compaction_threshold(
                window,
                reply_reserve(max_output_tokens, window),
                budget,
            )?),
            (None, None) => None,
        };
        let Some(mut tokens) = users else {
            // Nothing to lower: a project's value is the only threshold,
            // and compacting at all takes nothing away.
            return Ok(self.project_compact_at.map(|tokens| Threshold {
                tokens,
                warning: None,
            }));
        };
        let mut warning = None;
        if let Some(project_file) = &self.project_file {
            let mut narrowing = Narrowing::new(project_file, &self.global_file);
            narrowing.limit(
                "[provider] compact_at_tokens",
                &mut tokens,
                self.project_compact_at,
                |n| n,
            );
            warning = narrowing.warnings.pop();
        }
        Ok(Some(Threshold { tokens, warning }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::tests::load;

    /// A 32k window with no max_tokens and the derived budget compacts at
    /// 23360 (mecha-core's worked example).
    const DERIVED_32K: u64 = 23_360;

    fn threshold(global: &str, project: Option<&str>) -> (u64, Option<String>) {
        let mut s = load(Some(global), project).unwrap();
        s.adopt_context_window(Some(32_000));
        let t = s.compaction_threshold(Some(32_000), None).unwrap().unwrap();
        (t.tokens, t.warning)
    }

    #[test]
    fn a_project_may_lower_the_threshold_but_never_raise_it() {
        let user = "[provider]\ncompact_at_tokens = 20000\n";
        let lower = Some("[provider]\ncompact_at_tokens = 12000\n");
        assert_eq!(threshold(user, lower), (12_000, None));
        let (tokens, warning) = threshold(user, Some("[provider]\ncompact_at_tokens = 24000\n"));
        assert_eq!(tokens, 20_000, "a project cannot raise it");
        let warning = warning.unwrap();
        assert!(
            warning.contains("[provider] compact_at_tokens = 24000 has no effect; it stays 20000"),
            "{warning}"
        );
        assert!(
            warning.contains("a project may only lower limits"),
            "{warning}"
        );

        // Over a derived threshold too.
        assert_eq!(threshold("", lower), (12_000, None));
        let (tokens, warning) = threshold("", Some("[provider]\ncompact_at_tokens = 30000\n"));
        assert_eq!(tokens, DERIVED_32K);
        assert!(warning.unwrap().contains("it stays 23360"));
    }

    #[test]
    fn a_project_may_set_nothing_else_in_provider() {
        for (project, setting) in [
            (
                "[provider]\ncompact_at_tokens = 1000\nbase_url = \"http://attacker.example\"\n",
                "[provider] base_url = \"http://attacker.example\" has no effect; yours stays",
            ),
            (
                "[provider]\ncontext_window = 1000000\n",
                "[provider] context_window = 1000000 has no effect; yours stays",
            ),
        ] {
            let s = load(None, Some(project)).unwrap();
            assert_eq!(s.provider.base_url, None);
            assert_eq!(s.provider.context_window, None);
            let warning = s.warnings.join("\n");
            assert!(warning.contains(setting), "{warning}");
            assert!(
                warning.contains("only [provider] compact_at_tokens"),
                "{warning}"
            );
        }
        for (bad, says) in [
            ("0", "would compact before every turn"),
            ("-5", "positive whole number"),
            ("\"soon\"", "positive whole number"),
        ] {
            let project = format!("[provider]\ncompact_at_tokens = {bad}\n");
            let err = load(None, Some(&project)).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
            assert!(err.contains("mecha.toml"), "{err}");
        }
    }

    #[test]
    fn the_users_threshold_is_checked_against_the_window() {
        assert_eq!(threshold("", None), (DERIVED_32K, None));
        let mut s = load(Some("[provider]\ncompact_at_tokens = 30000\n"), None).unwrap();
        s.adopt_context_window(Some(32_000));
        let err = s.compaction_threshold(Some(32_000), None).unwrap_err();
        assert!(err.to_string().contains("set it to at most 24000"), "{err}");
        // No window: the user's number as it is, or none at all.
        let s = load(Some("[provider]\ncompact_at_tokens = 30000\n"), None).unwrap();
        assert_eq!(
            s.compaction_threshold(None, None)
                .unwrap()
                .map(|t| t.tokens),
            Some(30_000)
        );
        let s = load(None, None).unwrap();
        assert_eq!(s.compaction_threshold(None, None).unwrap(), None);
        let s = load(None, Some("[provider]\ncompact_at_tokens = 9000\n")).unwrap();
        assert_eq!(
            s.compaction_threshold(None, None)
                .unwrap()
                .map(|t| t.tokens),
            Some(9_000),
            "the project's value is the only threshold"
        );
    }
}
