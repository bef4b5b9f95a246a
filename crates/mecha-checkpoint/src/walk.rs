//! Walking a workspace into a manifest: `.gitignore` and `.ignore` read as
//! patterns (git is never run and its configuration never read), `.git/`
//! and the store itself left out, and size caps so that build output too
//! big to matter does not fill the store.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::CheckpointError;
use crate::manifest::{Content, FileEntry, Manifest};
use crate::store::Store;

/// How much a snapshot takes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A file larger than this is left out (and left alone by a restore).
    pub max_file_bytes: u64,
    /// Once the files taken in add up to this, the rest are left out.
    pub max_snapshot_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 << 20,
            max_snapshot_bytes: 1 << 30,
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn mtime_ns(meta: &fs::Metadata) -> u64 {
    let secs = u64::try_from(meta.mtime()).unwrap_or(0);
    let nanos = u64::try_from(meta.mtime_nsec()).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Walks `workspace` into a manifest, storing every file's bytes in
/// `store`. A file whose size, time and inode match `previous` (and that
/// was not modified while `previous` was taken) is not read again.
pub(crate) fn scan(
    store: &Store,
    workspace: &Path,
    previous: Option<&Manifest>,
    limits: Limits,
) -> Result<Manifest, CheckpointError> {
    let started_ns = now_ns();
    let (found, problems) = list(store, workspace);
    let mut manifest = Manifest {
        workspace: workspace.to_path_buf(),
        started_ns,
        files: BTreeMap::new(),
        skipped: problems,
        listings: BTreeMap::new(),
    };
    let mut taken = 0u64;
    for (path, meta) in found {
        let path = path.as_path();
        let Some(relative) = relative(workspace, path) else {
            continue;
        };
        let meta = match meta {
            Ok(meta) => meta,
            // Gone between the listing and the look: nothing to keep.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                manifest
                    .skipped
                    .insert(relative, format!("unreadable: {e}"));
                continue;
            }
        };
        let kind = meta.file_type();
        if kind.is_dir() {
            continue;
        }
        let stat = |content| FileEntry {
            content,
            mode: meta.mode() & 0o7777,
            size: meta.len(),
            mtime_ns: mtime_ns(&meta),
            inode: meta.ino(),
        };
        if kind.is_symlink() {
            let target = fs::read_link(path).map_err(CheckpointError::io("read the link", path))?;
            let target = target.to_string_lossy().into_owned();
            manifest
                .files
                .insert(relative, stat(Content::Symlink { target }));
            continue;
        }
        if !kind.is_file() {
            manifest
                .skipped
                .insert(relative, "not a regular file".into());
            continue;
        }
        if meta.len() > limits.max_file_bytes {
            let why = format!(
                "larger than the {} byte cap per file",
                limits.max_file_bytes
            );
            manifest.skipped.insert(relative, why);
            continue;
        }
        if taken.saturating_add(meta.len()) > limits.max_snapshot_bytes {
            let why = format!(
                "over the {} byte cap per snapshot",
                limits.max_snapshot_bytes
            );
            manifest.skipped.insert(relative, why);
            continue;
        }
        taken += meta.len();
        let fresh = stat(Content::File {
            sha256: String::new(),
        });
        let known = previous.and_then(|p| {
            let old = p.files.get(&relative)?;
            let unchanged = old.size == fresh.size
                && old.mtime_ns == fresh.mtime_ns
                && old.inode == fresh.inode
                && old.mtime_ns < p.started_ns
                && matches!(old.content, Content::File { .. });
            unchanged.then(|| old.content.clone())
        });
        let content = match known {
            Some(content) => content,
            None => match fs::read(path) {
                Ok(bytes) => Content::File {
                    sha256: store.put_blob(&bytes)?,
                },
                Err(e) => {
                    manifest
                        .skipped
                        .insert(relative, format!("unreadable: {e}"));
                    continue;
                }
            },
        };
        manifest
            .files
            .insert(relative, FileEntry { content, ..fresh });
    }
    Ok(manifest)
}

/// Every path the walk takes in, in order, each with what `lstat` said of
/// it; and what could not be walked (a directory it may not read, a
/// `.gitignore` it cannot parse), by path, which the snapshot then skips
/// rather than fail the call it precedes.
fn list(store: &Store, workspace: &Path) -> (Vec<Found>, BTreeMap<String, String>) {
    let store_root = fs::canonicalize(store.root()).ok();
    let mut walker = ignore::WalkBuilder::new(workspace);
    walker
        .hidden(false)
        .follow_links(false)
        .git_global(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            entry.file_name() != ".git"
                && store_root
                    .as_deref()
                    .is_none_or(|root| !entry.path().starts_with(root))
        });
    let mut found = Vec::new();
    let mut problems = BTreeMap::new();
    for entry in walker.build() {
        match entry {
            Ok(entry) => {
                let meta = fs::symlink_metadata(entry.path());
                found.push((entry.into_path(), meta));
            }
            Err(e) => {
                let at = problem_path(&e)
                    .and_then(|p| relative(workspace, p))
                    .unwrap_or_else(|| ".".to_owned());
                problems.insert(at, format!("not walked: {e}"));
            }
        }
    }
    (found, problems)
}

type Found = (PathBuf, std::io::Result<fs::Metadata>);

/// The path an error of the walk is about, if it says.
fn problem_path(error: &ignore::Error) -> Option<&Path> {
    match error {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            problem_path(err)
        }
        ignore::Error::Partial(errors) => errors.first().and_then(problem_path),
        _ => None,
    }
}

/// `path` relative to `workspace`, `/`-separated; `None` for the workspace
/// itself or a name that is not UTF-8 (which a manifest cannot hold).
fn relative(workspace: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(workspace).ok()?;
    let text = rest.to_str()?;
    (!text.is_empty()).then(|| text.to_owned())
}
