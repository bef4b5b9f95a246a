//! Compaction: when the conversation reaches the threshold, the middle of
//! it is replaced by a summary the same model writes, so a long run neither
//! overflows the window nor forgets what it was doing.
//!
//! The rebuilt history is the user's first message verbatim, the summary,
//! the carried state verbatim (the todo list, every loaded skill: read
//! fresh from the tools, exactly one copy), then the most recent messages
//! verbatim. The system prompt and the tool list are not touched: they are
//! the cached prefix. The cut always falls before an assistant message or a
//! prompt, never between a tool call and its result, and never after the
//! last model reply, so the summary request is no bigger than a request
//! that already fitted.

use mecha_core::{
    Block, CarriedState, IMAGE_COST_BYTES, Message, Registry, Role, ToolDefinition, Usage,
};
use mecha_provider::{Provider, Request, Streamed};

/// When and how far a session compacts, in tokens. The CLI derives it so
/// that `threshold` plus one turn's tool output plus `reply_tokens` fits in
/// `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionPolicy {
    pub threshold: u64,
    pub window: u64,
    /// What a reply may take (the provider's `max_tokens`).
    pub reply_tokens: u64,
}

/// Attempts at one turn boundary: the first and at most two retries.
pub const COMPACTION_ATTEMPTS: u32 = 3;

/// How many bytes make a token, for estimates: the spec's conversion, on
/// the safe side for code and data.
const BYTES_PER_TOKEN: u64 = 3;

/// What asks the model for its summary. The first message and the carried
/// state are kept verbatim, so the summary need not repeat them.
pub const SUMMARY_REQUEST: &str = "[mecha: compaction] The conversation so far is about to be \
replaced by your summary, to make room in the context. Write that summary now, as plain text, \
and call no tool. Keep what the rest of the task needs: the goal and the user's constraints, \
what was decided and why, what was done (files changed, commands run, what they showed), what \
failed and what was learned, open questions, and the next step. The user's first message, the \
todo list and any loaded skills are kept verbatim beside the summary: do not repeat them.";

/// The first line of the summary message in a rebuilt history.
pub const SUMMARY_HEADER: &str = "[summary of the earlier conversation, written by the model at \
a compaction; the messages it replaces are no longer in the context]\n\n";

/// A compaction that happened: the rebuilt history and what it saved.
#[derive(Debug)]
pub(crate) struct Compacted {
    pub messages: Vec<Message>,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub usage: Usage,
}

/// Why a compaction attempt did not help.
#[derive(Debug)]
pub(crate) enum Failed {
    /// There is no middle to summarise (too few turns yet).
    NothingToCompact,
    /// The summary request failed, or came back empty, or the rebuilt
    /// history frees too little.
    Attempt(String, Usage),
}

/// The estimated size of a request, in tokens: every byte the model reads,
/// at `BYTES_PER_TOKEN`, an image at its fixed cost.
pub(crate) fn estimate(prefix_bytes: usize, messages: &[Message]) -> u64 {
    tokens_of(prefix_bytes + messages_bytes(messages))
}

/// The estimated bytes of `messages` on the wire.
pub(crate) fn messages_bytes(messages: &[Message]) -> usize {
    messages.iter().map(message_bytes).sum()
}

/// Tokens for `bytes`, at [`BYTES_PER_TOKEN`].
pub(crate) fn tokens_of(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The bytes of the system prompt and tool list, computed once per set.
pub(crate) fn prefix_bytes(system: &str, tools: &[ToolDefinition]) -> usize {
    system.len()
        + tools
            .iter()
            .map(|d| d.name.len() + d.description.len() + d.input_schema.to_string().len())
            .sum::<usize>()
}

/// A block's framing on the wire (role, type, ids), roughly.
const BLOCK_OVERHEAD: usize = 16;

fn message_bytes(message: &Message) -> usize {
    message
        .content
        .iter()
        .map(|block| {
            BLOCK_OVERHEAD
                + match block {
                    Block::Text { text } => text.len(),
                    Block::ToolUse(call) => {
                        call.id.len() + call.name.len() + call.input.to_string().len()
                    }
                    Block::ToolResult {
                        tool_use_id,
                        content,
                        images,
                        ..
                    } => tool_use_id.len() + content.len() + images.len() * IMAGE_COST_BYTES,
                    Block::Thinking {
                        thinking,
                        signature,
                    } => thinking.len() + signature.as_ref().map_or(0, String::len),
                    Block::RedactedThinking { data } => data.len(),
                }
        })
        .sum()
}

/// Whether the recent part may begin at `message`: a model reply, or a
/// prompt (a user message without tool results). Never a tool result,
/// which would lose its call.
fn is_cut_point(message: &Message) -> bool {
    match message.role {
        Role::Assistant => true,
        Role::User => !message
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. })),
    }
}

