//! The `mecha` command: parses arguments, loads config, wires concrete tools
//! into a registry and runs a command.
//!
//! Exit codes: 0 success, 1 a run failed (or `mecha doctor` found a
//! problem), 2 bad usage or configuration, 3 a run stopped at --max-turns,
//! 4 the model gave no answer (refused, or said nothing), 130 interrupted,
//! 141 stdout or stderr was closed by its reader (see `output`). Every
//! `--help` says so too ([`AFTER_HELP`]): change both together.

mod approve;
mod capped;
mod commands;
mod config;
mod context_window;
mod cost;
mod external_editor;
mod headless;
mod hooks;
mod instructions;
mod notice;
mod output;
mod raw_screen;
mod render;
mod rewind;
mod session;
mod skills;
mod status;
mod stdin;
mod terminal;
mod wiring;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "mecha",
    version,
    about = "An LLM agent harness whose security holds when the model does not"
)]
struct Cli {
    /// The workspace: the directory tools may touch (default: the current directory).
    #[arg(short = 'C', long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,

    /// Add the MCP servers of an mcpServers JSON file (Claude Desktop's,
    /// a .mcp.json) for this run; repeatable.
    #[arg(long, global = true, value_name = "PATH")]
    mcp_file: Vec<PathBuf>,

    /// Without a command: the terminal UI's own options (`mecha tui`'s).
    #[command(flatten)]
    bare: commands::tui::TuiArgs,

    /// None: the terminal UI at a terminal, the help elsewhere.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    #[command(flatten)]
    Configured(Configured),
    /// Check what could break a run, and say how to fix each.
    Doctor(commands::doctor::DoctorArgs),
    /// Print a completion script for a shell.
    Completions(commands::completions::CompletionsArgs),
    /// What delegated tasks asked you and wait for: list them, answer one.
    Questions(commands::questions::QuestionsArgs),
    /// Grade a model, a prompt or a config on a case set; merge and
    /// compare reports.
    Eval(commands::eval::EvalArgs),
    /// What [[outbox]] actions staged for your review: list, show,
    /// approve (it runs), reject.
    Outbox(commands::outbox::OutboxArgs),
    /// Tasks run on a schedule: add, list, show, remove, run one now.
    #[command(subcommand)]
    Trigger(commands::trigger::TriggerCommand),
    /// The scheduler: runs in the foreground and fires each trigger when
    /// it is due (and a run missed while the machine slept, once).
    Triggers(commands::triggers::TriggersArgs),
    /// Undo what a session's agent did: list its turns, put the workspace
    /// (or the conversation) back to before one.
    Rewind(commands::rewind::RewindArgs),
    /// What a session's turns changed in the workspace.
    Diff(commands::diff::DiffArgs),
}

/// The commands that need the configuration loaded.
#[derive(Subcommand, Debug)]
enum Configured {
    /// Run one task to an answer.
    Run(commands::run::RunArgs),
    /// Talk to the agent line by line; history and taint carry over.
    Chat(commands::chat::ChatArgs),
    /// The terminal UI (what `mecha` alone opens at a terminal).
    Tui(commands::tui::TuiArgs),
    /// List the tools a run would get, with the active sandbox.
    Tools(commands::tools::ToolsArgs),
    /// The skills a run would carry, and the ones config withheld.
    Skills(commands::skills::SkillsArgs),
    /// The configured hooks: list them, or try them on a sample.
    Hooks(commands::hooks::HooksArgs),
    /// The configured MCP servers: list them, or check one.
    #[command(subcommand)]
    Mcp(commands::mcp::McpCommand),
    /// The stored sessions: list them (the default), or show one's transcript.
    Sessions(commands::sessions::SessionsArgs),
    /// The effective configuration, and where each value came from.
    Config(commands::config::ConfigArgs),
}

/// Said under every `--help`, the subcommands' too: what mecha reads
/// besides its arguments, and what its exit codes mean.
const AFTER_HELP: &str = "\
Files:
  $MECHA_HOME/config.toml  your configuration (MECHA_HOME defaults to ~/.mecha)
  $MECHA_HOME/skills/      the skill store; $MECHA_HOME/sessions/ the stored sessions
  ./mecha.toml             the project's file in the workspace root: it can only narrow

Environment:
  MECHA_HOME                         where mecha keeps its files (default ~/.mecha)
  MECHA_LOG                          log filter for stderr, e.g. MECHA_LOG=debug
  ANTHROPIC_API_KEY, OPENAI_API_KEY  API keys (or the variable [provider] api_key_env names)
  ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ANTHROPIC_MODEL, OPENAI_MODEL
                                     used where [provider] leaves them unset
  HOME, PATH                         ~ in config paths; finding hook and MCP programs
  COLUMNS                            the width of `mecha sessions` listings

