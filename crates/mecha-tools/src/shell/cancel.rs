//! What a shell call still owes the host when it is dropped before its
//! end (Ctrl-C, SIGTERM, a subagent's `timeout_s`): its process group
//! killed, then the sandbox's sweep. Without it the lease went with no
//! sweep at all, and what the command had planted for git or a login
//! shell on the host stayed, for the next job's baseline to count as the
//! user's own.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mecha_core::ProcessGroup;
use mecha_sandbox::{Finished, Lease};

/// How long the sweep waits for the killed command's first process to be
/// gone before it looks at the workspace anyway.
const GONE_WITHIN: Duration = Duration::from_secs(2);

/// Holds the group and the lease while the call runs; [`Self::disarm`]
/// hands them back on the normal path, where the call finishes both and
/// reports the sweep in its result.
#[derive(Debug)]
pub(super) struct Owed {
    owed: Option<(ProcessGroup, Option<Lease>)>,
    /// The command's first process, watched for its end.
    pid: Option<u32>,
}

impl Owed {
    pub(super) fn new(group: ProcessGroup, lease: Option<Lease>, pid: Option<u32>) -> Self {
        Self {
            owed: Some((group, lease)),
            pid,
        }
    }

    pub(super) fn group(&self) -> &ProcessGroup {
        match &self.owed {
            Some((group, _)) => group,
            None => unreachable!("the group is only taken by disarm, which consumes self"),
        }
    }

    pub(super) fn disarm(mut self) -> (ProcessGroup, Option<Lease>) {
        match self.owed.take() {
            Some(owed) => owed,
            None => unreachable!("owed is only taken here and in drop"),
        }
    }
}

impl Drop for Owed {
    fn drop(&mut self) {
        let Some((group, lease)) = self.owed.take() else {
            return;
        };
        // Killed here and now; the sweep waits for the command to be gone.
        drop(group);
        let Some(lease) = lease else { return };
        let proc_dir = self.pid.map(|pid| PathBuf::from(format!("/proc/{pid}")));
        lease.finish_in_background(
            move || {
                if let Some(dir) = proc_dir {
                    wait_gone(&dir);
                }
            },
            report,
        );
    }
}

/// Until the process is gone or a zombie (it can no longer write).
pub(super) fn wait_gone(dir: &std::path::Path) {
    let deadline = Instant::now() + GONE_WITHIN;
    while Instant::now() < deadline {
        match std::fs::read_to_string(dir.join("stat")) {
            Ok(stat) if !is_zombie(&stat) => std::thread::sleep(Duration::from_millis(5)),
            _ => return,
        }
    }
}

/// The state field of `/proc/PID/stat`, after the command's name in
/// parentheses (which may hold anything, a `)` included).
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
}

/// Nobody awaits the call's result any more: what the sweep undid goes to
/// the log.
fn report(finished: Finished) {
    for line in finished.undone {
        tracing::warn!("after an interrupted shell command: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_after_the_name() {
        assert!(is_zombie("42 (bash) Z 1 42 42"));
        assert!(!is_zombie("42 (a) Z (b) S 1 42"));
        assert!(!is_zombie("42 (bash) S 1 42 42"));
    }
}
