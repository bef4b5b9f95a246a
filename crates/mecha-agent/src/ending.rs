//! How a model turn ends, read the way the APIs document it: an answer, a
//! refusal, an empty turn, or tool calls of which the last may have been cut
//! by the output limit.

use mecha_core::{Block, Message, StopReason, ToolCall};
use mecha_provider::Response;

/// The user message sent when the model ends its turn without a word.
/// Anthropic's stop-reason guide advises exactly this: never send the empty
/// turn back (the API refuses empty content), and nudge with a new user
/// message rather than repeating the same request, which stays empty.
pub const CONTINUE_PROMPT: &str = "Please continue.";

/// The tool result for a call the output limit cut before its arguments
/// were complete. It is never run: its arguments are whatever fit.
pub const CUT_CALL: &str = "This call was not run: your output limit cut it off before its \
arguments were complete. Send it again in smaller pieces, each well under the limit: for a \
long file, write the first part with one call and add the rest with further calls (an edit \
that appends after the last line), rather than repeating the same long call.";

/// What the loop does with the model's turn.
#[derive(Debug)]
pub(crate) enum Reading {
    /// Run these calls; `cut` is the last one, when the output limit cut it.
    Tools {
        calls: Vec<ToolCall>,
        cut: Option<ToolCall>,
    },
    /// The model answered in text (`stop_reason` says whether the output
    /// limit cut it).
    Answer {
        text: String,
        stop_reason: StopReason,
    },
    /// The model declined; `detail` is the API's explanation, if it gave one.
    Refusal {
        text: String,
        detail: Option<String>,
    },
    /// The turn said nothing at all.
    Empty { stop_reason: StopReason },
}

/// Reads one response. A refusal wins over everything in it: what came
/// before the classifier stepped in is not an answer to act on.
pub(crate) fn read(response: &Response) -> Reading {
    let message = &response.message;
    let stop_reason = response.stop_reason.clone();
    if stop_reason == StopReason::Refusal {
        return Reading::Refusal {
            text: message.text(),
            detail: response.stop_detail.clone(),
        };
    }
    let mut calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
    if !calls.is_empty() {
        let cut = if stop_reason.is_cut() && last_block_is_call(message) {
            calls.pop()
        } else {
            None
        };
        return Reading::Tools { calls, cut };
    }
    if message.is_empty_answer() {
        return Reading::Empty { stop_reason };
    }
    Reading::Answer {
        text: message.text(),
        stop_reason,
    }
}

/// A limit stops the model mid-block: only the block it was writing, the
/// last, can be incomplete. Calls before it were closed.
fn last_block_is_call(message: &Message) -> bool {
    matches!(message.content.last(), Some(Block::ToolUse(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mecha_core::{Role, Usage};
    use serde_json::json;

    fn response(content: Vec<Block>, stop_reason: StopReason) -> Response {
        Response {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            stop_detail: None,
            usage: Usage::default(),
        }
    }

    fn call(id: &str) -> Block {
        Block::ToolUse(ToolCall {
            id: id.into(),
            name: "fs_write".into(),
            input: json!({}),
            input_error: None,
        })
    }

    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }

    #[test]
    fn only_the_last_call_of_a_cut_turn_is_cut() {
        let reading = read(&response(
            vec![text("Writing."), call("a"), call("b")],
            StopReason::MaxTokens,
        ));
        match reading {
            Reading::Tools { calls, cut } => {
                assert_eq!(calls.len(), 1);
                assert_eq!(calls[0].id, "a");
                assert_eq!(cut.map(|c| c.id), Some("b".to_owned()));
            }
            other => panic!("{other:?}"),
        }
        // A whole turn keeps every call.
        match read(&response(vec![call("a"), call("b")], StopReason::ToolUse)) {
            Reading::Tools { calls, cut } => {
                assert_eq!(calls.len(), 2);
                assert!(cut.is_none());
            }
            other => panic!("{other:?}"),
        }
        // The context window cuts like the output limit.
        let reading = read(&response(
            vec![call("a")],
            StopReason::ModelContextWindowExceeded,
        ));
        assert!(matches!(reading, Reading::Tools { cut: Some(_), .. }));
    }

    #[test]
    fn empty_thinking_only_and_refused_turns() {
        assert!(matches!(
            read(&response(vec![], StopReason::EndTurn)),
            Reading::Empty { .. }
        ));
        let thinking_only = vec![
            Block::Thinking {
                thinking: "hm".into(),
                signature: Some("s".into()),
            },
            text("  "),
        ];
        assert!(matches!(
            read(&response(thinking_only, StopReason::MaxTokens)),
            Reading::Empty {
                stop_reason: StopReason::MaxTokens
            }
        ));
        let mut refused = response(vec![text("Sure, here"), call("a")], StopReason::Refusal);
        refused.stop_detail = Some("declined".into());
        match read(&refused) {
            Reading::Refusal { text, detail } => {
                assert_eq!(text, "Sure, here");
                assert_eq!(detail.as_deref(), Some("declined"));
            }
            other => panic!("{other:?}"),
        }
        match read(&response(vec![text("Half an ans")], StopReason::MaxTokens)) {
            Reading::Answer { text, stop_reason } => {
                assert_eq!(text, "Half an ans");
                assert!(stop_reason.is_cut());
            }
            other => panic!("{other:?}"),
        }
    }
}
