//! What a run reports as it goes, for the front end to render (text on
//! stdout, activity on stderr, or one JSON object per event).

use mecha_core::{Confinement, StopReason, Taint, Usage};
use mecha_provider::Streamed;
use serde::Serialize;
use serde_json::Value;

/// Which stage of the gate let a call through or refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStage {
    /// The call itself was malformed: unknown tool, bad arguments.
    Validation,
    /// A path argument the jail refused: outside the workspace, into
    /// mecha's own files, through a dangling symlink.
    Path,
    Interlock,
    Hook,
    Rule,
    Approval,
}

/// The gate's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum GateVerdict {
    /// Approved; `stage` is what approved it (a rule, or the approver).
    Allowed { stage: GateStage },
    /// Refused by the person asked.
    Denied { stage: GateStage, reason: String },
    /// Refused by policy or because the call was malformed.
    Blocked { stage: GateStage, reason: String },
}

/// One thing that happened in a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A model request of the loop is being sent (turn `turn`); what
    /// streams next is its answer.
    Requesting { turn: u32 },
    /// A piece of the model's text, as it streams.
    Text { text: String },
    /// A piece of the model's reasoning, as it streams.
    Thinking { text: String },
    /// The model reasoned, but the API sent it encrypted.
    RedactedThinking,
    /// The model API failed in a way worth another try; `what` says how
    /// and when the next attempt starts.
    Retrying { what: String },
    /// The model asked for a tool. `confined`: the sandbox it will run
    /// in, if one confines it (what `Tool::confinement` says).
    ToolCall {
        id: String,
        name: String,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        confined: Option<Confinement>,
    },
    /// What the gate decided about it.
    Gate {
        id: String,
        name: String,
        decision: GateVerdict,
    },
    /// A running call said how far it has got (an MCP server's
    /// `notifications/progress`); the latest one is the call's status.
    ToolProgress {
        id: String,
        name: String,
        message: String,
    },
    /// A result going back to the model.
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        bytes: usize,
        summary: String,
        /// Its first lines, for a screen that shows a call on demand; the
        /// stream-json line leaves them out (the result's size is there).
        #[serde(skip)]
        excerpt: Excerpt,
    },
    /// The turn's results brought what the interlock tracks into the
    /// conversation: `taint` is what it holds now, for the rest of the
    /// session.
    Tainted { taint: Taint },
    /// The model's output limit cut its turn: the call to `tool`, which was
    /// not run, or (no tool) the text of its answer.
    OutputLimit { turn: u32, tool: Option<String> },
    /// A call (`by`, a skill) narrowed the run's tool surface; `tools` is
    /// what calls may reach from now on, for the rest of the run.
    Narrowed { by: String, tools: Vec<String> },
    /// The middle of the conversation was replaced by the model's summary
    /// (sizes are estimates, in tokens); the first message, the carried
    /// state and the recent turns are kept verbatim.
    Compacted {
        turn: u32,
        tokens_before: u64,
        tokens_after: u64,
        messages_before: usize,
        messages_after: usize,
    },
    /// One compaction attempt of `of` failed; the history was left as it
    /// was.
    CompactionFailed {
        turn: u32,
        attempt: u32,
        of: u32,
        error: String,
    },
    /// One of the user's hooks ran at `event` (`pre_tool`, `post_tool`,
    /// `user_prompt`, `stop`, `session_start`); `tool` and `id` name the
    /// call it judged, for the tool events. `reason` goes with a `block`
    /// or an `ask`; `context` is what it added for the model; `message`
    /// its words for the user; `failure` what broke, when it did (then
    /// `verdict` is what its `on_error` made of that).
    Hook {
        event: String,
        command: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        verdict: HookSaid,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        failure: Option<String>,
        elapsed_ms: u64,
    },
    /// A stop hook sent the model back to work; `times` in a row so far.
    SentBack {
        turn: u32,
        times: u32,
        reason: String,
    },
    /// A stop hook wanted the model back at work once more than the limit
    /// allows in a row; the answer stands.
    SendBackLimit { turn: u32, limit: u32 },
    /// The model ended a turn without a word; it was asked to continue.
    EmptyTurn { turn: u32 },
    /// Tokens used by one model request.
    Usage { turn: u32, usage: Usage },
    /// The run is over, however it ended: scripts read this one object
    /// (`stop_reason`, `is_error`, `error`) whether the model answered or
    /// the run failed.
    Final {
        text: String,
        #[serde(flatten)]
        end: RunEnd,
        turns: u32,
        usage: Usage,
        taint: Taint,
    },
}

