//! Triggers: a prompt run on a schedule in a fixed workspace, with only the
//! skills its file names (none when it names none) and the tools it names
//! (the config's when it names none). One TOML file each in the store's
//! folder, 0600; beside them the state of each one's last run and the lock
//! a run holds, so that two runs of one trigger never overlap.

use std::fs::File;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Local};
use serde::{Deserialize, Serialize};

use crate::UnattendedError;
use crate::files::{checked_name, names, private_dir, read, write_private};
use crate::schedule::Schedule;

/// One trigger as its file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    pub schedule: String,
    pub prompt: String,
    /// Absolute: where the run works, whatever directory started it.
    pub workspace: PathBuf,
    /// The skills the run carries; empty is none.
    #[serde(default)]
    pub skills: Vec<String>,
    /// The tools the run keeps; empty is the config's set.
    #[serde(default)]
    pub tools: Vec<String>,
    /// When it was added (RFC 3339): what its first run is due from.
    pub added: String,
}

impl Trigger {
    /// The checked schedule.
    pub fn schedule(&self) -> Result<Schedule, String> {
        Schedule::parse(&self.schedule)
    }

    /// When it was added, as a local time (now, if the file's is unreadable).
    pub fn added_at(&self) -> DateTime<Local> {
        parse_time(&self.added).unwrap_or_else(Local::now)
    }
}

/// What the last run of a trigger did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// When it started (RFC 3339).
    pub started: String,
    /// Its exit code, once it ended.
    #[serde(default)]
    pub exit: Option<i32>,
    /// When it ended.
    #[serde(default)]
    pub finished: Option<String>,
}

impl LastRun {
    pub fn started_at(&self) -> Option<DateTime<Local>> {
        parse_time(&self.started)
    }
}

fn parse_time(text: &str) -> Option<DateTime<Local>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Local))
}

/// A time as the stores write it.
pub fn written_time(time: &DateTime<Local>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// The folder of triggers.
#[derive(Debug, Clone)]
pub struct TriggerStore {
    dir: PathBuf,
}

/// A running trigger's hold on its lock: released when dropped (or when
/// the process ends, however it ends).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl TriggerStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.toml"))
    }

    fn state_file(&self, name: &str) -> PathBuf {
        self.dir.join(".state").join(format!("{name}.json"))
    }

    /// Writes a new trigger; one by that name already there is an error.
    pub fn add(&self, name: &str, trigger: &Trigger) -> Result<PathBuf, UnattendedError> {
        checked_name("trigger", name)?;
        trigger.schedule().map_err(UnattendedError::Usage)?;
        let path = self.file(name);
        if path.exists() {
            return Err(UnattendedError::Usage(format!(
                "there is already a trigger `{name}` ({}); `mecha trigger remove {name}` first, \
                 or pick another name",
                path.display()
            )));
        }
        let text = toml::to_string(trigger).map_err(|e| UnattendedError::Malformed {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        write_private(&path, &text)?;
        Ok(path)
    }

    /// The trigger `name`, or an error naming the ones there are.
    pub fn get(&self, name: &str) -> Result<Trigger, UnattendedError> {
        checked_name("trigger", name)?;
        let path = self.file(name);
        let Some(text) = read(&path)? else {
            let known = self.names()?;
            let known = match known.is_empty() {
                true => "there are none yet; add one with `mecha trigger add`".to_owned(),
                false => format!("the triggers are: {}", known.join(", ")),
            };
            return Err(UnattendedError::Usage(format!(
                "there is no trigger `{name}`; {known}"
            )));
        };
        toml::from_str(&text).map_err(|e| UnattendedError::Malformed {
            path,
            reason: e.message().to_owned(),
        })
    }

    /// Every trigger's name, sorted.
    pub fn names(&self) -> Result<Vec<String>, UnattendedError> {
        names(&self.dir, "toml")
    }

    /// Removes the trigger and the record of its runs.
    pub fn remove(&self, name: &str) -> Result<(), UnattendedError> {
        self.get(name)?;
        for path in [self.file(name), self.state_file(name)] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(UnattendedError::Io {
                        what: "cannot remove",
                        path,
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// What the last run did, if there was one.
    pub fn last_run(&self, name: &str) -> Result<Option<LastRun>, UnattendedError> {
        let path = self.state_file(name);
        let Some(text) = read(&path)? else {
            return Ok(None);
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| UnattendedError::Malformed {
                path,
                reason: e.to_string(),
            })
    }

    /// Records what a run did (its start, then its end).
    pub fn record(&self, name: &str, run: &LastRun) -> Result<(), UnattendedError> {
        let text = serde_json::to_string(run).unwrap_or_default();
        write_private(&self.state_file(name), &text)
    }

    /// Takes the trigger's run lock, or says a run of it is going on.
    pub fn lock(&self, name: &str) -> Result<RunLock, UnattendedError> {
        let dir = self.dir.join(".locks");
        private_dir(&dir)?;
        let path = dir.join(format!("{name}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| UnattendedError::Io {
                what: "cannot open",
                path: path.clone(),
                source,
            })?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(RunLock { _file: file }),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(UnattendedError::Usage(format!(
                "trigger `{name}` is running already; a trigger never runs twice at once"
            ))),
            Err(e) => Err(UnattendedError::Io {
                what: "cannot lock",
                path,
                source: e.into(),
            }),
        }
    }

    /// What the trigger's runs so far cover: its last run's start, or when
    /// it was added.
    pub fn covered(&self, name: &str, trigger: &Trigger) -> DateTime<Local> {
        self.last_run(name)
            .ok()
            .flatten()
            .and_then(|run| run.started_at())
            .unwrap_or_else(|| trigger.added_at())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn trigger() -> Trigger {
        Trigger {
            schedule: "0 7 * * *".into(),
            prompt: "brief me".into(),
            workspace: "/tmp".into(),
            skills: vec![],
            tools: vec!["fs_read".into()],
            added: written_time(&Local::now()),
        }
    }

    #[test]
    fn a_trigger_is_written_privately_read_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TriggerStore::new(dir.path().join("triggers"));
        let path = store.add("briefing", &trigger()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(store.get("briefing").unwrap(), trigger());
        assert_eq!(store.names().unwrap(), ["briefing"]);
        let again = store.add("briefing", &trigger()).unwrap_err().to_string();
        assert!(again.contains("mecha trigger remove briefing"), "{again}");
        store.remove("briefing").unwrap();
        let gone = store.get("briefing").unwrap_err().to_string();
        assert!(gone.contains("there are none yet"), "{gone}");
    }

    #[test]
    fn names_that_could_leave_the_folder_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = TriggerStore::new(dir.path().to_owned());
        for bad in ["../x", "a/b", "", ".hidden", "-rf", "a b"] {
            assert!(store.add(bad, &trigger()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_second_run_of_one_trigger_waits_for_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let store = TriggerStore::new(dir.path().to_owned());
        let held = store.lock("briefing").unwrap();
        let err = store.lock("briefing").unwrap_err().to_string();
        assert!(err.contains("running already"), "{err}");
        drop(held);
        store.lock("briefing").unwrap();
    }
}
