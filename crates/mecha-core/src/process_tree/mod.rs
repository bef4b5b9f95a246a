//! mecha's children, and whatever they leave behind.
//!
//! Every process mecha starts (a shell command, an MCP server) is spawned
//! through [`spawn_group`]: the leader of a new process group, registered
//! while its [`ProcessGroup`] guard lives, and killed with its whole group
//! when the guard drops. A group is not a cage, though: `setsid cmd &` or a
//! process that moves itself to another group escapes it. So the binary
//! makes mecha a child subreaper ([`become_subreaper`]): such a process is
//! re-parented to mecha instead of to init once its parent exits, and
//! [`reap_orphans`] finds it by its parent pid, kills it and collects its
//! exit status, so neither it nor its zombie outlives the command.
//!
//! Spared are the registered groups: a running command's own background
//! jobs, an MCP server launcher's real server (`npx` exits, `node` stays in
//! the server's group). A leader's exit status belongs to tokio, which
//! waits for it; this module only ever waits for processes it killed or
//! found dead, never for a leader.
//!
//! So a subreaper must start every child of its own through
//! [`spawn_group`]: a child of mecha that is not registered looks exactly
//! like an orphan, and the next reap kills it.

mod scan;
mod spawn;

use std::collections::BTreeSet;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, getpid, kill_process, kill_process_group};
use tokio::process::{Child, Command};

pub use spawn::{Program, Spawned, on_path, spawn_program_group};

/// The variables a third-party child (an MCP server, a hook) inherits from
/// mecha when present, because most runtimes cannot start without them.
/// Such a child starts from an empty environment and gets only these and
/// what its own config names: model keys never reach it.
pub const BASE_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "LC_ALL", "TZ"];

/// What mecha is responsible for right now.
#[derive(Debug, Default)]
struct Registry {
    /// Process groups of live guards: spared by the reaper.
    groups: BTreeSet<i32>,
    /// Leaders tokio may still have to wait for; never waited for here. A
    /// leader leaves this set once it is no longer mecha's child.
    leaders: BTreeSet<i32>,
}

/// Held by this crate's tests that start children of the test process and
/// by those that reap: a reap kills and collects every live child in no
/// registered group, which another test's child is (its `wait` then finds
/// no child, ECHILD).
#[cfg(test)]
pub(crate) static TEST_CHILDREN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    groups: BTreeSet::new(),
    leaders: BTreeSet::new(),
});

/// Every critical section leaves the registry consistent, so a panic
/// elsewhere does not make it unusable.
fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The registry for a panic hook: the panic may have struck on a thread
/// that holds it, so this gives up after a while instead of deadlocking.
fn registry_if_free() -> Option<MutexGuard<'static, Registry>> {
    for _ in 0..100 {
        match REGISTRY.try_lock() {
            Ok(reg) => return Some(reg),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    None
}

/// The most rounds of killing one reap does: killing an orphan re-parents
/// its own children to mecha, which the next round finds.
const MAX_ROUNDS: usize = 64;
/// How long one round waits for the processes it killed to die.
const DEATH_WAIT: Duration = Duration::from_millis(500);
/// How long one reap may take in all: a process stuck in the kernel (an
/// NFS read) dies late, and is collected by a later reap instead.
const REAP_LIMIT: Duration = Duration::from_secs(3);

/// Makes mecha a child subreaper (`PR_SET_CHILD_SUBREAPER`), so that what a
/// command leaves running is re-parented to mecha, where [`reap_orphans`]
/// can find it, rather than to init. Call once at start-up.
pub fn become_subreaper() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(getpid())).map_err(io::Error::from)
}

/// Spawns `cmd` as the leader of a new process group, killed on drop of the
/// guard (and of the child). The registry is held across the spawn, so a
/// reap running at the same moment can never mistake the new child for an
/// orphan.
pub fn spawn_group(cmd: &mut Command) -> io::Result<(Child, ProcessGroup)> {
    cmd.process_group(0).kill_on_drop(true);
    let mut reg = registry();
    let child = cmd.spawn()?;
    // `process_group(0)` makes the child the leader, so its pid is the
    // pgid. Never 0 or 1: signalling those would hit mecha's own group or
    // every process it may signal.
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .filter(|&id| id > 1);
    if let Some(pgid) = pgid {
        reg.groups.insert(pgid);
        reg.leaders.insert(pgid);
    }
    Ok((child, ProcessGroup { pgid }))
}

/// A registered process group, SIGKILLed whole when dropped.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<i32>,
}

impl ProcessGroup {
    /// Kills every process in the group now; the guard stays registered.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid.and_then(Pid::from_raw) {
            // ESRCH (the group is already gone) is the common, happy case.
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }

    /// Kills the group, unregisters it, and kills and reaps whatever it
    /// left behind, before returning: a later command never races a
    /// leftover of this one.
    pub async fn finish(mut self) {
        self.release();
        reap_orphans().await;
    }

    fn release(&mut self) {
        self.kill();
        if let Some(pgid) = self.pgid.take() {
            let mut reg = registry();
            reg.groups.remove(&pgid);
            // Usually tokio has collected the leader already; if not, the
            // reaper keeps sparing it until it has.
            if !scan::is_child(pgid, own_pid()) {
                reg.leaders.remove(&pgid);
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.pgid.is_none() {
            return;
        }
        self.release();
        // Dropped mid-run (a cancelled call, a dead server): what escaped
        // the group is still reaped, just not waited for here.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn_blocking(reap_orphans_now);
        }
    }
}

