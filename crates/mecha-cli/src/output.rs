//! Everything mecha prints goes through here, so that a reader who goes
//! away ends the run quietly instead of crashing it.
//!
//! `println!` panics when stdout is a pipe whose reader has exited
//! (`mecha run … | head -1`), and a panic in a release build aborts,
//! which skips every Drop that kills a tool's process group. Here a failed
//! write marks the output closed instead; so does a watcher that sees the
//! reader of a stdout or stderr pipe go away while nothing is being written
//! (a long tool call). The run and chat loops stop on [`closed`] as they
//! do on Ctrl-C, and `main` exits with [`exit_code`].

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, Once, PoisonError};

use tokio::sync::Notify;

/// The exit code for a closed pipe: 128 + SIGPIPE, what a shell reports for
/// a writer the signal stopped (`yes | head -1`), so a pipeline under
/// `set -o pipefail` sees mecha as it sees any other Unix tool.
pub const EXIT_PIPE_CLOSED: u8 = 141;

/// Any other failure to write: the output is lost, so the run failed.
const EXIT_WRITE_FAILED: u8 = 1;

/// 0 while the output is open, otherwise the exit code it earned.
static CLOSED: AtomicU8 = AtomicU8::new(0);
static CLOSING: Notify = Notify::const_new();
static WATCH: Once = Once::new();

/// Whether a status line is drawn on stderr now. Held while anything is
/// written, so a redraw never lands between the erase and the output it
/// made room for.
static STATUS: Mutex<bool> = Mutex::new(false);

/// Back to the line's start, and clear it.
const ERASE: &[u8] = b"\r\x1b[2K";

/// The status lock, with the status line erased: what every write takes
/// first, so the line never mixes with other output.
fn room() -> MutexGuard<'static, bool> {
    let mut shown = STATUS.lock().unwrap_or_else(PoisonError::into_inner);
    if std::mem::take(&mut *shown) {
        let _ = std::io::stderr().lock().write_all(ERASE);
    }
    shown
}

/// Draws `line` as the status line on stderr, in place of the last one.
/// Only for a terminal: the caller checks.
pub fn status(line: &str) {
    let mut shown = room();
    let mut drawn = ERASE.to_vec();
    drawn.extend_from_slice(line.as_bytes());
    if std::io::stderr().lock().write_all(&drawn).is_ok() {
        *shown = true;
    }
}

/// Erases the status line, if one is drawn.
pub fn clear_status() {
    drop(room());
}

/// Writes `text` to stdout and flushes it.
pub fn out(text: &str) {
    let _room = room();
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(e) = written {
        failed(&e, Stream::Stdout);
    }
}

/// `println!` through [`out`]: a closed stdout is recorded, not a panic.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::out(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// Where stderr's text goes instead while a full screen is up, which a
/// write to the terminal would tear.
type Diversion = Box<dyn Fn(&str) + Send>;
static DIVERTED: Mutex<Option<Diversion>> = Mutex::new(None);

/// Sends what [`err`] is given to `to` instead of stderr, until called
/// again with `None`.
pub fn divert(to: Option<Diversion>) {
    *DIVERTED.lock().unwrap_or_else(PoisonError::into_inner) = to;
}

/// Writes `text` to stderr in one write (stderr is unbuffered: a line
/// written piecemeal costs a syscall per piece).
pub fn err(text: &str) {
    if let Some(to) = DIVERTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        to(text.trim_end_matches('\n'));
        return;
    }
    let _room = room();
    if let Err(e) = std::io::stderr().lock().write_all(text.as_bytes()) {
        failed(&e, Stream::Stderr);
    }
}

/// Writes `line` and a newline to stderr, in one write.
pub fn err_line(line: &str) {
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    err(&buf);
}

/// Lines [`once`] has written in this process.
static SAID_ONCE: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// Writes `line` to stderr unless this process already wrote it. The
/// screen reloads the configuration for each conversation it starts
/// (`/clear`, `/resume`, `/model`), and a warning the user has already
/// read on it is not news the second time.
pub fn once(line: &str) {
    let fresh = SAID_ONCE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(line.to_owned());
    if fresh {
        err_line(line);
    }
}

/// A warning, `mecha: warning: …`, made printable and said once per
/// process ([`once`]).
pub fn warning(text: &str) {
    once(&mecha_core::printable(&format!("mecha: warning: {text}")));
}

/// The exit code the run earned by losing its output, if it did.
pub fn exit_code() -> Option<u8> {
    match CLOSED.load(Ordering::SeqCst) {
        0 => None,
        code => Some(code),
    }
}

/// Resolves once stdout or stderr can no longer be written. The first call
/// starts the watcher.
pub async fn closed() {
    WATCH.call_once(watch_pipes);
    let notified = CLOSING.notified();
    tokio::pin!(notified);
    // Registered before the check, so a close between the two still wakes.
    notified.as_mut().enable();
    if exit_code().is_some() {
        return;
    }
    notified.await;
}

#[derive(PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

fn failed(error: &std::io::Error, stream: Stream) {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        mark(EXIT_PIPE_CLOSED);
        return;
    }
    let first = mark(EXIT_WRITE_FAILED);
    // Not a reader that left: something is wrong (a full disk), and the
    // other stream may still be able to say so, once.
    if first && stream == Stream::Stdout {
        let _ = writeln!(std::io::stderr(), "mecha: cannot write to stdout: {error}");
    }
}

/// Records the first closing; true if this was it.
fn mark(code: u8) -> bool {
    let first = CLOSED
        .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    CLOSING.notify_waiters();
    first
}

/// Watches stdout and stderr when they are pipes or sockets: poll reports
/// an error (or hang-up) on a pipe's write end once its reader has gone,
/// which a run busy in a long tool call would otherwise only notice at its
/// next write. Terminals are left out: a terminal that goes away sends
/// SIGHUP, which the run already handles.
fn watch_pipes() {
    use rustix::event::{PollFd, PollFlags, poll};
    use rustix::fs::{FileType, fstat};
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let is_pipe = |fd: &dyn std::os::fd::AsFd| {
        fstat(fd).is_ok_and(|st| {
            matches!(
                FileType::from_raw_mode(st.st_mode),
                FileType::Fifo | FileType::Socket
            )
        })
    };
    let watch_out = is_pipe(&stdout);
    let watch_err = is_pipe(&stderr);
    if !watch_out && !watch_err {
        return;
    }
    // A plain thread parked in poll(2): it costs nothing while it waits and
    // does not hold up the process's exit.
    let spawned = std::thread::Builder::new()
        .name("mecha-output-watch".to_owned())
        .spawn(move || {
            let mut fds = Vec::with_capacity(2);
            if watch_out {
                fds.push(PollFd::new(&stdout, PollFlags::empty()));
            }
            if watch_err {
                fds.push(PollFd::new(&stderr, PollFlags::empty()));
            }
            loop {
                match poll(&mut fds, None) {
                    Ok(_) => {
                        let gone = PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL;
                        if fds.iter().any(|fd| fd.revents().intersects(gone)) {
                            mark(EXIT_PIPE_CLOSED);
                            return;
                        }
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    // Cannot watch: a failed write still closes the output.
                    Err(_) => return,
                }
            }
        });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "cannot watch stdout and stderr for a closed pipe");
    }
}
