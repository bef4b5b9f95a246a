//! `mecha chat`'s line editor at a terminal (rustyline): editing, history
//! kept in a file, bracketed paste. One thread owns it and does every read
//! from the terminal, the prompt's and each approval question's, so the
//! two never fight over raw mode or over keys typed ahead (rustyline keeps
//! those for its next read, and its next read is the only one).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use mecha_tui::complete::Completion;
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ColorMode, CompletionType, ConditionalEventHandler, Config, Context, Editor, Event,
    EventContext, EventHandler, Helper, KeyEvent, Movement, RepeatCount,
};
use tokio::sync::oneshot;

use super::Prompt;
use crate::terminal::printable;

/// Prompts kept in the history file: enough to find last week's, small
/// enough to load in well under a millisecond.
pub const HISTORY_ENTRIES: usize = 1000;

/// What is read next.
enum Ask {
    /// A prompt: history on, Ctrl-C clears the line.
    Prompt,
    /// An answer to the question whose last line this is.
    Answer(String),
}

struct Request {
    ask: Ask,
    reply: oneshot::Sender<Prompt>,
}

/// The editor's thread, reached through its requests.
pub struct LineEditor {
    requests: mpsc::Sender<Request>,
    /// The terminal's settings before the editor first made it raw.
    cooked: Option<rustix::termios::Termios>,
}

impl LineEditor {
    /// Starts the editor, with its history in `history` (`None`: none kept)
    /// and Tab completing from `completion`.
    pub fn start(history: Option<PathBuf>, completion: Completion) -> Result<Self, ReadlineError> {
        let asking = Arc::new(AtomicBool::new(false));
        let config = Config::builder()
            .max_history_size(HISTORY_ENTRIES)?
            .auto_add_history(false)
            .bracketed_paste(true)
            // As a shell does: Tab completes what the choices share, a
            // second Tab lists them.
            .completion_type(CompletionType::List)
            // The helper's highlight is what escapes the echoed line; it is
            // used only when colours are on.
            .color_mode(ColorMode::Forced)
            .build();
        let mut editor: Editor<Echo, FileHistory> = Editor::with_config(config)?;
        editor.set_helper(Some(Echo {
            completion,
            asking: Arc::clone(&asking),
        }));
        editor.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(CtrlC {
                asking: Arc::clone(&asking),
            })),
        );
        if let Some(path) = &history
            && path.exists()
        {
            // An unreadable history costs the recall, not the chat.
            if let Err(e) = editor.load_history(path) {
                crate::terminal::report(&format!("chat history {} not read: {e}", path.display()));
            }
        }
        let cooked = rustix::termios::tcgetattr(std::io::stdin()).ok();
        let (requests, incoming) = mpsc::channel();
        // A plain thread: readline blocks, and it outlives any one runtime.
        std::thread::spawn(move || serve(editor, history.as_deref(), &asking, &incoming));
        Ok(Self { requests, cooked })
    }

    /// Puts the terminal back as it was. Chat can end (SIGTERM, a closed
    /// output) while the thread is mid-read with the terminal raw and
    /// bracketed paste on; the process must not leave the shell so.
    pub fn restore_terminal(&self) {
        use std::io::Write;
        if let Some(cooked) = &self.cooked {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                cooked,
            );
        }
        let _ = std::io::stdout().write_all(b"\x1b[?2004l");
        let _ = std::io::stdout().flush();
    }

    pub async fn prompt(&self) -> Prompt {
        self.read(Ask::Prompt).await
    }

    /// The answer to a question whose last line (no newline) is `question`.
    pub async fn answer(&self, question: &str) -> Option<String> {
        match self
            .read(Ask::Answer(printable(question).into_owned()))
            .await
        {
            Prompt::Text(text) => Some(text),
            Prompt::Eof => None,
            // SIGINT is on its way and stops the turn (every turn listens
            // for it); answering "no" meanwhile would let the turn go on.
            Prompt::Interrupted => std::future::pending().await,
        }
    }

    async fn read(&self, ask: Ask) -> Prompt {
        let (reply, read) = oneshot::channel();
        if self.requests.send(Request { ask, reply }).is_err() {
            return Prompt::Eof;
        }
        read.await.unwrap_or(Prompt::Eof)
    }
}

