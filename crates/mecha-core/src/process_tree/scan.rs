//! Reading `/proc`: which processes are mecha's children right now.
//!
//! After each command mecha first reads its threads' `children` lists
//! ([`listed_children_of`]), a few reads; when those cannot be trusted, or
//! show something to reap, a reap scans every process on the machine
//! ([`children_of`]). Each `stat` file costs one open, one read and one
//! close, and is read as bytes: a process name need not be UTF-8, and one
//! that is not must not hide an orphan from the reaper.

use std::fs;
use std::os::fd::AsFd;

use rustix::fs::{CWD, Mode, OFlags};

/// Room for a whole `stat` line (some fifty numbers after a name of at
/// most 64 bytes): one read takes all of it.
const STAT_ROOM: usize = 2048;

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
    let proc = rustix::fs::open(
        "/proc",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let (Ok(proc), Ok(listing)) = (proc, fs::read_dir("/proc")) else {
        return Vec::new();
    };
    let mut buf = [0u8; STAT_ROOM];
    listing
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = read_stat(&proc, &format!("{pid}/stat"), &mut buf)?;
            let (ppid, child) = parse_stat(pid, stat)?;
            (ppid == parent).then_some(child)
        })
        .collect()
}

/// mecha's own children (`parent` is mecha), found from its threads'
/// `children` lists: a read per thread instead of one per process on the
/// machine. The kernel walks such a list step by step, so a child collected
/// (or a thread ending) between two steps can hide another from that walk:
/// the lists are read twice and taken only when both readings agree.
/// `None` when they do not, or cannot be read (a kernel built without
/// them): then only [`children_of`] will do.
pub(super) fn listed_children_of(parent: i32) -> Option<Vec<ChildProc>> {
    let first = listed_pids()?;
    if listed_pids()? != first {
        return None;
    }
    let mut buf = [0u8; STAT_ROOM];
    Some(
        first
            .into_iter()
            .filter_map(|pid| {
                let stat = read_stat(CWD, &format!("/proc/{pid}/stat"), &mut buf)?;
                let (ppid, child) = parse_stat(pid, stat)?;
                (ppid == parent).then_some(child)
            })
            .collect(),
    )
}

/// The pids in this process's threads' `children` lists, sorted.
fn listed_pids() -> Option<Vec<i32>> {
    let mut pids = Vec::new();
    for task in fs::read_dir("/proc/self/task").ok()? {
        let text = fs::read(task.ok()?.path().join("children")).ok()?;
        for word in text
            .split(u8::is_ascii_whitespace)
            .filter(|w| !w.is_empty())
        {
            pids.push(std::str::from_utf8(word).ok()?.parse().ok()?);
        }
    }
    pids.sort_unstable();
    Some(pids)
}

/// A `stat` file, in one read.
fn read_stat<'b>(dir: impl AsFd, path: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let file =
        rustix::fs::openat(dir, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let read = rustix::io::read(&file, &mut *buf).ok()?;
    buf.get(..read)
}

/// The parent pid and the rest of what matters from a `stat` line:
/// `pid (comm) state ppid pgrp ...`. `comm` may hold spaces, parentheses
/// and bytes that are not UTF-8, so the fields are read after its last `)`.
pub(super) fn parse_stat(pid: i32, stat: &[u8]) -> Option<(i32, ChildProc)> {
    let name_end = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[name_end + 1..]).ok()?;
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
    let mut buf = [0u8; STAT_ROOM];
    read_stat(CWD, &format!("/proc/{pid}/stat"), &mut buf)
        .and_then(|stat| parse_stat(pid, stat))
        .is_some_and(|(ppid, _)| ppid == parent)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_command_name_with_parentheses_and_spaces_is_skipped_over() {
        let stat = b"4242 (evil) 1 2 (x) Z 17 4242 4242 0 -1 4194560 0 0";
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
        let (_, running) = parse_stat(7, b"7 (sleep) S 1 5 5 0").unwrap();
        assert!(!running.zombie);
        assert_eq!(parse_stat(7, b"7 (truncated"), None);
    }

    #[test]
    fn this_process_is_a_child_of_its_parent() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let parent = rustix::process::getppid().unwrap().as_raw_nonzero().get();
        assert!(is_child(me, parent));
        assert!(children_of(parent).iter().any(|c| c.pid == me));
    }

    #[test]
    fn the_threads_lists_hold_each_child_whatever_thread_started_it() {
        let _children = super::super::TEST_CHILDREN.blocking_lock();
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let start = || {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap()
        };
        let mut here = start();
        let mut there = std::thread::spawn(start).join().unwrap();
        // Other tests start and collect children meanwhile; the lists are
        // trusted once two readings agree.
        let listed = (0..200)
            .find_map(|_| {
                listed_children_of(me).or_else(|| {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    None
                })
            })
            .expect("two readings of the lists never agreed");
        for child in [&mut here, &mut there] {
            let pid = i32::try_from(child.id()).unwrap();
            let found = listed.iter().any(|c| c.pid == pid && !c.zombie);
            child.kill().unwrap();
            child.wait().unwrap();
            assert!(found, "{pid} is not in {listed:?}");
        }
    }

    #[test]
    fn a_child_whose_name_is_not_utf8_is_found() {
        use std::os::unix::ffi::OsStrExt;
        let _children = super::super::TEST_CHILDREN.blocking_lock();
        let dir = tempfile::tempdir().unwrap();
        // The kernel names a process after the file it was started from.
        let program = dir.path().join(std::ffi::OsStr::from_bytes(b"\xff\xfe)(x"));
        std::os::unix::fs::symlink("/bin/sleep", &program).unwrap();
        let mut child = std::process::Command::new(&program)
            .arg("30")
            .spawn()
            .unwrap();
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let pid = i32::try_from(child.id()).unwrap();
        let found = children_of(me).iter().any(|c| c.pid == pid);
        let still_child = is_child(pid, me);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            found,
            "the scan missed a child named with bytes that are not UTF-8"
        );
        assert!(still_child);
    }
}
