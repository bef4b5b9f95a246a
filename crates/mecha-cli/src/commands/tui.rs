//! `mecha tui`, and `mecha` alone at a terminal: the conversation on
//! mecha-tui's screen. The agent is wired as chat's (same session journal,
//! hooks and tools) but asks for approval in the screen's modal; this
//! module only connects the two, owns the terminal's modes, and makes a new
//! conversation when `/clear`, `/resume` or `/model` asks for one.

use std::io::{self, Write};
use std::path::Path;

use clap::Args;
use mecha_agent::{Agent, AskedCompaction, Outcome, Session, SessionSource};
use mecha_core::{PermissionMode, ToolCtx};
use mecha_sandbox::Sandbox;
use mecha_session::Loaded;
use mecha_tui::complete::Completion;
use mecha_tui::run::{Conversation, Exit, Inputs, drive};
use mecha_tui::{
    App, Attention, ChannelSink, Entry, NoticeKind, Notify, Picker, Preview, Reply, RunInfo,
    Switch, Theme,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::Failure;
use crate::commands::RunOptions;
use crate::commands::modes;
use crate::commands::run::{EXIT_INTERRUPTED, finish_with_notice, reported};
use crate::commands::slash::{self, Front, Slash};
use crate::commands::{tui_rewind, typed, waiting};
use crate::config::Settings;
use crate::output;
use crate::raw_screen::{self, RawScreen};
use crate::session::{self, Resume};
use crate::wiring::{Asking, Servers, Start, Started, Toolbox, build_agent};

#[derive(Args, Debug, Default)]
pub struct TuiArgs {
    /// A first prompt, sent as the screen opens (`mecha "fix the failing test"`).
    #[arg(value_name = "PROMPT")]
    prompt: Option<String>,
    /// Go on with a stored session (its id, or a unique start of it).
    #[arg(long, value_name = "ID", conflicts_with = "continue_latest")]
    resume: Option<String>,
    /// Go on with the newest session of this workspace.
    #[arg(long = "continue")]
    continue_latest: bool,
    #[command(flatten)]
    options: RunOptions,
}

impl TuiArgs {
    /// Whether the command line asked for the screen by what it gave (a
    /// prompt, a session), so that without a terminal that is an error
    /// rather than the help.
    pub fn asks_for_a_screen(&self) -> bool {
        self.prompt.is_some() || self.resume.is_some() || self.continue_latest
    }

    /// The first prompt when it is one word, which may be a misspelt
    /// command (`mecha rn`).
    pub fn lone_word(&self) -> Option<&str> {
        self.prompt
            .as_deref()
            .filter(|p| !p.is_empty() && !p.contains(char::is_whitespace))
    }
}

/// Reads the configuration afresh, for each new conversation.
pub type Reload<'a> = &'a dyn Fn() -> Result<Settings, Failure>;

type Screen = Terminal<CrosstermBackend<io::Stdout>>;

pub fn run(
    args: TuiArgs,
    settings: Settings,
    workspace: &Path,
    reload: Reload<'_>,
) -> Result<u8, Failure> {
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
    let runtime = crate::runtime()?;
    let failed = |e: io::Error| Failure::Run(anyhow::anyhow!("the terminal UI failed: {e}"));
    let raw = RawScreen::enter().map_err(failed)?;
    let mut screen = Terminal::new(CrosstermBackend::new(io::stdout())).map_err(failed)?;
    let (to_screen, news) = unbounded_channel();
    let (keys, key_reader) = raw_screen::events().map_err(failed)?;
    let mut inputs = Inputs {
        agent: news,
        terminal: keys,
        first: args.prompt,
        external_editor: Box::new(move |text| crate::external_editor::edit(&key_reader, text)),
    };
    // While the screen is up, a line mecha would write to stderr (a server
    // that died, a hook that failed) is shown on it instead of tearing it.
    let diverted = to_screen.clone();
    output::divert(Some(Box::new(move |text| {
        let _ = diverted.send(mecha_tui::ToScreen::Notice(text.to_owned()));
    })));
    let mut session = Sessions {
        runtime: &runtime,
        workspace,
        notify: settings.notify,
        options: args.options,
        to_screen,
        app: None,
        servers: None,
    };
    let ended = session.converse(&mut screen, &mut inputs, settings, loaded, reload);
    // Kept for a conversation that never came (its config was broken).
    if let Some(servers) = session.servers.take() {
        servers.shutdown();
    }
    output::divert(None);
    drop(screen);
    drop(raw);
    // The alternate screen took the conversation away with it: it is
    // written out again on the shell's screen, into the terminal's own
    // scrollback. A terminal that is gone is no failure of the run.
    if let Some(app) = &session.app {
        let text = mecha_tui::history::plain(&app.transcript);
        let mut stdout = io::stdout().lock();
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
        drop(stdout);
        let said_something = app
            .transcript
            .entries()
            .iter()
            .any(|e| matches!(e, Entry::Prompt(_)));
        if said_something && !app.info.session.is_empty() {
            output::err_line(&session::resume_hint("mecha", &app.info.session));
        }
    }
    // What came after the last frame (or before the first) is not lost.
    while let Ok(mecha_tui::ToScreen::Notice(text)) = inputs.agent.try_recv() {
        output::err_line(&text);
    }
    runtime.shutdown_background();
    ended
}

/// The conversations of one screen, one after another.
struct Sessions<'a> {
    runtime: &'a Runtime,
    workspace: &'a Path,
    /// `[tui] notify` as the screen opened.
    notify: Notify,
    options: RunOptions,
    to_screen: UnboundedSender<mecha_tui::ToScreen>,
    /// The screen's state, kept from one conversation to the next.
    app: Option<App>,
    /// The MCP servers, between one conversation and the next.
    servers: Option<Servers>,
}

