//! The agent's side of the journal: each change to the session recorded as
//! it happens, and made durable at every turn boundary.

use mecha_core::{
    Block, INTERRUPTED_RESULT, INTERRUPTED_TURN, Journal, LOST_RESULT, Message, NOT_RUN_RESULT,
    Record, Registry, Role, Taint, Usage, results_for_open_calls,
};

use crate::agent::{Agent, AgentError, Session};
use crate::events::{Event, EventSink};

impl Agent {
    /// Appends `record` to the journal, if there is one.
    pub fn note(&self, record: &Record) {
        if let Some(journal) = &self.journal {
            journal.append(record);
        }
    }

    /// Adds `taint` to what `session` holds before anything is sent (what
    /// a subagent's child inherits from its parent, what the project's
    /// instructions bring), journaled when it grows: a resumed session
    /// rebuilds its taint from the journal alone, so a taint it started
    /// with and never recorded would come back disarmed.
    pub fn start_tainted(&self, session: &mut Session, taint: Taint) {
        let grown = session.taint.union(taint);
        if grown != session.taint {
            session.taint = grown;
            self.note(&Record::Taint { taint: grown });
        }
    }

    /// Where the session is journaled, if anywhere: a front end's own
    /// record (the files a `/rewind` put back) goes there, in its place
    /// among the loop's.
    pub fn journal(&self) -> Option<&dyn Journal> {
        self.journal.as_deref()
    }

    pub(crate) fn sync(&self) {
        if let Some(journal) = &self.journal {
            journal.sync();
        }
    }

    /// A sync the next request need not wait for: where the loop goes on
    /// to ask the model again.
    pub(crate) fn sync_behind(&self) {
        if let Some(journal) = &self.journal {
            journal.sync_behind();
        }
    }

    /// Makes a prompt that failed midway (the provider gave up, a tool
    /// broke) durable as it stands; every other ending syncs where it
    /// returns.
    pub(crate) fn sync_if_failed<T>(&self, ended: &Result<T, AgentError>) {
        if ended.is_err() {
            self.sync();
        }
    }

    /// Appends `message` to the history and the journal.
    pub(crate) fn push(&self, session: &mut Session, message: Message, external: Vec<String>) {
        if self.journal.is_some() {
            self.note(&Record::Message {
                message: message.clone(),
                external,
            });
        }
        session.messages.push(message);
    }

    /// Cuts the history back to `keep` messages, in the journal too (an
    /// exchange a person interrupted, or the model refused).
    pub fn rewind(&self, session: &mut Session, keep: usize) {
        session.messages.truncate(keep);
        session.measured = Default::default();
        session.reported = None;
        session.unfinished.clear();
        session.running.clear();
        session.prompt_open = false;
        self.note(&Record::Rewind { keep });
        // A compaction during the exchange can have left the history
        // shorter than `keep`, its calls still open: no API accepts a call
        // without its result.
        let results = results_for_open_calls(&session.messages, |_| LOST_RESULT);
        if !results.is_empty() {
            let closing = Message {
                role: Role::User,
                content: results,
            };
            self.push(session, closing, Vec::new());
        }
        self.sync();
    }

    /// Keeps what a turn the user interrupted had done (called once its
    /// `send` was dropped): every message it finished, the answer's text
    /// streamed so far, each call it had let run closed with a result
    /// saying it may have run in part (and any other that it never ran),
    /// and a note to the model that the user interrupted. Made durable at
    /// once. A prompt that never entered the history (a hook held it back,
    /// or the interrupt came first) leaves nothing.
    pub fn keep_interrupted(&self, session: &mut Session) {
        let unfinished = std::mem::take(&mut session.unfinished);
        let running = std::mem::take(&mut session.running);
        let open = std::mem::replace(&mut session.prompt_open, false);
        let mut content = results_for_open_calls(&session.messages, |id| {
            if running.iter().any(|r| r == id) {
                INTERRUPTED_RESULT
            } else {
                NOT_RUN_RESULT
            }
        });
        // What the stopped prompt changed is the agent's, not something a
        // later rewind should take for a change made from outside.
        if let Err(e) = self.checkpoint_after_prompt(session) {
            tracing::warn!("no checkpoint of the workspace after the interrupted prompt: {e}");
        }
        if content.is_empty() && !open {
            return;
        }
        let ends_with_user = session.messages.last().map(|m| m.role) == Some(Role::User);
        if ends_with_user && !unfinished.trim().is_empty() {
            let answer = Message {
                role: Role::Assistant,
                content: vec![Block::Text { text: unfinished }],
            };
            self.push(session, answer, Vec::new());
        }
        content.push(Block::Text {
            text: INTERRUPTED_TURN.to_owned(),
        });
        let note = Message {
            role: Role::User,
            content,
        };
        self.push(session, note, Vec::new());
        self.sync();
    }

    /// The end of a model request: the turn recorded, and at a boundary
    /// (`sync`) everything made durable.
    pub(crate) fn end_turn(&self, session: &Session, usage: Usage, sync: bool) {
        self.note(&Record::Turn {
            turn: session.turns,
            usage,
        });
        if sync {
            self.sync();
        }
    }

    /// Journals what the turn's calls changed besides the history: the
    /// taint (`taint` being what it was before them, reported too), the
    /// surface, each tool's saved state.
    pub(crate) fn note_changes(
        &self,
        session: &mut Session,
        registry: &Registry,
        taint: Taint,
        surface: bool,
        events: &dyn EventSink,
    ) {
        let tainted = session.taint != taint;
        if tainted {
            events.emit(Event::Tainted {
                taint: session.taint,
            });
        }
        if self.journal.is_none() {
            return;
        }
        if tainted {
            self.note(&Record::Taint {
                taint: session.taint,
            });
        }
        if let (true, Some(now)) = (surface, &session.surface) {
            self.note(&Record::Surface {
                by: now.by().to_vec(),
                tools: now.tools().map(str::to_owned).collect(),
            });
        }
        for tool in registry.iter() {
            let Some(state) = tool.saved_state() else {
                continue;
            };
            if session.saved.get(tool.name()) != Some(&state) {
                self.note(&Record::ToolState {
                    tool: tool.name().to_owned(),
                    state: state.clone(),
                });
                session.saved.insert(tool.name().to_owned(), state);
            }
        }
    }
}
