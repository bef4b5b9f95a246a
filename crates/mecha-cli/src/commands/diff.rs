//! `mecha diff`: what a session's turns did to the workspace, from its
//! checkpoints: the files added, changed and removed, and a unified diff
//! of each text file.

use std::fmt::Write as _;

use clap::Args;
use mecha_checkpoint::{Change, Content, Manifest, Store, WorkspaceCheckpoints, changes, readable};
use similar::TextDiff;

use crate::Failure;
use crate::commands::sessions::{failure, store as sessions};
use crate::rewind;
use crate::terminal::printable;

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The session's id, or enough of its start to name one session.
    session: String,
    /// Only what turn N changed (default: the whole session, up to the
    /// workspace as it is now).
    #[arg(long, value_name = "N")]
    turn: Option<u32>,
}

pub fn run(args: DiffArgs) -> Result<u8, Failure> {
    let loaded = sessions()?.load(&args.session).map_err(failure)?;
    let turns = rewind::turns(&loaded);
    let store = rewind::store()?;
    let load = |id: &str| store.load(id).map_err(|e| Failure::Run(e.into()));
    let (from, to) = match args.turn {
        Some(number) => {
            let turn = rewind::turn(&turns, number)?;
            let Some(before) = &turn.before else {
                crate::output::out(&format!("turn {number} changed no files\n"));
                return Ok(0);
            };
            let end = turn.after.clone().or_else(|| {
                turns
                    .iter()
                    .filter(|t| t.number > number)
                    .find_map(|t| t.before.clone())
            });
            let to = match end {
                Some(id) => load(&id)?,
                None => now(&store, &loaded.header.workspace)?,
            };
            (load(before)?, to)
        }
        None => {
            let Some(first) = turns.iter().find_map(|t| t.before.as_deref()) else {
                crate::output::out("this session changed no files\n");
                return Ok(0);
            };
            (load(first)?, now(&store, &loaded.header.workspace)?)
        }
    };
    crate::output::out(&printable(&shown(&store, &from, &to)));
    Ok(0)
}

/// The workspace as it is now, snapshotted into the store.
fn now(store: &Store, workspace: &std::path::Path) -> Result<Manifest, Failure> {
    let checkpoints =
        WorkspaceCheckpoints::new(store.clone(), workspace, rewind::limits(workspace)?);
    let (_, manifest, _) = checkpoints.snapshot().map_err(|e| Failure::Run(e.into()))?;
    Ok(manifest)
}

fn shown(store: &Store, from: &Manifest, to: &Manifest) -> String {
    let all = changes(from, to);
    if all.is_empty() {
        return "no files changed\n".to_owned();
    }
    let mut out = String::new();
    for change in &all {
        let (word, path) = match change {
            Change::Added(p) => ("added", p),
            Change::Changed(p) => ("changed", p),
            Change::Removed(p) => ("removed", p),
        };
        let modes = (from.files.get(path), to.files.get(path));
        match modes {
            (Some(a), Some(b)) if a.mode != b.mode => {
                let path = readable(path);
                let _ = writeln!(out, "{word} {path} (mode {:o} -> {:o})", a.mode, b.mode);
            }
            _ => {
                let _ = writeln!(out, "{word} {}", readable(path));
            }
        }
    }
    for change in &all {
        let path = change.path();
        let old = text(store, from, path);
        let new = text(store, to, path);
        let path = readable(path);
        match (old, new) {
            (Some(old), Some(new)) => {
                let diff = TextDiff::from_lines(&old, &new);
                let _ = write!(
                    out,
                    "{}",
                    diff.unified_diff()
                        .header(&format!("a/{path}"), &format!("b/{path}"))
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "--- {path}: not text (binary, a link or an empty directory); not shown"
                );
            }
        }
    }
    out
}

/// The text `manifest` holds at `path` (empty when it has none), or `None`
/// for bytes that are not text or a symlink.
fn text(store: &Store, manifest: &Manifest, path: &str) -> Option<String> {
    match manifest.files.get(path).map(|e| &e.content) {
        None => Some(String::new()),
        Some(Content::Symlink { .. } | Content::Dir) => None,
        Some(Content::File { sha256 }) => {
            let bytes = store.blob(sha256).ok()?;
            (!bytes.contains(&0)).then_some(())?;
            String::from_utf8(bytes).ok()
        }
    }
}