Exit codes:
  0    success                       1    the run failed (or a check found a problem)
  2    bad usage or configuration    3    the run stopped at --max-turns
  4    no answer: the model refused or said nothing, or a hook refused the prompt
  5    waiting for an answer: a delegated task asked you (see `mecha questions`)
  130  interrupted                   141  stdout or stderr was closed by its reader";

/// The command line as clap sees it, with [`AFTER_HELP`] under every
/// command's help.
pub fn cli_command() -> clap::Command {
    fn with_help(command: clap::Command) -> clap::Command {
        command.after_help(AFTER_HELP).mut_subcommands(with_help)
    }
    with_help(Cli::command())
}

/// A failure, and which exit code it earns.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The user's configuration or arguments cannot be used.
    #[error("{0}")]
    Usage(String),
    /// Something went wrong while running.
    #[error(transparent)]
    Run(#[from] anyhow::Error),
}

impl Failure {
    /// The exit code main leaves with for it.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Run(_) => 1,
        }
    }

    /// What went wrong, in a line for a screen that goes on (with every
    /// cause of a failed run).
    pub fn said(self) -> String {
        match self {
            Self::Usage(why) => why,
            Self::Run(e) => format!("{e:#}"),
        }
    }
}

/// A store of unattended work refusing what was asked (no such trigger, a
/// bad name) is a usage error; failing to read or write it, a failed run.
impl From<mecha_unattended::UnattendedError> for Failure {
    fn from(e: mecha_unattended::UnattendedError) -> Self {
        match e {
            mecha_unattended::UnattendedError::Usage(message) => Self::Usage(message),
            other => Self::Run(other.into()),
        }
    }
}

impl From<config::ConfigError> for Failure {
    fn from(e: config::ConfigError) -> Self {
        Self::Usage(e.to_string())
    }
}

