//! What a tool call gets to know about the run it is part of.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::jail::{self, Jail, JailError, ResolvedPath};
use crate::spill::{self, SpillDir, SpillingSink};

/// The context a tool runs in: the workspace jail, the spill directory, the
/// bytes this call's result may take, and which call it is.
///
/// Cheap to clone; clones share the jail and the spill directory.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    workspace: Jail,
    spill: Arc<SpillDir>,
    /// Bytes this call's result may take in the transcript: its share of
    /// the turn budget, which the turn has already shared out.
    pub call_budget_bytes: usize,
    /// The model's id for this call.
    pub call_id: String,
    /// The turn (1-based) this call belongs to.
    pub turn: u32,
}

impl ToolCtx {
    /// A context rooted at `workspace`, with a fresh spill directory. A call
    /// made with it directly may return `call_budget` bytes; a turn gives
    /// each of its calls its own share instead ([`for_call`](Self::for_call)).
    pub fn new(workspace: &Path, call_budget: usize) -> io::Result<Self> {
        Ok(Self {
            workspace: Jail::open(workspace)?,
            spill: Arc::new(SpillDir::create()?),
            call_budget_bytes: call_budget,
            call_id: String::new(),
            turn: 1,
        })
    }

    /// The same run, rooted somewhere else. The spill directory is fresh too,
    /// so two re-rooted contexts cannot read each other's output through it.
    pub fn rerooted(&self, workspace: &Path) -> io::Result<Self> {
        Ok(Self {
            workspace: Jail::open(workspace)?,
            spill: Arc::new(SpillDir::create()?),
            ..self.clone()
        })
    }

    /// The context for one call of a batch.
    pub fn for_call(&self, call_id: &str, turn: u32, call_budget: usize) -> Self {
        Self {
            call_id: call_id.to_owned(),
            turn,
            call_budget_bytes: call_budget,
            ..self.clone()
        }
    }

    /// The canonical workspace root.
    pub fn workspace(&self) -> &Path {
        self.workspace.root()
    }

    /// The spill directory of this context.
    pub fn spill(&self) -> &SpillDir {
        &self.spill
    }

    /// Judges a model-supplied path. Relative paths join the workspace; the
    /// result lies in the workspace or, as the one exception, in this
    /// context's spill directory.
    pub fn resolve(&self, requested: &str) -> Result<ResolvedPath, JailError> {
        jail::resolve_in(&[&self.workspace, self.spill.jail()], requested)
    }

    /// Like [`resolve`](Self::resolve), but the spill directory is not an
    /// exception: for tools that write.
    pub fn resolve_in_workspace(&self, requested: &str) -> Result<ResolvedPath, JailError> {
        jail::resolve_in(&[&self.workspace], requested)
    }

    /// A sink that keeps this call's result within its budget as it streams.
    pub fn sink<'a>(&'a self, tool: &'a str) -> SpillingSink<'a> {
        SpillingSink::new(&self.spill, tool, self.turn, self.call_budget_bytes)
    }

    /// Fits a finished result into this call's budget, spilling if needed.
    pub fn fit(&self, tool: &str, text: &str) -> String {
        spill::fit_text(text, &self.spill, tool, self.turn, self.call_budget_bytes)
    }
}
