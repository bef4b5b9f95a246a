//! One workspace's checkpoints, as the loop takes them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mecha_core::{Checkpoint, Checkpointer};

use crate::error::CheckpointError;
use crate::manifest::{Change, Manifest, changes};
use crate::store::Store;
use crate::walk::{Limits, scan};

/// Takes snapshots of one workspace into a store, each compared with the
/// one before (the store's head for the workspace, so a resumed session or
/// a second process reads only what changed).
#[derive(Debug)]
pub struct WorkspaceCheckpoints {
    store: Store,
    workspace: PathBuf,
    limits: Limits,
    last: Mutex<Option<Manifest>>,
}

impl WorkspaceCheckpoints {
    pub fn new(store: Store, workspace: &Path, limits: Limits) -> Self {
        let last = store.head(workspace);
        Self {
            store,
            workspace: workspace.to_path_buf(),
            limits,
            last: Mutex::new(last),
        }
    }

    /// Snapshots the workspace now: its id, its manifest and the paths
    /// that differ from the snapshot before.
    pub fn snapshot(&self) -> Result<(String, Manifest, Vec<Change>), CheckpointError> {
        self.take(Manifest::clone)
    }

    /// Snapshots the workspace, keeping the manifest for the next one;
    /// `copy` takes what the caller wants of it (the loop wants nothing, and
    /// a copy of every entry is worth skipping on its path).
    fn take<T>(
        &self,
        copy: impl FnOnce(&Manifest) -> T,
    ) -> Result<(String, T, Vec<Change>), CheckpointError> {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut manifest = scan(&self.store, &self.workspace, last.as_ref(), &self.limits)?;
        let changed = match last.as_ref() {
            Some(previous) => changes(previous, &manifest),
            None => Vec::new(),
        };
        let id = self.store.save(&mut manifest, last.as_ref())?;
        let copied = copy(&manifest);
        *last = Some(manifest);
        Ok((id, copied, changed))
    }
}

impl Checkpointer for WorkspaceCheckpoints {
    fn checkpoint(&self) -> Result<Checkpoint, String> {
        let (id, (), changed) = self.take(|_| ()).map_err(|e| e.to_string())?;
        Ok(Checkpoint {
            id,
            changed: changed.iter().map(|c| c.path().to_owned()).collect(),
        })
    }
}
