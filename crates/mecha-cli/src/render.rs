//! Showing a run: plain text for people, JSON for scripts.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::sync::Mutex;

use clap::ValueEnum;
use mecha_agent::{Event, EventSink, GateVerdict};
use crate::headless::{Headless, RunSink};
use crate::notice;
use crate::output;
use crate::terminal::printable;

/// How `mecha run` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The answer streams to stdout; tool activity goes to stderr.
    Text,
    /// One JSON object on stdout when the run ends, also when it fails.
    Json,
    /// An `init` event, then one JSON object per event on stdout, as they
    /// happen; the last is the object `json` prints.
    StreamJson,
}

/// The sink for a format.
pub fn sink(format: OutputFormat) -> Box<dyn RunSink> {
    match format {
        OutputFormat::Text => Box::new(Text {
            state: Mutex::default(),
            stdout_is_terminal: std::io::stdout().is_terminal(),
            stderr_is_terminal: std::io::stderr().is_terminal(),
        }),
        OutputFormat::Json => Box::new(Headless::new(false)),
        OutputFormat::StreamJson => Box::new(Headless::new(true)),
    }
}

/// The answer on stdout as it streams; one line per tool event on stderr,
/// and the model's thinking on stderr as it streams, dimmed on a terminal,
/// so stdout holds the answer alone.
struct Text {
    state: Mutex<TextState>,
    /// A terminal gets the answer with control sequences escaped; a pipe
    /// gets it exactly as the model wrote it.
    stdout_is_terminal: bool,
    stderr_is_terminal: bool,
}

/// Dim, and back to normal: how a terminal shows thinking.
const DIM: &str = "\x1b[2m";
const UNDIM: &str = "\x1b[0m";

#[derive(Default)]
struct TextState {
    /// stdout ends mid-line: the answer so far did not end with a newline.
    mid_line: bool,
    /// Thinking is streaming on stderr, and its last line is not ended.
    thinking: bool,
    /// Calls the gate refused; their refusal is already shown.
    refused: HashSet<String>,
}

impl RunSink for Text {}

impl EventSink for Text {
    fn emit(&self, event: Event) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if !matches!(event, Event::Thinking { .. } | Event::Usage { .. }) {
            self.end_thinking(&mut state);
        }
        match event {
            Event::Thinking { text } => self.think(&mut state, &text),
            Event::RedactedThinking => {
                activity("(the model reasoned; the provider sent its thinking encrypted)");
            }
            Event::OutputLimit { tool, .. } => {
                end_answer_line(&mut state);
                crate::terminal::report(&notice::output_limit(tool.as_deref()));
            }
            Event::EmptyTurn { .. } => crate::terminal::report(notice::EMPTY_TURN),
            Event::Narrowed { by, tools } => {
                end_answer_line(&mut state);
                activity(&format!(
                    "skill `{by}` narrowed this run's tools to {}",
                    tools.join(", ")
                ));
            }
            Event::Retrying { what } => {
                end_answer_line(&mut state);
                crate::terminal::report(&what);
            }
            Event::Compacted {
                tokens_before,
                tokens_after,
                messages_before,
                messages_after,
                ..
            } => {
                end_answer_line(&mut state);
                activity(&format!(
                    "mecha: compacted the conversation: ~{tokens_before} → ~{tokens_after} \
                     tokens, {messages_before} → {messages_after} messages (the first message, \
                     the todo list and loaded skills kept verbatim)"
                ));
            }
            Event::CompactionFailed {
                attempt, of, error, ..
            } => {
                end_answer_line(&mut state);
                activity(&format!(
                    "mecha: compaction attempt {attempt} of {of} failed: {error}"
                ));
            }
            Event::Text { text } => {
                if self.stdout_is_terminal {
                    output::out(&printable(&text));
                } else {
                    output::out(&text);
                }
                if !text.is_empty() {
                    state.mid_line = !text.ends_with('\n');
                }
            }
            Event::ToolCall { name, input, .. } => {
                end_answer_line(&mut state);
                let args = serde_json::to_string(&input).unwrap_or_default();
                activity(&format!("→ {name} {}", clip(&args, 160)));
            }
            Event::Gate {
                id,
                name,
                decision: GateVerdict::Denied { reason, .. } | GateVerdict::Blocked { reason, .. },
            } => {
                activity(&format!("✗ {name} refused: {}", clip(&reason, 300)));
                state.refused.insert(id);
            }
            Event::ToolResult {
                id,
                name,
                is_error,
                bytes,
                summary,
            } => {
                if !state.refused.remove(&id) {
                    let mark = if is_error { "✗" } else { "←" };
                    activity(&format!(
                        "{mark} {name}: {} ({bytes} bytes)",
                        clip(&summary, 120)
                    ));
                }
            }
            Event::ToolProgress { name, message, .. } => {
                end_answer_line(&mut state);
                activity(&format!("… {name}: {}", clip(&message, 200)));
            }
            Event::Final { .. } => {
                end_answer_line(&mut state);
            }
            Event::Hook { .. } | Event::SentBack { .. } | Event::SendBackLimit { .. } => {
                end_answer_line(&mut state);
                if let Some(line) = event.hook_line() {
                    activity(&format!("mecha: {}", clip(&line, 600)));
                }
            }
            Event::Gate { .. } | Event::Usage { .. } => {}
        }
    }
}

/// Ends the answer's line on stdout if it is open, so what comes next (a
/// tool line, thinking, a notice) starts on a line of its own.
fn end_answer_line(state: &mut TextState) {
    if std::mem::take(&mut state.mid_line) {
        output::out("\n");
    }
}

impl Text {
    /// A piece of thinking, on stderr: on its own lines, after any answer
    /// text, dimmed on a terminal.
    fn think(&self, state: &mut TextState, text: &str) {
        if text.is_empty() {
            return;
        }
        if !state.thinking {
            end_answer_line(state);
        }
        let shown = printable(text);
        if self.stderr_is_terminal {
            output::err(&format!("{DIM}{shown}{UNDIM}"));
        } else {
            output::err(&shown);
        }
        // A piece that ends its line leaves nothing to close.
        state.thinking = !text.ends_with('\n');
    }

    /// Something other than thinking comes: end thinking's last line.
    fn end_thinking(&self, state: &mut TextState) {
        if std::mem::take(&mut state.thinking) {
            output::err("\n");
        }
    }
}

/// One line of tool activity on stderr. The line carries model and tool
/// text, so it is made printable first.
fn activity(line: &str) {
    output::err_line(&printable(line));
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
