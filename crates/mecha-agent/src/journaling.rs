//! The agent's side of the journal: each change to the session recorded as
//! it happens, and made durable at every turn boundary.

use mecha_core::{Message, Record, Registry, Taint, Usage};

use crate::agent::{Agent, Session};

impl Agent {
    /// Appends `record` to the journal, if there is one.
    pub fn note(&self, record: &Record) {
        if let Some(journal) = &self.journal {
            journal.append(record);
        }
    }

    pub(crate) fn sync(&self) {
        if let Some(journal) = &self.journal {
            journal.sync();
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
        session.reported = None;
        self.note(&Record::Rewind { keep });
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
    /// taint, the surface, each tool's saved state.
    pub(crate) fn note_changes(
        &self,
        session: &mut Session,
        registry: &Registry,
        taint: Taint,
        surface: bool,
    ) {
        if self.journal.is_none() {
            return;
        }
        if session.taint != taint {
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