fn serve(
    mut editor: Editor<Echo, FileHistory>,
    history: Option<&Path>,
    asking: &AtomicBool,
    incoming: &mpsc::Receiver<Request>,
) {
    // A line read for an asker who left (the turn was stopped while its
    // question was open) goes to the next asker, as typed lines do on the
    // plain path.
    let mut unclaimed = None;
    for Request { ask, reply } in incoming {
        let read = match unclaimed.take() {
            Some(read) => read,
            None => read(&mut editor, &ask, history, asking),
        };
        if let Err(read) = reply.send(read) {
            unclaimed = Some(read);
        }
    }
}

fn read(
    editor: &mut Editor<Echo, FileHistory>,
    ask: &Ask,
    history: Option<&Path>,
    asking: &AtomicBool,
) -> Prompt {
    let question = match ask {
        Ask::Prompt => None,
        Ask::Answer(question) => Some(question.as_str()),
    };
    asking.store(question.is_some(), Ordering::Relaxed);
    let Some(question) = question else {
        let prompt = read_prompt(editor);
        if let Prompt::Text(text) = &prompt
            && !text.trim().is_empty()
        {
            remember(editor, text, history);
        }
        return prompt;
    };
    match editor.readline(question) {
        Ok(line) => Prompt::Text(line),
        Err(ReadlineError::Interrupted) => {
            // Ctrl-C during a question stops the turn, as it does when the
            // terminal is not raw: the same signal, to the same listener.
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::INT,
            );
            Prompt::Interrupted
        }
        Err(e) => ended(e),
    }
}

/// A prompt: lines read while each ends in `\` (dropped; the line break
/// stays), as on the plain path. A pasted backslash is not at the end of a
/// line read, so it stays.
fn read_prompt(editor: &mut Editor<Echo, FileHistory>) -> Prompt {
    let mut text = String::new();
    let mut prompt = "> ";
    loop {
        match editor.readline(prompt) {
            Ok(line) => match line.strip_suffix('\\') {
                Some(head) => {
                    text.push_str(head);
                    text.push('\n');
                    prompt = ". ";
                }
                None => {
                    text.push_str(&line);
                    return Prompt::Text(text);
                }
            },
            Err(ReadlineError::Interrupted) => return Prompt::Interrupted,
            Err(e) => return ended(e),
        }
    }
}

/// End of input, or a failure of the editor, which ends input too.
fn ended(e: ReadlineError) -> Prompt {
    if !matches!(e, ReadlineError::Eof) {
        crate::terminal::report(&format!("the line editor failed: {e}"));
    }
    Prompt::Eof
}

/// Adds `line` to the history and the file, at once: a chat that ends
/// badly keeps what was typed, and two chats at once each add theirs.
/// rustyline writes the file owner-only (0600): prompts can be private.
fn remember(editor: &mut Editor<Echo, FileHistory>, line: &str, history: Option<&Path>) {
    if editor.add_history_entry(line).is_err() {
        return;
    }
    if let Some(path) = history
        && let Err(e) = editor.append_history(path)
    {
        crate::terminal::report(&format!("chat history {} not written: {e}", path.display()));
    }
}

/// Ctrl-C clears a line with text on it; on an empty line (or during a
/// question) it interrupts.
struct CtrlC {
    asking: Arc<AtomicBool>,
}

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() || self.asking.load(Ordering::Relaxed) {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// Shows the line being edited through the terminal escaper (pasted text
/// can carry control characters the terminal would obey), and completes a
/// `/command` or an `@path` on Tab, as the TUI does.
struct Echo {
    completion: Completion,
    /// An approval question is being answered: nothing to complete.
    asking: Arc<AtomicBool>,
}

impl Highlighter for Echo {
    fn highlight<'l>(&self, line: &'l str, _: usize) -> Cow<'l, str> {
        printable(line)
    }

    fn highlight_char(&self, line: &str, _: usize, _: CmdKind) -> bool {
        // Redraw through `highlight` whenever there is anything to escape.
        matches!(printable(line), Cow::Owned(_))
    }
}

impl Completer for Echo {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let found = (!self.asking.load(Ordering::Relaxed))
            .then(|| self.completion.candidates(&line[..pos]))
            .flatten();
        Ok(found.unwrap_or((pos, Vec::new())))
    }
}
impl Hinter for Echo {
    type Hint = String;
}
impl Validator for Echo {}
impl Helper for Echo {}
