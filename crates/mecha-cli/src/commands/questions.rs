//! `mecha questions`: what delegated tasks asked their owner and wait for;
//! `answer` runs such a task on, the answer as its question's result.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use mecha_unattended::Question;

use crate::Failure;
use crate::commands::delegated::{Parking, Work, question_store};
use crate::commands::run::drive;
use crate::headless::RunStart;
use crate::render::{OutputFormat, sink};
use crate::session::{self, Resume, open_call_is};
use crate::terminal::printable;
use crate::wiring::{Asking, Start, build_agent};

#[derive(Args, Debug)]
pub struct QuestionsArgs {
    #[command(subcommand)]
    command: Option<QuestionsCommand>,
}

#[derive(Subcommand, Debug)]
enum QuestionsCommand {
    /// List the parked questions (the default): id, who asked, when, what.
    List,
    /// Answer a question: its task goes on from where it stopped, with the
    /// answer as the question's result, the same tools, skills and taint.
    Answer {
        /// The question's id (or a unique start of it).
        id: String,
        /// Your answer.
        answer: String,
        /// text (default), json or stream-json, as for `mecha run`.
        #[arg(long, value_enum, default_value = "text")]
        output_format: OutputFormat,
    },
    /// Drop a question unanswered; its task stays where it stopped.
    Dismiss {
        /// The question's id (or a unique start of it).
        id: String,
    },
}

pub fn run(args: QuestionsArgs, mcp_files: &[PathBuf]) -> Result<u8, Failure> {
    let store = question_store()?;
    match args.command.unwrap_or(QuestionsCommand::List) {
        QuestionsCommand::List => {
            let questions = store.list()?;
            if questions.is_empty() {
                println!("no questions wait for an answer");
            }
            for question in &questions {
                println!("{}", listed(question));
            }
            Ok(0)
        }
        QuestionsCommand::Dismiss { id } => {
            let question = store.get(&id)?;
            store.remove(&question.id)?;
            crate::output::err_line(&format!(
                "mecha: dismissed {}; its session {} stays where it stopped",
                question.id, question.session
            ));
            Ok(0)
        }
        QuestionsCommand::Answer {
            id,
            answer,
            output_format,
        } => {
            let question = store.get(&id)?;
            if answer.trim().is_empty() {
                return Err(Failure::Usage(
                    "the answer is empty; say what the task should know".into(),
                ));
            }
            run_on(&question, &answer, output_format, mcp_files)
        }
    }
}

/// One line of the list.
fn listed(question: &Question) -> String {
    let who = match &question.delegation.trigger {
        Some(trigger) => format!("trigger {trigger}"),
        None => format!("session {}", question.session),
    };
    let when = question
        .asked
        .get(..16)
        .unwrap_or(&question.asked)
        .replace('T', " ");
    printable(&format!(
        "{}  {who}  {when}  {}",
        question.id,
        question.question.replace('\n', " ")
    ))
    .into_owned()
}

/// Runs the parked task on with `answer`.
fn run_on(
    question: &Question,
    answer: &str,
    format: OutputFormat,
    mcp_files: &[PathBuf],
) -> Result<u8, Failure> {
    let workspace = crate::checked_workspace(&question.workspace)?;
    let settings = crate::load_settings(&crate::config::mecha_home()?, &workspace, mcp_files)?;
    for warning in &settings.warnings {
        crate::output::warning(warning);
    }
    let loaded = session::load(&Resume::Id(question.session.clone()), &workspace)?
        .ok_or_else(|| Failure::Usage(format!("session {} is gone", question.session)))?;
    if !open_call_is(&loaded.state.messages, &question.call_id) {
        return Err(Failure::Usage(format!(
            "session {} went on after this question was asked (it was resumed), so the answer \
             has no question to go to; `mecha questions dismiss {}` removes it",
            question.session, question.id
        )));
    }
    let options = Parking::options(&question.delegation);
    let events = sink(format, false);
    let start = Start {
        command: "run",
        resumed: Some(&loaded),
        replay: None,
        asking: Asking::Delegated,
        servers: None,
        answering: Some(&question.call_id),
    };
    crate::output::err_line(&format!(
        "mecha: answering {} in session {}",
        question.id, question.session
    ));
    let runtime = crate::runtime()?;
    let code = runtime.block_on(async {
        let started = build_agent(settings, &options, &workspace, start).await?;
        events.started(&RunStart {
            model: started.model.as_deref(),
            session_id: started.session_id.as_deref(),
            workspace: &workspace,
            toolbox: &started.toolbox,
        });
        // The answer is in the session from here on: the question is done.
        question_store()?.remove(&question.id)?;
        let work = Work::Answer(question.answered(answer), question.external.clone());
        let parking = Parking::resumed(question);
        let code = drive(
            &started.agent,
            started.session,
            work,
            events.as_ref(),
            Some(&parking),
        )
        .await;
        started.toolbox.shutdown();
        code
    });
    runtime.shutdown_background();
    code
}