/// How one conversation ended.
enum Next {
    /// mecha is done, with this exit code.
    Done(u8),
    /// Another conversation: this stored session, or a new one.
    Switch(Option<Box<Loaded>>),
}

impl Sessions<'_> {
    /// Runs conversations until the user quits, the terminal closes or a
    /// signal (SIGTERM, SIGHUP) asks mecha to stop. Each new one reads the
    /// configuration afresh.
    fn converse(
        &mut self,
        screen: &mut Screen,
        inputs: &mut Inputs,
        settings: Settings,
        mut loaded: Option<Loaded>,
        reload: Reload<'_>,
    ) -> Result<u8, Failure> {
        let mut settings = Some(settings);
        loop {
            let settings = match settings.take() {
                Some(settings) => settings,
                None => reload()?,
            };
            for warning in &settings.warnings {
                output::warning(warning);
            }
            let strict_sends = settings.block_sends_after_private;
            let start = Start {
                command: "tui",
                resumed: loaded.as_ref(),
                replay: None,
                asking: Asking::Modal(self.to_screen.clone()),
                servers: self.servers.take(),
                answering: None,
            };
            let started = self.runtime.block_on(build_agent(
                settings,
                &self.options,
                self.workspace,
                start,
            ))?;
            let next = self.one(screen, inputs, started, loaded.as_ref(), strict_sends);
            match next? {
                Next::Done(code) => return Ok(code),
                Next::Switch(next) => loaded = next.map(|next| *next),
            }
        }
    }

    /// One conversation, on the screen until it ends.
    fn one(
        &mut self,
        screen: &mut Screen,
        inputs: &mut Inputs,
        started: Started,
        loaded: Option<&Loaded>,
        strict_sends: bool,
    ) -> Result<Next, Failure> {
        let Started {
            agent,
            mut toolbox,
            mut session,
            model,
            session_id,
            window,
            ctx,
        } = started;
        let sink = ChannelSink(self.to_screen.clone());
        let source = match loaded {
            Some(_) => SessionSource::Resume,
            None => SessionSource::Startup,
        };
        // Its hooks' events wait in the channel for the first frame.
        self.runtime
            .block_on(agent.start_session(&mut session, source, &sink));
        let info = RunInfo {
            model: model.unwrap_or_default(),
            window,
            session: session_id.clone().unwrap_or_default(),
            sandbox: toolbox
                .sandbox
                .as_ref()
                .map_or_else(|| "none".to_owned(), Sandbox::brief),
            servers: toolbox
                .servers
                .as_ref()
                .map(Servers::in_words)
                .unwrap_or_default(),
            strict_sends,
            mode: Some(agent.mode().clone()),
        };
        let switched = self.app.is_some();
        // `/model` goes on with the conversation on screen: its past is
        // there already, and so are its taint and context.
        let going_on = session_id.is_some()
            && self.app.as_ref().map(|app| &app.info.session) == session_id.as_ref();
        let mut app = match self.app.take() {
            Some(mut app) => {
                app.switched(info);
                app
            }
            None => {
                let shown_in = ctx.clone();
                let preview: Preview =
                    Box::new(move |tool, input| crate::approve::preview(tool, input, &shown_in));
                let mut app = App::new(info, Theme::from_env(), preview);
                app.notify_by(Attention::new(self.notify, Box::new(ring)));
                let commands = slash::names(Front::Tui);
                app.completion = Some(Completion::new(commands, self.workspace));
                app
            }
        };
        if !going_on {
            app.transcript.begin_conversation(session.taint);
            if let Some(loaded) = loaded {
                let records = loaded.entries.iter().map(|entry| &entry.record);
                app.transcript.retold(mecha_agent::retell(records));
            }
        }
        match (loaded, &session_id) {
            (Some(loaded), _) => {
                let mut line = session::resumed_line(loaded);
                if let Some(model) = &self.options.model {
                    line.push_str(&format!("; the model is {model}"));
                }
                app.transcript.notice(NoticeKind::Info, line);
            }
            // After /clear: say where the last one went.
            (None, Some(id)) if switched => app.transcript.notice(
                NoticeKind::Info,
                format!("a new session, {id}; the last one is stored (/sessions, /resume ID)"),
            ),
            (None, _) => {}
        }
        if !switched {
            for line in waiting::announcement(self.workspace) {
                app.transcript.notice(NoticeKind::Info, line);
            }
        }
        let mut talk = Talk {
            agent: &agent,
            ctx,
            toolbox: &toolbox,
            workspace: self.workspace,
            session_id: session_id.as_deref(),
            session,
            sink,
            before: None,
        };
        let next = loop {
            let ended = self.runtime.block_on(async {
                tokio::select! {
                    ended = drive(screen, &mut app, &mut talk, inputs) => Some(ended),
                    () = crate::interrupted() => None,
                }
            });
            let switch = match ended {
                Some(Ok(Exit::Quit | Exit::Closed)) => break Ok(Next::Done(0)),
                // As in chat: Ctrl-C twice is an interrupt's exit.
                Some(Ok(Exit::Interrupted)) => break Ok(Next::Done(EXIT_INTERRUPTED)),
                Some(Ok(Exit::Switch(switch))) => switch,
                Some(Err(e)) => {
                    break Err(Failure::Run(anyhow::anyhow!("the terminal UI failed: {e}")));
                }
                None => {
                    // The turn that was running is dropped with its tools;
                    // the session keeps what it did, as after a Ctrl-C.
                    talk.interrupted();
                    app.transcript.interrupted();
                    break Ok(Next::Done(EXIT_INTERRUPTED));
                }
            };
            match self.next(switch, session_id.as_deref()) {
                Ok(next) => break Ok(next),
                // Nothing changed: this conversation goes on.
                Err(why) => app.transcript.notice(NoticeKind::Warning, why),
            }
        };
        drop(talk);
        // The next conversation goes on with the servers if its config
        // still starts the same ones.
        match &next {
            Ok(Next::Switch(_)) => self.servers = toolbox.servers.take(),
            _ => toolbox.shutdown(),
        }
        self.app = Some(app);
        next
    }

    /// The conversation `switch` asks for, checked before this one ends;
    /// `Err` says why it cannot be had.
    fn next(&mut self, switch: Switch, current: Option<&str>) -> Result<Next, String> {
        let load = |id: &str| {
            session::load(&Resume::Id(id.to_owned()), self.workspace).map_err(Failure::said)
        };
        match switch {
            Switch::Fresh => Ok(Next::Switch(None)),
            Switch::Resume(id) => load(&id).map(|l| Next::Switch(l.map(Box::new))),
            Switch::Model(name) => {
                let Some(current) = current else {
                    return Err(
                        "this session is not stored (the session store could not be \
                                written), so it cannot go on with another model; /clear starts \
                                a new one"
                            .to_owned(),
                    );
                };
                let loaded = load(current)?;
                self.options.model = Some(name);
                Ok(Next::Switch(loaded.map(Box::new)))
            }
        }
    }
}