/// Where the recent, verbatim part begins: the earliest cut point whose
/// tail fits in `keep` tokens, else the latest cut point. Index 0 is the
/// first message and index 1 would leave no middle, so the cut is at 2 or
/// later; `None` when there is no middle yet.
fn choose_cut(messages: &[Message], keep: u64) -> Option<usize> {
    let is_point = |i: usize| is_cut_point(&messages[i]) && !CarriedState::is_carried(&messages[i]);
    let latest = (2..messages.len()).rev().find(|&i| is_point(i))?;
    // Walking back from the end, the tail grows by one message a step: the
    // earliest point that still fits is the last one seen before it stops
    // fitting (linear, for a history of any length).
    let mut tail_bytes = 0_u64;
    let mut cut = latest;
    for i in (2..messages.len()).rev() {
        tail_bytes += message_bytes(&messages[i]) as u64;
        if tail_bytes.div_ceil(BYTES_PER_TOKEN) > keep {
            break;
        }
        if is_point(i) {
            cut = i;
        }
    }
    Some(cut)
}

/// What stands in the summary request for the oldest part of a middle too
/// big to send at once.
pub const OMITTED: &str = "[mecha: the oldest part of the conversation is left out of this \
request, which could not hold it all; the recall tool, where present, can still search it]";

/// The summary request's history, no bigger than `cap` tokens: as it is
/// when it fits (always, for a conversation that grew turn by turn under
/// its threshold), else the first message, a note, and the most recent part
/// that fits, begun at a reply or a prompt so no result loses its call (a
/// session resumed under a smaller window, say).
fn fitted(mut middle: Vec<Message>, prefix_bytes: usize, cap: u64) -> Vec<Message> {
    let cap_bytes = cap
        .saturating_sub(estimate(0, &[Message::user_text(SUMMARY_REQUEST)]))
        .saturating_mul(BYTES_PER_TOKEN);
    let sizes: Vec<u64> = middle.iter().map(|m| message_bytes(m) as u64).collect();
    let total = prefix_bytes as u64 + sizes.iter().sum::<u64>();
    if total <= cap_bytes || middle.len() < 3 {
        return middle;
    }
    let note = Message::user_text(OMITTED);
    let mut kept = prefix_bytes as u64 + sizes[0] + message_bytes(&note) as u64;
    let mut start = middle.len();
    for i in (1..middle.len()).rev() {
        kept += sizes[i];
        if kept > cap_bytes {
            break;
        }
        if is_cut_point(&middle[i]) {
            start = i;
        }
    }
    let recent = middle.split_off(start);
    middle.truncate(1);
    middle.push(note);
    middle.extend(recent);
    middle
}

/// What a compaction keeps as it is: the cached prefix (the system prompt
/// and the tool list sent, with their size in bytes) and the tools whose
/// carried state it reads.
pub(crate) struct Prefix<'a> {
    pub system: &'a str,
    pub tools: &'a [ToolDefinition],
    pub bytes: usize,
    pub registry: &'a Registry,
}

