//! `mecha rewind`: a session's turns with the files each changed, and the
//! workspace (and, with `--conversation`, the history) put back as it was
//! before one of them.

use std::fmt::Write as _;

use clap::Args;
use std::collections::BTreeSet;

use mecha_checkpoint::{CheckpointError, Known, PRUNE_GRACE, Store, changes, readable, restore};
use mecha_core::{Journal, Record};
use mecha_session::{Restored, Writer};

use crate::Failure;
use crate::commands::sessions::{failure, store as sessions};
use crate::rewind::{self, Turn};
use crate::terminal::printable;

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("action").required(true).args(["list", "to", "prune"])))]
pub struct RewindArgs {
    /// The session's id, or enough of its start to name one session.
    #[arg(required_unless_present = "prune")]
    session: Option<String>,
    /// The session's turns (one per prompt, from 1) and the files each
    /// changed.
    #[arg(long)]
    list: bool,
    /// Go back to the state just before prompt TURN.
    #[arg(long, value_name = "TURN")]
    to: Option<u32>,
    /// Only the workspace's files (with --to).
    #[arg(long, requires = "to", conflicts_with = "conversation")]
    files: bool,
    /// Only the conversation: its history cut back to before the prompt,
    /// its taint kept (with --to).
    #[arg(long, requires = "to")]
    conversation: bool,
    /// Overwrite files that changed since the session last saw them.
    #[arg(long, requires = "to")]
    force: bool,
    /// Free the checkpoint store: remove the snapshots no stored session
    /// names any more, and the contents only they used.
    #[arg(long, conflicts_with = "session")]
    prune: bool,
}

pub fn run(args: RewindArgs) -> Result<u8, Failure> {
    let Some(session) = &args.session else {
        return prune();
    };
    let loaded = sessions()?.load(session).map_err(failure)?;
    let turns = rewind::turns(&loaded);
    let Some(number) = args.to else {
        if let Some(why) = rewind::why_none(&loaded)? {
            crate::output::err_line(&why);
        }
        crate::output::out(&printable(&listing(&turns)?));
        return Ok(0);
    };
    let turn = rewind::turn(&turns, number)?;
    // Checked before any file moves: a rewind of both does both or neither.
    let keep = match args.files {
        true => None,
        false => Some(history_before(&loaded, turn)?),
    };
    let writer = Writer::reopen(&loaded).map_err(failure)?;
    if !args.conversation {
        files(&loaded, &writer, &turns, number, args.force)?;
    }
    if let Some(keep) = keep {
        writer.append(&Record::Rewind { keep });
        writer.sync();
        crate::output::out(&format!(
            "the conversation is back to before turn {number}; resume it with `mecha chat \
             --resume {}`\n",
            loaded.header.id
        ));
    }
    Ok(0)
}

fn listing(turns: &[Turn]) -> Result<String, Failure> {
    let store = rewind::store()?;
    let mut out = String::new();
    for turn in turns {
        let changed = match (&turn.before, &turn.after) {
            (Some(before), Some(after)) => match changed_paths(&store, before, after) {
                Ok(paths) if paths.is_empty() => "no files changed".to_owned(),
                Ok(paths) => paths.join(", "),
                Err(e) => format!("cannot tell what it changed: {e}"),
            },
            (Some(_), None) => "did not finish; what it changed is unknown".to_owned(),
            _ => "no files changed".to_owned(),
        };
        let _ = writeln!(out, "{:>3}  {}", turn.number, turn.prompt);
        let _ = writeln!(out, "     {changed}");
    }
    if out.is_empty() {
        out.push_str("no turns in this session yet\n");
    }
    Ok(out)
}

/// The paths that differ between two snapshots.
fn changed_paths(store: &Store, before: &str, after: &str) -> Result<Vec<String>, CheckpointError> {
    let (before, after) = (store.load(before)?, store.load(after)?);
    Ok(changes(&before, &after)
        .iter()
        .map(|c| readable(c.path()).into_owned())
        .collect())
}

fn run_error(e: CheckpointError) -> Failure {
    Failure::Run(e.into())
}

