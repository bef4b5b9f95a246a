//! The project's instructions for agents: the first of `[agent]
//! instructions_files` (AGENTS.md, then CLAUDE.md) that exists in the
//! workspace root, read once at the start of a run for the system prompt.
//!
//! The file is read as `fs_read` would read it, through the workspace jail
//! (a symlink out of the workspace is refused) and only if it is a regular
//! UTF-8 file; one that cannot be read is a warning, never a failure. Its
//! text is workspace content, so a conversation that holds it holds private
//! data from its first request, as if the model had read it with `fs_read`.

use std::path::Path;
use std::sync::Arc;

use mecha_core::{Jail, Taint, ToolOutput};
use mecha_tools::{FsRead, open_regular_file};

use crate::capped::{self, Capped};
use crate::wiring::Forcing;

/// The most of the file the system prompt carries: enough for any file
/// written to be read whole, small enough to keep every request's prefix
/// cheap. The rest stays in the file, where the prompt says it is.
pub const INSTRUCTIONS_MAX_BYTES: usize = 32 * 1024;

/// What the workspace holds for the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// None of the files exists; `looked_for` is the list that was tried.
    Absent { looked_for: Vec<String> },
    /// The first file that exists, read (up to the cap), and its size.
    Read {
        path: String,
        capped: Capped,
        size: u64,
    },
    /// The first file that exists cannot be used, and why.
    Unreadable { path: String, problem: String },
}

/// Finds and reads the instructions of the workspace at `workspace`. The
/// first file that exists is the one: one that cannot be read does not
/// make a fallback stand in for it, since the user meant the first.
pub fn find(workspace: &Path, files: &[String]) -> Found {
    for file in files {
        match workspace.join(file).symlink_metadata() {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                continue;
            }
            _ => {}
        }
        return match read(workspace, file) {
            Ok((capped, size)) => Found::Read {
                path: file.clone(),
                capped,
                size,
            },
            Err(problem) => Found::Unreadable {
                path: file.clone(),
                problem,
            },
        };
    }
    Found::Absent {
        looked_for: files.to_vec(),
    }
}

fn read(workspace: &Path, file: &str) -> Result<(Capped, u64), String> {
    let jail = Jail::open(workspace).map_err(|e| format!("cannot open the workspace: {e}"))?;
    let target = jail.resolve(file).map_err(|e| e.to_string())?;
    let opened = open_regular_file(&target).map_err(|e| e.to_string())?;
    let size = opened.metadata().map_err(|e| e.to_string())?.len();
    let capped = capped::read(opened, INSTRUCTIONS_MAX_BYTES, false).map_err(|e| e.to_string())?;
    Ok((capped, size))
}

impl Found {
    /// The system prompt's section for the file, if one was read: the
    /// same bytes for the same file, on every request of every run.
    pub fn prompt_section(&self) -> Option<String> {
        let Found::Read { path, capped, size } = self else {
            return None;
        };
        let mut section = format!(
            "# Project instructions ({path})\n\nThe workspace's {path}, which the project wrote \
             for agents working in it:\n\n{}",
            capped.text
        );
        if capped.cut {
            section.push_str(&format!(
                "\n\n[mecha cut {path} here: the first {} of its {size} bytes are above; fs_read \
                 {path} from line {} for the rest]",
                capped.text.len(),
                capped.next_line()
            ));
        }
        Some(section)
    }

    /// What a conversation that starts with the file holds: what `fs_read`
    /// of it would have added, with whatever config forces onto `fs_read`
    /// (`distrust_workspace` makes it untrusted too).
    pub fn taint(&self, forcing: &Forcing) -> Taint {
        let mut taint = Taint::default();
        if let Found::Read { capped, .. } = self {
            let fs_read = forcing.apply(Arc::new(FsRead));
            taint.record(fs_read.capabilities(), &ToolOutput::ok(capped.text.clone()));
        }
        taint
    }

    /// The warning a run prints when the file exists but cannot be used.
    pub fn warning(&self) -> Option<String> {
        match self {
            Found::Unreadable { path, problem } => Some(format!(
                "the project instructions file {path} cannot be read ({problem}); the run goes \
                 on without it"
            )),
            _ => None,
        }
    }

    /// One line for `mecha tools` (and `mecha config`): which file, its
    /// size and the cut, or why there is none.
    pub fn summary(&self) -> String {
        match self {
            Found::Absent { looked_for } if looked_for.is_empty() => {
                "instructions: none ([agent] instructions_files is empty)".to_owned()
            }
            Found::Absent { looked_for } => format!(
                "instructions: none (no {} in the workspace)",
                looked_for.join(" or ")
            ),
            Found::Read { path, capped, size } if capped.cut => format!(
                "instructions: {path} ({size} bytes; the first {} are sent, and the prompt says \
                 where the rest is)",
                capped.text.len()
            ),
            Found::Read { path, size, .. } => {
                format!("instructions: {path} ({size} bytes), sent whole")
            }
            Found::Unreadable { path, problem } => {
                format!("instructions: {path} cannot be read ({problem}); none are sent")
            }
        }
    }
}
