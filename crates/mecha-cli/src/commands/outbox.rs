//! `mecha outbox`: what `[[outbox]]` actions staged for your review. `show`
//! prints an item whole, `approve` runs its command (as you, the input on
//! its stdin) once you have seen it, `reject` records that it must not
//! happen; the session that staged it is told either way when it next runs.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use chrono::Local;
use clap::{Args, Subcommand};
use mecha_unattended::outbox::{Decision, Item};
use mecha_unattended::trigger::written_time;

use crate::Failure;
use crate::terminal::printable;
use crate::wiring::outbox_store;

#[derive(Args, Debug)]
pub struct OutboxArgs {
    #[command(subcommand)]
    command: Option<OutboxCommand>,
}

#[derive(Subcommand, Debug)]
enum OutboxCommand {
    /// List what waits for review (the default); with --all, decided items too.
    List {
        #[arg(long)]
        all: bool,
    },
    /// Show an item whole: the action, its command and the input, escaped.
    Show { id: String },
    /// Run an item's command now, after showing it and asking (--yes: don't ask).
    Approve {
        id: String,
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Refuse an item: it never runs, and its session is told.
    Reject {
        id: String,
        /// Why, for the session that staged it.
        #[arg(long)]
        reason: Option<String>,
    },
}

pub fn run(args: OutboxArgs) -> Result<u8, Failure> {
    let store = outbox_store()?;
    match args.command.unwrap_or(OutboxCommand::List { all: false }) {
        OutboxCommand::List { all } => {
            let items: Vec<Item> = store
                .list()?
                .into_iter()
                .filter(|item| all || item.decision == Decision::Staged)
                .collect();
            if items.is_empty() {
                println!("nothing waits in the outbox");
            }
            for item in &items {
                println!("{}", listed(item));
            }
            Ok(0)
        }
        OutboxCommand::Show { id } => {
            print!("{}", shown(&store.get(&id)?));
            Ok(0)
        }
        OutboxCommand::Reject { id, reason } => {
            let mut item = pending(&store.get(&id)?)?;
            item.decision = Decision::Rejected {
                at: written_time(&Local::now()),
                reason: reason.filter(|r| !r.trim().is_empty()),
            };
            store.save(&item)?;
            crate::output::err_line(&format!(
                "mecha: rejected {}; it will not run, and its session is told when it next runs",
                item.id
            ));
            Ok(0)
        }
        OutboxCommand::Approve { id, yes } => {
            let mut item = pending(&store.get(&id)?)?;
            print!("{}", shown(&item));
            if !yes && !confirmed()? {
                crate::output::err_line("mecha: not approved; the item still waits");
                return Ok(1);
            }
            let exit = perform(&item)?;
            item.decision = Decision::Approved {
                at: written_time(&Local::now()),
                exit,
            };
            store.save(&item)?;
            crate::output::err_line(&format!(
                "mecha: {} ran{}",
                item.id,
                match exit {
                    Some(0) => String::new(),
                    Some(code) => format!(" and failed (exit {code})"),
                    None => " and was killed".to_owned(),
                }
            ));
            Ok(match exit {
                Some(0) => 0,
                _ => 1,
            })
        }
    }
}

/// The item, if it still waits for a decision.
fn pending(item: &Item) -> Result<Item, Failure> {
    match &item.decision {
        Decision::Staged => Ok(item.clone()),
        Decision::Approved { at, .. } => Err(Failure::Usage(format!(
            "{} was approved already ({at}); it runs once",
            item.id
        ))),
        Decision::Rejected { at, .. } => Err(Failure::Usage(format!(
            "{} was rejected ({at}); stage it again to send it",
            item.id
        ))),
    }
}

fn decision_word(item: &Item) -> String {
    match &item.decision {
        Decision::Staged => "waiting".to_owned(),
        Decision::Approved { exit: Some(0), .. } => "approved, ran".to_owned(),
        Decision::Approved { .. } => "approved, failed".to_owned(),
        Decision::Rejected { .. } => "rejected".to_owned(),
    }
}

fn listed(item: &Item) -> String {
    let when = item
        .staged
        .get(..16)
        .unwrap_or(&item.staged)
        .replace('T', " ");
    let session = item.session.as_deref().unwrap_or("(unsaved session)");
    printable(&format!(
        "{}  {}  {}  session {session}  {when}  {}",
        item.id,
        item.action,
        decision_word(item),
        item.staged_by()
    ))
    .into_owned()
}

/// The item whole, every byte of its input visible (escaped JSON).
fn shown(item: &Item) -> String {
    let input = serde_json::to_string_pretty(&item.input).unwrap_or_default();
    let command: Vec<String> = item.command.iter().map(|a| format!("{a:?}")).collect();
    let mut text = format!(
        "item       {}\naction     {}\nstatus     {}\nstaged     {} in session {}\n           {}\n\
         workspace  {}\ncommand    {}\ninput (on its stdin):\n{input}\n",
        item.id,
        item.action,
        decision_word(item),
        item.staged,
        item.session.as_deref().unwrap_or("(unsaved)"),
        item.staged_by(),
        item.workspace.display(),
        command.join(" "),
    );
    if let Decision::Rejected {
        reason: Some(reason),
        ..
    } = &item.decision
    {
        text.push_str(&format!("reason     {reason}\n"));
    }
    // JSON escapes control characters already; the rest goes through the
    // one filter for the terminal.
    printable(&text).into_owned()
}

/// Asks "Run it?" on the terminal; with nobody there, approval needs --yes.
fn confirmed() -> Result<bool, Failure> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::Usage(
            "nobody is at the terminal to confirm; read the item above and pass --yes to run it"
                .into(),
        ));
    }
    eprint!("Run it? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Failure::Run(e.into()))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

/// Runs the command with the input on its stdin; its exit code.
fn perform(item: &Item) -> Result<Option<i32>, Failure> {
    let Some((program, args)) = item.command.split_first() else {
        return Err(Failure::Usage(format!("{} has no command to run", item.id)));
    };
    let mut child = Command::new(program)
        .args(args)
        .current_dir(&item.workspace)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Failure::Run(anyhow::anyhow!(
                "cannot start `{program}` for {}: {e}; the item still waits",
                item.id
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(item.input.to_string().as_bytes());
    }
    let status = child.wait().map_err(|e| Failure::Run(e.into()))?;
    Ok(status.code())
}