fn main() -> ExitCode {
    // Inside a sandbox with `allow_hosts`, this binary is the bridge to the
    // proxy, and nothing of the CLI runs.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|a| a == mecha_sandbox::BRIDGE_ARG) {
        let code = mecha_sandbox::run_bridge(args.collect());
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    keep_inherited_descriptors_from_children();
    hide_environment();
    init_logging();
    adopt_orphans();
    let matches = cli_command().get_matches();
    if let Some(misplaced) = bare_option_before_a_command(&matches) {
        terminal::report(&misplaced);
        return ExitCode::from(2);
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let code = match run(cli) {
        Ok(code) => code,
        // Both can carry outside text: an API's error message, a server's.
        Err(failure) => {
            terminal::report(&format!("{failure:#}"));
            failure.exit_code()
        }
    };
    // A cancelled command's or a stopped server's sweep may still run on
    // its own thread: it must finish before the process does.
    mecha_sandbox::wait_for_background_sweeps(std::time::Duration::from_secs(10));
    // Output that nobody could read decides the code, whatever the run
    // thought of itself.
    ExitCode::from(output::exit_code().unwrap_or(code))
}

/// The bare command's own options (the screen's) given before a command,
/// as in `mecha --yes run …`: they would be dropped, so that is an error
/// that says where they go. Global options (`-C`, `--mcp-file`) are fine.
fn bare_option_before_a_command(matches: &clap::ArgMatches) -> Option<String> {
    let (command, _) = matches.subcommand()?;
    let bare = <commands::tui::TuiArgs as clap::Args>::augment_args(clap::Command::new("bare"));
    let given = bare.get_arguments().find(|arg| {
        matches.value_source(arg.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine)
    })?;
    let name = match given.get_long() {
        Some(long) => format!("--{long}"),
        None => given.get_id().to_string(),
    };
    Some(format!(
        "`{name}` is an option of `mecha` without a command; with `{command}` it goes \
         after the command name: `mecha {command} {name} …`"
    ))
}

/// A lone word where a command goes that is a command misspelt (`mecha
/// rn`): it would otherwise open the screen with `rn` as the first prompt.
fn misspelt_command(cli: &Cli) -> Option<String> {
    let word = cli.bare.lone_word().filter(|_| cli.command.is_none())?;
    let commands = cli_command();
    let meant = mecha_core::closest(word, commands.get_subcommands().map(|c| c.get_name()))?;
    Some(format!(
        "`{word}` is not a mecha command: did you mean `mecha {meant}`? To send `{word}` as \
         the first prompt, add a word or a space to it (`mecha \"{word} \"`)"
    ))
}

fn run(cli: Cli) -> Result<u8, Failure> {
    if let Some(message) = misspelt_command(&cli) {
        return Err(Failure::Usage(message));
    }
    let command = match cli.command {
        Some(Command::Completions(args)) => return commands::completions::run(&args),
        Some(Command::Questions(args)) => return commands::questions::run(args, &cli.mcp_file),
        Some(Command::Outbox(args)) => return commands::outbox::run(args),
        Some(Command::Eval(args)) => return commands::eval::run(args, &cli.mcp_file),
        Some(Command::Trigger(command)) => {
            let workspace = chosen_workspace(cli.workspace)?;
            return commands::trigger::run(command, &workspace, &cli.mcp_file);
        }
        Some(Command::Triggers(args)) => return commands::triggers::run(&args, &cli.mcp_file),
        Some(Command::Rewind(args)) => return commands::rewind::run(args),
        Some(Command::Diff(args)) => return commands::diff::run(args),
        Some(Command::Doctor(args)) => Err(args),
        Some(Command::Configured(command)) => Ok(command),
        None if at_terminal() || cli.bare.asks_for_a_screen() => Ok(Configured::Tui(cli.bare)),
        None => {
            // Nobody to show a screen to: say what mecha does instead.
            output::err_line(cli_command().render_help().to_string().trim_end());
            return Ok(2);
        }
    };
    let workspace = chosen_workspace(cli.workspace)?;
    let home = config::mecha_home()?;
    let loaded = load_settings(&home, &workspace, &cli.mcp_file);
    let command = match command {
        // The doctor reports a configuration that does not load rather
        // than stopping at it.
        Err(args) => return commands::doctor::run(&args, loaded, &workspace),
        Ok(command) => command,
    };
    let settings = loaded?;
    // A run refuses a broken hook (`wiring::build_agent`); the commands that
    // only look go on without it, and say so.
    let runs = matches!(
        command,
        Configured::Run(_) | Configured::Chat(_) | Configured::Tui(_)
    );
    let broken_hooks = match runs {
        true => Vec::new(),
        false => settings.hooks.problems(),
    };
    // The screen says its own, once it is up: written here they would be
    // hidden behind it.
    if !matches!(command, Configured::Tui(_)) {
        for warning in settings.warnings.iter().chain(&broken_hooks) {
            output::warning(warning);
        }
    }
    match command {
        Configured::Run(args) => commands::run::run(args, settings, &workspace),
        Configured::Chat(args) => commands::chat::run(args, settings, &workspace),
        Configured::Tui(args) => {
            let reload = || Ok(load_settings(&home, &workspace, &cli.mcp_file)?);
            commands::tui::run(args, settings, &workspace, &reload)
        }
        Configured::Tools(args) => commands::tools::run(args, settings, &workspace),
        Configured::Skills(args) => commands::skills::run(args, settings),
        Configured::Hooks(args) => commands::hooks::run(args, settings, &workspace),
        Configured::Mcp(command) => commands::mcp::run(command, settings, &workspace),
        Configured::Sessions(command) => commands::sessions::run(command),
        Configured::Config(args) => commands::config::run(args, settings, &workspace),
    }
}

/// The workspace `-C` names, or the current directory, checked.
fn chosen_workspace(given: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let workspace = match given {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| Failure::Usage(format!("cannot read the current directory: {e}")))?,
    };
    checked_workspace(&workspace)
}

/// Whether a screen can be shown: both stdin and stdout are terminals.
pub(crate) fn at_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Every layer of configuration: the user's file, the project's, and the
/// `--mcp-file`s.
pub(crate) fn load_settings(
    home: &std::path::Path,
    workspace: &std::path::Path,
    mcp_files: &[PathBuf],
) -> Result<config::Settings, config::ConfigError> {
    let mut settings = config::Settings::load(home, workspace)?;
    settings.add_mcp_files(mcp_files)?;
    Ok(settings)
}

/// The workspace, canonical: an existing directory, or a usage error that
/// says which of the two it is not.
pub(crate) fn checked_workspace(dir: &std::path::Path) -> Result<PathBuf, Failure> {
    let shown = dir.display();
    let canonical = std::fs::canonicalize(dir).map_err(|e| {
        Failure::Usage(match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("workspace {shown} does not exist; pass an existing directory with -C")
            }
            _ => {
                format!("workspace {shown} cannot be used: {e}; pass an existing directory with -C")
            }
        })
    })?;
    if !canonical.is_dir() {
        return Err(Failure::Usage(format!(
            "workspace {shown} is not a directory; -C needs a directory: pass the one that \
             holds it (or omit -C to use the current directory)"
        )));
    }
    Ok(canonical)
}