/// Kills every orphan re-parented to mecha (see [`become_subreaper`]) that
/// no live guard's group claims, and collects the exit status of each, and
/// of any that already died. Returns how many it collected.
pub async fn reap_orphans() -> usize {
    if let Some(collected) = reap_quickly() {
        return collected;
    }
    tokio::task::spawn_blocking(reap_orphans_now)
        .await
        .unwrap_or(0)
}

/// [`reap_orphans`] on the calling thread; it blocks for as long as the
/// killed processes take to die (bounded).
pub fn reap_orphans_now() -> usize {
    reap(|| Some(registry()))
}

/// A reap, done here when it needs no waiting: mecha's children from its
/// threads' lists (a few reads), and when those hold no live orphan, the
/// zombies among them (a confined command's sandbox leaves one) collected
/// at once. How most commands end, settled without a hop to the blocking
/// pool or a read of every process on the machine. `None` when the lists
/// cannot be trusted or a live orphan must be killed and waited for: the
/// blocking reap's work.
fn reap_quickly() -> Option<usize> {
    // Held across the look, as a reap holds it: a child spawned meanwhile
    // is registered before it could be seen.
    let mut reg = registry();
    let children = scan::listed_children_of(own_pid())?;
    reg.leaders
        .retain(|leader| children.iter().any(|c| c.pid == *leader));
    let doomed: Vec<&scan::ChildProc> = children.iter().filter(|c| reg.dooms(c)).collect();
    if doomed.iter().any(|c| !c.zombie) {
        return None;
    }
    // One look each, never a wait: a zombie whose other threads still run
    // cannot be collected yet, and is left to the blocking reap.
    let mut pending: Vec<Pid> = doomed.iter().filter_map(|c| Pid::from_raw(c.pid)).collect();
    let collected = collect_ready(&mut pending);
    pending.is_empty().then_some(collected)
}

impl Registry {
    /// Whether the reaper kills and collects `child`: a zombie that is no
    /// leader tokio waits for, or a live process in no registered group.
    fn dooms(&self, child: &scan::ChildProc) -> bool {
        !self.leaders.contains(&child.pid) && (child.zombie || !self.groups.contains(&child.pgid))
    }
}

fn reap(lock: impl Fn() -> Option<MutexGuard<'static, Registry>>) -> usize {
    let me = own_pid();
    let give_up = Instant::now() + REAP_LIMIT;
    let mut collected = 0;
    for _ in 0..MAX_ROUNDS {
        if Instant::now() >= give_up {
            break;
        }
        let doomed = {
            let Some(mut reg) = lock() else { break };
            let children = scan::children_of(me);
            reg.leaders
                .retain(|leader| children.iter().any(|c| c.pid == *leader));
            // A zombie is dead already: collecting it is always right,
            // whichever group it was in.
            let doomed: Vec<&scan::ChildProc> = children.iter().filter(|c| reg.dooms(c)).collect();
            for pid in doomed.iter().filter_map(|c| Pid::from_raw(c.pid)) {
                let _ = kill_process(pid, Signal::KILL);
            }
            // A zombie's children were handed to mecha when it died, before
            // this scan, so they are in it already: only killing a live
            // orphan can hand over more, for the next round to find. (A
            // sandbox's pid-1 process is such a zombie after every
            // confined command; one scan is enough for it.)
            let more_may_come = doomed.iter().any(|c| !c.zombie);
            (
                doomed.iter().map(|c| c.pid).collect::<Vec<i32>>(),
                more_may_come,
            )
        };
        let (doomed, more_may_come) = doomed;
        if doomed.is_empty() {
            break;
        }
        collected += collect(&doomed);
        if !more_may_come {
            break;
        }
    }
    collected
}

/// Kills every registered group and every orphan: for a process about to
/// die without running destructors (see `panic_cleanup`).
pub(crate) fn kill_everything() {
    if let Some(mut reg) = registry_if_free() {
        for pgid in reg.groups.iter().copied().filter_map(Pid::from_raw) {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
        reg.groups.clear();
    }
    reap(registry_if_free);
}

/// Waits (bounded) for each of `pids`, which were killed or are zombies.
fn collect(pids: &[i32]) -> usize {
    let deadline = Instant::now() + DEATH_WAIT;
    let mut pending: Vec<Pid> = pids.iter().filter_map(|&p| Pid::from_raw(p)).collect();
    let mut collected = 0;
    while !pending.is_empty() {
        collected += collect_ready(&mut pending);
        if pending.is_empty() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    collected
}

/// Collects each of `pending` that has exited, without waiting, and
/// leaves in it those still running; returns how many it collected.
fn collect_ready(pending: &mut Vec<Pid>) -> usize {
    let mut collected = 0;
    pending.retain(
        |&pid| match rustix::process::waitpid(Some(pid), WaitOptions::NOHANG) {
            Ok(Some(_)) => {
                collected += 1;
                false
            }
            Ok(None) => true,
            // ECHILD: not (or no longer) mecha's to wait for.
            Err(_) => false,
        },
    );
    collected
}

fn own_pid() -> i32 {
    getpid().as_raw_nonzero().get()
}
