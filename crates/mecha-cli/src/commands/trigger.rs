//! `mecha trigger`: add, list, show, remove and run the triggers that
//! `mecha triggers` fires on their schedules, and install the systemd user
//! unit that keeps the scheduler running.

use std::path::{Path, PathBuf};

use chrono::Local;
use clap::Subcommand;
use mecha_unattended::trigger::written_time;
use mecha_unattended::{LastRun, Trigger, TriggerStore};

use crate::Failure;
use crate::commands::RunOptions;
use crate::commands::run::{self, RunArgs};
use crate::terminal::printable;

#[derive(Subcommand, Debug)]
pub enum TriggerCommand {
    /// Add a trigger: a prompt run on a schedule in the workspace (-C, or
    /// the current directory), delegated: nobody is asked to approve, and a
    /// question to you parks it for `mecha questions answer`.
    Add {
        /// Letters, digits, `-` and `_`.
        name: String,
        /// Five cron fields in local time (`0 7 * * *`: 07:00 daily), or
        /// @hourly, @daily, @weekly, @monthly.
        #[arg(long)]
        schedule: String,
        /// What the run is asked to do.
        #[arg(long)]
        prompt: String,
        /// A skill the run carries (repeatable); with none, it carries none.
        #[arg(long = "skill", value_name = "NAME")]
        skills: Vec<String>,
        /// A tool the run keeps (repeatable); with none, the config's set.
        #[arg(long = "tool", value_name = "NAME")]
        tools: Vec<String>,
    },
    /// List the triggers with their schedules and next runs.
    List,
    /// Everything about one trigger: schedule, next run, workspace, prompt,
    /// tools, skills and its last run.
    Show { name: String },
    /// Remove a trigger.
    Remove { name: String },
    /// Run a trigger now, exactly as the scheduler would.
    Run { name: String },
    /// Write the systemd user unit that runs `mecha triggers`.
    InstallUnits,
}

/// The store of triggers.
pub fn store() -> Result<TriggerStore, Failure> {
    Ok(TriggerStore::new(
        crate::config::mecha_home()?.join("triggers"),
    ))
}

pub fn run(
    command: TriggerCommand,
    workspace: &Path,
    mcp_files: &[PathBuf],
) -> Result<u8, Failure> {
    let store = store()?;
    match command {
        TriggerCommand::Add {
            name,
            schedule,
            prompt,
            skills,
            tools,
        } => {
            if prompt.trim().is_empty() {
                return Err(Failure::Usage(
                    "the prompt is empty; say what the trigger's run should do".into(),
                ));
            }
            let trigger = Trigger {
                schedule,
                prompt,
                workspace: workspace.to_owned(),
                skills,
                tools,
                added: written_time(&Local::now()),
            };
            let path = store.add(&name, &trigger)?;
            crate::output::err_line(&format!(
                "mecha: added trigger `{name}` ({})",
                path.display()
            ));
            print!("{}", shown(&store, &name, &trigger));
            Ok(0)
        }
        TriggerCommand::List => {
            let names = store.names()?;
            if names.is_empty() {
                println!(
                    "no triggers; add one with `mecha trigger add NAME --schedule … --prompt …`"
                );
            }
            for name in names {
                match store.get(&name) {
                    Ok(trigger) => println!(
                        "{name}  {}  next {}  {}",
                        trigger.schedule,
                        next_run(&trigger),
                        printable(&trigger.workspace.display().to_string())
                    ),
                    Err(e) => println!("{name}  cannot be read: {e}"),
                }
            }
            Ok(0)
        }
        TriggerCommand::Show { name } => {
            let trigger = store.get(&name)?;
            print!("{}", shown(&store, &name, &trigger));
            Ok(0)
        }
        TriggerCommand::Remove { name } => {
            store.remove(&name)?;
            crate::output::err_line(&format!("mecha: removed trigger `{name}`"));
            Ok(0)
        }
        TriggerCommand::Run { name } => run_now(&store, &name, mcp_files),
        TriggerCommand::InstallUnits => crate::commands::triggers::install_units(),
    }
}

