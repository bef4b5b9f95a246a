//! Showing a run: plain text for people, JSON for scripts.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::sync::Mutex;

use crate::headless::{Headless, RunSink};
use crate::notice;
use crate::output;
use crate::status::Status;
use crate::terminal::printable;
use clap::ValueEnum;
use mecha_agent::{Event, EventSink, GateVerdict};

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

/// The sink for a format. `quiet`: text shows no activity lines, no
/// thinking and no status line; the answer, notices and errors still show.
pub fn sink(format: OutputFormat, quiet: bool) -> Box<dyn RunSink> {
    match format {
        OutputFormat::Text => {
            let stderr_is_terminal = std::io::stderr().is_terminal();
            let dim = stderr_is_terminal && crate::terminal::colour_allowed();
            Box::new(Text {
                state: Mutex::default(),
                stdout_is_terminal: std::io::stdout().is_terminal(),
                dim,
                quiet,
                status: (stderr_is_terminal && !quiet).then(|| Status::start(dim)),
            })
        }
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
    /// Thinking and the status line are dimmed: stderr is a terminal and
    /// NO_COLOR is not set.
    dim: bool,
    quiet: bool,
    /// Only on a terminal, and not when quiet.
    status: Option<Status>,
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
        if let Some(status) = &self.status {
            follow(status, &event);
        }
        self.show(&mut state, event);
        if let Some(status) = &self.status {
            status.mid_line(state.mid_line || state.thinking);
        }
    }
}

/// What the status line shows after `event`.
fn follow(status: &Status, event: &Event) {
    match event {
        Event::Requesting { .. } | Event::Retrying { .. } => status.waiting(),
        Event::Text { text } | Event::Thinking { text } => status.streamed(text.chars().count()),
        // The gate may ask a question next: nothing may be drawn over it.
        Event::ToolCall { .. } => status.hold(),
        Event::Final { .. } => status.idle(),
        Event::Gate { id, name, decision } => {
            status.judged();
            if matches!(decision, GateVerdict::Allowed { .. }) {
                status.tool_started(id, name);
            }
        }
        Event::ToolResult { id, .. } => status.tool_done(id),
        _ => {}
    }
}

impl Text {
    fn show(&self, state: &mut TextState, event: Event) {
        match event {
            Event::Thinking { text } => self.think(state, &text),
            Event::RedactedThinking => {
                self.activity("(the model reasoned; the provider sent its thinking encrypted)");
            }
            Event::OutputLimit { tool, .. } => {
                end_answer_line(state);
                crate::terminal::report(&notice::output_limit(tool.as_deref()));
            }
            Event::EmptyTurn { .. } => crate::terminal::report(notice::EMPTY_TURN),
            Event::Narrowed { by, tools } => {
                end_answer_line(state);
                self.activity(&format!(
                    "skill `{by}` narrowed this run's tools to {}",
                    tools.join(", ")
                ));
            }
            Event::Retrying { what } => {
                end_answer_line(state);
                crate::terminal::report(&what);
            }
            Event::Compacted {
                tokens_before,
                tokens_after,
                messages_before,
                messages_after,
                ..
            } => {
                end_answer_line(state);
                self.activity(&format!(
                    "mecha: compacted the conversation: ~{tokens_before} → ~{tokens_after} \
                     tokens, {messages_before} → {messages_after} messages (the first message, \
                     the todo list and loaded skills kept verbatim)"
                ));
            }
            Event::CompactionFailed {
                attempt, of, error, ..
            } => {
                end_answer_line(state);
                self.activity(&format!(
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
            Event::ToolCall {
                name,
                input,
                confined,
                ..
            } => {
                end_answer_line(state);
                let args = serde_json::to_string(&input).unwrap_or_default();
                let confined = confined.map(|c| format!(" ({c})")).unwrap_or_default();
                self.activity(&format!("→ {name} {}{confined}", clip(&args, 160)));
            }
            Event::Gate {
                id,
                name,
                decision: GateVerdict::Denied { reason, .. } | GateVerdict::Blocked { reason, .. },
            } => {
                self.activity(&format!("✗ {name} refused: {}", clip(&reason, 300)));
                state.refused.insert(id);
            }
            Event::ToolResult {
                id,
                name,
                is_error,
                bytes,
                summary,
                ..
            } => {
                if !state.refused.remove(&id) {
                    let mark = if is_error { "✗" } else { "←" };
                    let size = if mecha_agent::summary_is_whole(bytes, &summary) {
                        String::new()
                    } else {
                        format!(" ({bytes} bytes)")
                    };
                    self.activity(&format!("{mark} {name}: {}{size}", clip(&summary, 120)));
                }
            }
            Event::ToolProgress { name, message, .. } => {
                end_answer_line(state);
                self.activity(&format!("… {name}: {}", clip(&message, 200)));
            }
            Event::Final { .. } => {
                end_answer_line(state);
            }
            Event::Hook { .. } | Event::SentBack { .. } | Event::SendBackLimit { .. } => {
                end_answer_line(state);
                if let Some(line) = event.hook_line() {
                    self.activity(&format!("mecha: {}", clip(&line, 600)));
                }
            }
            Event::Gate { .. }
            | Event::Usage { .. }
            | Event::Requesting { .. }
            | Event::Tainted { .. } => {}
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
    /// One line of tool activity on stderr, unless quiet. The line carries
    /// model and tool text, so it is made printable first.
    fn activity(&self, line: &str) {
        if !self.quiet {
            output::err_line(&printable(line));
        }
    }

    /// A piece of thinking, on stderr: on its own lines, after any answer
    /// text, dimmed on a terminal.
    fn think(&self, state: &mut TextState, text: &str) {
        if text.is_empty() || self.quiet {
            return;
        }
        if !state.thinking {
            end_answer_line(state);
        }
        let shown = printable(text);
        if self.dim {
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

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
