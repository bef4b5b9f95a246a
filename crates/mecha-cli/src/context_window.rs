//! When a run compacts: the threshold config gives (`config/compaction.rs`)
//! turned into the loop's policy, with the window and the reply's share it
//! must fit beside.

use mecha_agent::CompactionPolicy;
use mecha_core::reply_reserve;
use mecha_provider::Provider;

use crate::Failure;
use crate::config::Settings;

/// The run's compaction policy; `None` when there is no threshold (the
/// window is unknown and none was set, or a derived one would leave no
/// room, which is warned about). A `compact_at_tokens` that cannot fit is
/// an error that names the largest value that does.
pub fn policy(
    settings: &Settings,
    provider: &dyn Provider,
) -> Result<Option<CompactionPolicy>, Failure> {
    let window = provider.context_window();
    let max_output = provider.max_output_tokens();
    let threshold = match settings.compaction_threshold(window, max_output) {
        Ok(threshold) => threshold,
        Err(e) if settings.provider.compact_at_tokens.is_some() => {
            return Err(Failure::Usage(format!("[provider] compact_at_tokens: {e}")));
        }
        Err(e) => {
            crate::output::warning(&format!("this run will not compact its conversation: {e}"));
            return Ok(None);
        }
    };
    let Some(threshold) = threshold else {
        return Ok(None);
    };
    if let Some(warning) = &threshold.warning {
        crate::output::warning(warning);
    }
    // Without a window there is nothing to check a request against: the
    // server says when one is too big.
    let (window, reply_tokens) = match window {
        Some(window) => (window, reply_reserve(max_output, window)),
        None => (u64::MAX, 0),
    };
    Ok(Some(CompactionPolicy {
        threshold: threshold.tokens,
        window,
        reply_tokens,
    }))
}
