//! A run's session on disk: which one a run starts from (fresh, `--resume
//! ID`, `--continue`), what a resume restores into the loop's `Session`,
//! and the stored model turns `--replay` plays back.
//!
//! Resuming never disarms anything: the taint, the narrowed tool surface
//! and the loaded skills come back as the session recorded them.

use std::path::Path;
use std::sync::Arc;

use mecha_agent::{ChildJournals, Session, Surface, typed_prompt};
use mecha_core::{Journal, Record, Registry, Role, close_dangling_calls};
use mecha_provider::{Script, ScriptTurn};
use mecha_session::{Loaded, NewSession, Writer};

use crate::Failure;
use crate::commands::sessions::{failure, store};
use crate::terminal::printable;

/// Which stored session a run starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// A new session.
    Fresh,
    /// `--resume ID` (or a unique prefix of it).
    Id(String),
    /// `--continue`: the newest session of this workspace.
    Latest,
}

impl Resume {
    /// What `--resume ID` and `--continue` ask for (clap lets one through).
    pub fn chosen(id: Option<String>, latest: bool) -> Self {
        match (id, latest) {
            (Some(id), _) => Self::Id(id),
            (None, true) => Self::Latest,
            (None, false) => Self::Fresh,
        }
    }
}

/// The session to resume, if any, checked against this workspace before
/// anything starts. What loading noticed (a torn last line) is said.
pub fn load(resume: &Resume, workspace: &Path) -> Result<Option<Loaded>, Failure> {
    let store = store()?;
    let loaded = match resume {
        Resume::Fresh => return Ok(None),
        Resume::Id(id) => store.load(id).map_err(failure)?,
        Resume::Latest => store
            .latest_in(workspace)
            .map_err(failure)?
            .ok_or_else(|| {
                Failure::Usage(format!(
                    "there is no session to continue in {}; `mecha sessions list` shows every \
                     session and its workspace",
                    workspace.display()
                ))
            })?,
    };
    for warning in &loaded.warnings {
        crate::output::warning(warning);
    }
    same_workspace(&loaded, workspace)?;
    Ok(Some(loaded))
}

/// What a resumed session brings back, for the user.
pub fn resumed_line(loaded: &Loaded) -> String {
    let turns = loaded.state.turns;
    let plural = if turns == 1 { "" } else { "s" };
    printable(&format!(
        "resumed session {} ({turns} turn{plural} so far); its history, taint and loaded skills \
         are back",
        loaded.header.id
    ))
    .into_owned()
}

/// The line left when a conversation ends, saying how to go on with it
/// (`command`: `mecha` for the screen, `mecha chat` for chat).
pub fn resume_hint(command: &str, id: &str) -> String {
    printable(&format!(
        "mecha: to go on with this session: `{command} --resume {id}` (or `{command} --continue` \
         for this workspace's newest)"
    ))
    .into_owned()
}

/// A session resumes only in its own workspace: its paths, its history
/// and its taint are about that directory.
fn same_workspace(loaded: &Loaded, workspace: &Path) -> Result<(), Failure> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let theirs = canonical(&loaded.header.workspace);
    if theirs == canonical(workspace) {
        return Ok(());
    }
    Err(Failure::Usage(
        printable(&format!(
            "session {} belongs to the workspace {}, not {}; resume it from there (mecha -C {} run \
         --resume {} ...)",
            loaded.header.id,
            theirs.display(),
            workspace.display(),
            theirs.display(),
            loaded.header.id
        ))
        .into_owned(),
    ))
}

/// Where this run's records go: a new session file, or the resumed one,
/// appended to. A store that cannot be written is a warning, not a failure:
/// the run goes on unsaved.
pub fn writer(
    resumed: Option<&Loaded>,
    workspace: &Path,
    model: &str,
    command: &str,
) -> Result<Option<Arc<Writer>>, Failure> {
    let report = || -> Box<dyn Fn(&str) + Send + Sync> {
        Box::new(|problem: &str| {
            crate::output::warning(&format!("the session is no longer being saved: {problem}"));
        })
    };
    match resumed {
        Some(loaded) => Writer::reopen(loaded)
            .map(|w| Some(Arc::new(w.on_failure(report()))))
            .map_err(failure),
        None => {
            let new = NewSession {
                workspace,
                model,
                command,
                parent: None,
            };
            match store()?.create(new) {
                Ok(w) => Ok(Some(Arc::new(w.on_failure(report())))),
                Err(e) => {
                    crate::output::warning(&format!("this session is not saved: {e}"));
                    Ok(None)
                }
            }
        }
    }
}

