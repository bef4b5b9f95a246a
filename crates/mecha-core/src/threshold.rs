//! The compaction threshold: how large the conversation may grow, in
//! tokens, before the loop compacts it at a turn boundary.
//!
//! The conversation crosses the threshold at the end of a turn, and the
//! next request adds at most one turn's tool results (the turn budget, in
//! bytes) before the model replies with up to `max_tokens`. So all three
//! must fit in the window together:
//!
//! `threshold + ceil(turn_budget_bytes / 3) + reply_tokens <= window`
//!
//! Every threshold this module hands out keeps that inequality; one that
//! cannot is an error naming the numbers and the setting to change.

use thiserror::Error;

/// The spec's conversion: about three bytes a token.
const BYTES_PER_TOKEN: u64 = 3;

/// The tokens one turn's tool results may take: the byte budget at three
/// bytes a token, rounded up so the reserve is never short by a fraction.
pub fn budget_tokens(turn_budget_bytes: usize) -> u64 {
    // usize is at most 64 bits on every target mecha builds for; saturate
    // rather than wrap if it ever is not.
    u64::try_from(turn_budget_bytes)
        .unwrap_or(u64::MAX)
        .div_ceil(BYTES_PER_TOKEN)
}

/// The safety margin the derived threshold keeps below the inequality's
/// limit: one fiftieth of the window, rounded up.
///
/// Why: the loop compares the threshold against a token count that is
/// partly estimated. The provider reports the prompt's tokens only for the
/// request it has seen; what was added since (the last reply, the tool
/// calls' own JSON, the result blocks' framing, an echo, a refusal) is
/// counted at ~3 bytes a token, and a real tokenizer differs from that by a
/// few percent either way. 2% of the window (640 tokens at 32k, 4,000 at
/// 200k) covers that framing and drift without giving up a visible share of
/// the window; the turn's results themselves are already reserved whole,
/// at the budget's own rate. An explicit `compact_at_tokens` gets no
/// margin: the user chose the number, and only the inequality binds it.
pub fn safety_margin(window: u64) -> u64 {
    window.div_ceil(50)
}

/// The reply's share of the window when the provider does not know its
/// `max_tokens` (an OpenAI-compatible server with none configured).
///
/// Known: that number, as sent. Unknown: an eighth of the window, rounded
/// up. Why an eighth: it is the share the turn budget's derivation already
/// gives one turn's tool results, so the two reserves together take a
/// quarter and the threshold lands near three quarters of the window; an
/// agent's reply is mostly tool calls and short text, far below 4k tokens
/// at a 32k window, and a server with no `max_tokens` stops a longer one at
/// the end of the window (a `length` stop, which the loop reports) rather
/// than refusing the request. Reserving more would compact a small local
/// model's conversation long before it needs to.
pub fn reply_reserve(max_output_tokens: Option<u64>, window: u64) -> u64 {
    max_output_tokens.unwrap_or_else(|| window.div_ceil(8))
}

/// A threshold that cannot be used, with the numbers that say why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ThresholdError {
    /// The reserves leave less than a quarter of the window to compact at.
    #[error(
        "the context window of {window} tokens is too small for these reserves: the reply's \
         {reply_tokens} tokens (max_tokens), one turn's tool output of {budget_bytes} bytes \
         (~{budget_tokens} tokens) and a safety margin of {margin} leave a compaction \
         threshold of {threshold} tokens, less than a quarter of the window ({quarter}); \
         lower [provider] max_tokens or [tools] output_budget_bytes, or raise [provider] \
         context_window if the model's window is larger"
    )]
    TooSmall {
        window: u64,
        reply_tokens: u64,
        budget_bytes: usize,
        budget_tokens: u64,
        margin: u64,
        threshold: u64,
        quarter: u64,
    },
    /// `compact_at_tokens = 0`: it would compact before every turn.
    #[error(
        "[provider] compact_at_tokens = 0 would compact before every turn; set a positive \
         number of tokens{}, or remove it to derive the threshold from the context window",
        largest.map_or(String::new(), |l| format!(" no larger than {l}"))
    )]
    Zero { largest: Option<u64> },
    /// `compact_at_tokens` leaves no room for one turn's output and the
    /// reply.
    #[error(
        "[provider] compact_at_tokens = {compact_at} does not fit the context window of \
         {window} tokens: with one turn's tool output of {budget_bytes} bytes \
         (~{budget_tokens} tokens) and the reply's {reply_tokens} tokens (max_tokens), the \
         conversation could reach {needed} tokens; {}",
        largest.map_or_else(
            || "no threshold fits: lower [provider] max_tokens or [tools] output_budget_bytes, \
                or raise [provider] context_window"
                .to_owned(),
            |l| format!("set it to at most {l}, or lower max_tokens or [tools] output_budget_bytes")
        )
    )]
    TooLarge {
        compact_at: u64,
        window: u64,
        reply_tokens: u64,
        budget_bytes: usize,
        budget_tokens: u64,
        needed: u64,
        largest: Option<u64>,
    },
}

/// The most the conversation may hold at the threshold with the reserves
/// still fitting: `window - budget - reply`, or `None` when not even zero
/// fits.
fn room(window: u64, reply_tokens: u64, turn_budget_bytes: usize) -> Option<u64> {
    window
        .checked_sub(budget_tokens(turn_budget_bytes))?
        .checked_sub(reply_tokens)
}

/// The threshold derived from the window: the largest that keeps the
/// inequality with [`safety_margin`] to spare. An error when that is less
/// than a quarter of the window: compacting that often would spend the run
/// summarising, and the fix is a setting, so it is said before the run.
pub fn compaction_threshold(
    window: u64,
    reply_tokens: u64,
    turn_budget_bytes: usize,
) -> Result<u64, ThresholdError> {
    let margin = safety_margin(window);
    let threshold = room(window, reply_tokens, turn_budget_bytes)
        .and_then(|room| room.checked_sub(margin))
        .unwrap_or(0);
    // threshold < window / 4, without rounding: 4 * threshold < window.
    if u128::from(threshold) * 4 < u128::from(window) {
        return Err(ThresholdError::TooSmall {
            window,
            reply_tokens,
            budget_bytes: turn_budget_bytes,
            budget_tokens: budget_tokens(turn_budget_bytes),
            margin,
            threshold,
            quarter: window.div_ceil(4),
        });
    }
    Ok(threshold)
}

/// A user's explicit `compact_at_tokens`, checked against the window: it
/// is refused when it is 0 or breaks the inequality, with the largest
/// value that fits.
pub fn checked_compact_at(
    compact_at: u64,
    window: u64,
    reply_tokens: u64,
    turn_budget_bytes: usize,
) -> Result<u64, ThresholdError> {
    let largest = room(window, reply_tokens, turn_budget_bytes).filter(|&l| l > 0);
    if compact_at == 0 {
        return Err(ThresholdError::Zero { largest });
    }
    match largest {
        Some(largest) if compact_at <= largest => Ok(compact_at),
        _ => Err(ThresholdError::TooLarge {
            compact_at,
            window,
            reply_tokens,
            budget_bytes: turn_budget_bytes,
            budget_tokens: budget_tokens(turn_budget_bytes),
            needed: compact_at
                .saturating_add(budget_tokens(turn_budget_bytes))
                .saturating_add(reply_tokens),
            largest,
        }),
    }
}

#[cfg(test)]
#[path = "threshold_tests.rs"]
mod tests;
