//! What mecha runs when nobody watches.
//!
//! - [`trigger`]: a named task on a cron schedule, kept as one TOML file
//!   each under `$MECHA_HOME/triggers/`, with the state of its last run and
//!   a lock that keeps two runs of it from overlapping.
//! - [`schedule`]: the five-field cron schedule and the times it names, in
//!   the machine's local time.
//! - [`questions`]: a delegated task's question for its absent owner,
//!   parked under `$MECHA_HOME/questions/` with the turn it interrupted,
//!   until `mecha questions answer` resumes the task.
//! - [`asking`]: the `ask_user` tool of a delegated task, which parks, and
//!   the approver of a task nobody watches.
//! - [`outbox`]: `[[outbox]]` actions as tools that stage a call for the
//!   owner's review instead of performing it, and the store of staged items.

pub mod asking;
mod files;
pub mod outbox;
pub mod questions;
pub mod schedule;
pub mod trigger;

pub use asking::{NobodyToAsk, ParkingAskUser};
pub use questions::{Question, QuestionStore};
pub use schedule::Schedule;
pub use trigger::{LastRun, Trigger, TriggerStore};

/// What went wrong with an unattended store, each saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum UnattendedError {
    #[error("{0}")]
    Usage(String),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} cannot be read: {reason}; fix it by hand or remove it")]
    Malformed {
        path: std::path::PathBuf,
        reason: String,
    },
}
