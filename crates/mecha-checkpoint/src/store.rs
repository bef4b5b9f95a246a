//! The store on disk: blobs by SHA-256 under `objects/` (file contents,
//! and each directory's listing, as git keeps trees, so a snapshot adds
//! only the listings of the directories that changed), snapshots by the
//! SHA-256 of their text under `snapshots/`, and under `heads/` the last
//! snapshot of each workspace (what the next walk compares against).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::CheckpointError;
use crate::manifest::{Content, FileEntry, Manifest, side_by_side};

/// A snapshot as stored: each directory's entries are a blob of their own.
#[derive(Serialize, Deserialize)]
struct Stored {
    workspace: PathBuf,
    started_ns: u64,
    /// Directory (`""` for the workspace's top) → the blob of its files.
    dirs: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    skipped: BTreeMap<String, String>,
}

/// A directory's files, by name.
type Listing<'a> = BTreeMap<&'a str, &'a FileEntry>;

/// A path's directory and name, as the stored listings split it.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// A checkpoint store rooted at a directory of mecha's own.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// Lowercase hex of the SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Store {
    /// The store at `root`; directories are made on first write.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn blob_path(&self, sha256: &str) -> PathBuf {
        let (dir, rest) = sha256.split_at(sha256.len().min(2));
        self.root.join("objects").join(dir).join(rest)
    }

    fn snapshot_path(&self, id: &str) -> PathBuf {
        self.root.join("snapshots").join(format!("{id}.json"))
    }

    fn head_path(&self, workspace: &Path) -> PathBuf {
        let key = sha256_hex(workspace.as_os_str().as_encoded_bytes());
        self.root.join("heads").join(key)
    }

    /// Stores `bytes` (once: a blob already there is not written again) and
    /// returns its name.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, CheckpointError> {
        let sha256 = sha256_hex(bytes);
        let path = self.blob_path(&sha256);
        if !path.exists() {
            write_atomically(&path, bytes)?;
        }
        Ok(sha256)
    }

    /// The bytes of blob `sha256`, checked against their name.
    pub fn blob(&self, sha256: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.blob_path(sha256);
        let bytes = fs::read(&path).map_err(CheckpointError::io("read", &path))?;
        if sha256_hex(&bytes) != sha256 {
            return Err(CheckpointError::Corrupt {
                path,
                reason: "its content does not match its name".into(),
            });
        }
        Ok(bytes)
    }

    /// Stores `manifest` and returns its id, and makes it the workspace's
    /// head. A directory whose entries are those it had in `previous`
    /// keeps its listing blob without writing or hashing it again.
    pub fn save(
        &self,
        manifest: &mut Manifest,
        previous: Option<&Manifest>,
    ) -> Result<String, CheckpointError> {
        let encoding = |e: serde_json::Error| CheckpointError::Corrupt {
            path: self.root.clone(),
            reason: e.to_string(),
        };
        // A directory none of whose entries changed in any way (nor came
        // nor went) since `previous` keeps its listing; only the others are
        // grouped, encoded and hashed.
        let dirty: BTreeSet<&str> = previous.map_or_else(BTreeSet::new, |previous| {
            side_by_side(&previous.files, &manifest.files)
                .filter(|(_, a, b)| a != b)
                .map(|(path, _, _)| split(path).0)
                .collect()
        });
        let kept = |dir: &str| {
            previous
                .filter(|_| !dirty.contains(dir))
                .and_then(|p| p.listings.get(dir))
        };
        let mut listings = BTreeMap::new();
        let mut fresh: BTreeMap<&str, Listing<'_>> = BTreeMap::new();
        for (path, entry) in &manifest.files {
            let (dir, name) = split(path);
            if listings.contains_key(dir) {
                continue;
            }
            match kept(dir) {
                Some(blob) => {
                    listings.insert(dir.to_owned(), blob.clone());
                }
                None => {
                    fresh.entry(dir).or_default().insert(name, entry);
                }
            }
        }
        for (dir, files) in fresh {
            let blob = self.put_blob(&serde_json::to_vec(&files).map_err(encoding)?)?;
            listings.insert(dir.to_owned(), blob);
        }
        let stored = Stored {
            workspace: manifest.workspace.clone(),
            started_ns: manifest.started_ns,
            dirs: listings.clone(),
            skipped: manifest.skipped.clone(),
        };
        manifest.listings = listings;
        let text = serde_json::to_vec(&stored).map_err(encoding)?;
        let id = sha256_hex(&text);
        let path = self.snapshot_path(&id);
        if !path.exists() {
            write_atomically(&path, &text)?;
        }
        write_atomically(&self.head_path(&manifest.workspace), id.as_bytes())?;
        Ok(id)
    }

    /// Snapshot `id` as stored, its listings not yet read.
    fn stored(&self, id: &str) -> Result<Stored, CheckpointError> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CheckpointError::Missing {
                id: id.to_owned(),
                store: self.root.clone(),
            });
        }
        let path = self.snapshot_path(id);
        let text = match fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CheckpointError::Missing {
                    id: id.to_owned(),
                    store: self.root.clone(),
                });
            }
            Err(e) => return Err(CheckpointError::io("read", &path)(e)),
        };
        serde_json::from_slice(&text).map_err(|e| CheckpointError::Corrupt {
            path,
            reason: e.to_string(),
        })
    }

    /// The manifest of snapshot `id`.
    pub fn load(&self, id: &str) -> Result<Manifest, CheckpointError> {
        let stored = self.stored(id)?;
        let corrupt = |path: &Path, e: serde_json::Error| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut files = BTreeMap::new();
        for (dir, listing) in &stored.dirs {
            let bytes = self.blob(listing)?;
            let entries: BTreeMap<String, FileEntry> =
                serde_json::from_slice(&bytes).map_err(|e| corrupt(&self.blob_path(listing), e))?;
            for (name, entry) in entries {
                let path = match dir.as_str() {
                    "" => name,
                    dir => format!("{dir}/{name}"),
                };
                files.insert(path, entry);
            }
        }
        Ok(Manifest {
            workspace: stored.workspace,
            started_ns: stored.started_ns,
            files,
            skipped: stored.skipped,
            listings: stored.dirs,
        })
    }

    /// Every blob snapshot `id` uses: its directory listings and its files'
    /// contents.
    pub(crate) fn blobs_of(&self, id: &str) -> Result<BTreeSet<String>, CheckpointError> {
        let stored = self.stored(id)?;
        let mut blobs: BTreeSet<String> = stored.dirs.values().cloned().collect();
        for entry in self.load(id)?.files.values() {
            if let Content::File { sha256 } = &entry.content {
                blobs.insert(sha256.clone());
            }
        }
        Ok(blobs)
    }

    /// The last snapshot taken of `workspace`, if the store has one it can
    /// read (a damaged head only costs the next walk its shortcut).
    pub fn head(&self, workspace: &Path) -> Option<Manifest> {
        let id = fs::read_to_string(self.head_path(workspace)).ok()?;
        self.load(id.trim()).ok()
    }

    /// The bytes the store takes on disk and how many files it holds.
    pub fn size(&self) -> (u64, u64) {
        fn add(dir: &Path, total: &mut (u64, u64)) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                match entry.metadata() {
                    Ok(meta) if meta.is_dir() => add(&entry.path(), total),
                    Ok(meta) => {
                        total.0 += meta.len();
                        total.1 += 1;
                    }
                    Err(_) => {}
                }
            }
        }
        let mut total = (0, 0);
        add(&self.root, &mut total);
        total
    }
}

