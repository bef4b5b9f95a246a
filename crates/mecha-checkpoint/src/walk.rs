//! Walking a workspace into a manifest: the entries `entries.rs` lists
//! (`.gitignore` and `.ignore` read as patterns, git never run and its
//! configuration never read, `.git/` and the store itself left out), size
//! caps so that build output too big to matter does not fill the store, and
//! a file read again only when it may have changed.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::entries::list;
use crate::error::CheckpointError;
use crate::ignores::Included;
use crate::manifest::{Content, FileEntry, Manifest, target_key};
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
    // The walk gives files in path order, so the previous snapshot's entry
    // for each is found by stepping along it, not by a search per file.
    let mut earlier = previous.map(|p| p.files.iter().peekable());
    let mut files = Vec::with_capacity(found.len());
    for (relative, path, meta) in found {
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
            files.push((relative, stat(Content::Dir)));
            continue;
        }
        if kind.is_symlink() {
            let target = fs::read_link(path).map_err(CheckpointError::io("read the link", path))?;
            let target = target_key(target.as_os_str());
            files.push((relative, stat(Content::Symlink { target })));
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
        let old = earlier.as_mut().and_then(|files| {
            while files
                .next_if(|(p, _)| p.as_str() < relative.as_str())
                .is_some()
            {}
            files
                .peek()
                .filter(|(p, _)| **p == relative)
                .map(|(_, e)| *e)
        });
        let known = previous.zip(old).and_then(|(p, old)| {
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
        files.push((relative, FileEntry { content, ..fresh }));
    }
    // In order already, so this builds the map without a search per entry.
    manifest.files = files.into_iter().collect();
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    /// Files whose size, time and inode did not move are not read again:
    /// each must be found in the previous snapshot, whatever its name.
    /// (Content changed behind an unchanged size and time is what git
    /// misses too; here it proves the file was not read.)
    #[test]
    fn an_unmoved_file_is_found_in_the_last_snapshot_and_not_read() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = ws.path();
        let names: [&[u8]; 8] = [
            b"x.txt",
            b"x/in",
            b"x/in.d/f",
            b"x0",
            b"x-",
            b"\xff",
            b"x/\xfe",
            b"y/z",
        ];
        for name in names {
            let path = root.join(OsStr::from_bytes(name));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, b"one").unwrap();
        }
        fs::create_dir(root.join("x.d")).unwrap();
        let store = Store::new(home.path());
        let first = scan(&store, root, None, &Limits::default()).unwrap();
        assert_eq!(first.files.len(), names.len() + 1);
        for name in names {
            let path = root.join(OsStr::from_bytes(name));
            let mtime = fs::metadata(&path).unwrap().modified().unwrap();
            fs::write(&path, b"two").unwrap();
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(mtime)
                .unwrap();
        }
        let second = scan(&store, root, Some(&first), &Limits::default()).unwrap();
        assert_eq!(second.files, first.files, "every file was read again");
    }

    /// Enough entries that they are looked at on several threads: each
    /// still gets its own `lstat`, in order.
    #[test]
    fn many_entries_are_looked_at_in_order() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = ws.path();
        for n in 0..3000usize {
            let dir = root.join(format!("d{}", n % 7));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(format!("f{n}")), vec![b'x'; n % 13]).unwrap();
        }
        let store = Store::new(home.path());
        let manifest = scan(&store, root, None, &Limits::default()).unwrap();
        assert_eq!(manifest.files.len(), 3000);
        for n in 0..3000usize {
            let entry = &manifest.files[&format!("d{}/f{n}", n % 7)];
            assert_eq!(entry.size, (n % 13) as u64);
        }
    }
}
