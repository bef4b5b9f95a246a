//! The turn budget: the bytes one turn's tool results may add to the
//! context, all of it (result text, truncation markers, the external
//! header, the echoes after every result, refusals), and how it is shared
//! out before anything runs.
//!
//! It is a limit, not a target: a turn with more calls than the budget can
//! give a useful share runs the first ones and refuses the rest, saying how
//! many to send at once, instead of letting every call overflow it a little.

use crate::batch::{ECHO_SEPARATOR, EXTERNAL_HEADER};

/// The turn budget when neither `[tools] output_budget_bytes` nor a context
/// window says otherwise (what a 128k-token window derives).
pub const FALLBACK_TURN_BUDGET: usize = budget_for_context_window(128_000);

/// One eighth of the context window in tokens, at about three bytes a token:
/// one turn's results must fit between the compaction threshold and the
/// window.
pub const fn budget_for_context_window(tokens: u64) -> usize {
    (tokens / 8 * 3) as usize
}

/// The least result text a call is worth running for. Below this a spilled
/// result would be little more than its truncation marker, so a turn whose
/// calls cannot each get this much runs fewer of them.
pub const MIN_CALL_SHARE: usize = 2 * 1024;

/// The most a tool's echo may take. It follows every result, so it is paid
/// once per call of every turn.
pub const MAX_ECHO_BYTES: usize = 2000;

/// The smallest turn budget config accepts: one call with a useful share,
/// its external header, and the longest echo a tool may add after it.
pub const MIN_TURN_BUDGET: usize =
    MIN_CALL_SHARE + EXTERNAL_HEADER.len() + ECHO_SEPARATOR.len() + MAX_ECHO_BYTES;

/// One call of a turn, as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// Approved: it runs if the budget has room.
    Run,
    /// Refused before running, with a text of this many bytes.
    Note(usize),
}

/// What one call's block may take in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Share {
    /// It runs; its result text may take `content` bytes, and the block
    /// that much plus the external header and the echo reserve.
    Run { content: usize },
    /// Refused before running: the block, echo included, takes at most
    /// `block` bytes.
    Note { block: usize },
    /// Approved but not run, for want of budget: the block is the excess
    /// refusal, cut to `block` bytes, with no echo (the results that ran
    /// carry it).
    Excess { block: usize },
}

impl Share {
    /// The most bytes the block may take.
    pub(crate) fn block(self, echo: usize) -> usize {
        match self {
            Self::Run { content } => content + EXTERNAL_HEADER.len() + echo,
            Self::Note { block } | Self::Excess { block } => block,
        }
    }
}

/// How a turn's budget is spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// One per call, in call order.
    pub shares: Vec<Share>,
    /// The refusal an excess call gets.
    pub excess: String,
}

/// Shares `budget` over the calls of one turn, each of whose blocks is
/// followed by `echo` bytes of echoed tool state.
///
/// Refusal notes keep their size (up to [`MIN_CALL_SHARE`]); the calls that
/// run split what is left evenly. When that leaves a call less than
/// [`MIN_CALL_SHARE`], the approved calls past the number that fits, in call
/// order, are refused instead. The shares never add up to more than
/// `budget`, however many calls there are.
pub(crate) fn plan(budget: usize, echo: usize, wants: &[Want]) -> Plan {
    let per_run = MIN_CALL_SHARE + EXTERNAL_HEADER.len() + echo;
    let capacity = budget / per_run;
    let excess = excess_refusal(wants.len(), capacity, budget, echo);
    let notes: usize = wants
        .iter()
        .map(|w| match w {
            Want::Note(len) => (*len).min(MIN_CALL_SHARE) + echo,
            Want::Run => 0,
        })
        .sum();
    let approved = wants.iter().filter(|w| **w == Want::Run).count();
    // Each run refused for want of budget still costs its refusal, so
    // fewer runs do not free the whole of their share.
    let per_call = |runs: usize| -> Option<usize> {
        let fixed = notes.checked_add((approved - runs).checked_mul(excess.len())?)?;
        let per = budget.checked_sub(fixed)? / runs;
        (per >= per_run).then_some(per)
    };
    let chosen = (1..=approved.min(capacity))
        .rev()
        .find_map(|runs| per_call(runs).map(|per| (runs, per)));
    let (runs, content) = chosen.map_or((0, 0), |(runs, per)| {
        (runs, per - EXTERNAL_HEADER.len() - echo)
    });
    let fixed_fits = notes
        .checked_add(approved.saturating_sub(runs).saturating_mul(excess.len()))
        .is_some_and(|fixed| fixed <= budget);
    // More calls than even their refusals fit: every block gets an equal
    // slice, cut to it.
    let slice = budget / wants.len().max(1);
    let mut seen = 0;
    let shares = wants
        .iter()
        .map(|want| match want {
            Want::Run => {
                seen += 1;
                if seen <= runs {
                    Share::Run { content }
                } else if fixed_fits {
                    Share::Excess {
                        block: excess.len(),
                    }
                } else {
                    Share::Excess { block: slice }
                }
            }
            Want::Note(len) if fixed_fits => Share::Note {
                block: (*len).min(MIN_CALL_SHARE) + echo,
            },
            Want::Note(_) => Share::Note { block: slice },
        })
        .collect();
    Plan { shares, excess }
}

