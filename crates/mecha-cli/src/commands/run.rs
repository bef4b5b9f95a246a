//! `mecha run "task"`: one prompt, run to an answer.

use std::io::Read;
use std::path::Path;

use clap::Args;
use mecha_agent::{Agent, Event, EventSink, Outcome, Session};

use crate::Failure;
use crate::commands::RunOptions;
use crate::config::Settings;
use crate::render::{OutputFormat, sink};
use crate::wiring::build_agent;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The task. `-` reads it from stdin.
    prompt: String,
    #[command(flatten)]
    options: RunOptions,
    /// text (default), json (one object at the end), or stream-json (one
    /// object per event).
    #[arg(long, value_enum, default_value = "text")]
    output_format: OutputFormat,
}

/// Exit code when the run stopped at --max-turns.
pub const EXIT_TURN_LIMIT: u8 = 3;
/// Exit code when interrupted (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

pub fn run(args: RunArgs, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    let prompt = if args.prompt == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::Usage(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        args.prompt
    };
    if prompt.trim().is_empty() {
        return Err(Failure::Usage(
            "the prompt is empty; say what to do".to_owned(),
        ));
    }
    let events = sink(args.output_format);
    let runtime = crate::runtime()?;
    let code = runtime.block_on(async {
        let (agent, toolbox) = build_agent(settings, &args.options, workspace).await?;
        let code = drive(&agent, &prompt, events.as_ref()).await;
        toolbox.shutdown();
        code
    });
    // An approval question may still be waiting on stdin; do not wait for it.
    runtime.shutdown_background();
    code
}

/// Runs the prompt to its end, or until Ctrl-C, SIGTERM or SIGHUP.
async fn drive(agent: &Agent, prompt: &str, events: &dyn EventSink) -> Result<u8, Failure> {
    {
        let mut session = Session::default();
        let outcome = tokio::select! {
            outcome = agent.send(&mut session, prompt, events) => outcome,
            () = crate::interrupted() => {
                eprintln!("\nmecha: interrupted; running tools were stopped");
                return Ok(EXIT_INTERRUPTED);
            }
        };
        let outcome = outcome.map_err(|e| Failure::Run(e.into()))?;
        let (text, stop_reason, code) = match outcome {
            Outcome::Answered { text, stop_reason } => (text, Some(stop_reason), 0),
            Outcome::TurnLimit { turns } => {
                eprintln!(
                    "mecha: stopped after {turns} model requests (--max-turns); the task may be \
                     unfinished. Run again with a higher --max-turns to let it continue."
                );
                (String::new(), None, EXIT_TURN_LIMIT)
            }
        };
        events.emit(Event::Final {
            text,
            stop_reason,
            turns: session.turns,
            usage: session.usage,
            taint: session.taint,
        });
        Ok(code)
    }
}
