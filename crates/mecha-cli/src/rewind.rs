//! What `rewind` and `diff` read of a session: its prompts (turns, from 1)
//! and the workspace checkpoints journaled around them, and the store they
//! live in (`$MECHA_HOME/checkpoints`). The rewind itself is here too, so
//! that `mecha rewind` and the TUI's `/rewind` put files back and cut the
//! conversation by one logic: the files through [`restore_files`], the
//! conversation to [`history_before`] messages.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::config::{CheckpointSettings, Settings};
use mecha_checkpoint::{
    Change, CheckpointError, Known, Limits, Store, WorkspaceCheckpoints, changes, readable, restore,
};
use mecha_core::{Checkpointer, Journal, Record, Role};
use mecha_session::{Loaded, Restored};

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
    /// A conversation rewind (or a failed turn's) took its prompt out of
    /// the history; its checkpoints still put the files back.
    pub cut: bool,
}

/// The session's turns in order, each with its checkpoints.
pub fn turns(loaded: &Loaded) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    let mut awaiting_prompt = false;
    // The history's length as the records replay it, and where each
    // turn's prompt sits in it, while that is known: a compaction rebuilds
    // the history, so what came before it can no longer be told cut.
    let mut history = 0;
    let mut at: Vec<Option<usize>> = Vec::new();
    for (entry, record) in loaded.entries.iter().map(|e| &e.record).enumerate() {
        match record {
            Record::Prompt { turn } => {
                turns.push(Turn {
                    number: *turn,
                    entry,
                    ..Turn::default()
                });
                at.push(Some(history));
                awaiting_prompt = true;
            }
            Record::Message { message, .. } => {
                history += 1;
                if awaiting_prompt && message.role == Role::User {
                    awaiting_prompt = false;
                    if let Some(turn) = turns.last_mut() {
                        turn.prompt = message.text().lines().next().unwrap_or("").to_owned();
                    }
                }
            }
            Record::Rewind { keep } => {
                history = history.min(*keep);
                for (turn, at) in turns.iter_mut().zip(&at) {
                    turn.cut |= at.is_some_and(|at| at >= *keep);
                }
            }
            Record::Compaction { messages, .. } => {
                history = messages.len();
                at.iter_mut().for_each(|at| *at = None);
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

/// What a turn changed, in words: its paths, or why they are not known.
pub fn changed_words(store: &Store, turn: &Turn) -> String {
    match (&turn.before, &turn.after) {
        (Some(before), Some(after)) => match changed_paths(store, before, after) {
            Ok(paths) if paths.is_empty() => "no files changed".to_owned(),
            Ok(paths) => paths.join(", "),
            Err(e) => format!("cannot tell what it changed: {e}"),
        },
        (Some(_), None) => "did not finish; what it changed is unknown".to_owned(),
        _ => "no files changed".to_owned(),
    }
}

/// The paths that differ between two snapshots.
fn changed_paths(store: &Store, before: &str, after: &str) -> Result<Vec<String>, CheckpointError> {
    let (before, after) = (store.load(before)?, store.load(after)?);
    Ok(changes(&before, &after)
        .iter()
        .map(|c| readable(c.path()).into_owned())
        .collect())
}

/// What putting the files back did.
#[derive(Debug)]
pub enum Files {
    /// Nothing to put back, and why: no call from the turn on changed the
    /// workspace, or the session ran with checkpoints off.
    Untouched(String),
    /// The workspace is as it was before the turn; these changed.
    Restored(Vec<Change>),
    /// Nothing was written: these paths changed since the session last saw
    /// them, and only `force` overwrites them.
    Conflicts(Vec<String>),
}

/// Puts the workspace of `loaded` back as it was before turn `number`
/// (one of `turns`), and journals the state it leaves in `journal`, so a
/// later rewind compares against what the workspace now holds.
pub fn restore_files(
    loaded: &Loaded,
    journal: &dyn Journal,
    turns: &[Turn],
    number: u32,
    force: bool,
) -> Result<Files, Failure> {
    let Some(id) = checkpoint_before(turns, number) else {
        let why = why_none(loaded)?.unwrap_or_else(|| {
            format!("no files to put back: no call from turn {number} on changed the workspace")
        });
        return Ok(Files::Untouched(why));
    };
    let store = store()?;
    let target = store.load(id).map_err(run_error)?;
    let known_id = last_known(loaded).unwrap_or_else(|| id.to_owned());
    let known = store.load(&known_id).map_err(run_error)?;
    let changed_outside = changed_outside_since(turns, number);
    let known = Known {
        last: &known,
        changed_outside: &changed_outside,
    };
    let workspace = &loaded.header.workspace;
    match restore(&store, workspace, &target, known, force, limits(workspace)?) {
        Ok(done) => {
            journal.append(&Record::Checkpoint {
                turn: 0,
                id: id.to_owned(),
                changed: done.changes.iter().map(|c| c.path().to_owned()).collect(),
                after: true,
            });
            journal.sync();
            Ok(Files::Restored(done.changes))
        }
        Err(CheckpointError::Conflicts { paths }) => Ok(Files::Conflicts(paths)),
        Err(e) => Err(run_error(e)),
    }
}

pub fn run_error(e: CheckpointError) -> Failure {
    Failure::Run(e.into())
}

/// What [`restore_files`] did to the workspace, in words (outside text
/// in it, the paths, is not yet made printable).
pub fn files_said(number: u32, files: &Files) -> String {
    let mut out = String::new();
    match files {
        Files::Untouched(why) => {
            let _ = writeln!(out, "{why}");
        }
        Files::Restored(changes) => {
            for change in changes {
                let done = match change {
                    Change::Removed(_) => "removed",
                    Change::Added(_) | Change::Changed(_) => "restored",
                };
                let _ = writeln!(out, "{done} {}", readable(change.path()));
            }
            let _ = writeln!(
                out,
                "the workspace is back to before turn {number} ({} file{} changed)",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" }
            );
        }
        Files::Conflicts(paths) => {
            let _ = writeln!(
                out,
                "{}",
                CheckpointError::Conflicts {
                    paths: paths.clone()
                }
            );
        }
    }
    out
}

/// How many messages of the history came before `turn`'s prompt: what a
/// conversation rewind keeps. The taint is not touched: it lasts the whole
/// session, and a rewind only appends a record. A compaction after the
/// prompt replaced the history that count is of, so it is refused.
pub fn history_before(loaded: &Loaded, turn: &Turn) -> Result<usize, Failure> {
    let after = &loaded.entries[turn.entry..];
    if after
        .iter()
        .any(|e| matches!(e.record, Record::Compaction { .. }))
    {
        return Err(Failure::Usage(format!(
            "the conversation was compacted after turn {}, so its history before that prompt \
             is no longer the one the session holds; rewind the files only",
            turn.number
        )));
    }
    Ok(Restored::replay(&loaded.entries[..turn.entry])
        .messages
        .len())
}

/// The whole text the user typed for `turn`, to send again after a
/// conversation rewind; its first line when the message holds more than
/// text (an image).
pub fn prompt_text(loaded: &Loaded, turn: &Turn) -> String {
    loaded.entries[turn.entry..]
        .iter()
        .find_map(|e| match &e.record {
            Record::Message { message, .. } if message.role == Role::User => {
                Some(mecha_agent::typed_prompt(message).map(str::to_owned))
            }
            _ => None,
        })
        .flatten()
        .unwrap_or_else(|| turn.prompt.clone())
}