impl Event {
    /// The event for a piece of a streaming answer.
    pub fn streamed(piece: Streamed<'_>) -> Self {
        match piece {
            Streamed::Text(text) => Event::Text {
                text: text.to_owned(),
            },
            Streamed::Thinking(text) => Event::Thinking {
                text: text.to_owned(),
            },
            Streamed::RedactedThinking => Event::RedactedThinking,
            Streamed::Retrying(what) => Event::Retrying {
                what: what.to_owned(),
            },
        }
    }
}

/// One hook's verdict: at the gate, no objection, a refusal or a demand
/// for a person; at a stop, `block` sends the model back; at a prompt it
/// refuses the prompt; at a result it is a note for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookSaid {
    Pass,
    Block,
    Ask,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The model answered; why it stopped.
    Answered(StopReason),
    /// The model gave no usable answer (it refused, or said nothing);
    /// `reason` is its stop reason, `error` says what to do.
    Unanswered { reason: StopReason, error: String },
    /// The run stopped before an answer; `error` says why and what to do.
    Stopped { why: EarlyStop, error: String },
}

/// Why a run stopped before the model answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EarlyStop {
    /// The model API or a tool failed in a way the run cannot go on from.
    Error,
    /// `max_turns` model requests were made and the model wanted more.
    MaxTurns,
    /// Ctrl-C, SIGTERM or SIGHUP.
    Interrupted,
    /// A user_prompt hook refused the prompt; nothing was sent.
    Blocked,
    /// A delegated task asked its absent owner a question and waits, its
    /// session kept, for `mecha questions answer`.
    Parked,
}

/// Shown as `stop_reason` (the model's, or why the run stopped early),
/// `is_error` and `error`, so a script needs no second shape for failures.
impl Serialize for RunEnd {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a, R: Serialize> {
            stop_reason: R,
            is_error: bool,
            error: Option<&'a str>,
        }
        match self {
            RunEnd::Answered(reason) => Shown {
                stop_reason: reason,
                is_error: false,
                error: None,
            }
            .serialize(serializer),
            RunEnd::Unanswered { reason, error } => Shown {
                stop_reason: reason,
                is_error: true,
                error: Some(error),
            }
            .serialize(serializer),
            RunEnd::Stopped { why, error } => Shown {
                stop_reason: why,
                is_error: true,
                error: Some(error),
            }
            .serialize(serializer),
        }
    }
}

/// Receives events. Called from the loop's task; keep it quick.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

/// The head of a tool's result, kept for a person to look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Excerpt {
    pub head: String,
    /// The result's bytes after `head`, which only the model saw.
    pub rest: usize,
}

/// How much of a result an excerpt keeps: enough to read what a call did,
/// bounded so that a long session's screen stays small.
const EXCERPT_LINES: usize = 40;
const EXCERPT_BYTES: usize = 4096;

impl Excerpt {
    /// The first lines of `content`, within both bounds, cut only at a
    /// character boundary.
    pub(crate) fn of(content: &str) -> Self {
        // Through the last line's break, so that a result of exactly that
        // many lines leaves nothing over.
        let mut end = content
            .match_indices('\n')
            .nth(EXCERPT_LINES - 1)
            .map_or(content.len(), |(i, _)| i + 1);
        if end > EXCERPT_BYTES {
            end = EXCERPT_BYTES;
            while !content.is_char_boundary(end) {
                end -= 1;
            }
        }
        Self {
            head: content[..end].to_owned(),
            rest: content.len() - end,
        }
    }
}

/// The most characters of a result an activity line shows.
const SUMMARY_CHARS: usize = 100;

/// Whether a result's summary is all of it (a one-line result such as
/// `created b.txt (24 bytes)`): then an activity line shows no size
/// beside it, which would only repeat the result's own.
pub fn summary_is_whole(bytes: usize, summary: &str) -> bool {
    summary.len() >= bytes
}

