//! The `recall` tool: earlier messages of this session, found by text or by
//! turn, including those a compaction replaced with its summary. It reads
//! the session file afresh at each call (the writer puts every record
//! straight into it), so it sees exactly what the session recorded.

use std::path::PathBuf;

use anyhow::anyhow;
use async_trait::async_trait;
use mecha_core::{Block, Capabilities, Message, Record, Tool, ToolCtx, ToolOutput};
use serde_json::{Value, json};

use crate::Entry;
use crate::parse::Mode;
use crate::store::load_file;
use crate::transcript::{CallNames, render_message};

/// Searches the session file at `session_file`.
pub struct RecallTool {
    session_file: PathBuf,
}

impl RecallTool {
    pub fn new(session_file: PathBuf) -> Self {
        Self { session_file }
    }
}

/// What a call asks for.
#[derive(Debug)]
struct Query {
    text: Option<String>,
    from: Option<u32>,
    to: Option<u32>,
}

/// A message the session recorded and kept (not rewound), with its turn.
struct Recorded<'a> {
    turn: u32,
    message: &'a Message,
    external: &'a [String],
}

#[async_trait]
impl Tool for RecallTool {
    fn name(&self) -> &str {
        "recall"
    }

    fn description(&self) -> &str {
        "Search this session's earlier messages, including those a compaction replaced with its \
         summary: by text (`query`, case-insensitive, over message text, tool inputs and \
         results), by turns (`from_turn`, `to_turn`, counted from 1), or both. Returns the \
         matching messages, oldest first, with their turns."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Text to look for"},
                "from_turn": {"type": "integer", "minimum": 1, "description": "First turn to include"},
                "to_turn": {"type": "integer", "minimum": 1, "description": "Last turn to include"}
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    /// Nothing: what it returns already entered the conversation once, and
    /// keeps the external marking it had.
    fn capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        let query = match Query::parse(&input) {
            Ok(query) => query,
            Err(refusal) => return Ok(ToolOutput::refusal(refusal)),
        };
        let (path, ctx) = (self.session_file.clone(), ctx.clone());
        tokio::task::spawn_blocking(move || {
            // Salvaging: a line another program broke must not hide the rest.
            let loaded = match load_file(&path, Mode::Salvage) {
                Ok(loaded) => loaded,
                Err(e) => {
                    return ToolOutput::err(format!("cannot read this session's history: {e}"));
                }
            };
            answer(&query, &loaded.entries, &ctx)
        })
        .await
        .map_err(|e| anyhow!("`recall` stopped without a result ({e}); this is a bug in mecha"))
    }
}

impl Query {
    fn parse(input: &Value) -> Result<Self, String> {
        let text = match input.get("query") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.to_lowercase()),
            Some(Value::String(_)) => {
                return Err(
                    "`query` is empty: give the text to look for, or leave it out and \
                            give `from_turn`/`to_turn`"
                        .into(),
                );
            }
            Some(_) => return Err("`query` has to be a string: the text to look for".into()),
        };
        let from = turn_arg(input, "from_turn")?;
        let to = turn_arg(input, "to_turn")?;
        if text.is_none() && from.is_none() && to.is_none() {
            return Err(
                "give `query` (text to look for), `from_turn`/`to_turn` (a range of \
                        turns), or both"
                    .into(),
            );
        }
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            return Err(format!(
                "`from_turn` ({from}) is after `to_turn` ({to}): give a range that does not \
                 end before it starts"
            ));
        }
        Ok(Self { text, from, to })
    }

    fn matches(&self, recorded: &Recorded<'_>) -> bool {
        let in_range = self.from.is_none_or(|f| recorded.turn >= f)
            && self.to.is_none_or(|t| recorded.turn <= t);
        in_range
            && self.text.as_deref().is_none_or(|text| {
                recorded.message.content.iter().any(|block| match block {
                    Block::Text { text: t } => t.to_lowercase().contains(text),
                    Block::ToolUse(call) => {
                        call.name.to_lowercase().contains(text)
                            || call.input.to_string().to_lowercase().contains(text)
                    }
                    Block::ToolResult { content, .. } => content.to_lowercase().contains(text),
                    Block::Thinking { .. } | Block::RedactedThinking { .. } => false,
                })
            })
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(text) = &self.text {
            parts.push(format!("matching `{text}`"));
        }
        match (self.from, self.to) {
            (Some(f), Some(t)) => parts.push(format!("in turns {f} to {t}")),
            (Some(f), None) => parts.push(format!("from turn {f} on")),
            (None, Some(t)) => parts.push(format!("up to turn {t}")),
            (None, None) => {}
        }
        parts.join(" ")
    }
}

