//! `mecha chat`: a line-mode conversation. Each line is a prompt; the
//! session (history and taint) carries over between them.

use std::io::Write;
use std::path::Path;

use clap::Args;
use mecha_agent::{Agent, Event, EventSink, Outcome, Session};

use crate::Failure;
use crate::commands::RunOptions;
use crate::commands::run::EXIT_INTERRUPTED;
use crate::config::Settings;
use crate::render::{OutputFormat, sink};
use crate::wiring::build_agent;

#[derive(Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    options: RunOptions,
}

pub fn run(args: ChatArgs, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    let events = sink(OutputFormat::Text);
    let runtime = crate::runtime()?;
    let (agent, toolbox) = runtime.block_on(build_agent(settings, &args.options, workspace))?;
    let ended = converse(&runtime, &agent, events.as_ref());
    toolbox.shutdown();
    runtime.shutdown_background();
    ended
}

/// Reads prompts until an empty line or end of input.
fn converse(
    runtime: &tokio::runtime::Runtime,
    agent: &Agent,
    events: &dyn EventSink,
) -> Result<u8, Failure> {
    let mut session = Session::default();
    eprintln!("mecha chat: one prompt per line; an empty line or Ctrl-D ends it.");
    loop {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        // Ctrl-C at the prompt leaves chat; during a turn it stops the turn.
        let line = runtime.block_on(async {
            tokio::select! {
                line = crate::stdin::next_line() => Ok(line),
                () = crate::interrupted() => Err(()),
            }
        });
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => return Ok(0),
            Err(()) => return Ok(EXIT_INTERRUPTED),
        };
        let prompt = line.trim();
        if prompt.is_empty() {
            return Ok(0);
        }
        let before = session.messages.len();
        let outcome = runtime.block_on(async {
            tokio::select! {
                outcome = agent.send(&mut session, prompt, events) => Some(outcome),
                () = crate::interrupted() => None,
            }
        });
        if !matches!(outcome, Some(Ok(_))) {
            // A turn cut short leaves tool calls without results, which no
            // API accepts; forget the whole exchange instead.
            session.messages.truncate(before);
        }
        match outcome {
            None => eprintln!("\nmecha: interrupted; running tools were stopped"),
            Some(Err(e)) => crate::terminal::report(&e.to_string()),
            Some(Ok(Outcome::TurnLimit { turns })) => {
                eprintln!("mecha: stopped after {turns} model requests (--max-turns)")
            }
            Some(Ok(Outcome::Answered { text, stop_reason })) => events.emit(Event::Final {
                text,
                stop_reason: Some(stop_reason),
                turns: session.turns,
                usage: session.usage,
                taint: session.taint,
            }),
        }
    }
}
