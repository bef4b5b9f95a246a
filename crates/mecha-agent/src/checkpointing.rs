//! Workspace checkpoints around a prompt: one before the first call of the
//! prompt that could change the workspace (a tool that is not read-only:
//! a write, an edit, the shell, an MCP tool that does not say it only
//! reads), and one when that prompt ends, both journaled with the prompt's
//! number, so a rewind can put the workspace back as it was before any
//! prompt and can tell what changed since mecha last looked.

use std::sync::Arc;

use mecha_core::{Checkpoint, Checkpointer, Record};

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
    pub(crate) async fn checkpoint_before_change(
        &self,
        session: &mut Session,
    ) -> Result<(), AgentError> {
        if session.checkpointed == Some(session.prompts) {
            return Ok(());
        }
        let Some(checkpointer) = self.checkpointer.clone() else {
            return Ok(());
        };
        // A walk of a large workspace takes a while: off the runtime's
        // threads, so a screen or a server on the same runtime does not
        // stall behind it.
        let taken = tokio::task::spawn_blocking(move || checkpointer.checkpoint())
            .await
            .map_err(|e| AgentError::Checkpoint {
                reason: format!("the snapshot stopped before it finished: {e}"),
            })?;
        self.journal_checkpoint(session, taken, false)?;
        session.checkpointed = Some(session.prompts);
        Ok(())
    }

    /// Takes the closing checkpoint of a prompt that took a first one:
    /// the state the prompt left, which a later rewind compares the
    /// workspace against to find what someone else changed. Run in place:
    /// an interrupted prompt takes it from a front end that does not wait.
    pub(crate) fn checkpoint_after_prompt(&self, session: &mut Session) -> Result<(), AgentError> {
        if session.checkpointed != Some(session.prompts) {
            return Ok(());
        }
        // Once: an interrupt after the prompt ended has nothing to add.
        session.checkpointed = None;
        if let Some(checkpointer) = &self.checkpointer {
            self.journal_checkpoint(session, checkpointer.checkpoint(), true)?;
        }
        Ok(())
    }

    fn journal_checkpoint(
        &self,
        session: &Session,
        taken: Result<Checkpoint, String>,
        after: bool,
    ) -> Result<(), AgentError> {
        let taken = taken.map_err(|reason| AgentError::Checkpoint { reason })?;
        self.note(&Record::Checkpoint {
            turn: session.prompts,
            id: taken.id,
            changed: taken.changed,
            after,
        });
        self.sync();
        Ok(())
    }
}