/// The loop's session for a resumed one: its last (compacted) history,
/// taint, surface, turns and usage, and each tool's saved state handed
/// back. A call the stored history left without a result (mecha was
/// killed mid-turn) gets one that says so, journaled, unless it is the
/// parked call `answering` names, whose result the answer brings.
pub fn restore(
    loaded: &Loaded,
    registry: &Registry,
    journal: Option<&dyn Journal>,
    answering: Option<&str>,
) -> Session {
    let state = &loaded.state;
    let mut session = Session {
        messages: state.messages.clone().into(),
        taint: state.taint,
        surface: state
            .surface
            .clone()
            .map(|(by, tools)| Surface::restored(by, tools)),
        usage: state.usage,
        turns: state.turns,
        saved: state.tool_states.clone(),
        attached: state.attached.clone(),
        prompts: state.prompts,
        ..Session::default()
    };
    let closed = match answering {
        Some(call) if open_call_is(&session.messages, call) => None,
        _ => close_dangling_calls(session.messages.edit()),
    };
    if let (Some(added), Some(journal)) = (closed, journal) {
        journal.append(&Record::Message {
            message: added.clone(),
            external: Vec::new(),
        });
        journal.sync();
    }
    for (name, saved) in &state.tool_states {
        let problem = match registry.get(name) {
            Some(tool) => tool.restore_state(saved.clone()).err(),
            None => Some(format!(
                "`{name}` held state in this session but is not among this run's tools"
            )),
        };
        if let Some(problem) = problem {
            crate::output::warning(&problem);
        }
    }
    session
}

/// Whether the history ends with the model's turn holding the call `id`,
/// its results not yet in: the state a parked task is stored in.
pub fn open_call_is(messages: &[mecha_core::Message], id: &str) -> bool {
    messages.last().is_some_and(|last| {
        last.role == Role::Assistant
            && last
                .content
                .iter()
                .any(|b| matches!(b, mecha_core::Block::ToolUse(call) if call.id == id))
    })
}

/// What `--replay` plays: the prompts a person gave, in order, and every
/// model turn of the main loop (summaries are not turns), as a script.
pub struct Replay {
    pub prompts: Vec<String>,
    pub script: Script,
}

impl Replay {
    pub fn of(loaded: &Loaded) -> Self {
        let mut prompts = Vec::new();
        let mut turns = Vec::new();
        for entry in &loaded.entries {
            let Record::Message { message, .. } = &entry.record else {
                continue;
            };
            match message.role {
                Role::Assistant => turns.push(ScriptTurn::from_message(message)),
                Role::User => {
                    if let Some(prompt) = typed_prompt(message) {
                        prompts.push(prompt.to_owned());
                    }
                }
            }
        }
        Self {
            prompts,
            script: Script { turns },
        }
    }
}

/// Where a run's subagents keep their conversations: a session each, in
/// the same store, whose header names the parent's.
pub struct ChildSessions {
    pub workspace: std::path::PathBuf,
    pub parent: String,
}

impl ChildJournals for ChildSessions {
    fn open(&self, subagent: &str, model: &str) -> Option<Arc<dyn Journal>> {
        let new = NewSession {
            workspace: &self.workspace,
            model,
            command: "subagent",
            parent: Some(&self.parent),
        };
        let created = store().and_then(|s| s.create(new).map_err(failure));
        match created {
            Ok(writer) => {
                let who = subagent.to_owned();
                let writer = writer.on_failure(Box::new(move |problem: &str| {
                    crate::output::warning(&format!(
                        "subagent `{who}`'s conversation is no longer being \
                         saved: {problem}"
                    ));
                }));
                Some(Arc::new(writer) as Arc<dyn Journal>)
            }
            Err(e) => {
                crate::output::warning(&format!(
                    "subagent `{subagent}`'s conversation is not saved: {e}"
                ));
                None
            }
        }
    }
}
