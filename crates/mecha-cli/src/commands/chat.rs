//! `mecha chat`: a line-mode conversation. Each line is a prompt (a line
//! ending in `\`, or lines pasted together, make one); the session
//! (history and taint) carries over between them.

use std::path::Path;

use clap::Args;
use mecha_agent::{Agent, AgentError, AskedCompaction, EventSink, Outcome, Session, SessionSource};
use mecha_core::{PermissionMode, ToolCtx};

use crate::Failure;
use crate::commands::RunOptions;
use crate::commands::modes::{APPROVED, PLAN_READY};
use crate::commands::run::{EXIT_INTERRUPTED, INTERRUPTED, finish_with_notice, reported};
use crate::commands::slash::{self, Front, Slash};
use crate::commands::typed;
use crate::config::Settings;
use crate::output;
use crate::render::{OutputFormat, sink};
use crate::session::{self, Resume};
use crate::stdin::Prompt;
use crate::wiring::{Asking, Start, Started, Toolbox, build_agent};

#[derive(Args, Debug)]
pub struct ChatArgs {
    /// Go on with a stored session (its id, or a unique start of it).
    #[arg(long, value_name = "ID", conflicts_with = "continue_latest")]
    resume: Option<String>,
    /// Go on with the newest session of this workspace.
    #[arg(long = "continue")]
    continue_latest: bool,
    #[command(flatten)]
    options: RunOptions,
}

pub fn run(args: ChatArgs, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    let events = sink(OutputFormat::Text, args.options.quiet);
    let resume = Resume::chosen(args.resume, args.continue_latest);
    let loaded = session::load(&resume, workspace)?;
    let start = Start {
        command: "chat",
        resumed: loaded.as_ref(),
        replay: None,
        asking: Asking::Terminal,
        servers: None,
        answering: None,
    };
    let runtime = crate::runtime()?;
    let started = runtime.block_on(build_agent(settings, &args.options, workspace, start))?;
    if let Some(loaded) = &loaded {
        output::err_line(&format!("mecha: {}", session::resumed_line(loaded)));
    }
    let Started {
        agent,
        toolbox,
        mut session,
        session_id,
        ctx,
        ..
    } = started;
    let source = if loaded.is_some() {
        SessionSource::Resume
    } else {
        SessionSource::Startup
    };
    runtime.block_on(agent.start_session(&mut session, source, events.as_ref()));
    let chat = Chat {
        runtime: &runtime,
        agent: &agent,
        toolbox: &toolbox,
        events: events.as_ref(),
        workspace,
        ctx: &ctx,
    };
    let ended = converse(&chat, &mut session);
    if let Some(id) = session_id
        && !session.messages.is_empty()
    {
        output::err_line(&session::resume_hint("mecha chat", &id));
    }
    toolbox.shutdown();
    runtime.shutdown_background();
    ended
}

/// How one prompt's turn ended.
enum Turn {
    Ended(Result<Outcome, AgentError>),
    Interrupted,
    /// stdout or stderr was closed.
    Unread,
}

/// How to use chat, shown when it starts.
const HELP: &str = "mecha chat: type a task and press Enter. End a line with \\ to go on \
on the next; lines pasted together stay one prompt. /help lists the commands; /quit, /exit \
or Ctrl-D ends the session.";

/// Where the line editor keeps prompts between chats, under MECHA_HOME.
const HISTORY_FILE: &str = "chat_history";

/// What one chat talks to, fixed while it runs.
struct Chat<'a> {
    runtime: &'a tokio::runtime::Runtime,
    agent: &'a Agent,
    toolbox: &'a Toolbox,
    events: &'a dyn EventSink,
    workspace: &'a Path,
    /// The tools' context, whose jail judges an `@path`.
    ctx: &'a ToolCtx,
}

/// Reads prompts until `/quit` or the end of input. An empty prompt is
/// skipped: a stray Enter, or a blank line in pasted text, must not end the
/// session and lose what follows.
fn converse(chat: &Chat<'_>, session: &mut Session) -> Result<u8, Failure> {
    let history = crate::config::mecha_home()
        .ok()
        .map(|home| home.join(HISTORY_FILE));
    let completion =
        mecha_tui::complete::Completion::new(slash::names(Front::Chat), chat.workspace);
    crate::stdin::edit_at_terminal(history, completion);
    output::err_line(HELP);
    let ended = prompts(chat, session);
    crate::stdin::restore_terminal();
    ended
}