/// Writes `bytes` to a fresh file beside `path` and renames it into place,
/// so a reader never sees half a blob. The store holds copies of whatever
/// the workspace held, secrets included: directories are made 0700 and
/// files 0600, as the sessions are.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(CheckpointError::io("create", dir))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("blob");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(CheckpointError::io("create", &tmp))?;
    file.write_all(bytes)
        .map_err(CheckpointError::io("write", &tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(CheckpointError::io("rename into", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_stored_once_and_read_back_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let a = store.put_blob(b"hello").unwrap();
        let b = store.put_blob(b"hello").unwrap();
        assert_eq!(a, b);
        assert_eq!(store.size().1, 1, "the same bytes are one blob");
        assert_eq!(store.blob(&a).unwrap(), b"hello");
        fs::write(store.blob_path(&a), b"tampered").unwrap();
        assert!(matches!(
            store.blob(&a),
            Err(CheckpointError::Corrupt { .. })
        ));
    }

    #[test]
    fn the_store_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("checkpoints"));
        let blob = store.put_blob(b"a secret").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.root()), 0o700);
        assert_eq!(mode(&store.root().join("objects")), 0o700);
        assert_eq!(mode(&store.blob_path(&blob)), 0o600);
    }

    #[test]
    fn an_id_that_is_not_hex_is_missing_not_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        assert!(matches!(
            store.load("../../etc/passwd"),
            Err(CheckpointError::Missing { .. })
        ));
    }
}
