//! What a tool call gets to know about the run it is part of.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::image;
use crate::jail::{self, Jail, JailError, ResolvedPath};
use crate::spill::{self, CallSpills, DEFAULT_SPILL_MAX_BYTES, SpillDir, SpillingSink};
use crate::{ProgressSink, Taint, ToolOutput};

/// The context a tool runs in: the workspace jail, the spill directory, the
/// bytes this call's result may take, and which call it is.
///
/// Cheap to clone; clones share the jail and the spill directory.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    workspace: Jail,
    spill: Arc<SpillDir>,
    /// Canonical directories the writers' resolver refuses (mecha's home).
    protected: Arc<[PathBuf]>,
    /// Canonical directories no tool may read or write (mecha's
    /// credentials); a sandbox hides them.
    sealed: Arc<[PathBuf]>,
    /// Canonical directories whose files hold content from outside the
    /// machine (the session store: its sessions hold fetched pages).
    external_dirs: Arc<[PathBuf]>,
    /// The spill files this call wrote, labelled once its output is known.
    call_spills: Arc<CallSpills>,
    /// Where progress reports go; none outside a loop that shows them.
    progress: Option<ProgressSink>,
    /// Bytes this call's result may take in the transcript: its share of
    /// the turn budget, which the turn has already shared out.
    pub call_budget_bytes: usize,
    /// The model's id for this call.
    pub call_id: String,
    /// The turn (1-based) this call belongs to.
    pub turn: u32,
    /// Whether the model takes images: when not, a result's images are
    /// saved and replaced by a placeholder that says so.
    accepts_images: bool,
    /// What the conversation had taken in when this turn's calls were
    /// judged: a subagent's child starts from it.
    taint: Taint,
    /// The subagent whose call this is (`None`: the run's own agent), for
    /// a tool that shows a person who is asking.
    agent: Option<Arc<str>>,
}

impl ToolCtx {
    /// A context rooted at `workspace`, with a fresh spill directory. A call
    /// made with it directly may return `call_budget` bytes; a turn gives
    /// each of its calls its own share instead ([`for_call`](Self::for_call)).
    pub fn new(workspace: &Path, call_budget: usize) -> io::Result<Self> {
        Ok(Self {
            workspace: Jail::open(workspace)?,
            spill: Arc::new(SpillDir::new(DEFAULT_SPILL_MAX_BYTES)),
            call_spills: Arc::default(),
            protected: Arc::from(Vec::new()),
            sealed: Arc::from(Vec::new()),
            external_dirs: Arc::from(Vec::new()),
            progress: None,
            call_budget_bytes: call_budget,
            call_id: String::new(),
            turn: 1,
            accepts_images: true,
            taint: Taint::default(),
            agent: None,
        })
    }

    /// The same run, rooted somewhere else. The spill directory is fresh too,
    /// so two re-rooted contexts cannot read each other's output through it.
    pub fn rerooted(&self, workspace: &Path) -> io::Result<Self> {
        Ok(Self {
            workspace: Jail::open(workspace)?,
            spill: Arc::new(SpillDir::new(self.spill.max_file_bytes())),
            call_spills: Arc::default(),
            ..self.clone()
        })
    }

    /// The same context, with `dir` (and everything under it) refused to the
    /// writers: mecha's own config, skills and sessions must not be
    /// rewritten by a tool, even when the workspace contains them. Kept by
    /// [`rerooted`](Self::rerooted) and [`for_call`](Self::for_call).
    pub fn protecting(mut self, dir: &Path) -> Result<Self, JailError> {
        let mut protected = self.protected.to_vec();
        protected.push(jail::canonical_protected(dir)?);
        self.protected = Arc::from(protected);
        Ok(self)
    }

    /// The same context, with `dir` (and everything under it) refused to
    /// every tool, readers included: where mecha keeps the tokens of the
    /// servers the user logged into. Kept by [`rerooted`](Self::rerooted)
    /// and [`for_call`](Self::for_call).
    pub fn sealing(mut self, dir: &Path) -> Result<Self, JailError> {
        let mut sealed = self.sealed.to_vec();
        sealed.push(jail::canonical_protected(dir)?);
        self.sealed = Arc::from(sealed);
        Ok(self)
    }

    /// The directories [`sealing`](Self::sealing) keeps from every tool,
    /// canonical: a sandbox hides them too.
    pub fn sealed(&self) -> &[PathBuf] {
        &self.sealed
    }

    /// The directories [`protecting`](Self::protecting) keeps from the
    /// writers, canonical: a sandbox re-binds them read-only too.
    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// The same context, with every file at or under `dir` read as content
    /// from outside the machine: mecha's session store, whose sessions hold
    /// what earlier runs fetched, and which a workspace that contains
    /// `$MECHA_HOME` puts within the file tools' reach. Kept by
    /// [`rerooted`](Self::rerooted) and [`for_call`](Self::for_call).
    pub fn holding_external(mut self, dir: &Path) -> Result<Self, JailError> {
        let mut dirs = self.external_dirs.to_vec();
        dirs.push(jail::canonical_protected(dir)?);
        self.external_dirs = Arc::from(dirs);
        Ok(self)
    }

