//! `mecha run "task"`: one prompt, run to an answer.

use std::io::Read;
use std::path::Path;

use clap::Args;
use mecha_agent::{
    Agent, AgentError, EarlyStop, Event, EventSink, Outcome, RunEnd, Session, SessionSource,
};

use mecha_core::StopReason;

use crate::Failure;
use crate::capped::Capped;
use crate::commands::RunOptions;
use crate::commands::delegated::{Parking, Work};
use crate::config::Settings;
use crate::headless::RunStart;
use crate::notice::{refused, silent};
use crate::output;
use crate::render::{OutputFormat, sink};
use crate::session::{self, Replay, Resume};
use crate::wiring::{Asking, Start, build_agent};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The task. `-` reads it from stdin.
    #[arg(required_unless_present = "replay", conflicts_with = "replay")]
    prompt: Option<String>,
    /// Go on with a stored session (its id, or a unique start of it): its
    /// history, taint and loaded skills, then this task.
    #[arg(long, value_name = "ID", conflicts_with_all = ["continue_latest", "replay"])]
    resume: Option<String>,
    /// Go on with the newest session of this workspace.
    #[arg(long = "continue", conflicts_with = "replay")]
    continue_latest: bool,
    /// Play a stored session's model turns back against today's tools and
    /// gate, without a model (nothing is stored, nothing compacts).
    #[arg(long, value_name = "ID")]
    replay: Option<String>,
    /// Run as a delegated task, as a trigger does: nobody is asked to
    /// approve (what needs a yes is refused, and the model is told why),
    /// and a question the model asks you (ask_user) parks the task, exit
    /// code 5, until `mecha questions answer`.
    #[arg(long, conflicts_with = "replay")]
    delegate: bool,
    /// The trigger this run is for (`mecha trigger run`): delegated, and
    /// named in the session and in its parked questions.
    #[arg(skip)]
    trigger: Option<String>,
    #[command(flatten)]
    options: RunOptions,
    /// text (default), json (one object at the end), or stream-json (one
    /// object per event).
    #[arg(long, value_enum, default_value = "text")]
    output_format: OutputFormat,
}

impl RunArgs {
    /// A trigger's run: its prompt, delegated, with `options`.
    pub fn for_trigger(name: &str, prompt: &str, options: RunOptions) -> Self {
        Self {
            prompt: Some(prompt.to_owned()),
            resume: None,
            continue_latest: false,
            replay: None,
            delegate: true,
            trigger: Some(name.to_owned()),
            options,
            output_format: OutputFormat::Text,
        }
    }
}

/// Exit code when the run stopped at --max-turns.
pub const EXIT_TURN_LIMIT: u8 = 3;
/// Exit code when the model refused or ended without answering, or a hook
/// refused the prompt.
pub const EXIT_NO_ANSWER: u8 = 4;
/// Exit code when a delegated task parked a question for its owner.
pub const EXIT_PARKED: u8 = 5;
/// Exit code when interrupted (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

pub fn run(args: RunArgs, settings: Settings, workspace: &Path) -> Result<u8, Failure> {
    let events = sink(args.output_format, args.options.quiet);
    events.configured(
        args.options
            .model
            .as_deref()
            .or(settings.provider.model.as_deref()),
    );
    // A run that cannot start still ends with the final event, so a script
    // reading JSON gets its one object whatever went wrong.
    let failed = |failure: Failure| {
        finish(
            events.as_ref(),
            &Session::default(),
            String::new(),
            failure_end(&failure),
        );
        failure
    };
    let resume = match (&args.resume, args.continue_latest, &args.replay) {
        (Some(id), _, _) | (_, _, Some(id)) => Resume::Id(id.clone()),
        (None, true, None) => Resume::Latest,
        (None, false, None) => Resume::Fresh,
    };
    let loaded = session::load(&resume, workspace).map_err(failed)?;
    let (prompts, replay) = match (&args.replay, &loaded) {
        (Some(_), Some(loaded)) => {
            let replay = Replay::of(loaded);
            if replay.prompts.is_empty() {
                return Err(failed(Failure::Usage(format!(
                    "session {} holds no prompt to replay",
                    loaded.header.id
                ))));
            }
            (replay.prompts, Some(replay.script))
        }
        _ => (
            vec![read_prompt(args.prompt.unwrap_or_default()).map_err(failed)?],
            None,
        ),
    };
    let delegated = args.delegate || args.trigger.is_some();
    let parking =
        delegated.then(|| Parking::new(&args.options, args.trigger.as_deref(), workspace));
    let start = Start {
        command: match args.trigger {
            Some(_) => "trigger",
            None => "run",
        },
        resumed: loaded.as_ref().filter(|_| replay.is_none()),
        replay,
        asking: match parking {
            Some(_) => Asking::Delegated,
            None => Asking::Terminal,
        },
        servers: None,
        answering: None,
    };
    // Which session this run goes on with, before anything it prints.
    if let Some(resumed) = start.resumed {
        crate::output::err_line(&format!("mecha: {}", session::resumed_line(resumed)));
    }
    let source = if start.resumed.is_some() {
        SessionSource::Resume
    } else {
        SessionSource::Startup
    };
    let runtime = crate::runtime().map_err(failed)?;
    let code = runtime.block_on(async {
        let started = build_agent(settings, &args.options, workspace, start)
            .await
            .map_err(failed)?;
        events.started(&RunStart {
            model: started.model.as_deref(),
            session_id: started.session_id.as_deref(),
            workspace,
            toolbox: &started.toolbox,
        });
        let parking = parking.map(|p| p.in_session(started.session_id.as_deref()));
        let code = drive(
            &started.agent,
            started.session,
            Work::Prompts(source, &prompts),
            events.as_ref(),
            parking.as_ref(),
        )
        .await;
        started.toolbox.shutdown();
        code
    });
    // An approval question may still be waiting on stdin; do not wait for it.
    runtime.shutdown_background();
    code
}

