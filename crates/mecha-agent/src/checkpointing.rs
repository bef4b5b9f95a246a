//! Workspace checkpoints around a prompt: one before the first call of the
//! prompt that could change the workspace (a tool that is not read-only:
//! a write, an edit, the shell, an MCP tool that does not say it only
//! reads), and one when that prompt ends, both journaled with the prompt's
//! number, so a rewind can put the workspace back as it was before any
//! prompt and can tell what changed since mecha last looked.

use std::sync::Arc;

use mecha_core::{Checkpointer, Record};

use crate::agent::{Agent, AgentError, Session};

impl Agent {
    /// Snapshots the workspace before each prompt changes it (an agent
    /// without one takes no checkpoints).
    #[must_use]
    pub fn with_checkpoints(mut self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// Takes the prompt's first checkpoint, unless it has one already.
    pub(crate) fn checkpoint_before_change(&self, session: &mut Session) -> Result<(), AgentError> {
        if session.checkpointed == Some(session.prompts) {
            return Ok(());
        }
        if self.take_checkpoint(session, false)? {
            session.checkpointed = Some(session.prompts);
        }
        Ok(())
    }

    /// Takes the closing checkpoint of a prompt that took a first one:
    /// the state the prompt left, which a later rewind compares the
    /// workspace against to find what someone else changed.
    pub(crate) fn checkpoint_after_prompt(&self, session: &mut Session) -> Result<(), AgentError> {
        if session.checkpointed == Some(session.prompts) {
            // Once: an interrupt after the prompt ended has nothing to add.
            session.checkpointed = None;
            self.take_checkpoint(session, true)?;
        }
        Ok(())
    }

    fn take_checkpoint(&self, session: &Session, after: bool) -> Result<bool, AgentError> {
        let Some(checkpointer) = &self.checkpointer else {
            return Ok(false);
        };
        let taken = checkpointer
            .checkpoint()
            .map_err(|reason| AgentError::Checkpoint { reason })?;
        self.note(&Record::Checkpoint {
            turn: session.prompts,
            id: taken.id,
            changed: taken.changed,
            after,
        });
        self.sync();
        Ok(true)
    }
}
