//! Keeping the conversation inside the model's window: compaction at the
//! threshold (or when a call asks), and a clear error instead of a request
//! that cannot fit.

use mecha_core::{Message, Registry, ToolDefinition, reply_reserve};

use crate::agent::{Agent, AgentError, Session};
use crate::compaction::{self, COMPACTION_ATTEMPTS, Failed, Prefix};
use crate::events::{Event, EventSink};
use mecha_core::Record;

/// What a compaction the user asked for did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskedCompaction {
    /// The history was summarized; sizes are estimates, in tokens.
    Done {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Everything in the history is recent: there is nothing older to
    /// summarize yet.
    NothingOlder,
    /// Every attempt failed; the history is as it was.
    Failed(String),
    /// This run does not compact (no context window is known).
    Off,
}

/// Passes events on, keeping the sizes of a compaction that went by.
struct Watching<'a> {
    events: &'a dyn EventSink,
    done: std::sync::Mutex<Option<(u64, u64)>>,
}

impl EventSink for Watching<'_> {
    fn emit(&self, event: Event) {
        if let Event::Compacted {
            tokens_before,
            tokens_after,
            ..
        } = &event
            && let Ok(mut done) = self.done.lock()
        {
            *done = Some((*tokens_before, *tokens_after));
        }
        self.events.emit(event);
    }
}

impl Agent {
    /// The bytes of the system prompt and `definitions`, measured once per
    /// tool list: the list is told apart by its names and descriptions,
    /// which every change the loop makes to it (a refresh, a narrowing, the
    /// mode's filter) alters.
    fn prefix_bytes(&self, definitions: &[ToolDefinition]) -> usize {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for d in definitions {
            for byte in d.name.bytes().chain(d.description.bytes()).chain([0]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        let mut memo = self.prefix_memo.lock().unwrap_or_else(|p| p.into_inner());
        match *memo {
            Some((known, bytes)) if known == hash => bytes,
            _ => {
                let bytes = compaction::prefix_bytes(&self.system, definitions);
                *memo = Some((hash, bytes));
                bytes
            }
        }
    }

    /// Compacts now, whatever the threshold says: a front end's
    /// `/compact`. The same summary, journal record and events as a
    /// compaction at the threshold.
    pub async fn compact_now(
        &self,
        session: &mut Session,
        events: &dyn EventSink,
    ) -> AskedCompaction {
        if self.compaction.is_none() {
            return AskedCompaction::Off;
        }
        let tools = self.current_tools().await;
        session.compact_requested = true;
        let watching = Watching {
            events,
            done: std::sync::Mutex::new(None),
        };
        let mut gave_up = None;
        // A history that still does not fit is for the next prompt to
        // report, when it would send it; nothing is sent here.
        let _ = self
            .keep_in_window(
                session,
                &tools.registry,
                &tools.definitions(),
                0,
                &mut gave_up,
                &watching,
            )
            .await;
        let done = watching.done.lock().ok().and_then(|done| *done);
        match (done, gave_up) {
            (Some((tokens_before, tokens_after)), _) => AskedCompaction::Done {
                tokens_before,
                tokens_after,
            },
            (None, Some(error)) => AskedCompaction::Failed(error),
            (None, None) => AskedCompaction::NothingOlder,
        }
    }

    /// Before a prompt joins the conversation: refuses one that could not
    /// fit the window even alone, with the system prompt and `definitions`
    /// beside it, which no compaction could help. An unknown window checks
    /// nothing; the server says then.
    pub(crate) fn prompt_fits(
        &self,
        definitions: &[ToolDefinition],
        prompt: &Message,
    ) -> Result<(), AgentError> {
        let Some(window) = self.provider().context_window() else {
            return Ok(());
        };
        let prefix = self.prefix_bytes(definitions);
        let tokens = compaction::estimate(prefix, std::slice::from_ref(prompt));
        let reply = reply_reserve(self.provider().max_output_tokens(), window);
        if tokens + reply > window {
            return Err(AgentError::PromptTooLarge {
                tokens,
                window,
                reply,
            });
        }
        Ok(())
    }

    /// At a turn boundary: compacts when the conversation reached the
    /// threshold or a call asked (at most [`COMPACTION_ATTEMPTS`] tries),
    /// then refuses to send a request that cannot fit in the window.
    pub(crate) async fn keep_in_window(
        &self,
        session: &mut Session,
        registry: &Registry,
        definitions: &[ToolDefinition],
        turn: u32,
        gave_up: &mut Option<String>,
        events: &dyn EventSink,
    ) -> Result<(), AgentError> {
        let Some(policy) = &self.compaction else {
            return Ok(());
        };
        let prefix = Prefix {
            system: &self.system,
            tools: definitions,
            bytes: self.prefix_bytes(definitions),
            registry,
        };
        let asked = std::mem::take(&mut session.compact_requested);
        let tokens = session.context_tokens(prefix.bytes);
        if (tokens >= policy.threshold || asked) && gave_up.is_none() {
            for attempt in 1..=COMPACTION_ATTEMPTS {
                let tried = compaction::compact(
                    self.provider().as_ref(),
                    &prefix,
                    &session.messages,
                    policy,
                    tokens,
                )
                .await;
                match tried {
                    Ok(done) => {
                        session.usage.add(done.usage);
                        events.emit(Event::Compacted {
                            turn,
                            tokens_before: done.tokens_before,
                            tokens_after: done.tokens_after,
                            messages_before: session.messages.len(),
                            messages_after: done.messages.len(),
                        });
                        self.note(&Record::Compaction {
                            messages: done.messages.clone(),
                            tokens_before: done.tokens_before,
                            tokens_after: done.tokens_after,
                        });
                        self.sync();
                        session.messages.replace(done.messages);
                        session.measured = Default::default();
                        session.reported = None;
                        break;
                    }
                    Err(Failed::NothingToCompact) => break,
                    Err(Failed::Attempt(error, usage)) => {
                        session.usage.add(usage);
                        events.emit(Event::CompactionFailed {
                            turn,
                            attempt,
                            of: COMPACTION_ATTEMPTS,
                            error: error.clone(),
                        });
                        if attempt == COMPACTION_ATTEMPTS {
                            *gave_up = Some(error);
                        }
                    }
                }
            }
        }
        let tokens = session.context_tokens(prefix.bytes);
        if tokens + policy.reply_tokens > policy.window {
            return Err(AgentError::ContextFull {
                tokens,
                window: policy.window,
                reply: policy.reply_tokens,
                why: match gave_up {
                    Some(error) => {
                        format!("and compaction failed {COMPACTION_ATTEMPTS} times: {error}")
                    }
                    None => "and there is nothing older to compact yet".to_owned(),
                },
            });
        }
        Ok(())
    }
}