/// The next time the schedule names, in local time.
fn next_run(trigger: &Trigger) -> String {
    match trigger.schedule() {
        Ok(schedule) => schedule
            .next_after(&Local::now())
            .map_or("never".to_owned(), |t| {
                t.format("%Y-%m-%d %H:%M %Z").to_string()
            }),
        Err(e) => format!("none ({e})"),
    }
}

/// `trigger show`'s text: every line there even when it is empty, since
/// what an unattended run does must be read from here.
fn shown(store: &TriggerStore, name: &str, trigger: &Trigger) -> String {
    let list = |items: &[String], empty: &str| match items.is_empty() {
        true => empty.to_owned(),
        false => items.join(", "),
    };
    let last = match store.last_run(name) {
        Ok(Some(run)) => last_line(&run),
        Ok(None) => "never".to_owned(),
        Err(e) => format!("unknown ({e})"),
    };
    let mut text = format!(
        "trigger    {name}\nschedule   {}\nnext run   {}\nworkspace  {}\nprompt     {}\n\
         tools      {}\nskills     {}\nlast run   {last}\n",
        trigger.schedule,
        next_run(trigger),
        trigger.workspace.display(),
        trigger.prompt.replace('\n', "\n           "),
        list(&trigger.tools, "(none named: the config's tools)"),
        list(&trigger.skills, "(none: the run carries no skills)"),
    );
    if let Ok(schedule) = trigger.schedule() {
        let now = Local::now();
        if let Some(due) = schedule.due(&store.covered(name, trigger), &now)
            && now - due > chrono::Duration::minutes(1)
        {
            text.push_str(&format!(
                "missed     the run due {} did not happen (the scheduler was not running); it \
                 runs once when `mecha triggers` next starts\n",
                due.format("%Y-%m-%d %H:%M")
            ));
        }
    }
    printable(&text).into_owned()
}

fn last_line(run: &LastRun) -> String {
    let started = run.started.replace('T', " ");
    match (run.exit, &run.finished) {
        (Some(code), _) => format!("{started}, exit {code}{}", exit_meaning(code)),
        (None, _) => format!("{started}, still running (or it was killed)"),
    }
}

fn exit_meaning(code: i32) -> &'static str {
    match code {
        0 => "",
        5 => " (waiting for an answer: `mecha questions`)",
        _ => " (failed: `mecha sessions` has its session)",
    }
}

/// Runs the trigger now, holding its lock, and records the run.
pub fn run_now(store: &TriggerStore, name: &str, mcp_files: &[PathBuf]) -> Result<u8, Failure> {
    let trigger = store.get(name)?;
    let _lock = store.lock(name)?;
    let workspace = crate::checked_workspace(&trigger.workspace)?;
    let settings = crate::load_settings(&crate::config::mecha_home()?, &workspace, mcp_files)?;
    for warning in &settings.warnings {
        crate::output::warning(warning);
    }
    let started = written_time(&Local::now());
    let record = |exit: Option<i32>| {
        let run = LastRun {
            started: started.clone(),
            exit,
            finished: exit.map(|_| written_time(&Local::now())),
        };
        if let Err(e) = store.record(name, &run) {
            crate::output::warning(&format!("trigger `{name}`: its run is not recorded: {e}"));
        }
    };
    record(None);
    let options = RunOptions {
        tools: trigger.tools.clone(),
        skills: trigger.skills.clone(),
        no_skills: trigger.skills.is_empty(),
        ..RunOptions::default()
    };
    let args = RunArgs::for_trigger(name, &trigger.prompt, options);
    let code = run::run(args, settings, &workspace);
    record(Some(match &code {
        Ok(code) => i32::from(*code),
        Err(failure) => i32::from(failure.exit_code()),
    }));
    code
}
