//! Walking a workspace into a manifest: `.gitignore` and `.ignore` read as
//! patterns (git is never run and its configuration never read), `.git/`
//! and the store itself left out, and size caps so that build output too
//! big to matter does not fill the store.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::CheckpointError;
use crate::ignores::{Frame, Included};
use crate::manifest::{Content, FileEntry, Manifest, name_key};
use crate::store::Store;

/// How much a snapshot takes in (`[checkpoint]` in mecha's config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// A file larger than this is left out (and left alone by a restore).
    pub max_file_bytes: u64,
    /// Once the files taken in add up to this, the rest are left out.
    pub max_snapshot_bytes: u64,
    /// Globs in `.gitignore`'s syntax, relative to the workspace: paths
    /// the ignore files leave out that are taken in anyway (`.env`). An
    /// ignored directory that matches is walked like any other.
    pub include_ignored: Vec<String>,
}

impl Limits {
    /// Whether every `include_ignored` glob is one: the first that is not,
    /// with why.
    pub fn check(&self) -> Result<(), CheckpointError> {
        Included::new(Path::new("/"), &self.include_ignored)
            .map(drop)
            .map_err(|(glob, reason)| CheckpointError::BadGlob { glob, reason })
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 << 20,
            max_snapshot_bytes: 1 << 30,
            include_ignored: Vec::new(),
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
    limits: &Limits,
) -> Result<Manifest, CheckpointError> {
    let started_ns = now_ns();
    let included = Included::new(workspace, &limits.include_ignored)
        .map_err(|(glob, reason)| CheckpointError::BadGlob { glob, reason })?;
    let (found, problems) = list(store, workspace, &included);
    let mut manifest = Manifest {
        workspace: workspace.to_path_buf(),
        started_ns,
        files: BTreeMap::new(),
        skipped: problems,
        listings: BTreeMap::new(),
    };
    let mut taken = 0u64;
    for Found {
        key: relative,
        path,
        meta,
    } in found
    {
        let path = path.as_path();
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
        let stat = |content| FileEntry {
            content,
            mode: meta.mode() & 0o7777,
            size: meta.len(),
            mtime_ns: mtime_ns(&meta),
            inode: meta.ino(),
        };
        if kind.is_dir() {
            manifest.files.insert(relative, stat(Content::Dir));
            continue;
        }
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

/// One entry the walk takes in: its manifest path, where it is, and what
/// `lstat` said of it.
struct Found {
    key: String,
    path: PathBuf,
    meta: std::io::Result<fs::Metadata>,
}

/// What the walk reads its rules from.
struct Walk<'a> {
    store_root: Option<PathBuf>,
    included: &'a Included,
    found: Vec<Found>,
    problems: Vec<(String, String)>,
}

/// Every path the walk takes in, in order; and what could not be walked
/// (a directory it may not read, an ignore file it cannot parse), by path,
/// which the snapshot then skips rather than fail the call it precedes.
fn list(
    store: &Store,
    workspace: &Path,
    included: &Included,
) -> (Vec<Found>, BTreeMap<String, String>) {
    let mut walk = Walk {
        store_root: fs::canonicalize(store.root()).ok(),
        included,
        found: Vec::new(),
        problems: Vec::new(),
    };
    let mut read_problems = Vec::new();
    let above = Frame::above(workspace, &mut read_problems);
    walk.dir(workspace, "", above.as_ref(), false, &mut read_problems);
    let mut problems: BTreeMap<String, String> = walk.problems.into_iter().collect();
    for (path, e) in read_problems {
        let at = relative(workspace, &path).unwrap_or_else(|| ".".to_owned());
        problems.insert(at, format!("not walked: {e}"));
    }
    (walk.found, problems)
}

impl Walk<'_> {
    /// Lists `dir` (manifest path `key`) and what is under it. An empty
    /// directory is itself an entry. An `ignored` one is entered only on
    /// the way to what `include_ignored` names, and gives only that.
    fn dir(
        &mut self,
        dir: &Path,
        key: &str,
        parent: Option<&Arc<Frame>>,
        ignored: bool,
        read_problems: &mut Vec<crate::ignores::Problem>,
    ) {
        let mut entries: Vec<fs::DirEntry> = match fs::read_dir(dir) {
            Ok(entries) => match entries.collect() {
                Ok(entries) => entries,
                Err(e) => return self.unwalked(key, e),
            },
            Err(e) => return self.unwalked(key, e),
        };
        if entries.is_empty() && !key.is_empty() && !ignored {
            let meta = fs::symlink_metadata(dir);
            self.found.push(Found {
                key: key.to_owned(),
                path: dir.to_path_buf(),
                meta,
            });
            return;
        }
        entries.sort_by_key(fs::DirEntry::file_name);
        let has = |name: &str| entries.iter().any(|e| e.file_name() == name);
        let own = Frame::of(dir, parent, has, read_problems);
        let frame = own.as_ref().or(parent);
        for entry in entries {
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let path = entry.path();
            // `d_type` from the listing: no `stat` for what is left out.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let name = name_key(&name);
            let child = match key {
                "" => name.into_owned(),
                key => format!("{key}/{name}"),
            };
            let left_out = (ignored || frame.is_some_and(|f| f.ignores(&path, is_dir)))
                && !self.included.includes(&path, is_dir);
            if is_dir {
                let on_route = left_out && self.included.leads_in(&child);
                if (!left_out || on_route) && self.store_root.as_deref() != Some(path.as_path()) {
                    self.dir(&path, &child, frame, on_route, read_problems);
                }
                continue;
            }
            if left_out {
                continue;
            }
            let meta = entry.metadata();
            self.found.push(Found {
                key: child,
                path,
                meta,
            });
        }
    }

    fn unwalked(&mut self, key: &str, e: std::io::Error) {
        let at = if key.is_empty() { "." } else { key };
        self.problems
            .push((at.to_owned(), format!("not walked: {e}")));
    }
}

/// `path` relative to `workspace`, as a manifest spells it; `None` for the
/// workspace itself or a path outside it.
fn relative(workspace: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(workspace).ok()?;
    let names: Vec<_> = rest.iter().map(name_key).collect();
    (!names.is_empty()).then(|| names.join("/"))
}