/// Writes a notification's bytes to the terminal; one that cannot be
/// written is no failure of the run.
fn ring(bytes: &str) {
    let mut stdout = io::stdout().lock();
    let _ = stdout
        .write_all(bytes.as_bytes())
        .and_then(|()| stdout.flush());
}

/// The agent and its session, as the screen talks to them.
struct Talk<'a> {
    agent: &'a Agent,
    /// The tools' context, whose jail judges an `@path`.
    ctx: ToolCtx,
    toolbox: &'a Toolbox,
    workspace: &'a Path,
    /// This conversation's stored session, if it is stored.
    session_id: Option<&'a str>,
    session: Session,
    sink: ChannelSink,
    /// The session's length before the running prompt, to rewind a failed
    /// one to.
    before: Option<usize>,
}

impl Talk<'_> {
    /// What mecha answers to `command`; `None` when the transcript says it
    /// already.
    async fn command(&mut self, command: Slash) -> Option<Reply> {
        Some(match command {
            Slash::Answer(text) => Reply::Show(text),
            Slash::Quit => Reply::Quit,
            Slash::Skills => {
                let items = slash::skill_items(self.toolbox);
                if items.is_empty() {
                    Reply::Show(slash::no_skills(self.toolbox))
                } else {
                    Reply::Pick(Picker::new("skills this run carries", "shows it", items))
                }
            }
            Slash::Compact => match self.agent.compact_now(&mut self.session, &self.sink).await {
                // The compaction's own event is on screen as its line.
                AskedCompaction::Done { .. } => return None,
                asked => Reply::Show(slash::compacted(&asked)),
            },
            Slash::Switch(switch) => Reply::Switch(switch),
            // Sent as a prompt by `send`, never answered here.
            Slash::Approved => return None,
            Slash::Rewind(asked) => {
                tui_rewind::answer(self.agent, &mut self.session, self.session_id, asked)
            }
            Slash::PickSession => match slash::sessions_to_pick(self.workspace, self.session_id) {
                Ok(items) => Reply::Pick(Picker::new(
                    "sessions of this workspace",
                    "resumes it",
                    items,
                )),
                Err(line) => Reply::Show(line),
            },
        })
    }
}

