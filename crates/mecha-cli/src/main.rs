//! The `mecha` command: parses arguments, loads config, wires concrete tools
//! into a registry and runs a command.
//!
//! Exit codes: 0 success, 1 a run failed, 2 bad usage or configuration,
//! 3 a run stopped at --max-turns, 4 the model gave no answer (refused, or
//! said nothing), 130 interrupted, 141 stdout or stderr was closed by its
//! reader (see `output`).

mod approve;
mod commands;
mod config;
mod context_window;
mod hooks;
mod notice;
mod output;
mod render;
mod session;
mod skills;
mod stdin;
mod terminal;
mod wiring;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one task to an answer.
    Run(commands::run::RunArgs),
    /// Talk to the agent line by line; history and taint carry over.
    Chat(commands::chat::ChatArgs),
    /// List the tools a run would get, with the active sandbox.
    Tools(commands::tools::ToolsArgs),
    /// The skills a run would carry, and the ones config withheld.
    Skills(commands::skills::SkillsArgs),
    /// The configured hooks: list them, or try them on a sample.
    Hooks(commands::hooks::HooksArgs),
    /// The configured MCP servers: list them, or check one.
    #[command(subcommand)]
    Mcp(commands::mcp::McpCommand),
    /// The stored sessions: list them, or show one's transcript.
    #[command(subcommand)]
    Sessions(commands::sessions::SessionsCommand),
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

impl From<config::ConfigError> for Failure {
    fn from(e: config::ConfigError) -> Self {
        Self::Usage(e.to_string())
    }
}

fn main() -> ExitCode {
    hide_environment();
    init_logging();
    adopt_orphans();
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        // Both can carry outside text: an API's error message, a server's.
        Err(Failure::Usage(message)) => {
            terminal::report(&message);
            2
        }
        Err(Failure::Run(e)) => {
            terminal::report(&format!("{e:#}"));
            1
        }
    };
    // Output that nobody could read decides the code, whatever the run
    // thought of itself.
    ExitCode::from(output::exit_code().unwrap_or(code))
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let workspace = match cli.workspace {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| Failure::Usage(format!("cannot read the current directory: {e}")))?,
    };
    let workspace = std::fs::canonicalize(&workspace).map_err(|e| {
        Failure::Usage(format!(
            "workspace {} cannot be used: {e}; pass an existing directory with -C",
            workspace.display()
        ))
    })?;
    let home = config::mecha_home()?;
    let mut settings = config::Settings::load(&home, &workspace)?;
    for file in &cli.mcp_file {
        settings.import_mcp_file(file, "--mcp-file")?;
    }
    for warning in &settings.warnings {
        output::err_line(&format!("mecha: warning: {warning}"));
    }
    match cli.command {
        Command::Run(args) => commands::run::run(args, settings, &workspace),
        Command::Chat(args) => commands::chat::run(args, settings, &workspace),
        Command::Tools(args) => commands::tools::run(args, settings, &workspace),
        Command::Skills(args) => commands::skills::run(args, settings),
        Command::Hooks(args) => commands::hooks::run(args, settings, &workspace),
        Command::Mcp(command) => commands::mcp::run(command, settings, &workspace),
        Command::Sessions(command) => commands::sessions::run(command),
    }
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

/// The async runtime, built only by the commands that need one.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot start the async runtime: {e}")))
}

/// Makes this process undumpable, which also makes `/proc/<pid>/environ`
/// and `/proc/<pid>/mem` unreadable to processes of the same user: a shell
/// command or an MCP server could otherwise read the model API keys
/// straight out of mecha's environment, whatever their own environment
/// holds. (A process with CAP_SYS_PTRACE, e.g. root's, still can.)
fn hide_environment() {
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        output::err_line(&format!(
            "mecha: warning: cannot protect this process's environment: {e}"
        ));
    }
}

/// Makes what a command leaves behind mecha's to kill (see
/// `mecha_core::process_tree`), and makes a panic still kill it.
fn adopt_orphans() {
    mecha_core::install_panic_cleanup();
    if let Err(e) = mecha_core::become_subreaper() {
        eprintln!(
            "mecha: warning: cannot become a child subreaper ({e}); a process a command detaches \
             with setsid may outlive it"
        );
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
        .init();
}