/// Resolves when the user or the system asks mecha to stop: SIGINT
/// (Ctrl-C), SIGTERM, or SIGHUP (the terminal went away). Tools run in
/// process groups of their own, so these signals do not reach them; the
/// caller stops them by dropping the run. The handlers are installed when
/// this is called, not when it is first polled: a signal that arrives while
/// the run's first poll is still starting a tool must be caught, not kill
/// mecha outright with the tool left running. Call it inside the runtime.
pub fn interrupted() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let mut streams = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .map(|kind| signal(kind).ok());
    async fn recv(stream: &mut Option<Signal>) {
        match stream {
            Some(stream) => {
                stream.recv().await;
            }
            // Unlistenable: never resolves, the other signals still do.
            None => std::future::pending::<()>().await,
        }
    }
    async move {
        let [int, term, hup] = &mut streams;
        tokio::select! {
            () = recv(int) => {}
            () = recv(term) => {}
            () = recv(hup) => {}
        }
    }
}

/// The async runtime, built only by the commands that need one: one
/// thread, the one that drives the loop. A turn's calls already run side by
/// side on the loop's own task, and blocking work goes to tokio's blocking
/// pool, so worker threads would only carry the HTTP connection and the
/// descriptors' readiness; each of those handed over between threads cost
/// a wake-up on the path from the model's answer to the next request.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot start the async runtime: {e}")))
}

/// Makes this process undumpable, which also makes `/proc/<pid>/environ`
/// and `/proc/<pid>/mem` unreadable to processes of the same user: a shell
/// command or an MCP server could otherwise read the model API keys
/// straight out of mecha's environment, whatever their own environment
/// holds. (A process with CAP_SYS_PTRACE, e.g. root's, still can.)
/// Marks every descriptor mecha inherited above stderr close-on-exec, so
/// none reaches what mecha starts: a directory descriptor its parent left
/// open (a shell's `exec 8</`, an IDE's socket, a make jobserver) would
/// let a confined command read and write the host through
/// `/proc/self/fd/8`, past every mount. mecha's own descriptors are opened
/// close-on-exec already; the seccomp program is mapped in explicitly.
///
/// Runs first in `main`, while the process has one thread, so nothing can
/// close or reuse a number between the listing and the `fcntl`.
fn keep_inherited_descriptors_from_children() {
    let listed: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2)
            .collect(),
        Err(e) => {
            output::warning(&format!(
                "cannot list the descriptors this process inherited ({e}); \
                 the programs it runs may inherit them too"
            ));
            return;
        }
    };
    for fd in listed {
        // SAFETY: `fd` was open when listed and, with one thread, nothing
        // closes it before this borrow ends; the number the listing itself
        // used is closed by now, and fcntl on it just fails with EBADF.
        #[allow(unsafe_code)]
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let _ = rustix::io::fcntl_getfd(borrowed).and_then(|flags| {
            rustix::io::fcntl_setfd(borrowed, flags | rustix::io::FdFlags::CLOEXEC)
        });
    }
}

fn hide_environment() {
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        output::warning(&format!("cannot protect this process's environment: {e}"));
    }
}

/// Makes what a command leaves behind mecha's to kill (see
/// `mecha_core::process_tree`), and makes a panic still kill it.
fn adopt_orphans() {
    mecha_core::install_panic_cleanup();
    if let Err(e) = mecha_core::become_subreaper() {
        output::warning(&format!(
            "cannot become a child subreaper ({e}); a process a command detaches with setsid \
             may outlive it"
        ));
    }
}

/// Logs go to stderr, filtered by `MECHA_LOG` (e.g. `MECHA_LOG=debug`);
/// nothing is logged unless it is set.
fn init_logging() {
    let Some(filter) = std::env::var_os("MECHA_LOG") else {
        return;
    };
    let filter = filter.to_string_lossy();
    // rustyline logs every key pressed at debug: a private prompt would
    // land in the log. Shown only when asked for by name.
    let filter = match filter.contains("rustyline") {
        true => filter.into_owned(),
        false => format!("{filter},rustyline=warn"),
    };
    let filter = tracing_subscriber::EnvFilter::new(filter);
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr()) && terminal::colour_allowed(),
        )
        .init();
}
