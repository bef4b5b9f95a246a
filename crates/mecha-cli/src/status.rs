//! The status line on a terminal: while the model is awaited (how long,
//! and about how many tokens have streamed) and while tools run (which,
//! and how long), redrawn in place on stderr. `output` erases it before
//! anything else is written, so it never mixes with the answer or a
//! question; it is drawn only at the start of a line, never over a line
//! the answer or thinking left open.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::output;

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(200);
/// A phase shorter than this shows no line at all: a flicker says nothing.
const SHOW_AFTER: Duration = Duration::from_millis(500);

/// The status line of one run or chat; it stops drawing when dropped.
pub struct Status {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

#[derive(Default)]
struct State {
    phase: Phase,
    /// Something (the answer, thinking) left the cursor mid-line.
    mid_line: bool,
    /// The gate is judging a call and may ask a question: nothing may be
    /// drawn over it.
    held: bool,
    dim: bool,
}

#[derive(Default)]
enum Phase {
    #[default]
    Idle,
    /// A model request is out; `chars` of it have streamed.
    Waiting { since: Instant, chars: usize },
    /// These calls (id, name, since) are running.
    Tools(Vec<(String, String, Instant)>),
}

impl Status {
    /// Starts redrawing; `dim`: the terminal may be sent colour.
    pub fn start(dim: bool) -> Self {
        let state = Arc::new(Mutex::new(State {
            dim,
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (drawn, stopped) = (Arc::clone(&state), Arc::clone(&stop));
        let spawned = std::thread::Builder::new()
            .name("mecha-status".to_owned())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    let line = drawn.lock().map(|s| s.line()).unwrap_or(None);
                    if let Some(line) = line
                        && !stopped.load(Ordering::Relaxed)
                    {
                        output::status(&line);
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "no status line: cannot start its thread");
        }
        Self { state, stop }
    }

    fn with(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut state);
    }

    /// A model request went out.
    pub fn waiting(&self) {
        self.with(|s| {
            s.phase = Phase::Waiting {
                since: Instant::now(),
                chars: 0,
            }
        });
    }

    /// `chars` more of the answer or its thinking streamed.
    pub fn streamed(&self, more: usize) {
        self.with(|s| {
            if let Phase::Waiting { chars, .. } = &mut s.phase {
                *chars += more;
            }
        });
    }

    /// The cursor is mid-line (or back at a line's start).
    pub fn mid_line(&self, mid_line: bool) {
        self.with(|s| s.mid_line = mid_line);
    }

    /// The gate is judging a call: draw nothing until its verdict.
    pub fn hold(&self) {
        self.with(|s| s.held = true);
        output::clear_status();
    }

    /// The gate decided about a call.
    pub fn judged(&self) {
        self.with(|s| s.held = false);
    }

    /// A call was allowed; it runs once the turn's calls are all judged.
    pub fn tool_started(&self, id: &str, name: &str) {
        self.with(|s| {
            let call = (id.to_owned(), name.to_owned(), Instant::now());
            match &mut s.phase {
                Phase::Tools(calls) => calls.push(call),
                _ => s.phase = Phase::Tools(vec![call]),
            }
        });
    }

    /// A call's result came back.
    pub fn tool_done(&self, id: &str) {
        self.with(|s| {
            if let Phase::Tools(calls) = &mut s.phase {
                calls.retain(|(running, ..)| running != id);
                if calls.is_empty() {
                    s.phase = Phase::Idle;
                }
            }
        });
    }

    /// Nothing to show: the prompt's run is over.
    pub fn idle(&self) {
        self.with(|s| s.phase = Phase::Idle);
        output::clear_status();
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        output::clear_status();
    }
}

impl State {
    /// The line to draw now, if any.
    fn line(&self) -> Option<String> {
        if self.mid_line || self.held {
            return None;
        }
        let (since, what) = match &self.phase {
            Phase::Idle => return None,
            Phase::Waiting { since, chars: 0 } => (*since, "waiting for the model".to_owned()),
            // About four characters a token: an estimate until the API
            // reports the usage at the turn's end.
            Phase::Waiting { since, chars } => (
                *since,
                format!("the model is answering, ~{} tokens", chars.div_ceil(4)),
            ),
            Phase::Tools(calls) => {
                let since = calls.iter().map(|c| c.2).min()?;
                let names: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
                (since, format!("running {}", names.join(", ")))
            }
        };
        let elapsed = since.elapsed();
        if elapsed < SHOW_AFTER {
            return None;
        }
        let text = format!("mecha: {what} ({}s)", elapsed.as_secs());
        Some(match self.dim {
            true => format!("\x1b[2m{text}\x1b[0m"),
            false => text,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn state(phase: Phase, dim: bool) -> State {
        State {
            phase,
            mid_line: false,
            held: false,
            dim,
        }
    }

    #[test]
    fn the_line_says_what_is_awaited_and_for_how_long() {
        let long_ago = Instant::now() - Duration::from_secs(3);
        let waiting = state(
            Phase::Waiting {
                since: long_ago,
                chars: 0,
            },
            false,
        );
        assert_eq!(waiting.line().unwrap(), "mecha: waiting for the model (3s)");
        let streaming = state(
            Phase::Waiting {
                since: long_ago,
                chars: 41,
            },
            false,
        );
        assert!(streaming.line().unwrap().contains("~11 tokens"));
        let tools = state(
            Phase::Tools(vec![("a".into(), "shell".into(), long_ago)]),
            true,
        );
        assert_eq!(
            tools.line().unwrap(),
            "\x1b[2mmecha: running shell (3s)\x1b[0m"
        );
    }

    #[test]
    fn no_line_over_an_open_line_or_for_a_moment() {
        let mut open = state(
            Phase::Waiting {
                since: Instant::now() - Duration::from_secs(3),
                chars: 0,
            },
            false,
        );
        open.mid_line = true;
        assert!(open.line().is_none());
        open.mid_line = false;
        open.held = true;
        assert!(open.line().is_none(), "a question may be on screen");
        let brief = state(
            Phase::Waiting {
                since: Instant::now(),
                chars: 0,
            },
            false,
        );
        assert!(brief.line().is_none());
    }
}