    /// Whether `file`, opened at `target`, holds content from outside the
    /// machine: a spill file of such a result (known by its inode, whatever
    /// name opened it), or a file under a directory given to
    /// [`holding_external`](Self::holding_external) (known by its canonical
    /// path, as the protected directories are). The one question every file
    /// tool that returns a file's content asks.
    pub fn reads_external(&self, target: &ResolvedPath, file: &std::fs::File) -> bool {
        self.external_dirs
            .iter()
            .any(|dir| target.absolute().starts_with(dir))
            || self.spill.holds_external(file)
    }

    /// The same context with spill files capped at `max` bytes each, in a
    /// fresh spill directory.
    pub fn with_spill_max_bytes(self, max: u64) -> Self {
        Self {
            spill: Arc::new(SpillDir::new(max)),
            ..self
        }
    }

    /// The same context, for a model that does (or does not) take images.
    #[must_use]
    pub fn with_images(mut self, accepts: bool) -> Self {
        self.accepts_images = accepts;
        self
    }

    /// Whether the model takes images in tool results.
    pub fn accepts_images(&self) -> bool {
        self.accepts_images
    }

    /// The same call with a smaller budget, its spill files still its own.
    pub(crate) fn with_call_budget(&self, call_budget: usize) -> Self {
        Self {
            call_budget_bytes: call_budget,
            ..self.clone()
        }
    }

    /// The same context, as part of a conversation with this taint.
    pub fn with_taint(self, taint: Taint) -> Self {
        Self { taint, ..self }
    }

    /// The same context, for the calls of the subagent `name`.
    pub fn with_agent(self, name: &str) -> Self {
        Self {
            agent: Some(Arc::from(name)),
            ..self
        }
    }

    /// The subagent whose call this is; `None` for the run's own agent.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The conversation's taint when this call was judged.
    pub fn taint(&self) -> Taint {
        self.taint
    }

    /// The same context, with progress reports going to `sink`. Kept by
    /// [`for_call`](Self::for_call), which names the call they are about.
    pub fn with_progress(self, sink: ProgressSink) -> Self {
        Self {
            progress: Some(sink),
            ..self
        }
    }

    /// Tells whoever watches the run how far this call has got (the latest
    /// report shows on the activity line). Without a sink, nothing happens.
    pub fn report_progress(&self, message: &str) {
        if let Some(sink) = &self.progress {
            sink.report(&self.call_id, message);
        }
    }

    /// The context for one call of a batch.
    pub fn for_call(&self, call_id: &str, turn: u32, call_budget: usize) -> Self {
        Self {
            call_id: call_id.to_owned(),
            turn,
            call_budget_bytes: call_budget,
            call_spills: Arc::default(),
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
        let resolved = match self.spill.jail() {
            Some(spill) => jail::resolve_in(&[&self.workspace, spill], requested)?,
            // Nothing has spilled: there is no spill file to read.
            None => jail::resolve_in(&[&self.workspace], requested)?,
        };
        jail::refuse_sealed(resolved, &self.sealed, requested)
    }

    /// Like [`resolve`](Self::resolve), but for tools that write: the spill
    /// directory is not an exception, and the protected directories are
    /// refused.
    pub fn resolve_in_workspace(&self, requested: &str) -> Result<ResolvedPath, JailError> {
        let resolved = jail::resolve_in(&[&self.workspace], requested)?;
        let resolved = jail::refuse_sealed(resolved, &self.sealed, requested)?;
        let resolved = jail::refuse_protected(resolved, &self.protected, requested)?;
        jail::refuse_git_dir(resolved, requested)
    }

    /// A sink that keeps a streaming result within `budget` bytes.
    pub fn sink<'a>(&'a self, tool: &'a str, budget: usize) -> SpillingSink<'a> {
        SpillingSink::new(&self.spill, &self.call_spills, tool, self.turn, budget)
    }

    /// Fits a finished result into this call's budget, spilling if needed.
    pub fn fit(&self, tool: &str, text: &str) -> String {
        spill::fit_text(
            text,
            &self.spill,
            &self.call_spills,
            tool,
            self.turn,
            self.call_budget_bytes,
        )
    }

    /// A new spill file of this call, for content that is not text.
    pub(crate) fn spill_file(&self, tool: &str, ext: &str) -> io::Result<(PathBuf, std::fs::File)> {
        self.spill
            .create_file(tool, self.turn, &self.call_spills, ext)
    }

    /// Fits a finished result (text and images) into this call's budget:
    /// see [`crate::image`].
    pub(crate) fn fit_output(&self, tool: &str, output: &mut ToolOutput) {
        let images = std::mem::take(&mut output.images);
        let (content, images) = image::fit_images(self, tool, &output.content, images);
        output.content = content;
        output.images = images;
    }

    /// Labels what this call spilled as content from outside the machine,
    /// so reading it back is marked external again.
    pub(crate) fn label_spills_external(&self) {
        self.spill.label_external(&self.call_spills);
    }
}
