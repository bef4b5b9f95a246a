//! What `rewind` and `diff` read of a session: its prompts (turns, from 1)
//! and the workspace checkpoints journaled around them, and the store they
//! live in (`$MECHA_HOME/checkpoints`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::config::{CheckpointSettings, Settings};
use mecha_checkpoint::{Limits, Store, WorkspaceCheckpoints};
use mecha_core::{Checkpointer, Record, Role};
use mecha_session::Loaded;

use crate::Failure;

/// The checkpoint store of this `MECHA_HOME`.
pub fn store() -> Result<Store, Failure> {
    Ok(Store::new(crate::config::mecha_home()?.join("checkpoints")))
}

/// What a run snapshots `workspace` with: nothing when `[checkpoint]
/// enabled = false`.
pub fn checkpointer(
    workspace: &Path,
    settings: &CheckpointSettings,
) -> Result<Option<Arc<dyn Checkpointer>>, Failure> {
    if !settings.enabled {
        return Ok(None);
    }
    Ok(Some(Arc::new(WorkspaceCheckpoints::new(
        store()?,
        workspace,
        settings.limits.clone(),
    ))))
}

/// The configuration `workspace` is run with now.
fn configured(workspace: &Path) -> Result<Settings, Failure> {
    Ok(Settings::load(&crate::config::mecha_home()?, workspace)?)
}

/// What a rewind or a diff walks `workspace` with: the configured
/// `[checkpoint]` caps and includes, so that what a snapshot leaves out a
/// restore leaves alone.
pub fn limits(workspace: &Path) -> Result<Limits, Failure> {
    Ok(configured(workspace)?.checkpoint.limits)
}

/// Why `loaded` has no checkpoints at all, when that is because they are
/// switched off in the configuration of its workspace.
pub fn why_none(loaded: &Loaded) -> Result<Option<String>, Failure> {
    if last_known(loaded).is_some() {
        return Ok(None);
    }
    let settings = configured(&loaded.header.workspace)?;
    if settings.checkpoint.enabled {
        return Ok(None);
    }
    Ok(Some(format!(
        "this session has no checkpoints, so there are no files to put back: checkpoints are \
         off (`[checkpoint] enabled = false`, from {}). Remove that setting (or set it to true) \
         so that the sessions to come can be rewound",
        settings.origins.of("checkpoint.enabled")
    )))
}

/// One prompt of a session and the checkpoints taken around it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    pub number: u32,
    /// The prompt's first line.
    pub prompt: String,
    /// The workspace before its first call that could change it.
    pub before: Option<String>,
    /// The workspace when it ended.
    pub after: Option<String>,
    /// What changed between the snapshot before `before` and it: since
    /// the last prompt that changed anything ended, so not by the agent.
    pub changed_between: Vec<String>,
    /// Where its prompt record sits among the session's entries.
    pub entry: usize,
}

/// The session's turns in order, each with its checkpoints.
pub fn turns(loaded: &Loaded) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    let mut awaiting_prompt = false;
    for (entry, record) in loaded.entries.iter().map(|e| &e.record).enumerate() {
        match record {
            Record::Prompt { turn } => {
                turns.push(Turn {
                    number: *turn,
                    entry,
                    ..Turn::default()
                });
                awaiting_prompt = true;
            }
            Record::Message { message, .. } if awaiting_prompt && message.role == Role::User => {
                awaiting_prompt = false;
                if let Some(turn) = turns.last_mut() {
                    turn.prompt = message.text().lines().next().unwrap_or("").to_owned();
                }
            }
            Record::Checkpoint {
                turn,
                id,
                after,
                changed,
            } => {
                if let Some(t) = turns.iter_mut().rev().find(|t| t.number == *turn) {
                    match after {
                        true => t.after = Some(id.clone()),
                        // A prompt that parked and went on has a second;
                        // the workspace before the prompt is the first.
                        false if t.before.is_some() => {
                            t.changed_between.extend(changed.iter().cloned());
                        }
                        false => {
                            t.before = Some(id.clone());
                            t.changed_between = changed.clone();
                        }
                    }
                }
            }
            _ => {}
        }
    }
    turns
}

/// The last workspace state the session saw: its last checkpoint.
pub fn last_known(loaded: &Loaded) -> Option<String> {
    loaded.entries.iter().rev().find_map(|e| match &e.record {
        Record::Checkpoint { id, .. } => Some(id.clone()),
        _ => None,
    })
}

/// Turn `number` of `turns`, or a usage error that lists what there is.
pub fn turn(turns: &[Turn], number: u32) -> Result<&Turn, Failure> {
    turns.iter().find(|t| t.number == number).ok_or_else(|| {
        let last = turns.last().map_or(0, |t| t.number);
        Failure::Usage(match last {
            0 => "this session has no prompts yet, so there is no turn to go back to".to_owned(),
            _ => format!("no turn {number} in this session: its turns are 1 to {last} (see `mecha rewind SESSION --list`)"),
        })
    })
}

/// The paths something other than the agent changed after turn `number`
/// began: between the session's later prompts.
pub fn changed_outside_since(turns: &[Turn], number: u32) -> BTreeSet<String> {
    turns
        .iter()
        .filter(|t| t.number > number)
        .flat_map(|t| t.changed_between.iter().cloned())
        .collect()
}

/// The checkpoint from which turn `number` is undone: its own, or the
/// first one a later turn took (a turn that only read changed nothing, so
/// the workspace before it is the workspace before the next that wrote).
pub fn checkpoint_before(turns: &[Turn], number: u32) -> Option<&str> {
    turns
        .iter()
        .filter(|t| t.number >= number)
        .find_map(|t| t.before.as_deref())
}
