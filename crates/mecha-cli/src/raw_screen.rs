//! The terminal in the TUI's modes (raw, bracketed paste, the alternate
//! screen) and back: [`RawScreen`] restores it when dropped, which covers a
//! normal quit, an error and a signal (the caller drops it on each), and a
//! panic hook restores it before the panic's message is printed, or the
//! message would land on the alternate screen and vanish with it.
//!
//! In raw mode Ctrl-C is a key, not SIGINT: the screen handles it.

use std::io;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::Show;
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, Event};
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
        execute!(io::stdout(), EnterAlternateScreen, EnableBracketedPaste)?;
        Ok(screen)
    }
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

/// The terminal's keys, pastes and resizes, read on a thread of their own:
/// crossterm's read blocks. The thread ends with the process, or when the
/// screen stops listening.
pub fn events() -> io::Result<UnboundedReceiver<Event>> {
    let (keys, events) = unbounded_channel();
    std::thread::Builder::new()
        .name("tui-keys".to_owned())
        .spawn(move || {
            while let Ok(event) = crossterm::event::read() {
                if keys.send(event).is_err() {
                    break;
                }
            }
        })?;
    Ok(events)
}
