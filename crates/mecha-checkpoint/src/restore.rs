//! Putting a workspace back as a snapshot had it, refusing to overwrite
//! what changed since mecha last looked.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::CheckpointError;
use crate::manifest::{
    Change, Content, FileEntry, Manifest, changes, key_name, key_target, readable,
};
use crate::store::Store;
use crate::walk::{Limits, scan};

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The snapshot of the workspace as it was just before the restore, so
    /// that the restore itself can be undone.
    pub before: String,
    /// What changed, from the state before to the state restored.
    pub changes: Vec<Change>,
}

/// What mecha knows of the workspace's history since the state a restore
/// goes back to.
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    /// The last state mecha saw (the session's last checkpoint).
    pub last: &'a Manifest,
    /// Paths something other than the agent changed since (seen between
    /// its prompts).
    pub changed_outside: &'a BTreeSet<String>,
}

static NOTHING_OUTSIDE: BTreeSet<String> = BTreeSet::new();

impl<'a> Known<'a> {
    /// Only the last state: nothing seen changed between prompts.
    pub fn last(last: &'a Manifest) -> Self {
        Self {
            last,
            changed_outside: &NOTHING_OUTSIDE,
        }
    }
}

/// Puts `workspace` back as `target` has it: files written byte for byte
/// with their modes, symlinks remade, files `target` did not have removed
/// (what the walk leaves out, ignored or over a cap, is left alone).
///
/// A path the restore would change that someone else changed (it is no
/// longer as `known.last` has it, or it is among `known.changed_outside`)
/// is a conflict, and the restore refuses, naming every such path, unless
/// `force`. Afterwards the restored state is the workspace's head, so the
/// next snapshot compares against what the workspace now holds.
pub fn restore(
    store: &Store,
    workspace: &Path,
    target: &Manifest,
    known: Known<'_>,
    force: bool,
    limits: Limits,
) -> Result<Restored, CheckpointError> {
    let head = store.head(workspace);
    let mut current = scan(store, workspace, head.as_ref(), &limits)?;
    let before = store.save(&mut current, head.as_ref())?;
    let planned = changes(&current, target);
    if !force {
        let conflicts: Vec<String> = planned
            .iter()
            .map(Change::path)
            .filter(|path| {
                known.changed_outside.contains(*path)
                    || !same(current.files.get(*path), known.last.files.get(*path))
            })
            .map(|path| readable(path).into_owned())
            .collect();
        if !conflicts.is_empty() {
            return Err(CheckpointError::Conflicts { paths: conflicts });
        }
    }
    // Every path is checked before the first is touched: a refusal leaves
    // the workspace as it was, not half restored.
    let removed: BTreeSet<&str> = planned
        .iter()
        .filter(|change| matches!(change, Change::Removed(_)))
        .map(Change::path)
        .collect();
    let paths: Vec<PathBuf> = planned
        .iter()
        .map(|change| checked_path(workspace, change.path(), &removed))
        .collect::<Result<_, _>>()?;
    for (change, full) in planned.iter().zip(&paths) {
        if let Change::Removed(path) = change {
            match current.files.get(path).map(|e| &e.content) {
                Some(Content::Dir) => remove_empty_dir(full)?,
                _ => remove(full)?,
            }
            prune_empty_parents(workspace, full);
        }
    }
    for (change, full) in planned.iter().zip(&paths) {
        if let Change::Added(path) | Change::Changed(path) = change
            && let Some(entry) = target.files.get(path)
        {
            write_entry(store, full, entry)?;
        }
    }
    store.save(&mut target.clone(), None)?;
    Ok(Restored {
        before,
        changes: planned,
    })
}

fn same(a: Option<&FileEntry>, b: Option<&FileEntry>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.same_as(b),
        (None, None) => true,
        _ => false,
    }
}

/// `workspace` joined with a manifest path, refusing one that climbs out
/// or passes through a symlink (which could point anywhere), unless the
/// restore removes that symlink first (`removed`: a directory the agent
/// swapped for a link comes back as a directory).
fn checked_path(
    workspace: &Path,
    path: &str,
    removed: &BTreeSet<&str>,
) -> Result<PathBuf, CheckpointError> {
    let unsafe_path = |reason: &str| CheckpointError::UnsafePath {
        path: readable(path).into_owned(),
        reason: reason.to_owned(),
    };
    let mut full = workspace.to_path_buf();
    let mut names = path.split('/').peekable();
    let mut walked = 0;
    while let Some(name) = names.next() {
        walked += name.len();
        let Some(native) = key_name(name) else {
            return Err(unsafe_path(
                "the manifest names a path outside the workspace",
            ));
        };
        full.push(native);
        let goes_first = removed.contains(&path[..walked]);
        walked += 1;
        if names.peek().is_some()
            && !goes_first
            && fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(unsafe_path(
                "a directory on its way is now a symlink; remove it and rewind again",
            ));
        }
    }
    Ok(full)
}

fn remove(full: &Path) -> Result<(), CheckpointError> {
    match fs::remove_file(full) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CheckpointError::io("remove", full)(e)),
    }
}

/// Removes a directory that was empty; one that now holds something (an
/// ignored file, one over the caps) stays, as what is in it does.
fn remove_empty_dir(full: &Path) -> Result<(), CheckpointError> {
    match fs::remove_dir(full) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(CheckpointError::io("remove", full)(e)),
    }
}

/// Removes the directories a removed file leaves empty, up to the
/// workspace: a turn's `mkdir -p a/b && touch a/b/c` is undone whole.
fn prune_empty_parents(workspace: &Path, full: &Path) {
    let mut dir = full.parent();
    while let Some(d) = dir {
        if d == workspace || !d.starts_with(workspace) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

fn write_entry(store: &Store, full: &Path, entry: &FileEntry) -> Result<(), CheckpointError> {
    if let Some(dir) = full.parent() {
        fs::create_dir_all(dir).map_err(CheckpointError::io("create", dir))?;
    }
    // Whatever is there (a file, a link, another kind, an empty
    // directory where a file goes) gives way.
    match fs::symlink_metadata(full) {
        Ok(m) if m.is_dir() && entry.content != Content::Dir => remove_empty_dir(full)?,
        Ok(m) if !m.is_dir() => remove(full)?,
        _ => {}
    }
    match &entry.content {
        Content::Dir => {
            fs::create_dir_all(full).map_err(CheckpointError::io("create", full))?;
            fs::set_permissions(full, fs::Permissions::from_mode(entry.mode))
                .map_err(CheckpointError::io("set the mode of", full))
        }
        Content::Symlink { target } => {
            let target = key_target(target).ok_or_else(|| CheckpointError::Corrupt {
                path: store.root().to_path_buf(),
                reason: format!(
                    "the link target `{target}` of {} does not decode",
                    full.display()
                ),
            })?;
            std::os::unix::fs::symlink(target, full)
                .map_err(CheckpointError::io("make the link", full))
        }
        Content::File { sha256 } => {
            let bytes = store.blob(sha256)?;
            let name = full.file_name().and_then(|n| n.to_str()).unwrap_or("file");
            let tmp = full.with_file_name(format!(".{name}.mecha-rewind.tmp"));
            fs::write(&tmp, &bytes).map_err(CheckpointError::io("write", &tmp))?;
            fs::set_permissions(&tmp, fs::Permissions::from_mode(entry.mode))
                .map_err(CheckpointError::io("set the mode of", &tmp))?;
            fs::rename(&tmp, full).map_err(CheckpointError::io("rename into", full))
        }
    }
}
