//! The terminal in the TUI's modes (raw, bracketed paste, focus reports,
//! the alternate screen) and back: [`RawScreen`] restores it when dropped, which covers a
//! normal quit, an error and a signal (the caller drops it on each), and a
//! panic hook restores it before the panic's message is printed, or the
//! message would land on the alternate screen and vanish with it.
//!
//! In raw mode Ctrl-C is a key, not SIGINT: the screen handles it.
//!
//! [`suspended`] hands the terminal to another program for a while (the
//! user's editor, Ctrl-G): the key reader stops reading, so not one key
//! meant for that program is taken, and the modes come back after.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, PoisonError};
use std::time::Duration;

use crossterm::cursor::Show;
use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange, Event,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// Whether the terminal is in the TUI's modes: whichever way out comes
/// first (the guard, the panic hook) restores it, once.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The terminal in the TUI's modes until this is dropped.
#[derive(Debug)]
pub struct RawScreen(());

impl RawScreen {
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        // Made before the rest, so a failure below still restores.
        let screen = Self(());
        modes_on()?;
        Ok(screen)
    }
}

/// The screen's own modes: the alternate screen, bracketed paste, and
/// focus reports (whether a finished turn should notify).
fn modes_on() -> io::Result<()> {
    execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableFocusChange
    )
}

/// Runs `program` with the terminal as the shell had it and no key read
/// here meanwhile; the TUI's modes are back afterwards (the screen must be
/// drawn anew).
pub fn suspended<T>(keys: &KeyReader, program: impl FnOnce() -> T) -> io::Result<T> {
    keys.set(Reading::PauseAsked);
    keys.wait_for(Reading::Paused);
    restore();
    let out = program();
    let back = enable_raw_mode().and_then(|()| {
        ACTIVE.store(true, Ordering::SeqCst);
        modes_on()
    });
    keys.set(Reading::On);
    back.map(|()| out)
}

impl Drop for RawScreen {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back as the shell had it, if the TUI changed it. The
/// cursor is shown last: ratatui hides it while drawing.
fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        // Nothing to do about a terminal that cannot be written to.
        let _ = execute!(
            io::stdout(),
            DisableFocusChange,
            DisableBracketedPaste,
            LeaveAlternateScreen,
            Show
        );
        let _ = disable_raw_mode();
    }
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Whether the key reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    On,
    /// Asked to stop: it does once the wait for a key in hand ends.
    PauseAsked,
    Paused,
}

/// How long the key reader waits for a key before it looks whether it was
/// asked to pause.
const PAUSE_CHECK: Duration = Duration::from_millis(50);

/// The handle that pauses the key reader (see [`suspended`]).
#[derive(Debug, Clone)]
pub struct KeyReader(Arc<(Mutex<Reading>, Condvar)>);

impl KeyReader {
    fn set(&self, reading: Reading) {
        let (state, changed) = &*self.0;
        *state.lock().unwrap_or_else(PoisonError::into_inner) = reading;
        changed.notify_all();
    }

    fn wait_for(&self, reading: Reading) {
        let (state, changed) = &*self.0;
        let guard = state.lock().unwrap_or_else(PoisonError::into_inner);
        drop(
            changed
                .wait_while(guard, |now| *now != reading)
                .unwrap_or_else(PoisonError::into_inner),
        );
    }

    /// Whether to read on: a pause asked for is taken here, and waited
    /// out.
    fn may_read(&self) {
        let (state, changed) = &*self.0;
        let mut now = state.lock().unwrap_or_else(PoisonError::into_inner);
        if *now == Reading::PauseAsked {
            *now = Reading::Paused;
            changed.notify_all();
        }
        drop(
            changed
                .wait_while(now, |now| *now != Reading::On)
                .unwrap_or_else(PoisonError::into_inner),
        );
    }
}

/// The terminal's keys, pastes and resizes, read on a thread of their own
/// (crossterm's read blocks), and the handle that pauses it. The thread
/// ends with the process, or when the screen stops listening.
pub fn events() -> io::Result<(UnboundedReceiver<Event>, KeyReader)> {
    let (keys, events) = unbounded_channel();
    let reader = KeyReader(Arc::new((Mutex::new(Reading::On), Condvar::new())));
    let paused = reader.clone();
    std::thread::Builder::new()
        .name("tui-keys".to_owned())
        .spawn(move || {
            loop {
                paused.may_read();
                // Only a wait that has a key in hand reads it: a key that
                // comes during a pause is the other program's.
                match crossterm::event::poll(PAUSE_CHECK) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(_) => break,
                }
                let Ok(event) = crossterm::event::read() else {
                    break;
                };
                if keys.send(event).is_err() {
                    break;
                }
            }
        })?;
    Ok((events, reader))
}
