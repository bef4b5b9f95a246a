//! Delegated tasks: a run nobody watches (a trigger's, or `mecha run
//! --delegate`). Nobody is asked to approve, and the model's question to
//! its owner parks the task: the question is stored with the turn it
//! interrupted, the run ends with exit code 5, and `mecha questions answer`
//! runs the task on with the answer as the question's result.

use std::path::{Path, PathBuf};

use mecha_agent::{Parked, SessionSource};
use mecha_core::Message;
use mecha_unattended::QuestionStore;
use mecha_unattended::questions::{Delegation, Question};

use crate::Failure;
use crate::commands::RunOptions;

/// What a run does: prompts to send, or a parked task's answered turn.
pub enum Work<'a> {
    Prompts(SessionSource, &'a [String]),
    /// The interrupted turn's results, the answer among them, and which of
    /// them came from outside.
    Answer(Message, Vec<String>),
}

/// Where a delegated run parks its question, and what it needs to be run
/// on the same way.
#[derive(Debug, Clone)]
pub struct Parking {
    delegation: Delegation,
    workspace: PathBuf,
    session: Option<String>,
}

/// The store of parked questions.
pub fn question_store() -> Result<QuestionStore, Failure> {
    Ok(QuestionStore::new(
        crate::config::mecha_home()?.join("questions"),
    ))
}

impl Parking {
    /// For a run with `options`, started by `trigger` (if one did).
    pub fn new(options: &RunOptions, trigger: Option<&str>, workspace: &Path) -> Self {
        Self {
            delegation: Delegation {
                trigger: trigger.map(str::to_owned),
                tools: options.tools.clone(),
                skills: options.skills.clone(),
                no_skills: options.no_skills,
                model: options.model.clone(),
                max_turns: options.max_turns,
            },
            workspace: workspace.to_owned(),
            session: None,
        }
    }

    /// The same, for a run of the stored session `id` (`None`: unsaved).
    pub fn in_session(self, id: Option<&str>) -> Self {
        Self {
            session: id.map(str::to_owned),
            ..self
        }
    }

    /// Stores the question; returns what to tell the person who will find
    /// the run ended.
    pub fn park(
        &self,
        parked: &Parked,
        results: Message,
        external: Vec<String>,
    ) -> Result<String, Failure> {
        let Some(session) = &self.session else {
            return Err(Failure::Run(anyhow::anyhow!(
                "the task asked its owner \"{}\" and cannot wait for the answer: this session is \
                 not saved (see the warning above), so there is nothing to resume",
                parked.question
            )));
        };
        let question = question_store()?.park(Question {
            id: String::new(),
            session: session.clone(),
            workspace: self.workspace.clone(),
            asked: String::new(),
            question: parked.question.clone(),
            call_id: parked.call_id.clone(),
            results,
            external,
            delegation: self.delegation.clone(),
        })?;
        Ok(format!(
            "waiting for an answer: the task asks \"{}\". Answer it with `mecha questions answer \
             {} \"…\"` and the task goes on; `mecha questions` lists what waits",
            question.question, question.id
        ))
    }

    /// The options to run a parked task on with, as it first ran.
    pub fn options(delegation: &Delegation) -> RunOptions {
        RunOptions {
            tools: delegation.tools.clone(),
            skills: delegation.skills.clone(),
            no_skills: delegation.no_skills,
            model: delegation.model.clone(),
            max_turns: delegation.max_turns,
            ..RunOptions::default()
        }
    }

    /// The parking of a parked task run on.
    pub fn resumed(question: &Question) -> Self {
        Self {
            delegation: question.delegation.clone(),
            workspace: question.workspace.clone(),
            session: Some(question.session.clone()),
        }
    }
}