/// One compaction attempt: asks `provider` for a summary of the middle and
/// rebuilds the history around it. `before` is the estimated size now.
pub(crate) async fn compact(
    provider: &dyn Provider,
    prefix: &Prefix<'_>,
    messages: &[Message],
    policy: &CompactionPolicy,
    before: u64,
) -> Result<Compacted, Failed> {
    // The recent part keeps at most a quarter of what compaction aims
    // under (of the conversation itself, when a call asked early).
    let keep = policy.threshold.min(before) / 4;
    let cut = choose_cut(messages, keep).ok_or(Failed::NothingToCompact)?;
    // The old carried message is left out: the fresh one is placed
    // verbatim after the summary, and a summariser should not paraphrase a
    // procedure.
    let middle: Vec<Message> = messages[..cut]
        .iter()
        .filter(|m| !CarriedState::is_carried(m))
        .cloned()
        .collect();
    let mut asked = fitted(middle, prefix.bytes, policy.threshold);
    asked.push(Message::user_text(SUMMARY_REQUEST));
    let request = Request {
        system: prefix.system,
        tools: prefix.tools,
        messages: &asked,
        era: None,
    };
    // The summary is not the answer: nothing of it streams to the user.
    let mut quiet = |_: Streamed<'_>| {};
    let response = provider.complete(request, &mut quiet).await.map_err(|e| {
        Failed::Attempt(format!("the summary request failed: {e}"), Usage::default())
    })?;
    let usage = response.usage;
    let summary = response.message.text();
    if summary.trim().is_empty() {
        return Err(Failed::Attempt(
            "the model returned no summary".to_owned(),
            usage,
        ));
    }
    let mut rebuilt = Vec::with_capacity(messages.len() - cut + 3);
    rebuilt.push(messages[0].clone());
    rebuilt.push(Message::user_text(format!(
        "{SUMMARY_HEADER}{}",
        summary.trim()
    )));
    rebuilt.extend(messages[cut..].iter().cloned());
    CarriedState::carry_across(&mut rebuilt, 1, prefix.registry);
    let after = estimate(prefix.bytes, &rebuilt);
    // A compaction that frees less than a fifth is a failure: compacting
    // again at the next turn would only repeat it.
    if after.saturating_mul(5) > before.saturating_mul(4) {
        return Err(Failed::Attempt(
            format!("the summary freed too little (~{before} tokens before, ~{after} after)"),
            usage,
        ));
    }
    Ok(Compacted {
        messages: rebuilt,
        tokens_before: before,
        tokens_after: after,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mecha_core::ToolCall;

    fn assistant_call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse(ToolCall {
                id: id.into(),
                name: "shell".into(),
                input: serde_json::json!({"command": "ls"}),
                input_error: None,
            })],
        }
    }

    fn result(id: &str, size: usize) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: "x".repeat(size),
                is_error: false,
                images: Vec::new(),
            }],
        }
    }

    fn history(turns: usize, size: usize) -> Vec<Message> {
        let mut messages = vec![Message::user_text("the task")];
        for n in 0..turns {
            let id = format!("t{n}");
            messages.push(assistant_call(&id));
            messages.push(result(&id, size));
        }
        messages
    }

    #[test]
    fn the_cut_never_parts_a_call_from_its_result() {
        for turns in 0..8 {
            for keep in [0, 10, 100, 1_000, 100_000] {
                let messages = history(turns, 300);
                let Some(cut) = choose_cut(&messages, keep) else {
                    assert!(turns < 2, "{turns} turns have a middle");
                    continue;
                };
                assert!(cut >= 2 && cut < messages.len());
                assert_eq!(messages[cut].role, Role::Assistant, "cut at {cut}");
            }
        }
    }

    #[test]
    fn the_tail_is_as_long_as_fits_and_never_empty_of_the_last_reply() {
        let messages = history(6, 3_000);
        // Each turn is ~1,000 tokens: 2,500 keeps the last two turns.
        assert_eq!(choose_cut(&messages, 2_500), Some(9));
        // Nothing fits: the last reply and its results stay anyway.
        assert_eq!(choose_cut(&messages, 0), Some(11));
        assert_eq!(choose_cut(&messages, u64::MAX), Some(3));
    }

    #[test]
    fn a_prompt_is_a_cut_point_and_a_carried_message_is_not() {
        let mut messages = history(2, 10);
        messages.push(Message::user_text("next prompt"));
        assert!(is_cut_point(&messages[5]));
        assert!(!is_cut_point(&messages[2]), "a tool result");
        assert_eq!(choose_cut(&messages, 0), Some(5));
    }

    #[test]
    fn a_middle_too_big_to_send_keeps_its_first_message_and_latest_part() {
        let messages = history(40, 3_000);
        assert_eq!(fitted(messages.clone(), 0, u64::MAX), messages, "it fits");
        let sent = fitted(messages.clone(), 0, 10_000);
        assert_eq!(sent[0], messages[0]);
        assert_eq!(sent[1].text(), OMITTED);
        assert_eq!(sent[2].role, Role::Assistant, "no result without its call");
        assert_eq!(sent.last(), messages.last());
        let size = estimate(0, &sent) + estimate(0, &[Message::user_text(SUMMARY_REQUEST)]);
        assert!(size <= 10_000, "{size}");
        assert!(sent.len() > 10, "as much as fits: {}", sent.len());
    }

    #[test]
    fn estimates_count_every_block_and_the_prefix() {
        let messages = history(1, 3_000);
        let bare = estimate(0, &messages);
        assert!(bare >= 1_000, "{bare}");
        assert_eq!(estimate(3_000, &messages), bare + 1_000);
    }
}
