//! `mecha tui` under a pseudo-terminal of its own: keys typed, the screen
//! read back as a terminal would show it, and the terminal checked after.

use rustix::termios::LocalModes;

use super::pty::{Ended, Terminal};
use mecha_testkit::MockModel;

/// What the TUI writes once the terminal is in its modes (the alternate
/// screen, then bracketed paste): keys typed before it could be lost.
pub const READY: &str = "\u{1b}[?1049h\u{1b}[?2004h";
/// What it writes last: bracketed paste off, the shell's screen back, the
/// cursor shown.
pub const RESTORED: &str = "\u{1b}[?2004l\u{1b}[?1049l\u{1b}[?25h";

pub const CTRL_C: &[u8] = b"\x03";

/// A TUI under a pseudo-terminal of 100x30.
pub struct Tui {
    pub terminal: Terminal,
}

impl Tui {
    pub fn start(e: &super::Env, mock: &MockModel, args: &str) -> Self {
        let args: Vec<&str> = args.split_whitespace().collect();
        Self::start_with(e, mock, &args)
    }

    /// [`Tui::start`] with the arguments as given (one may hold spaces).
    pub fn start_with(e: &super::Env, mock: &MockModel, args: &[&str]) -> Self {
        let mecha = super::at_terminal(e, mock, args);
        Self {
            terminal: Terminal::start(&mecha, ROWS as u16, COLS as u16),
        }
    }

    pub fn pid(&self) -> u32 {
        self.terminal.pid()
    }

    /// Waits until what was written holds `bytes`.
    pub async fn wait_written(&self, bytes: &str) {
        let what = format!("{bytes:?} written");
        self.terminal
            .wait_until(&what, |screen| screen.contains(bytes))
            .await;
    }

    /// Waits until the screen, as a terminal would show it, holds `text`
    /// on one row (async: the mock model answers on this same runtime
    /// meanwhile).
    pub async fn wait_for(&self, text: &str) {
        let what = format!("{text:?} shown");
        self.terminal
            .wait_until(&what, |screen| cells(screen).contains(text))
            .await;
    }

    /// Resizes the terminal and waits until the screen is drawn again at
    /// its new size (ratatui clears it first).
    pub async fn resize_and_wait(&self, rows: u16, cols: u16) {
        let before = self.terminal.screen().len();
        self.terminal.resize(rows, cols);
        self.terminal
            .wait_until("a frame at the new size", |written| {
                written
                    .get(before..)
                    .is_some_and(|after| after.contains("\u{1b}[2J"))
            })
            .await;
    }

    /// Waits until `text` is shown as a finished answer: while one streams
    /// an ellipsis follows it, and the turn is over once that goes.
    pub async fn wait_answered(&self, text: &str) {
        let what = format!("{text:?} answered");
        self.terminal
            .wait_until(&what, |screen| {
                cells(screen)
                    .split_once(text)
                    .is_some_and(|(_, after)| !after.contains('…'))
            })
            .await;
    }

    pub fn type_keys(&mut self, keys: &[u8]) {
        self.terminal.type_keys(keys);
    }

    /// Waits for mecha to end.
    pub async fn end(self) -> Ended {
        self.terminal.end().await
    }

    /// Ctrl-C twice at an empty prompt: mecha ends with an interrupt's
    /// status (130), as chat does, and the terminal is as it was.
    pub async fn quit(mut self) -> Ended {
        self.type_keys(CTRL_C);
        self.wait_for("again to quit").await;
        self.type_keys(CTRL_C);
        let ended = self.end().await;
        assert_eq!(
            ended.status.code(),
            Some(130),
            "{:?}: {}",
            ended.status,
            ended.screen
        );
        assert_restored(&ended);
        ended
    }
}

pub const ROWS: usize = 30;
pub const COLS: usize = 100;

/// What a terminal shows after `written`, row by row: ratatui writes only
/// the cells that changed, moving the cursor (`CSI row;col H`) over the
/// rest, so the bytes alone do not hold the screen's words. Styles and
/// modes are ignored.
pub fn cells(written: &str) -> String {
    let mut grid = vec![vec![' '; COLS]; ROWS];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = written.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut params = String::new();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        last = c;
                        break;
                    }
                    params.push(c);
                }
                let numbers: Vec<usize> =
                    params.split(';').map(|n| n.parse().unwrap_or(1)).collect();
                match last {
                    'H' => {
                        row = numbers[0].max(1) - 1;
                        col = numbers.get(1).copied().unwrap_or(1).max(1) - 1;
                    }
                    'J' if params == "2" => grid = vec![vec![' '; COLS]; ROWS],
                    _ => {}
                }
            }
            // An operating system command (a notification): nothing shown.
            '\u{1b}' if chars.peek() == Some(&']') => {
                for c in chars.by_ref() {
                    if c == '\u{7}' {
                        break;
                    }
                }
            }
            '\r' => col = 0,
            '\n' => row += 1,
            c if c.is_control() => {}
            c => {
                if row < ROWS && col < COLS {
                    grid[row][col] = c;
                }
                col += 1;
            }
        }
    }
    grid.iter()
        .map(|r| r.iter().collect::<String>().trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks that mecha's last output restored the terminal: after its modes'
/// sequences it wrote only plain text (the conversation, left in the
/// scrollback), and the line discipline is canonical with echo again.
pub fn assert_restored(ended: &Ended) {
    let after = left_in_scrollback(ended);
    assert!(
        !after.contains('\u{1b}'),
        "an escape after the terminal was restored: {after:?}"
    );
    let modes = ended.modes.local_modes;
    assert!(modes.contains(LocalModes::ICANON), "raw mode was left on");
    assert!(modes.contains(LocalModes::ECHO), "echo was left off");
}

/// What mecha wrote after it restored the terminal.
pub fn left_in_scrollback(ended: &Ended) -> &str {
    let Some(at) = ended.screen.rfind(RESTORED) else {
        panic!("the terminal was not restored: {:?}", ended.screen);
    };
    &ended.screen[at + RESTORED.len()..]
}

/// The live processes whose parent is `pid` (a zombie has ended, and
/// waits only to be reaped).
pub fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's name in parentheses: state, then the parent.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let parent = fields.next().and_then(|p| p.parse().ok());
        if parent == Some(pid) && state != Some("Z") {
            found.extend(
                entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<u32>().ok()),
            );
        }
    }
    found
}