/// The first line of a result, short, for activity logs. A JSON result's
/// first line is a lone `{`, so JSON is collapsed onto one line instead:
/// its lines trimmed and joined (a JSON string holds no raw line break, so
/// only indentation goes), as far as the summary reaches. A failed call
/// whose result ends in a note in brackets (how a command ended: its exit
/// code, a timeout) leads with that note: it says more than the first line.
pub(crate) fn summary(content: &str, is_error: bool) -> String {
    let trimmed = content.trim_start();
    let line: String = if trimmed.starts_with(['{', '[']) {
        let mut joined = String::new();
        for part in trimmed.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if !joined.is_empty() && !joined.ends_with(['{', '[']) && !part.starts_with(['}', ']'])
            {
                joined.push(' ');
            }
            joined.push_str(part);
            if joined.chars().nth(SUMMARY_CHARS).is_some() {
                break;
            }
        }
        joined
    } else {
        content.lines().next().unwrap_or("").to_owned()
    };
    let ending = content.trim_end().lines().next_back().map(str::trim);
    let line = match ending {
        Some(end)
            if is_error && end.starts_with('[') && end.ends_with(']') && !line.contains(end) =>
        {
            format!("{end} · {line}")
        }
        _ => line,
    };
    match line.char_indices().nth(SUMMARY_CHARS) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_failed_calls_summary_leads_with_how_it_ended() {
        let failed = "error[E0308]: mismatched types\n  --> src/main.rs:2:5\n[exit code 101]\n";
        assert_eq!(
            summary(failed, true),
            "[exit code 101] · error[E0308]: mismatched types"
        );
        assert_eq!(
            summary(failed, false),
            "error[E0308]: mismatched types",
            "only a failure's ending is put first"
        );
        assert_eq!(
            summary("[no output]\n[exit code 1]", true),
            "[no output] [exit code 1]"
        );
        assert_eq!(summary("no such file: a.txt", true), "no such file: a.txt");
    }

    #[test]
    fn an_excerpt_keeps_the_first_lines_and_counts_the_rest() {
        let content: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let excerpt = Excerpt::of(&content);
        assert_eq!(excerpt.head.lines().count(), EXCERPT_LINES);
        assert!(excerpt.head.ends_with("line 40\n"), "{}", excerpt.head);
        assert_eq!(excerpt.head.len() + excerpt.rest, content.len());
        let forty: String = (1..=40).map(|n| format!("line {n}\n")).collect();
        assert_eq!(Excerpt::of(&forty).rest, 0, "nothing over");
        let short = Excerpt::of("one\ntwo");
        assert_eq!((short.head.as_str(), short.rest), ("one\ntwo", 0));
    }

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary_within_the_bytes() {
        let content = "é".repeat(EXCERPT_BYTES);
        let excerpt = Excerpt::of(&content);
        assert!(excerpt.head.len() <= EXCERPT_BYTES);
        assert!(excerpt.head.len() > EXCERPT_BYTES - 2);
        assert_eq!(excerpt.head.len() + excerpt.rest, content.len());
    }

    fn shown(end: RunEnd) -> Value {
        serde_json::to_value(Event::Final {
            text: String::new(),
            end,
            turns: 1,
            usage: Usage::default(),
            taint: Taint::default(),
        })
        .unwrap()
    }

    #[test]
    fn the_final_event_has_one_shape_for_answers_and_failures() {
        let answered = shown(RunEnd::Answered(StopReason::EndTurn));
        assert_eq!(answered["type"], "final");
        assert_eq!(answered["stop_reason"], "end_turn");
        assert_eq!(answered["is_error"], false);
        assert!(answered["error"].is_null());
        let refused = shown(RunEnd::Unanswered {
            reason: StopReason::Refusal,
            error: "declined".into(),
        });
        assert_eq!(refused["stop_reason"], "refusal");
        assert_eq!(refused["is_error"], true);
        assert_eq!(refused["error"], "declined");
        let cut = shown(RunEnd::Answered(StopReason::MaxTokens));
        assert_eq!(cut["stop_reason"], "max_tokens");
        assert_eq!(cut["is_error"], false);
        for (why, name) in [
            (EarlyStop::Error, "error"),
            (EarlyStop::MaxTurns, "max_turns"),
            (EarlyStop::Interrupted, "interrupted"),
        ] {
            let stopped = shown(RunEnd::Stopped {
                why,
                error: "what happened".into(),
            });
            assert_eq!(stopped["stop_reason"], name);
            assert_eq!(stopped["is_error"], true);
            assert_eq!(stopped["error"], "what happened");
            assert_eq!(stopped["turns"], 1);
        }
    }
}