fn prompts(chat: &Chat<'_>, session: &mut Session) -> Result<u8, Failure> {
    let Chat {
        runtime,
        agent,
        toolbox,
        events,
        workspace,
        ctx,
    } = *chat;
    // Ctrl-C on an empty line in the editor: once warns, twice leaves.
    let mut ctrl_c = false;
    loop {
        // On the plain path Ctrl-C at the prompt is a signal and leaves
        // chat; in the editor it is a key (below). During a turn it stops
        // the turn. `interrupted()` is listening before the editor first
        // reads (select! makes every branch's future before polling one),
        // so the editor's own SIGINT handler saves and restores ours.
        let prompt = runtime.block_on(async {
            tokio::select! {
                prompt = crate::stdin::next_prompt() => Ok(prompt),
                () = crate::interrupted() => Err(EXIT_INTERRUPTED),
                () = output::closed() => Err(0),
            }
        });
        let prompt = match prompt {
            Ok(Prompt::Text(prompt)) => prompt,
            Ok(Prompt::Eof) => return Ok(0),
            Ok(Prompt::Interrupted) if ctrl_c => return Ok(EXIT_INTERRUPTED),
            Ok(Prompt::Interrupted) => {
                ctrl_c = true;
                output::err_line("mecha: Ctrl-C again, Ctrl-D or /quit ends the chat");
                continue;
            }
            Err(code) => return Ok(code),
        };
        ctrl_c = false;
        let prompt = prompt.trim();
        if prompt.is_empty() {
            continue;
        }
        let command = slash::command(prompt, Front::Chat, agent, session, toolbox, workspace);
        let prompt = match command {
            None => prompt,
            Some(Slash::Approved) => APPROVED,
            Some(command) => {
                let answer = match command {
                    Slash::Quit => return Ok(0),
                    Slash::Answer(answer) => answer,
                    Slash::Skills => slash::skills(toolbox),
                    Slash::Compact => match runtime.block_on(agent.compact_now(session, events)) {
                        // The compaction's own event said it, as its line.
                        AskedCompaction::Done { .. } => continue,
                        asked => slash::compacted(&asked),
                    },
                    // Chat is answered that these are the TUI's.
                    Slash::Switch(_) | Slash::PickSession | Slash::Rewind(_) | Slash::Approved => {
                        continue;
                    }
                };
                output::out(&crate::terminal::printable(&answer));
                continue;
            }
        };
        if let Some(command) = typed::shell_command(prompt) {
            let ran = runtime.block_on(async {
                tokio::select! {
                    shown = typed::run_shell(agent, session, command, events) => Some(shown),
                    () = crate::interrupted() => None,
                }
            });
            match ran {
                Some(shown) => output::out(&format!("{}\n", crate::terminal::printable(&shown))),
                None => output::err_line(&format!("\nmecha: {INTERRUPTED}")),
            }
            continue;
        }
        let attached =
            runtime.block_on(typed::attach_mentions(agent, session, ctx, prompt, events));
        if let Err(line) = attached {
            output::err_line(&crate::terminal::printable(&format!("mecha: {line}")));
            continue;
        }
        let before = session.messages.len();
        let outcome = runtime.block_on(async {
            tokio::select! {
                outcome = agent.send(session, prompt, events) => Turn::Ended(outcome),
                () = crate::interrupted() => Turn::Interrupted,
                () = output::closed() => Turn::Unread,
            }
        });
        match outcome {
            // What the turn did is kept, its open calls closed; the model
            // is told the user interrupted.
            Turn::Interrupted => agent.keep_interrupted(session),
            // A failed turn can leave calls without results, which no API
            // accepts; forget the whole exchange so it can be sent again.
            Turn::Unread | Turn::Ended(Err(_)) => agent.rewind(session, before),
            Turn::Ended(Ok(_)) => {}
        }
        match outcome {
            // Nobody reads the output: end quietly, main picks the code.
            Turn::Unread => return Ok(0),
            Turn::Interrupted => output::err_line(&format!("\nmecha: {INTERRUPTED}")),
            Turn::Ended(Err(e)) => crate::terminal::report(&e.to_string()),
            Turn::Ended(Ok(outcome)) => {
                let planned = matches!(outcome, Outcome::Answered { .. })
                    && agent.mode().get() == PermissionMode::Plan;
                let (text, end) = reported(outcome, true);
                finish_with_notice(events, session, text, end, true);
                if planned {
                    output::err_line(&format!("mecha: {PLAN_READY}"));
                }
            }
        }
    }
}