impl Conversation for Talk<'_> {
    async fn send(&mut self, input: &str) -> Result<Option<Reply>, String> {
        let command = slash::command(
            input,
            Front::Tui,
            self.agent,
            &self.session,
            self.toolbox,
            self.workspace,
        );
        let input = match command {
            None => input,
            Some(Slash::Approved) => modes::APPROVED,
            Some(command) => return Ok(self.command(command).await),
        };
        if let Some(command) = typed::shell_command(input) {
            let shown = typed::run_shell(self.agent, &mut self.session, command, &self.sink).await;
            return Ok(Some(Reply::Show(shown)));
        }
        typed::attach_mentions(self.agent, &mut self.session, &self.ctx, input, &self.sink).await?;
        self.before = Some(self.session.messages.len());
        let sent = self.agent.send(&mut self.session, input, &self.sink).await;
        match sent {
            Ok(outcome) => {
                self.before = None;
                let planned = matches!(outcome, Outcome::Answered { .. })
                    && self.agent.mode().get() == PermissionMode::Plan;
                // The final event says why there is no whole answer, if
                // there is none: the screen shows it.
                let (text, end) = reported(outcome, true);
                finish_with_notice(&self.sink, &self.session, text, end, false);
                // A plan is answered with the question whether to carry
                // it out.
                Ok(planned.then(|| Reply::Pick(modes::plan_picker())))
            }
            Err(e) => {
                // A failed turn can leave calls without results, which no
                // API accepts; forget the whole exchange, as chat does, so
                // the prompt can be sent again.
                if let Some(before) = self.before.take() {
                    self.agent.rewind(&mut self.session, before);
                }
                Err(e.to_string())
            }
        }
    }

    fn interrupted(&mut self) {
        self.before = None;
        self.agent.keep_interrupted(&mut self.session);
    }
}
