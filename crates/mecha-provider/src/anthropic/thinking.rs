//! `[provider] thinking`: Claude's extended thinking, as configured and as
//! sent.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::{Value, json};

use super::models::{ModelSpec, ThinkingModes};
use crate::ProviderError;

/// The smallest budget the API accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// How the model may think before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    /// `thinking = "adaptive"`: the model decides when and how much
    /// (Claude Opus 4.6, Sonnet 4.6 and later).
    Adaptive,
    /// `thinking = { budget_tokens = N }`: up to N tokens of thinking per
    /// turn, counted in `max_tokens`.
    Budget(u32),
}

const EXPECTED: &str = "`thinking = \"adaptive\"` or `thinking = { budget_tokens = N }` \
(N at least 1024)";

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ThinkingVisitor)
    }
}

struct ThinkingVisitor;

impl<'de> Visitor<'de> for ThinkingVisitor {
    type Value = Thinking;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Thinking, E> {
        match value {
            "adaptive" => Ok(Thinking::Adaptive),
            other => Err(E::custom(format!(
                "thinking = \"{other}\" is not a thinking mode; use {EXPECTED}"
            ))),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Thinking, A::Error> {
        let mut budget = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "budget_tokens" {
                return Err(de::Error::custom(format!(
                    "thinking has no field `{key}`; use {EXPECTED}"
                )));
            }
            let value: u64 = map.next_value().map_err(|_| {
                de::Error::custom(format!(
                    "thinking.budget_tokens must be a whole number of tokens; use {EXPECTED}"
                ))
            })?;
            budget = Some(value);
        }
        let budget = budget.ok_or_else(|| {
            de::Error::custom(format!("thinking needs budget_tokens; use {EXPECTED}"))
        })?;
        let budget = u32::try_from(budget)
            .ok()
            .filter(|b| *b >= MIN_THINKING_BUDGET)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "thinking.budget_tokens = {budget} is out of range: the API takes at least \
                     {MIN_THINKING_BUDGET}, and less than max_tokens"
                ))
            })?;
        Ok(Thinking::Budget(budget))
    }
}

impl Thinking {
    /// The request's `thinking` field. Adaptive asks for summarized
    /// thinking because the models that only think adaptively (Opus 4.7
    /// and later) omit the text by default, and mecha shows it; budget
    /// models summarize by default.
    pub(crate) fn wire(self) -> Value {
        match self {
            Thinking::Adaptive => json!({"type": "adaptive", "display": "summarized"}),
            Thinking::Budget(budget) => json!({"type": "enabled", "budget_tokens": budget}),
        }
    }

