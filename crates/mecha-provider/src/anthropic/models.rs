//! What mecha knows about Claude models: output limit, context window, and
//! which thinking modes the API accepts, by model-name prefix.
//!
//! From Anthropic's models overview and extended/adaptive thinking pages
//! (checked December 2026). A model not listed gets the generous defaults
//! in `anthropic.rs` and no thinking check: the API's own error is better
//! than a guess.

/// The thinking modes a model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThinkingModes {
    /// No extended thinking at all (Claude 3.5 and older).
    None,
    /// `{"type": "enabled", "budget_tokens": N}` only (Claude 3.7 to 4.5).
    Budget,
    /// Both; budgets are deprecated on these (Opus 4.6, Sonnet 4.6).
    Both,
    /// `{"type": "adaptive"}` only: a budget is refused with a 400 (Opus
    /// 4.7 and later).
    Adaptive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelSpec {
    pub prefix: &'static str,
    /// The most output tokens one request may ask for (streaming).
    pub max_output: u32,
    pub context_window: u64,
    pub thinking: ThinkingModes,
    /// Models before Sonnet 4.5 refuse a request whose input plus
    /// `max_tokens` exceeds the context window, unless this beta is sent;
    /// with it they stop with `model_context_window_exceeded` instead, as
    /// newer models do by default. Without it, a long conversation would
    /// start failing once it nears the window minus the output limit.
    pub needs_window_beta: bool,
}

const fn spec(
    prefix: &'static str,
    max_output: u32,
    context_window: u64,
    thinking: ThinkingModes,
    needs_window_beta: bool,
) -> ModelSpec {
    ModelSpec {
        prefix,
        max_output,
        context_window,
        thinking,
        needs_window_beta,
    }
}

const K200: u64 = 200_000;
const M1: u64 = 1_000_000;

use ThinkingModes::{Adaptive, Both, Budget, None as NoThinking};

/// Longest matching prefix wins, so `claude-opus-4-1` is not `claude-opus-4`
/// and dated ids (`claude-sonnet-4-20250514`) match their family.
const MODELS: &[ModelSpec] = &[
    spec("claude-fable-5", 128_000, M1, Adaptive, false),
    spec("claude-opus-5", 128_000, M1, Adaptive, false),
    spec("claude-sonnet-5", 128_000, M1, Both, false),
    spec("claude-opus-4-8", 128_000, M1, Adaptive, false),
    spec("claude-opus-4-7", 128_000, M1, Adaptive, false),
    spec("claude-opus-4-6", 128_000, M1, Both, false),
    spec("claude-sonnet-4-6", 64_000, M1, Both, false),
    spec("claude-opus-4-5", 64_000, K200, Budget, false),
    spec("claude-sonnet-4-5", 64_000, K200, Budget, false),
    spec("claude-haiku-4-5", 64_000, K200, Budget, false),
    spec("claude-opus-4-1", 32_000, K200, Budget, true),
    spec("claude-opus-4", 32_000, K200, Budget, true),
    spec("claude-sonnet-4", 64_000, K200, Budget, true),
    spec("claude-3-7-sonnet", 64_000, K200, Budget, true),
    spec("claude-3-5-sonnet", 8_192, K200, NoThinking, false),
    spec("claude-3-5-haiku", 8_192, K200, NoThinking, false),
    spec("claude-3-opus", 4_096, K200, NoThinking, false),
    spec("claude-3-haiku", 4_096, K200, NoThinking, false),
];

/// What mecha knows about `model`, if anything.
pub(crate) fn lookup(model: &str) -> Option<&'static ModelSpec> {
    MODELS
        .iter()
        .filter(|m| model.starts_with(m.prefix))
        .max_by_key(|m| m.prefix.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(model: &str) -> Option<u32> {
        lookup(model).map(|m| m.max_output)
    }

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(output("claude-opus-4-1-20250805"), Some(32_000));
        assert_eq!(output("claude-opus-4-20250514"), Some(32_000));
        assert_eq!(output("claude-opus-4-6"), Some(128_000));
        assert_eq!(output("claude-sonnet-4-20250514"), Some(64_000));
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").map(|m| m.needs_window_beta),
            Some(false)
        );
        assert_eq!(
            lookup("claude-sonnet-4-0").map(|m| m.needs_window_beta),
            Some(true)
        );
        assert_eq!(
            lookup("claude-sonnet-4-6").map(|m| m.context_window),
            Some(M1)
        );
        assert_eq!(output("claude-3-5-haiku-latest"), Some(8_192));
    }

    #[test]
    fn unknown_models_are_unknown() {
        assert_eq!(lookup("claude-test"), None);
        assert_eq!(lookup("glm-4.6"), None);
        assert_eq!(lookup(""), None);
    }

    #[test]
    fn every_prefix_is_unique() {
        for (i, a) in MODELS.iter().enumerate() {
            for b in &MODELS[i + 1..] {
                assert_ne!(a.prefix, b.prefix);
            }
        }
    }
}
