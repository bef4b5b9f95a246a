//! Checkpoints of the workspace, as the loop sees them: something that can
//! snapshot the workspace before a turn changes it. The store behind it
//! (`mecha-checkpoint`) is wired in by the binary.

/// A snapshot taken: its id in the store, and the paths that differ from
/// the snapshot before it (`/`-separated, relative to the workspace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub id: String,
    pub changed: Vec<String>,
}

/// Takes a snapshot of the workspace. Called before the first call of a
/// prompt that can change the workspace, and again when that prompt ends;
/// an error says why none could be taken.
pub trait Checkpointer: Send + Sync {
    fn checkpoint(&self) -> Result<Checkpoint, String>;
}