    /// The beta a budget needs so that Claude 4 models think between tool
    /// calls too, not only before the first (adaptive mode interleaves by
    /// itself and needs no header).
    pub(crate) fn beta(self) -> Option<&'static str> {
        match self {
            Thinking::Adaptive => None,
            Thinking::Budget(_) => Some("interleaved-thinking-2025-05-14"),
        }
    }

    /// Refuses a setting the API would refuse on every request, naming the
    /// fix. `max_tokens` is the effective limit (configured or defaulted);
    /// it is not raised to fit, because a budget above the model's output
    /// limit cannot be fixed by mecha, and a configured limit is the user's.
    pub(crate) fn check(
        self,
        model: &str,
        spec: Option<&ModelSpec>,
        max_tokens: u32,
    ) -> Result<(), ProviderError> {
        let modes = spec.map(|s| s.thinking);
        match (self, modes) {
            (_, Some(ThinkingModes::None)) => Err(ProviderError::NotConfigured(format!(
                "{model} has no extended thinking: remove `thinking` from [provider], or pick a \
                 model that thinks (e.g. claude-sonnet-4-5)"
            ))),
            (Thinking::Adaptive, Some(ThinkingModes::Budget)) => {
                Err(ProviderError::NotConfigured(format!(
                    "{model} has no adaptive thinking: use `thinking = {{ budget_tokens = 8192 }}` \
                     in [provider] (adaptive needs Claude Opus 4.6, Sonnet 4.6 or later)"
                )))
            }
            (Thinking::Budget(_), Some(ThinkingModes::Adaptive)) => {
                Err(ProviderError::NotConfigured(format!(
                    "{model} only thinks adaptively and refuses a thinking budget: use \
                     `thinking = \"adaptive\"` in [provider]"
                )))
            }
            (Thinking::Budget(budget), _) if budget >= max_tokens => {
                Err(ProviderError::NotConfigured(format!(
                    "thinking.budget_tokens ({budget}) must be less than max_tokens ({max_tokens}), \
                     which also holds the answer: lower budget_tokens, or raise max_tokens in \
                     [provider]{}",
                    spec.map(|s| format!(" ({model} writes at most {} tokens)", s.max_output))
                        .unwrap_or_default()
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anthropic::models::lookup;

    fn parse(text: &str) -> Result<Thinking, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn both_forms_parse() {
        assert_eq!(parse(r#""adaptive""#), Ok(Thinking::Adaptive));
        assert_eq!(
            parse(r#"{"budget_tokens": 4096}"#),
            Ok(Thinking::Budget(4096))
        );
    }

    #[test]
    fn bad_values_say_what_is_expected() {
        for (text, needle) in [
            (r#""on""#, "not a thinking mode"),
            (r#"{"budget_tokens": 1023}"#, "at least 1024"),
            (r#"{"budget_tokens": 99999999999}"#, "out of range"),
            (r#"{"budget_tokens": "lots"}"#, "whole number"),
            (r#"{"budget": 2048}"#, "no field `budget`"),
            (r#"{}"#, "needs budget_tokens"),
            ("true", "budget_tokens = N"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
        }
    }

    #[test]
    fn wire_shapes() {
        assert_eq!(
            Thinking::Budget(2048).wire(),
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(
            Thinking::Adaptive.wire(),
            json!({"type": "adaptive", "display": "summarized"})
        );
        assert_eq!(Thinking::Adaptive.beta(), None);
        assert!(Thinking::Budget(2048).beta().is_some());
    }

    fn check(thinking: Thinking, model: &str, max_tokens: u32) -> Result<(), String> {
        thinking
            .check(model, lookup(model), max_tokens)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn checks_against_the_model_and_max_tokens() {
        assert_eq!(
            check(Thinking::Budget(8192), "claude-sonnet-4-5", 64_000),
            Ok(())
        );
        assert_eq!(
            check(Thinking::Adaptive, "claude-opus-4-6", 128_000),
            Ok(())
        );
        assert_eq!(
            check(Thinking::Budget(8192), "claude-opus-4-6", 128_000),
            Ok(())
        );
        // Unknown models are the API's to judge.
        assert_eq!(check(Thinking::Adaptive, "claude-test", 32_000), Ok(()));

        let error = check(Thinking::Budget(8192), "claude-sonnet-4-5", 8192).unwrap_err();
        assert!(error.contains("less than max_tokens (8192)"), "{error}");
        assert!(error.contains("raise max_tokens"), "{error}");
        let error = check(Thinking::Budget(40_000), "claude-opus-4-1", 32_000).unwrap_err();
        assert!(error.contains("writes at most 32000"), "{error}");

        let error = check(Thinking::Adaptive, "claude-sonnet-4-5", 64_000).unwrap_err();
        assert!(error.contains("budget_tokens = 8192"), "{error}");
        let error = check(Thinking::Budget(4096), "claude-opus-4-7", 128_000).unwrap_err();
        assert!(error.contains("thinking = \"adaptive\""), "{error}");
        let error = check(Thinking::Budget(4096), "claude-3-5-haiku", 8192).unwrap_err();
        assert!(error.contains("remove `thinking`"), "{error}");
    }
}