/// The task: the argument, or stdin for `-`. With an argument, data piped
/// on stdin (`git diff | mecha run "review this"`) follows it as a block
/// that says what it is.
fn read_prompt(arg: String) -> Result<String, Failure> {
    let from_stdin = arg == "-";
    let prompt = if from_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::Usage(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        arg
    };
    if prompt.trim().is_empty() {
        return Err(Failure::Usage(
            "the prompt is empty; say what to do".to_owned(),
        ));
    }
    if from_stdin {
        return Ok(prompt);
    }
    let piped = match crate::stdin::piped_data() {
        Ok(piped) => piped,
        // No stdin at all (the descriptor is closed): nothing was piped.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::BADF.raw_os_error()) => None,
        Err(e) => {
            return Err(Failure::Usage(format!(
                "cannot read the data piped on stdin: {e}; run with `< /dev/null` to send the \
                 prompt alone"
            )));
        }
    };
    Ok(match piped {
        Some(data) => with_piped(prompt, &data),
        None => prompt,
    })
}

/// `prompt` with the piped data after it, between lines that say what it
/// is, how big, and whether mecha cut it.
fn with_piped(prompt: String, data: &Capped) -> String {
    let size = data.text.len();
    let what = match data.cut {
        false => format!("{size} bytes piped to mecha on stdin"),
        true => format!(
            "the first {size} bytes piped to mecha on stdin; more followed, which mecha cut and \
             did not read"
        ),
    };
    let newline = if data.text.ends_with('\n') { "" } else { "\n" };
    format!(
        "{prompt}\n\n--- stdin ({what}) ---\n{}{newline}--- end of stdin ---",
        data.text
    )
}

/// Runs the prompt to its end, or until Ctrl-C, SIGTERM or SIGHUP, or
/// until nobody reads the output any more. Every ending but the last is
/// reported with one final event, so the JSON formats always print their
/// object.
pub async fn drive(
    agent: &Agent,
    mut session: Session,
    work: Work<'_>,
    events: &dyn EventSink,
    parking: Option<&Parking>,
) -> Result<u8, Failure> {
    let outcome = tokio::select! {
        outcome = async {
            match work {
                Work::Prompts(source, prompts) => {
                    agent.start_session(&mut session, source, events).await;
                    send_each(agent, &mut session, prompts, events).await
                }
                Work::Answer(results, external) => {
                    agent.answer(&mut session, results, external, events).await
                }
            }
        } => Some(outcome),
        () = crate::interrupted() => None,
        // Nobody can see a report: dropping the run stops its tools, as an
        // interrupt does, and main exits with the closed pipe's code.
        () = output::closed() => return Ok(0),
    };
    let (text, end, result) = match outcome {
        Some(Ok(Outcome::Parked {
            parked,
            results,
            external,
        })) => {
            let parked = match parking {
                Some(parking) => parking.park(&parked, results, external),
                None => Err(Failure::Run(anyhow::anyhow!(
                    "the model's question parked a task that is not delegated"
                ))),
            };
            match parked {
                Ok(said) => {
                    let end = RunEnd::Stopped {
                        why: EarlyStop::Parked,
                        error: said,
                    };
                    (String::new(), end, Ok(EXIT_PARKED))
                }
                Err(failure) => (String::new(), failure_end(&failure), Err(failure)),
            }
        }
        Some(Ok(outcome)) => {
            let (text, end) = reported(outcome, false);
            let code = match &end {
                RunEnd::Answered(_) => 0,
                RunEnd::Unanswered { .. }
                | RunEnd::Stopped {
                    why: EarlyStop::Blocked,
                    ..
                } => EXIT_NO_ANSWER,
                RunEnd::Stopped {
                    why: EarlyStop::Parked,
                    ..
                } => EXIT_PARKED,
                RunEnd::Stopped { .. } => EXIT_TURN_LIMIT,
            };
            (text, end, Ok(code))
        }
        Some(Err(e)) => {
            let failure = Failure::Run(e.into());
            (String::new(), failure_end(&failure), Err(failure))
        }
        None => {
            // A resumed session goes on from what this run did.
            agent.keep_interrupted(&mut session);
            output::err_line(&format!("\nmecha: {INTERRUPTED}"));
            let end = RunEnd::Stopped {
                why: EarlyStop::Interrupted,
                error: INTERRUPTED.to_owned(),
            };
            (String::new(), end, Ok(EXIT_INTERRUPTED))
        }
    };
    // A failure is reported by main, an interrupt above.
    let notice = matches!(result, Ok(code) if code != EXIT_INTERRUPTED);
    finish_with_notice(events, &session, text, end, notice);
    result
}

