//! mecha's workspace checkpoints: before the first call of a turn that can
//! change the workspace, the loop asks for a snapshot, and `mecha rewind`
//! and `mecha diff` read them back.
//!
//! Snapshots live in a store of mecha's own (under `$MECHA_HOME`, never in
//! the workspace): every file's bytes as a blob named by its SHA-256, so an
//! unchanged file costs nothing the second time, and one manifest per
//! snapshot (path → content, mode, or symlink target). The workspace is
//! walked here, by this crate, with `.gitignore` honoured as a set of
//! patterns read from files: git is never run and nothing of the
//! repository's configuration (`core.fsmonitor`, hooks, filters,
//! `include.path`) is read, so none of it can execute.
//!
//! It deliberately does not know about sessions, turns or the loop: the
//! caller says which snapshot to restore and which one is the last state it
//! knows of, and this crate says what changed in between.
//!
//! Why not gitoxide's object store (the design's first choice): `gix` is
//! a large dependency tree to build on the two-core machines this was
//! written on, and what checkpoints need of it (write a blob by hash, keep
//! a tree of listings) is a few hundred lines on `sha2`, which was already
//! in the tree. A git-compatible object format can replace this one behind
//! [`Store`] without changing its callers.

mod entries;
mod error;
mod ignores;
mod manifest;
mod prune;
mod restore;
mod store;
mod walk;
mod workspace;

pub use error::CheckpointError;
pub use manifest::{Change, Content, FileEntry, Manifest, changes, readable};
pub use prune::{PRUNE_GRACE, Pruned};
pub use restore::{Known, Restored, restore};
pub use store::Store;
pub use walk::Limits;
pub use workspace::WorkspaceCheckpoints;
