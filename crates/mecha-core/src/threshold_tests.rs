#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;
use crate::budget_for_context_window;

/// What the reserves and the threshold add up to, in wide arithmetic so the
/// check itself cannot overflow.
fn total(threshold: u64, reply: u64, budget: usize) -> u128 {
    u128::from(threshold) + u128::from(budget_tokens(budget)) + u128::from(reply)
}

/// A window, a reply size up to it, and a budget: realistic budgets (the
/// window's own derivation and around it) as well as every usize.
fn inputs() -> impl Strategy<Value = (u64, u64, usize)> {
    (1u64..=10_000_000).prop_flat_map(|window| {
        let derived = budget_for_context_window(window);
        (
            Just(window),
            prop_oneof![0..=window, Just(window.div_ceil(8)), Just(0), Just(window)],
            prop_oneof![
                Just(derived),
                0..=derived.saturating_mul(4),
                any::<usize>(),
                Just(usize::MAX),
            ],
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// The derived threshold always fits with its margin, and is refused
    /// exactly when it would be under a quarter of the window.
    #[test]
    fn a_derived_threshold_always_fits_the_window((window, reply, budget) in inputs()) {
        match compaction_threshold(window, reply, budget) {
            Ok(t) => {
                prop_assert!(total(t, reply, budget) + u128::from(safety_margin(window))
                    <= u128::from(window));
                prop_assert!(u128::from(t) * 4 >= u128::from(window), "under a quarter: {t}");
                prop_assert!(t > 0);
            }
            Err(ThresholdError::TooSmall { threshold, quarter, .. }) => {
                prop_assert!(u128::from(threshold) * 4 < u128::from(window));
                prop_assert_eq!(quarter, window.div_ceil(4));
            }
            Err(other) => prop_assert!(false, "unexpected {other:?}"),
        }
    }

    /// An explicit value is taken exactly when it fits; a refusal's largest
    /// value is itself taken, and one more is not.
    #[test]
    fn an_explicit_threshold_is_taken_exactly_when_it_fits(
        (window, reply, budget) in inputs(),
        compact_at in prop_oneof![0..=10_000_001u64, any::<u64>()],
    ) {
        let fits = compact_at > 0 && total(compact_at, reply, budget) <= u128::from(window);
        match checked_compact_at(compact_at, window, reply, budget) {
            Ok(t) => {
                prop_assert!(fits);
                prop_assert_eq!(t, compact_at);
            }
            Err(ThresholdError::Zero { largest } | ThresholdError::TooLarge { largest, .. }) => {
                prop_assert!(!fits);
                if let Some(largest) = largest {
                    prop_assert_eq!(checked_compact_at(largest, window, reply, budget), Ok(largest));
                    prop_assert!(checked_compact_at(largest + 1, window, reply, budget).is_err());
                } else {
                    prop_assert!(total(1, reply, budget) > u128::from(window));
                }
            }
            Err(other) => prop_assert!(false, "unexpected {other:?}"),
        }
    }
}

#[test]
fn a_32k_window_with_an_unknown_reply_size_compacts_at_23360() {
    // An ollama server: 32k window, no max_tokens, the derived budget.
    let window = 32_000;
    let budget = budget_for_context_window(window);
    assert_eq!(budget, 12_000);
    let reply = reply_reserve(None, window);
    assert_eq!(reply, 4_000);
    // 32000 - 4000 (12000 bytes) - 4000 (reply) - 640 (margin).
    assert_eq!(compaction_threshold(window, reply, budget), Ok(23_360));
}

#[test]
fn a_128k_window_compacts_at_101248() {
    let window = 128_000;
    let budget = budget_for_context_window(window);
    let reply = reply_reserve(Some(8_192), window);
    assert_eq!(reply, 8_192, "a known max_tokens is used as it is");
    // 128000 - 16000 (48000 bytes) - 8192 - 2560.
    assert_eq!(compaction_threshold(window, reply, budget), Ok(101_248));
}

#[test]
fn a_200k_window_with_a_64k_reply_compacts_at_107000() {
    let window = 200_000;
    let budget = budget_for_context_window(window);
    // 200000 - 25000 (75000 bytes) - 64000 - 4000.
    assert_eq!(compaction_threshold(window, 64_000, budget), Ok(107_000));
}

#[test]
fn the_budget_rounds_up_to_whole_tokens() {
    assert_eq!(budget_tokens(0), 0);
    assert_eq!(budget_tokens(1), 1);
    assert_eq!(budget_tokens(3), 1);
    assert_eq!(budget_tokens(4), 2);
    // Exactly at the limit: 1000 - 334 (1001 bytes) - 100 = 566 fits, 567
    // does not.
    assert_eq!(checked_compact_at(566, 1_000, 100, 1_001), Ok(566));
    assert!(checked_compact_at(567, 1_000, 100, 1_001).is_err());
}

#[test]
fn reserves_that_leave_under_a_quarter_are_refused_with_the_fix() {
    // A 32k window with a 24k reply: 32000 - 4000 - 24000 - 640 = 3360.
    let err = compaction_threshold(32_000, 24_000, 12_000).unwrap_err();
    let text = err.to_string();
    for needle in [
        "32000 tokens",
        "24000 tokens (max_tokens)",
        "12000 bytes (~4000 tokens)",
        "threshold of 3360 tokens",
        "quarter of the window (8000)",
        "lower [provider] max_tokens or [tools] output_budget_bytes",
        "raise [provider] context_window",
    ] {
        assert!(text.contains(needle), "{needle:?} in {text}");
    }
    // Reserves bigger than the window: a threshold of 0, not an underflow.
    assert!(matches!(
        compaction_threshold(1_000, 2_000, 9_000),
        Err(ThresholdError::TooSmall { threshold: 0, .. })
    ));
}

#[test]
fn an_explicit_threshold_that_does_not_fit_names_the_largest_that_does() {
    let text = checked_compact_at(30_000, 32_000, 4_000, 12_000)
        .unwrap_err()
        .to_string();
    for needle in [
        "compact_at_tokens = 30000",
        "window of 32000 tokens",
        "could reach 38000 tokens",
        "set it to at most 24000",
    ] {
        assert!(text.contains(needle), "{needle:?} in {text}");
    }
    // Without the margin: an explicit value may use all of the room.
    assert_eq!(
        checked_compact_at(24_000, 32_000, 4_000, 12_000),
        Ok(24_000)
    );
    let none_fits = checked_compact_at(10, 32_000, 30_000, 12_000)
        .unwrap_err()
        .to_string();
    assert!(none_fits.contains("no threshold fits"), "{none_fits}");
}

#[test]
fn a_zero_threshold_is_refused() {
    let text = checked_compact_at(0, 32_000, 4_000, 12_000)
        .unwrap_err()
        .to_string();
    assert!(text.contains("compact_at_tokens = 0"), "{text}");
    assert!(text.contains("no larger than 24000"), "{text}");
}

#[test]
fn a_small_local_models_window_still_compacts_and_a_tiny_one_is_refused() {
    // The budget config derives is never below MIN_TURN_BUDGET (4147 bytes,
    // ~1383 tokens), which is what bites at small windows.
    let budget = |window| budget_for_context_window(window).max(crate::MIN_TURN_BUDGET);
    let at = |window| compaction_threshold(window, reply_reserve(None, window), budget(window));
    // 8192 - 1383 - 1024 - 164.
    assert_eq!(at(8_192), Ok(5_621));
    // 4096 - 1383 - 512 - 82.
    assert_eq!(at(4_096), Ok(2_119));
    assert!(matches!(
        at(2_048),
        Err(ThresholdError::TooSmall { threshold: 368, .. })
    ));
}
