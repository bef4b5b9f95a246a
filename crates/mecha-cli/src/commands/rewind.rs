//! `mecha rewind`: a session's turns with the files each changed, and the
//! workspace (and, with `--conversation`, the history) put back as it was
//! before one of them.

use std::fmt::Write as _;

use clap::Args;
use std::collections::BTreeSet;

use mecha_checkpoint::PRUNE_GRACE;
use mecha_core::{Journal, Record};
use mecha_session::Writer;

use crate::Failure;
use crate::commands::sessions::{failure, store as sessions};
use crate::rewind::{self, Files, Turn};
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
        false => Some(rewind::history_before(&loaded, turn)?),
    };
    let writer = Writer::reopen(&loaded).map_err(failure)?;
    if !args.conversation {
        let files = rewind::restore_files(&loaded, &writer, &turns, number, args.force)?;
        let said = rewind::files_said(number, &files);
        let said = printable(&said);
        match files {
            Files::Restored(_) => crate::output::out(&said),
            Files::Untouched(_) => crate::output::err_line(said.trim_end()),
            Files::Conflicts(_) => return Err(Failure::Usage(said.trim_end().to_owned())),
        }
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

/// Said of a turn a conversation rewind took out of the history.
const CUT: &str = "  [cut from the conversation]";

fn listing(turns: &[Turn]) -> Result<String, Failure> {
    let store = rewind::store()?;
    let mut out = String::new();
    for turn in turns {
        let cut = if turn.cut { CUT } else { "" };
        let _ = writeln!(out, "{:>3}  {}{cut}", turn.number, turn.prompt);
        let _ = writeln!(out, "     {}", rewind::changed_words(&store, turn));
    }
    if out.is_empty() {
        out.push_str("no turns in this session yet\n");
    }
    Ok(out)
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
    let pruned = store.prune(&keep, PRUNE_GRACE).map_err(rewind::run_error)?;
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
