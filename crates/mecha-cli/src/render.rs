//! Showing a run: plain text for people, JSON for scripts.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use clap::ValueEnum;
use mecha_agent::{Event, EventSink, GateVerdict};
use serde_json::json;

use crate::terminal::printable;

/// How `mecha run` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The answer streams to stdout; tool activity goes to stderr.
    Text,
    /// One JSON object on stdout when the run ends.
    Json,
    /// One JSON object per event on stdout, as they happen.
    StreamJson,
}

/// The sink for a format.
pub fn sink(format: OutputFormat) -> Box<dyn EventSink> {
    match format {
        OutputFormat::Text => Box::new(Text {
            state: Mutex::default(),
            stdout_is_terminal: std::io::stdout().is_terminal(),
        }),
        OutputFormat::Json => Box::new(Summary::default()),
        OutputFormat::StreamJson => Box::new(StreamJson),
    }
}

/// The answer on stdout as it streams; one line per tool event on stderr.
struct Text {
    state: Mutex<TextState>,
    /// A terminal gets the answer with control sequences escaped; a pipe
    /// gets it exactly as the model wrote it.
    stdout_is_terminal: bool,
}

#[derive(Default)]
struct TextState {
    /// stdout ends mid-line: the answer so far did not end with a newline.
    mid_line: bool,
    /// Calls the gate refused; their refusal is already shown.
    refused: HashSet<String>,
}

impl EventSink for Text {
    fn emit(&self, event: Event) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        match event {
            Event::Text { text } => {
                let mut out = std::io::stdout().lock();
                let shown = if self.stdout_is_terminal {
                    printable(&text)
                } else {
                    std::borrow::Cow::Borrowed(text.as_str())
                };
                let _ = out.write_all(shown.as_bytes());
                let _ = out.flush();
                if !text.is_empty() {
                    state.mid_line = !text.ends_with('\n');
                }
            }
            Event::ToolCall { name, input, .. } => {
                if std::mem::take(&mut state.mid_line) {
                    println!();
                }
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
            Event::Final { .. } => {
                if std::mem::take(&mut state.mid_line) {
                    println!();
                }
            }
            Event::Gate { .. } | Event::Usage { .. } => {}
        }
    }
}

struct StreamJson;

impl EventSink for StreamJson {
    fn emit(&self, event: Event) {
        if let Ok(line) = serde_json::to_string(&event) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// Collects the run and prints one object at the end.
#[derive(Default)]
struct Summary {
    tool_calls: Mutex<Vec<serde_json::Value>>,
}

impl EventSink for Summary {
    fn emit(&self, event: Event) {
        match event {
            Event::ToolResult {
                id,
                name,
                is_error,
                bytes,
                ..
            } => {
                if let Ok(mut calls) = self.tool_calls.lock() {
                    calls.push(
                        json!({"id": id, "name": name, "is_error": is_error, "bytes": bytes}),
                    );
                }
            }
            Event::Final {
                text,
                stop_reason,
                turns,
                usage,
                taint,
            } => {
                let calls = self
                    .tool_calls
                    .lock()
                    .map(|c| c.clone())
                    .unwrap_or_default();
                let summary = json!({
                    "text": text,
                    "stop_reason": stop_reason,
                    "turns": turns,
                    "usage": usage,
                    "taint": taint,
                    "tool_calls": calls,
                });
                println!("{summary}");
            }
            _ => {}
        }
    }
}

/// One line of tool activity on stderr, in one write: stderr is unbuffered,
/// and a line written piecemeal costs a syscall per piece. The line carries
/// model and tool text, so it is made printable first.
fn activity(line: &str) {
    let line = printable(line);
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(&line);
    buf.push('\n');
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
