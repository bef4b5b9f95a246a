//! What the conversation has shown so far, as the screen needs it: a model
//! fed with the agent's [`Event`]s, with no terminal in it.
//!
//! The agent reports a call in several events (asked for, the gate's
//! verdict, progress, the result); here they fold into one [`ToolEntry`]
//! whose status is the call's latest, so the screen draws each call as one
//! line that changes in place. A resumed session's past comes in as the
//! same events, told again from its journal.

use mecha_agent::{Event, Excerpt, GateStage, GateVerdict, Retold, RunEnd};
use mecha_core::{Confinement, Taint};
use serde_json::Value;
use std::time::Instant;

/// The most progress lines a call keeps: a subagent reports each step, and
/// only the latest few are worth a line on screen.
const PROGRESS_KEPT: usize = 8;

/// The conversation as shown.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// What the conversation fills of the window, in tokens: as the last
    /// request reported it, or as a compaction since estimated it.
    context: u64,
    /// What the conversation holds, as of the last run's end.
    taint: Taint,
    /// Bumped on every change, so the screen redraws only when it moved.
    revision: u64,
}

/// One thing in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the user typed.
    Prompt(String),
    /// The model's text, as markdown; `streaming` until the next entry
    /// starts or the run ends.
    Answer {
        text: String,
        streaming: bool,
    },
    /// The model reasoned (its words are not shown, only that it did).
    Thinking,
    Tool(ToolEntry),
    /// A line of mecha's own: a hook's verdict, a compaction, a retry.
    Notice {
        kind: NoticeKind,
        text: String,
    },
}

/// What a notice is about, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// mecha's answer to a command typed at the prompt (`/tools`).
    Info,
    Hook,
    Compaction,
    /// Something went wrong or was cut short.
    Warning,
    /// The run ended without an answer.
    Error,
}

/// One tool call and where it has got.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// The sandbox it runs in, if one confines it.
    pub confined: Option<Confinement>,
    pub status: ToolStatus,
    /// Progress reports (a subagent's steps), oldest first, the last
    /// [`PROGRESS_KEPT`] only.
    pub progress: Vec<String>,
    /// The head of its result, once there is one.
    pub output: Excerpt,
    /// Whether the screen shows its input and result's head.
    pub expanded: bool,
}

/// Where a call is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    /// Asked for; the gate has not answered yet (it may be asking you).
    Waiting,
    /// Approved and running since then.
    Running {
        since: Instant,
    },
    Done {
        bytes: usize,
        summary: String,
    },
    Failed {
        summary: String,
    },
    /// Refused at `stage`; `by_user` when a person said no.
    Refused {
        stage: GateStage,
        by_user: bool,
        reason: String,
    },
}

impl Transcript {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn taint(&self) -> Taint {
        self.taint
    }

    /// Tokens the conversation fills of the window, as of the last
    /// request or the compaction after it.
    pub fn context_tokens(&self) -> u64 {
        self.context
    }

    /// Whether a call is running: its line shows for how long, so the
    /// screen is drawn again as the seconds pass.
    pub fn running(&self) -> bool {
        self.entries.iter().rev().any(|e| {
            matches!(
                e,
                Entry::Tool(ToolEntry {
                    status: ToolStatus::Running { .. },
                    ..
                })
            )
        })
    }

    /// Changes with every change to what is shown.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The user sent a prompt.
    pub fn prompt(&mut self, text: &str) {
        self.push(Entry::Prompt(text.to_owned()));
    }

    /// Shows every call's whole input and result (Ctrl-O), or, when all
    /// are shown already, hides them again.
    pub fn toggle_details(&mut self) {
        let tools = || {
            self.entries.iter().filter_map(|e| match e {
                Entry::Tool(tool) => Some(tool),
                _ => None,
            })
        };
        let expand = tools().any(|tool| !tool.expanded);
        for entry in &mut self.entries {
            if let Entry::Tool(tool) = entry {
                tool.expanded = expand;
            }
        }
        self.revision += 1;
    }

    /// Another conversation begins on the screen (the first, or one that
    /// `/clear`, `/resume` or `/model` switched to): the interlock's state
    /// is that session's own, and the context's size is unknown until its
    /// first request.
    pub fn begin_conversation(&mut self, taint: Taint) {
        self.taint = taint;
        self.context = 0;
        self.revision += 1;
    }

