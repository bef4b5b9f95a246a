//! Reading `/proc`: which processes are mecha's children right now.

use std::fs;

/// One child of mecha, as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ChildProc {
    pub pid: i32,
    pub pgid: i32,
    /// Exited, waiting for mecha to collect its status.
    pub zombie: bool,
}

/// Every process whose parent is `parent`. A process that exits while the
/// scan runs is simply missing from it.
pub(super) fn children_of(parent: i32) -> Vec<ChildProc> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (ppid, child) = parse_stat(pid, &stat)?;
            (ppid == parent).then_some(child)
        })
        .collect()
}

/// The parent pid and the rest of what matters from a `stat` line:
/// `pid (comm) state ppid pgrp ...`. `comm` may hold spaces and
/// parentheses, so the fields are read after its last `)`.
pub(super) fn parse_stat(pid: i32, stat: &str) -> Option<(i32, ChildProc)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((
        ppid,
        ChildProc {
            pid,
            pgid,
            zombie: state == "Z",
        },
    ))
}

/// Whether `pid` is still a child of `parent` (alive or a zombie).
pub(super) fn is_child(pid: i32, parent: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| parse_stat(pid, &stat))
        .is_some_and(|(ppid, _)| ppid == parent)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_command_name_with_parentheses_and_spaces_is_skipped_over() {
        let stat = "4242 (evil) 1 2 (x) Z 17 4242 4242 0 -1 4194560 0 0";
        let (ppid, child) = parse_stat(4242, stat).unwrap();
        assert_eq!(ppid, 17);
        assert_eq!(
            child,
            ChildProc {
                pid: 4242,
                pgid: 4242,
                zombie: true
            }
        );
        let (_, running) = parse_stat(7, "7 (sleep) S 1 5 5 0").unwrap();
        assert!(!running.zombie);
        assert_eq!(parse_stat(7, "7 (truncated"), None);
    }

    #[test]
    fn this_process_is_a_child_of_its_parent() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let parent = rustix::process::getppid().unwrap().as_raw_nonzero().get();
        assert!(is_child(me, parent));
        assert!(children_of(parent).iter().any(|c| c.pid == me));
    }
}
