//! Freeing the store: snapshots no session names any more go, and then
//! every blob no remaining snapshot reaches.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::error::CheckpointError;
use crate::store::Store;

/// What a prune freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub snapshots: u64,
    pub blobs: u64,
    pub bytes: u64,
}

/// How young a blob or snapshot is kept whatever refers to it: a running
/// session may have stored it a moment before journaling it.
pub const PRUNE_GRACE: Duration = Duration::from_secs(3600);

fn young(path: &Path, now: SystemTime, grace: Duration) -> bool {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| now.duration_since(t).unwrap_or_default() < grace)
}

impl Store {
    /// Removes every snapshot not in `keep` (nor a workspace's head, nor
    /// written within `grace`), then every blob the remaining snapshots do
    /// not use.
    pub fn prune(
        &self,
        keep: &BTreeSet<String>,
        grace: Duration,
    ) -> Result<Pruned, CheckpointError> {
        let now = SystemTime::now();
        let mut pruned = Pruned::default();
        let mut kept = Vec::new();
        let heads: BTreeSet<String> = read_dir(&self.root().join("heads"))?
            .into_iter()
            .filter_map(|p| fs::read_to_string(p).ok())
            .map(|id| id.trim().to_owned())
            .collect();
        for path in read_dir(&self.root().join("snapshots"))? {
            let Some(id) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
                continue;
            };
            if keep.contains(&id) || heads.contains(&id) || young(&path, now, grace) {
                kept.push(id);
                continue;
            }
            pruned.bytes += fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            fs::remove_file(&path).map_err(CheckpointError::io("remove", &path))?;
            pruned.snapshots += 1;
        }
        let mut used = BTreeSet::new();
        for id in &kept {
            used.extend(self.blobs_of(id)?);
        }
        for dir in read_dir(&self.root().join("objects"))? {
            let prefix = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_owned();
            for path in read_dir(&dir)? {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if used.contains(&format!("{prefix}{name}")) || young(&path, now, grace) {
                    continue;
                }
                pruned.bytes += fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                fs::remove_file(&path).map_err(CheckpointError::io("remove", &path))?;
                pruned.blobs += 1;
            }
        }
        Ok(pruned)
    }
}

fn read_dir(dir: &Path) -> Result<Vec<std::path::PathBuf>, CheckpointError> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(entries.flatten().map(|e| e.path()).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(CheckpointError::io("read", dir)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, WorkspaceCheckpoints};

    #[test]
    fn what_no_session_names_goes_and_what_one_does_stays_whole() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = Store::new(home.path());
        let checkpoints = WorkspaceCheckpoints::new(store.clone(), ws.path(), Limits::default());
        fs::write(ws.path().join("a"), b"kept").unwrap();
        let (named, _, _) = checkpoints.snapshot().unwrap();
        fs::write(ws.path().join("a"), b"dropped").unwrap();
        let (dropped, _, _) = checkpoints.snapshot().unwrap();
        fs::write(ws.path().join("a"), b"the head").unwrap();
        let (head, _, _) = checkpoints.snapshot().unwrap();
        let keep = BTreeSet::from([named.clone()]);

        let young = store.prune(&keep, PRUNE_GRACE).unwrap();
        assert_eq!(young, Pruned::default(), "nothing young goes");
        let pruned = store.prune(&keep, Duration::ZERO).unwrap();
        assert_eq!(pruned.snapshots, 1);
        assert_eq!(pruned.blobs, 2, "its content and its listing");
        assert!(store.load(&dropped).is_err());
        let restored = store.load(&named).unwrap();
        for id in [&named, &head] {
            for blob in store.blobs_of(id).unwrap() {
                store.blob(&blob).unwrap();
            }
        }
        assert!(restored.files.contains_key("a"));
    }
}
