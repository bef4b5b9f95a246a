//! A snapshot's manifest: every file it holds, and how two compare.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One snapshot of a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub workspace: PathBuf,
    /// When the walk began (nanoseconds since the epoch). A file modified
    /// at or after it may have changed during the walk, so the next
    /// snapshot reads it again rather than trusting its size and time.
    pub started_ns: u64,
    /// Every file and symlink, by its path relative to the workspace
    /// (`/`-separated).
    pub files: BTreeMap<String, FileEntry>,
    /// Files left out, with why (over the size caps, unreadable). A
    /// restore leaves them where they are.
    pub skipped: BTreeMap<String, String>,
    /// Each directory's listing blob, once stored or loaded: what the next
    /// save reuses for a directory whose entries did not change.
    pub(crate) listings: BTreeMap<String, String>,
}

/// One file of a snapshot: its content and mode, and what the next walk
/// compares to know whether it must read the file again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub content: Content,
    /// Permission bits (`0o777` and the set-id/sticky bits).
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: u64,
    pub inode: u64,
}

/// What a path holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Content {
    /// A regular file whose bytes are the blob with this SHA-256.
    File { sha256: String },
    /// A symlink, never followed.
    Symlink { target: String },
}

impl FileEntry {
    /// Whether two entries hold the same thing, whatever their timestamps.
    pub fn same_as(&self, other: &FileEntry) -> bool {
        self.content == other.content
            && (matches!(self.content, Content::Symlink { .. }) || self.mode == other.mode)
    }
}

/// How a path differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(String),
    Changed(String),
    Removed(String),
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Added(p) | Change::Changed(p) | Change::Removed(p) => p,
        }
    }
}

/// What turns `from` into `to`, by path. A path either side skipped is
/// not compared: its content is not known.
pub fn changes(from: &Manifest, to: &Manifest) -> Vec<Change> {
    let paths: BTreeSet<&String> = from.files.keys().chain(to.files.keys()).collect();
    paths
        .into_iter()
        .filter(|path| !from.skipped.contains_key(*path) && !to.skipped.contains_key(*path))
        .filter_map(|path| match (from.files.get(path), to.files.get(path)) {
            (None, Some(_)) => Some(Change::Added(path.clone())),
            (Some(_), None) => Some(Change::Removed(path.clone())),
            (Some(a), Some(b)) if !a.same_as(b) => Some(Change::Changed(path.clone())),
            _ => None,
        })
        .collect()
}