fn files(
    loaded: &mecha_session::Loaded,
    writer: &Writer,
    turns: &[Turn],
    number: u32,
    force: bool,
) -> Result<(), Failure> {
    let Some(id) = rewind::checkpoint_before(turns, number) else {
        let why = rewind::why_none(loaded)?.unwrap_or_else(|| {
            format!("no files to put back: no call from turn {number} on changed the workspace")
        });
        crate::output::err_line(&why);
        return Ok(());
    };
    let store = rewind::store()?;
    let target = store.load(id).map_err(run_error)?;
    let known_id = rewind::last_known(loaded).unwrap_or_else(|| id.to_owned());
    let known = store.load(&known_id).map_err(run_error)?;
    let workspace = &loaded.header.workspace;
    let changed_outside = rewind::changed_outside_since(turns, number);
    let known = Known {
        last: &known,
        changed_outside: &changed_outside,
    };
    let limits = rewind::limits(workspace)?;
    match restore(&store, workspace, &target, known, force, limits) {
        Ok(done) => {
            // What the workspace now holds is what the session last saw:
            // a later rewind compares against it, not the state undone.
            writer.append(&Record::Checkpoint {
                turn: 0,
                id: id.to_owned(),
                changed: done.changes.iter().map(|c| c.path().to_owned()).collect(),
                after: true,
            });
            writer.sync();
            let mut out = String::new();
            for change in &done.changes {
                let _ = writeln!(out, "restored {}", readable(change.path()));
            }
            let _ = writeln!(
                out,
                "the workspace is back to before turn {number} ({} file{} changed)",
                done.changes.len(),
                if done.changes.len() == 1 { "" } else { "s" }
            );
            crate::output::out(&printable(&out));
            Ok(())
        }
        Err(e @ CheckpointError::Conflicts { .. }) => Err(Failure::Usage(e.to_string())),
        Err(e) => Err(run_error(e)),
    }
}

/// How many messages of the history came before `turn`'s prompt: what a
/// conversation rewind keeps. The taint is not touched: it lasts the whole
/// session, and a rewind only appends a record. A compaction after the
/// prompt replaced the history that count is of, so it is refused.
fn history_before(loaded: &mecha_session::Loaded, turn: &Turn) -> Result<usize, Failure> {
    let after = &loaded.entries[turn.entry..];
    if after
        .iter()
        .any(|e| matches!(e.record, Record::Compaction { .. }))
    {
        return Err(Failure::Usage(format!(
            "the conversation was compacted after turn {}, so its history before that prompt \
             is no longer the one the session holds; rewind with --files only",
            turn.number
        )));
    }
    Ok(Restored::replay(&loaded.entries[..turn.entry])
        .messages
        .len())
}

/// Removes what no stored session can rewind to any more. A session that
/// cannot be read keeps everything: what it names is not known.
fn prune() -> Result<u8, Failure> {
    let sessions = sessions()?;
    let mut keep = BTreeSet::new();
    for listing in sessions.list().map_err(failure)? {
        let loaded = sessions.load_salvaging(&listing.id).map_err(|e| {
            Failure::Run(anyhow::anyhow!(
                "cannot read session {} ({e}), so nothing was pruned: what it can rewind to is \
                 not known. Remove the session or repair it, then prune again",
                listing.id
            ))
        })?;
        keep.extend(loaded.entries.iter().filter_map(|e| match &e.record {
            Record::Checkpoint { id, .. } => Some(id.clone()),
            _ => None,
        }));
    }
    let store = rewind::store()?;
    let pruned = store.prune(&keep, PRUNE_GRACE).map_err(run_error)?;
    crate::output::out(&format!(
        "pruned {} snapshot{} and {} stored file{}, {} freed; {} left at {}\n",
        pruned.snapshots,
        if pruned.snapshots == 1 { "" } else { "s" },
        pruned.blobs,
        if pruned.blobs == 1 { "" } else { "s" },
        mecha_core::human_size(pruned.bytes),
        mecha_core::human_size(store.size().0),
        store.root().display()
    ));
    Ok(0)
}
