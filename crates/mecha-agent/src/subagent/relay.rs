//! What the user sees of a child at work: each of its tool calls, gate
//! refusals, results and retries, as progress reports of the parent's call,
//! so they show tagged with the subagent's name in every output form. None
//! of it enters the parent's conversation.

use mecha_core::ToolCtx;

use crate::events::{Event, EventSink, GateVerdict};

/// Turns a child's events into progress reports of the call that started
/// it.
pub(crate) struct Relay {
    pub ctx: ToolCtx,
}

/// The most characters of a call's arguments a report shows.
const ARGS_CHARS: usize = 120;

impl EventSink for Relay {
    fn emit(&self, event: Event) {
        let report = match event {
            Event::ToolCall { name, input, .. } => {
                let args = input.to_string();
                let args: String = match args.char_indices().nth(ARGS_CHARS) {
                    Some((i, _)) => format!("{}…", &args[..i]),
                    None => args,
                };
                format!("→ {name} {args}")
            }
            Event::Gate {
                name,
                decision: GateVerdict::Denied { reason, .. } | GateVerdict::Blocked { reason, .. },
                ..
            } => format!("✗ {name} refused: {reason}"),
            Event::ToolResult {
                name,
                is_error,
                summary,
                ..
            } => format!("{} {name}: {summary}", if is_error { "✗" } else { "←" }),
            Event::ToolProgress { name, message, .. } => format!("… {name}: {message}"),
            Event::Retrying { what } => what,
            Event::Compacted { .. } => "compacted its conversation".to_owned(),
            event => match event.hook_line() {
                Some(line) => line,
                None => return,
            },
        };
        self.ctx.report_progress(&report);
    }
}
