//! When a run compacts: the threshold from `[provider] compact_at_tokens`,
//! or derived from the context window so that the threshold, one turn's
//! tool output and the reply always fit in it.

use mecha_agent::CompactionPolicy;
use mecha_core::{checked_compact_at, compaction_threshold, reply_reserve};
use mecha_provider::Provider;

use crate::Failure;
use crate::config::Settings;

/// The run's compaction policy; `None` when there is no threshold (the
/// window is unknown and none was set, or a derived one would leave no
/// room, which is warned about). An explicit `compact_at_tokens` that
/// cannot fit is an error that names the largest value that does.
pub fn policy(settings: &Settings, provider: &dyn Provider) -> Result<Option<CompactionPolicy>, Failure> {
    let configured = settings.provider.compact_at_tokens;
    let Some(window) = provider.context_window() else {
        // Nothing to check the threshold against: compact there, and let
        // the server say when a request is too big.
        return Ok(configured.map(|threshold| CompactionPolicy {
            threshold,
            window: u64::MAX,
            reply_tokens: 0,
        }));
    };
    let reply_tokens = reply_reserve(provider.max_output_tokens(), window);
    let threshold = match configured {
        Some(at) => checked_compact_at(at, window, reply_tokens, settings.turn_budget)
            .map_err(|e| Failure::Usage(format!("[provider] compact_at_tokens: {e}")))?,
        None => match compaction_threshold(window, reply_tokens, settings.turn_budget) {
            Ok(threshold) => threshold,
            Err(e) => {
                crate::output::err_line(&format!(
                    "mecha: warning: this run will not compact its conversation: {e}"
                ));
                return Ok(None);
            }
        },
    };
    Ok(Some(CompactionPolicy {
        threshold,
        window,
        reply_tokens,
    }))
}