    /// A stored conversation told again ([`mecha_agent::retell`]), drawn
    /// as it was while it ran; a call it left without a result (mecha was
    /// killed) is marked stopped.
    pub fn retold(&mut self, told: Vec<Retold>) {
        for step in told {
            match step {
                Retold::Prompt(text) => self.prompt(&text),
                Retold::Event(event) => self.apply(&event),
                Retold::Attached(attached) => {
                    let what = attached
                        .iter()
                        .map(|block| {
                            let label = block.lines().next().unwrap_or_default();
                            let label = label.strip_prefix("[mecha: ").unwrap_or(label);
                            label.split(';').next().unwrap_or(label).to_owned()
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    self.notice(
                        NoticeKind::Info,
                        format!("waiting to go with your next prompt:\n{what}"),
                    );
                }
            }
        }
        self.interrupted();
    }

    /// Folds one event in.
    pub fn apply(&mut self, event: &Event) {
        self.revision += 1;
        match event {
            Event::Text { text } => self.stream(text),
            Event::Thinking { .. } | Event::RedactedThinking => {
                if !matches!(self.entries.last(), Some(Entry::Thinking)) {
                    self.push(Entry::Thinking);
                }
            }
            Event::Retrying { what } => self.notice(NoticeKind::Warning, what.clone()),
            Event::ToolCall {
                id,
                name,
                input,
                confined,
            } => self.push(Entry::Tool(ToolEntry {
                id: id.clone(),
                name: name.clone(),
                input: input.clone(),
                confined: confined.clone(),
                status: ToolStatus::Waiting,
                progress: Vec::new(),
                output: Excerpt::default(),
                expanded: false,
            })),
            Event::Gate { id, decision, .. } => {
                if let Some(tool) = self.tool_mut(id) {
                    tool.status = match decision {
                        GateVerdict::Allowed { .. } => ToolStatus::Running {
                            since: Instant::now(),
                        },
                        GateVerdict::Denied { stage, reason } => ToolStatus::Refused {
                            stage: *stage,
                            by_user: true,
                            reason: reason.clone(),
                        },
                        GateVerdict::Blocked { stage, reason } => ToolStatus::Refused {
                            stage: *stage,
                            by_user: false,
                            reason: reason.clone(),
                        },
                    };
                }
            }
            Event::ToolProgress { id, message, .. } => {
                if let Some(tool) = self.tool_mut(id) {
                    if tool.progress.len() == PROGRESS_KEPT {
                        tool.progress.remove(0);
                    }
                    tool.progress.push(message.clone());
                }
            }
            Event::ToolResult {
                id,
                is_error,
                bytes,
                summary,
                excerpt,
                ..
            } => {
                if let Some(tool) = self.tool_mut(id) {
                    tool.output = excerpt.clone();
                    // A refused call's result is the refusal the model is
                    // told; the refusal and its stage are what to show.
                    if !matches!(tool.status, ToolStatus::Refused { .. }) {
                        tool.status = if *is_error {
                            ToolStatus::Failed {
                                summary: summary.clone(),
                            }
                        } else {
                            ToolStatus::Done {
                                bytes: *bytes,
                                summary: summary.clone(),
                            }
                        };
                    }
                }
            }
            Event::OutputLimit { tool, .. } => self.notice(
                NoticeKind::Warning,
                match tool {
                    Some(tool) => format!(
                        "the model's output limit cut its call to `{tool}`, which did not run"
                    ),
                    None => "the model's output limit cut its answer short".to_owned(),
                },
            ),
            Event::Tainted { taint } => self.taint = self.taint.union(*taint),
            Event::Narrowed { by, tools } => self.notice(
                NoticeKind::Hook,
                format!("`{by}` narrowed the tools to: {}", tools.join(", ")),
            ),
            Event::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => {
                // The window now holds the rebuilt history, whose size is
                // the compaction's estimate until the next request reports.
                self.context = *tokens_after;
                self.notice(
                    NoticeKind::Compaction,
                    format!(
                        "compacted the conversation: ~{tokens_before} → ~{tokens_after} tokens \
                         (the first message and the recent turns kept verbatim)"
                    ),
                );
            }
            Event::CompactionFailed {
                attempt, of, error, ..
            } => self.notice(
                NoticeKind::Warning,
                format!("compaction attempt {attempt} of {of} failed: {error}"),
            ),
            Event::Hook { .. } | Event::SentBack { .. } | Event::SendBackLimit { .. } => {
                if let Some(line) = event.hook_line() {
                    self.notice(NoticeKind::Hook, line);
                }
            }
            // The status of a request in flight is the caller's to show.
            Event::Requesting { .. } => {}
            Event::EmptyTurn { .. } => self.notice(
                NoticeKind::Warning,
                "the model ended a turn without a word; it was asked to continue".to_owned(),
            ),
            Event::Usage { usage, .. } => self.context = usage.context_tokens(),
            Event::Final { end, taint, .. } => {
                self.end_stream();
                self.taint = self.taint.union(*taint);
                match end {
                    RunEnd::Answered(_) => {}
                    RunEnd::Unanswered { error, .. } | RunEnd::Stopped { error, .. } => {
                        self.notice(NoticeKind::Error, error.clone());
                    }
                }
            }
        }
    }

    /// A piece of the answer: onto the answer being streamed, or a new one.
    fn stream(&mut self, text: &str) {
        if let Some(Entry::Answer {
            text: answer,
            streaming: true,
        }) = self.entries.last_mut()
        {
            answer.push_str(text);
            return;
        }
        self.push(Entry::Answer {
            text: text.to_owned(),
            streaming: true,
        });
    }

    /// A line of mecha's own (a failed turn, an interrupt).
    pub fn notice(&mut self, kind: NoticeKind, text: String) {
        self.push(Entry::Notice { kind, text });
    }

    /// The turn was stopped: a call still waiting or running will never
    /// finish, and the screen must not say it might.
    pub fn interrupted(&mut self) {
        self.end_stream();
        for entry in &mut self.entries {
            if let Entry::Tool(tool) = entry
                && matches!(
                    tool.status,
                    ToolStatus::Waiting | ToolStatus::Running { .. }
                )
            {
                tool.status = ToolStatus::Failed {
                    summary: "stopped: the turn was interrupted".to_owned(),
                };
            }
        }
        self.revision += 1;
    }

    /// Adds an entry; whatever was streaming has finished.
    fn push(&mut self, entry: Entry) {
        self.end_stream();
        self.entries.push(entry);
        self.revision += 1;
    }

    fn end_stream(&mut self) {
        if let Some(Entry::Answer { streaming, .. }) = self.entries.last_mut() {
            *streaming = false;
        }
    }

    /// The call `id`, looked for from the newest (it is nearly always
    /// among the last few entries).
    fn tool_mut(&mut self, id: &str) -> Option<&mut ToolEntry> {
        self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::Tool(tool) if tool.id == id => Some(tool),
            _ => None,
        })
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
