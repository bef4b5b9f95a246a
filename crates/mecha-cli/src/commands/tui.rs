//! `mecha tui`, and `mecha` alone at a terminal: the conversation on
//! mecha-tui's screen. The agent is wired as chat's (same session journal,
//! hooks and tools) but asks for approval in the screen's modal; this
//! module only connects the two and owns the terminal's modes.

use std::io;
use std::path::Path;

use clap::Args;
use mecha_agent::{Agent, Session, SessionSource};
use mecha_sandbox::Sandbox;
use mecha_tui::run::{Conversation, Exit, Inputs, drive};
use mecha_tui::{App, ChannelSink, Preview, RunInfo, Theme};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::Failure;
use crate::commands::RunOptions;
use crate::commands::run::{EXIT_INTERRUPTED, finish_with_notice, reported};
use crate::config::Settings;
use crate::raw_screen::{self, RawScreen};
use crate::session::{self, Resume};
use crate::wiring::{Asking, Start, Started, build_agent};

#[derive(Args, Debug, Default)]
pub struct TuiArgs {
    /// Go on with a stored session (its id, or a unique start of it).
    #[arg(long, value_name = "ID", conflicts_with = "continue_latest")]
    resume: Option<String>,
    /// Go on with the newest session of this workspace.
    #[arg(long = "continue")]
    continue_latest: bool,
    #[command(flatten)]
    options: RunOptions,
}

pub fn run(args: TuiArgs, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    if !crate::at_terminal() {
        return Err(Failure::Usage(
            "`mecha tui` needs a terminal on stdin and stdout; for pipes and scripts use \
             `mecha chat` or `mecha run`"
                .to_owned(),
        ));
    }
    let loaded = session::load(
        &Resume::chosen(args.resume, args.continue_latest),
        workspace,
    )?;
    let strict_sends = settings.block_sends_after_private;
    let (screen, news) = unbounded_channel();
    let start = Start {
        command: "tui",
        resumed: loaded.as_ref(),
        replay: None,
        asking: Asking::Modal(screen.clone()),
    };
    let runtime = crate::runtime()?;
    let Started {
        agent,
        toolbox,
        mut session,
        model,
        session_id,
        window,
        ctx,
    } = runtime.block_on(build_agent(settings, &args.options, workspace, start))?;
    let sink = ChannelSink(screen);
    let source = match loaded {
        Some(_) => SessionSource::Resume,
        None => SessionSource::Startup,
    };
    // Its hooks' events wait in the channel for the first frame.
    runtime.block_on(agent.start_session(&mut session, source, &sink));
    let info = RunInfo {
        model: model.unwrap_or_default(),
        window,
        session: session_id.unwrap_or_default(),
        sandbox: toolbox
            .sandbox
            .as_ref()
            .map_or_else(|| "none".to_owned(), Sandbox::describe),
        strict_sends,
    };
    let preview: Preview = Box::new(move |tool, input| crate::approve::preview(tool, input, &ctx));
    let mut app = App::new(info, Theme::from_env(), preview);
    let mut talk = Talk {
        agent: &agent,
        session,
        sink,
        before: None,
    };
    let ended = show(&runtime, &mut app, &mut talk, news);
    toolbox.shutdown();
    runtime.shutdown_background();
    ended
}

/// Runs the screen until the user quits, the terminal closes or a signal
/// (SIGTERM, SIGHUP) asks mecha to stop; the terminal is restored on each.
fn show(
    runtime: &Runtime,
    app: &mut App,
    talk: &mut Talk<'_>,
    news: UnboundedReceiver<mecha_tui::ToScreen>,
) -> Result<u8, Failure> {
    let failed = |e: io::Error| Failure::Run(anyhow::anyhow!("the terminal UI failed: {e}"));
    let raw = RawScreen::enter().map_err(failed)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout())).map_err(failed)?;
    let mut inputs = Inputs {
        agent: news,
        terminal: raw_screen::events().map_err(failed)?,
    };
    let ended = runtime.block_on(async {
        tokio::select! {
            ended = drive(&mut terminal, app, talk, &mut inputs) => Some(ended),
            () = crate::interrupted() => None,
        }
    });
    drop(terminal);
    drop(raw);
    match ended {
        Some(Ok(Exit::Quit | Exit::Closed)) => Ok(0),
        Some(Err(e)) => Err(failed(e)),
        None => {
            // The turn that was running is dropped with its tools; the
            // session keeps only whole exchanges, as after a Ctrl-C.
            talk.rewind();
            Ok(EXIT_INTERRUPTED)
        }
    }
}

/// The agent and its session, as the screen talks to them.
struct Talk<'a> {
    agent: &'a Agent,
    session: Session,
    sink: ChannelSink,
    /// The session's length before the running prompt, to rewind to.
    before: Option<usize>,
}

impl Conversation for Talk<'_> {
    async fn send(&mut self, prompt: &str) -> Result<(), String> {
        self.before = Some(self.session.messages.len());
        let sent = self.agent.send(&mut self.session, prompt, &self.sink).await;
        match sent {
            Ok(outcome) => {
                self.before = None;
                // The final event says why there is no whole answer, if
                // there is none: the screen shows it.
                let (text, end) = reported(outcome, true);
                finish_with_notice(&self.sink, &self.session, text, end, false);
                Ok(())
            }
            Err(e) => {
                // A turn cut short leaves calls without results, which no
                // API accepts; forget the whole exchange, as chat does.
                self.rewind();
                Err(e.to_string())
            }
        }
    }

    fn rewind(&mut self) {
        if let Some(before) = self.before.take() {
            self.agent.rewind(&mut self.session, before);
        }
    }
}