/// The result of a call the budget had no room for: how many to send.
fn excess_refusal(calls: usize, capacity: usize, budget: usize, echo: usize) -> String {
    if capacity == 0 {
        return format!(
            "not run: the output budget of {budget} bytes per turn has no room for a useful \
             result once the {echo} bytes of tool state repeated after every result (such as the \
             todo list) are counted. Shorten that state, then repeat this call"
        );
    }
    format!(
        "not run: this turn had {calls} calls; the output budget lets {capacity} run at once; \
         send at most {capacity} per turn and repeat this call in the next"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn total(plan: &Plan, echo: usize) -> usize {
        plan.shares.iter().map(|s| s.block(echo)).sum()
    }

    #[test]
    fn budget_derives_from_the_window() {
        assert_eq!(budget_for_context_window(200_000), 75_000);
        assert_eq!(budget_for_context_window(32_000), 12_000);
    }

    #[test]
    fn calls_that_fit_split_the_budget_evenly() {
        let plan = plan(40_000, 0, &[Want::Run; 4]);
        let content = 10_000 - EXTERNAL_HEADER.len();
        assert_eq!(plan.shares, vec![Share::Run { content }; 4]);
        assert_eq!(total(&plan, 0), 40_000);
    }

    #[test]
    fn forty_calls_in_a_small_budget_run_the_first_and_refuse_the_rest() {
        let budget = 12_288;
        let plan = plan(budget, 0, &[Want::Run; 40]);
        let runs = plan
            .shares
            .iter()
            .take_while(|s| matches!(s, Share::Run { .. }))
            .count();
        assert!(runs >= 1, "{plan:?}");
        assert!(
            plan.shares[runs..]
                .iter()
                .all(|s| matches!(s, Share::Excess { .. })),
            "the excess calls are the last ones: {plan:?}"
        );
        let Share::Run { content } = plan.shares[0] else {
            panic!()
        };
        assert!(content >= MIN_CALL_SHARE, "{content}");
        assert!(total(&plan, 0) <= budget);
        assert!(
            plan.excess.starts_with(
                "not run: this turn had 40 calls; the output budget lets 5 run at once"
            ),
            "{}",
            plan.excess
        );
        assert!(plan.excess.contains("send at most 5 per turn"));
    }

    #[test]
    fn refusal_notes_and_echoes_are_paid_for() {
        let echo = 500;
        let wants = [Want::Note(300), Want::Run, Want::Note(10_000), Want::Run];
        let plan = plan(20_000, echo, &wants);
        assert_eq!(plan.shares[0], Share::Note { block: 800 });
        assert_eq!(
            plan.shares[2],
            Share::Note {
                block: MIN_CALL_SHARE + echo
            }
        );
        assert!(total(&plan, echo) <= 20_000);
        assert!(matches!(plan.shares[1], Share::Run { .. }));
    }

    #[test]
    fn an_echo_that_leaves_no_room_refuses_every_call_and_says_why() {
        let plan = plan(MIN_TURN_BUDGET, 5000, &[Want::Run; 3]);
        assert!(
            plan.shares
                .iter()
                .all(|s| matches!(s, Share::Excess { .. }))
        );
        assert!(
            plan.excess.contains("Shorten that state"),
            "{}",
            plan.excess
        );
    }

    #[test]
    fn the_smallest_budget_runs_one_call_after_the_longest_echo() {
        let echo = MAX_ECHO_BYTES + ECHO_SEPARATOR.len();
        let plan = plan(MIN_TURN_BUDGET, echo, &[Want::Run]);
        assert_eq!(
            plan.shares,
            vec![Share::Run {
                content: MIN_CALL_SHARE
            }]
        );
    }

    #[test]
    fn thousands_of_calls_still_fit_in_slices() {
        let budget = 5000;
        let plan = plan(budget, 100, &vec![Want::Note(50); 10_000]);
        assert!(total(&plan, 100) <= budget);
    }
}
