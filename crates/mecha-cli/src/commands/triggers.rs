//! `mecha triggers`: the scheduler. It runs in the foreground, reads the
//! triggers' folder at every tick (so an added or removed trigger counts
//! from the next one), and fires each due trigger as its own `mecha trigger
//! run NAME` process, never two of one trigger at once. A run missed while
//! nothing was running (the machine slept) is due at the next start, once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use chrono::{DateTime, Local};
use clap::Args;
use mecha_unattended::{Trigger, TriggerStore};

use crate::Failure;
use crate::commands::trigger::store;
use crate::output::err_line;

/// The shipped unit, with ExecStart set when installed.
const SERVICE_UNIT: &str = include_str!("../../../../contrib/systemd/mecha-triggers.service");
const SERVICE_NAME: &str = "mecha-triggers.service";

/// How long the scheduler sleeps at most between looks at the folder.
const TICK: Duration = Duration::from_secs(5);

#[derive(Args, Debug)]
pub struct TriggersArgs {
    /// Fire what is due now, wait for those runs, and exit (for a systemd
    /// timer or a crontab line instead of a running scheduler).
    #[arg(long)]
    once: bool,
}

fn say(line: &str) {
    err_line(&format!("mecha triggers: {line}"));
}

pub fn run(args: &TriggersArgs, mcp_files: &[PathBuf]) -> Result<u8, Failure> {
    let store = store()?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot find mecha's own executable: {e}")))?;
    let mut scheduler = Scheduler {
        store,
        exe,
        mcp_files: mcp_files.to_owned(),
        running: BTreeMap::new(),
        reported: BTreeSet::new(),
    };
    say(&format!(
        "watching {} ({} triggers); Ctrl-C stops",
        scheduler.store.dir().display(),
        scheduler.store.names().map(|n| n.len()).unwrap_or(0)
    ));
    loop {
        scheduler.reap();
        scheduler.fire_due(&Local::now());
        if args.once {
            while !scheduler.running.is_empty() {
                std::thread::sleep(Duration::from_millis(100));
                scheduler.reap();
            }
            return Ok(0);
        }
        std::thread::sleep(TICK);
    }
}

struct Scheduler {
    store: TriggerStore,
    exe: PathBuf,
    mcp_files: Vec<PathBuf>,
    running: BTreeMap<String, Child>,
    /// Problems already said, so a broken file is reported once.
    reported: BTreeSet<String>,
}

impl Scheduler {
    fn once(&mut self, problem: String) {
        if self.reported.insert(problem.clone()) {
            say(&problem);
        }
    }

    /// Starts every trigger due at `now` that is not running.
    fn fire_due(&mut self, now: &DateTime<Local>) {
        let names = match self.store.names() {
            Ok(names) => names,
            Err(e) => return self.once(format!("cannot list the triggers: {e}")),
        };
        for name in names {
            if self.running.contains_key(&name) {
                continue;
            }
            let trigger = match self.store.get(&name) {
                Ok(trigger) => trigger,
                Err(e) => {
                    self.once(format!("{name}: skipped: {e}"));
                    continue;
                }
            };
            let schedule = match trigger.schedule() {
                Ok(schedule) => schedule,
                Err(e) => {
                    self.once(format!("{name}: skipped: {e}"));
                    continue;
                }
            };
            if let Some(due) = schedule.due(&self.store.covered(&name, &trigger), now) {
                self.start(&name, &trigger, &due, now);
            }
        }
    }

    fn start(
        &mut self,
        name: &str,
        trigger: &Trigger,
        due: &DateTime<Local>,
        now: &DateTime<Local>,
    ) {
        let when = due.format("%Y-%m-%d %H:%M");
        let late = *now - *due > chrono::Duration::minutes(1);
        let mut command = Command::new(&self.exe);
        for file in &self.mcp_files {
            command.arg("--mcp-file").arg(file);
        }
        command
            .args(["trigger", "run", name])
            .current_dir(&trigger.workspace)
            .stdin(std::process::Stdio::null());
        match command.spawn() {
            Ok(child) => {
                let how = match late {
                    true => format!(
                        "the run due {when} was missed (nothing was running then); running it \
                         once now"
                    ),
                    false => format!("due {when}, running"),
                };
                say(&format!("{name}: {how} (pid {})", child.id()));
                self.running.insert(name.to_owned(), child);
            }
            Err(e) => self.once(format!(
                "{name}: cannot start `mecha trigger run {name}`: {e}"
            )),
        }
    }

    /// Says how each finished run ended.
    fn reap(&mut self) {
        let mut ended = Vec::new();
        for (name, child) in &mut self.running {
            if let Ok(Some(status)) = child.try_wait() {
                ended.push((name.clone(), status));
            }
        }
        for (name, status) in ended {
            self.running.remove(&name);
            let how = match status.code() {
                Some(0) => "ended".to_owned(),
                Some(5) => "waiting for your answer: `mecha questions` shows the question".into(),
                Some(code) => format!("failed (exit {code}); `mecha trigger show {name}`"),
                None => "was killed".to_owned(),
            };
            say(&format!("{name}: {how}"));
        }
    }
}

/// `mecha trigger install-units`: writes the service with ExecStart set to
/// this mecha, and says how to start it.
pub fn install_units() -> Result<u8, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot find mecha's own executable: {e}")))?;
    let dir = match std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        Some(config) => PathBuf::from(config),
        None => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|home| PathBuf::from(home).join(".config"))
            .ok_or_else(|| {
                Failure::Usage(
                    "HOME is not set, so there is no systemd user folder to write to".into(),
                )
            })?,
    }
    .join("systemd/user");
    let unit = SERVICE_UNIT.replace(
        "ExecStart=%h/.cargo/bin/mecha triggers",
        &format!("ExecStart={} triggers", exe.display()),
    );
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(SERVICE_NAME), unit))
        .map_err(|e| Failure::Run(anyhow::anyhow!("cannot write {}: {e}", dir.display())))?;
    println!("wrote {}", dir.join(SERVICE_NAME).display());
    println!(
        "start it with: systemctl --user daemon-reload && systemctl --user enable --now \
         {SERVICE_NAME}"
    );
    println!("and keep it running while you are logged out: loginctl enable-linger \"$USER\"");
    Ok(0)
}