/// Sends the prompts in order (a replay has one for each a person gave),
/// stopping at the first that does not end in an answer.
async fn send_each(
    agent: &Agent,
    session: &mut Session,
    prompts: &[String],
    events: &dyn EventSink,
) -> Result<Outcome, AgentError> {
    let mut outcome = Outcome::Silent {
        stop_reason: StopReason::EndTurn,
    };
    for prompt in prompts {
        outcome = agent.send(session, prompt, events).await?;
        if !matches!(outcome, Outcome::Answered { .. }) {
            break;
        }
    }
    Ok(outcome)
}

/// How a prompt's outcome is reported: the final event's text and ending.
/// `in_chat`: a refused exchange was dropped and the conversation goes on.
pub fn reported(outcome: Outcome, in_chat: bool) -> (String, RunEnd) {
    match outcome {
        Outcome::Answered { text, stop_reason } => (text, RunEnd::Answered(stop_reason)),
        Outcome::Refused { text, detail } => {
            let end = RunEnd::Unanswered {
                reason: StopReason::Refusal,
                error: refused(detail.as_deref(), in_chat),
            };
            (text, end)
        }
        Outcome::Silent { stop_reason } => {
            let end = RunEnd::Unanswered {
                error: silent(&stop_reason),
                reason: stop_reason,
            };
            (String::new(), end)
        }
        Outcome::TurnLimit { turns } => {
            let end = RunEnd::Stopped {
                why: EarlyStop::MaxTurns,
                error: turn_limit_message(turns),
            };
            (String::new(), end)
        }
        Outcome::Parked { parked, .. } => {
            let end = RunEnd::Stopped {
                why: EarlyStop::Parked,
                error: format!("waiting for an answer to \"{}\"", parked.question),
            };
            (String::new(), end)
        }
        Outcome::PromptBlocked { reason } => {
            let end = RunEnd::Stopped {
                why: EarlyStop::Blocked,
                error: format!(
                    "a user_prompt hook refused the prompt, so nothing was sent: {reason}"
                ),
            };
            (String::new(), end)
        }
    }
}

/// Reports the end of a prompt, then, with `notice`, why it has no whole
/// answer, on stderr in every format: after the final event, which ends the
/// answer's last line.
pub fn finish_with_notice(
    events: &dyn EventSink,
    session: &Session,
    text: String,
    end: RunEnd,
    notice: bool,
) {
    let said = match &end {
        RunEnd::Unanswered { error, .. } | RunEnd::Stopped { error, .. } if notice => {
            Some(format!("mecha: {error}"))
        }
        _ => None,
    };
    finish(events, session, text, end);
    if let Some(said) = said {
        output::err_line(&said);
    }
}

/// Reports the end of the run.
fn finish(events: &dyn EventSink, session: &Session, text: String, end: RunEnd) {
    events.emit(Event::Final {
        text,
        end,
        turns: session.turns,
        usage: session.usage,
        taint: session.taint,
    });
}

/// A failure as the final event reports it, in the words main prints.
fn failure_end(failure: &Failure) -> RunEnd {
    RunEnd::Stopped {
        why: EarlyStop::Error,
        error: format!("{failure:#}"),
    }
}

/// What an interrupt did.
pub const INTERRUPTED: &str = "interrupted; running tools were stopped";

/// Why a run stopped at the turn limit, and what to do: a rerun does not
/// pick up where this one stopped.
pub fn turn_limit_message(turns: u32) -> String {
    format!(
        "stopped after {turns} model requests (--max-turns); the task may be unfinished. A new \
         run starts over: raise --max-turns (or [agent] max_turns) and run the task again"
    )
}