/// A turn number argument: absent, or a whole number of 1 or more.
fn turn_arg(input: &Value, name: &str) -> Result<Option<u32>, String> {
    match input.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|&n| n >= 1)
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                format!("`{name}` has to be a whole number of 1 or more (turns count from 1)")
            }),
    }
}

/// The messages the session recorded and did not take back, each with its
/// turn (1 + the turn records before it), and the tool each call named.
/// Messages a compaction replaced are still here; the compaction's own
/// (the summary, the recent turns again) are not, being in the conversation.
fn recorded(entries: &[Entry]) -> (Vec<Recorded<'_>>, CallNames, u32) {
    let mut all = Vec::new();
    let mut names = CallNames::default();
    // Which of `all` each message of the history is, to drop what a rewind
    // takes back; a compaction's messages are none of them.
    let mut history: Vec<Option<usize>> = Vec::new();
    let mut rewound = Vec::new();
    let mut turns_done = 0;
    for entry in entries {
        match &entry.record {
            Record::Message { message, external } => {
                names.learn(message);
                history.push(Some(all.len()));
                rewound.push(false);
                all.push(Recorded {
                    turn: turns_done + 1,
                    message,
                    external,
                });
            }
            Record::Rewind { keep } => {
                for index in history.drain((*keep).min(history.len())..).flatten() {
                    rewound[index] = true;
                }
            }
            Record::Compaction { messages, .. } => {
                messages.iter().for_each(|m| names.learn(m));
                history = vec![None; messages.len()];
            }
            Record::Turn { .. } => turns_done += 1,
            Record::Taint { .. }
            | Record::Surface { .. }
            | Record::ToolState { .. }
            | Record::Attached { .. }
            | Record::Prompt { .. }
            | Record::Checkpoint { .. } => {}
        }
    }
    let kept = all
        .into_iter()
        .zip(rewound)
        .filter_map(|(r, gone)| (!gone).then_some(r))
        .collect();
    (kept, names, turns_done)
}

fn answer(query: &Query, entries: &[Entry], ctx: &ToolCtx) -> ToolOutput {
    let (all, names, turns) = recorded(entries);
    let found: Vec<&Recorded<'_>> = all.iter().filter(|r| query.matches(r)).collect();
    if found.is_empty() {
        return ToolOutput::refusal(format!(
            "no message of this session {} ({} messages over {turns} turns so far); try a \
             shorter or different query, or a wider range of turns",
            query.describe(),
            all.len()
        ));
    }
    let mut sink = ctx.sink("recall", ctx.call_budget_bytes);
    sink.push(
        format!(
            "{} of this session's {} messages {}, oldest first:\n",
            found.len(),
            all.len(),
            query.describe()
        )
        .as_bytes(),
    );
    let mut external = false;
    let mut turn = 0;
    for r in found {
        let mut text = String::new();
        if r.turn != turn {
            turn = r.turn;
            text.push_str(&format!("\n[turn {turn}]\n"));
        }
        external |= r.message.content.iter().any(|b| {
            matches!(b, Block::ToolResult { tool_use_id, .. } if r.external.contains(tool_use_id))
        });
        render_message(&mut text, r.message, &names, r.external, "");
        sink.push(text.as_bytes());
    }
    let mut out = ToolOutput::ok(sink.finish());
    out.external = external;
    out
}
