//! Input from stdin, read in one place and handed out to whoever asks
//! next: the chat prompt or an approval question. Or, for `mecha run
//! "task"` with a pipe on stdin, the data piped in, read once and whole
//! before anything else could ask (nothing is asked then: there is no
//! terminal to ask at, see `someone_to_ask`).
//!
//! `mecha chat` at a terminal reads through the line editor ([`editor`]);
//! everywhere else (pipes, scripts, `mecha run`) one background thread
//! reads plain lines. Either way one reader owns stdin, so an abandoned
//! question (the run was interrupted while asking) does not leave a second
//! reader blocked on stdin that would swallow the next line the user
//! types; the line simply goes to the next asker.

mod editor;

use std::io::{self, BufRead, BufReader, IsTerminal};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};

use crate::capped::{self, Capped};
use editor::LineEditor;

/// The most of piped data a prompt carries (about 85,000 tokens by mecha's
/// estimate): a whole diff or log of any ordinary size, while a stream
/// that never ends still lets the run start. What is past it is not read.
pub const PIPED_MAX_BYTES: usize = 256 * 1024;

/// How long the pipe may stay silent before mecha says what it waits for:
/// a pipe nobody writes to and nobody closes would otherwise look like a
/// hang.
const SILENT_PIPE_NOTICE: Duration = Duration::from_secs(3);

/// Whether approval questions can be asked: only at a terminal, on both
/// ends. Piped stdin (data, or a script's input) has nobody behind it.
pub fn someone_to_ask() -> bool {
    io::stdin().is_terminal() && io::stderr().is_terminal()
}

/// What is piped to stdin, to go with a prompt given as an argument: `None`
/// at a terminal, or when the pipe held only whitespace. Reads until the
/// pipe ends or [`PIPED_MAX_BYTES`], whichever comes first.
pub fn piped_data() -> io::Result<Option<Capped>> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    if !input_waiting(SILENT_PIPE_NOTICE) {
        crate::output::err_line(&format!(
            "mecha: waiting for stdin to end: data piped to `mecha run` is added to the prompt \
             (up to {PIPED_MAX_BYTES} bytes); run with `< /dev/null` to send the prompt alone"
        ));
    }
    let data = capped::read(stdin.lock(), PIPED_MAX_BYTES, true)?;
    Ok((!data.text.trim().is_empty()).then_some(data))
}

/// What reading a prompt gave.
#[derive(Debug)]
pub enum Prompt {
    Text(String),
    /// End of input (Ctrl-D on an empty line).
    Eof,
    /// Ctrl-C on an empty line, in the line editor. (On the plain path
    /// Ctrl-C is a signal, and chat listens for it itself.)
    Interrupted,
}

static EDITOR: OnceLock<Option<LineEditor>> = OnceLock::new();

/// Reads through the line editor from now on, with history in `history`,
/// if stdin and stdout are both a terminal (the editor draws on stdout).
/// Called before the first read, or not at all.
pub fn edit_at_terminal(history: Option<PathBuf>, completion: mecha_tui::complete::Completion) {
    EDITOR.get_or_init(|| {
        if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
            return None;
        }
        match LineEditor::start(history, completion) {
            Ok(editor) => Some(editor),
            Err(e) => {
                crate::terminal::report(&format!("no line editing, reading plain lines: {e}"));
                None
            }
        }
    });
}

fn line_editor() -> Option<&'static LineEditor> {
    EDITOR.get().and_then(Option::as_ref)
}

/// Leaves the terminal as it was before the line editor touched it.
pub fn restore_terminal() {
    if let Some(editor) = line_editor() {
        editor.restore_terminal();
    }
}

/// The answer to a question: `question` is its last line, written before
/// reading (to stderr on the plain path, as the editor's prompt in it).
pub async fn answer(question: &str) -> Option<String> {
    match line_editor() {
        Some(editor) => editor.answer(question).await,
        None => {
            crate::output::err(&crate::terminal::printable(question));
            next_line().await
        }
    }
}

/// One line, and whether more input was already waiting behind it.
struct Line {
    text: String,
    /// At a terminal, the next line arrived with this one: they were pasted
    /// together, not typed.
    pasted_with_next: bool,
}

static LINES: OnceLock<Mutex<mpsc::UnboundedReceiver<Line>>> = OnceLock::new();

/// How long after a newline the rest of a paste may still be arriving: a
/// terminal sends a large paste in several writes, and nobody types the
/// next line this fast.
const PASTE_GAP: Duration = Duration::from_millis(20);

/// The next line typed (without its newline), or `None` at end of input.
/// Cancel-safe: dropping the future consumes nothing.
async fn next_line() -> Option<String> {
    receiver().lock().await.recv().await.map(|line| line.text)
}

/// The next prompt, after showing `> `. In the line editor, what was
/// edited (a bracketed paste is part of it, newlines and all). On the plain
/// path, a line, joined with the lines after it while it ends in `\` (the
/// backslash is dropped) or while they were pasted together with it, blank
/// lines included. Dropping the future mid-prompt loses the lines read so
/// far; chat ends then anyway.
pub async fn next_prompt() -> Prompt {
    if let Some(editor) = line_editor() {
        return editor.prompt().await;
    }
    crate::output::err("> ");
    match plain_prompt().await {
        Some(text) => Prompt::Text(text),
        None => Prompt::Eof,
    }
}

async fn plain_prompt() -> Option<String> {
    let mut lines = receiver().lock().await;
    let mut prompt: Option<String> = None;
    loop {
        let Some(line) = lines.recv().await else {
            return prompt;
        };
        let (text, continued) = match line.text.strip_suffix('\\') {
            Some(text) => (text, true),
            None => (line.text.as_str(), false),
        };
        let prompt = prompt.get_or_insert_default();
        prompt.push_str(text);
        if !(continued || line.pasted_with_next) {
            return Some(std::mem::take(prompt));
        }
        // The lines keep their breaks.
        prompt.push('\n');
    }
}

fn receiver() -> &'static Mutex<mpsc::UnboundedReceiver<Line>> {
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        // A plain thread, not the runtime's blocking pool: it outlives any
        // one runtime and never holds up a shutdown.
        std::thread::spawn(move || read_lines(&tx));
        Mutex::new(rx)
    })
}

fn read_lines(tx: &mpsc::UnboundedSender<Line>) {
    let stdin = std::io::stdin();
    // Pastes are told apart only at a terminal: piped input arrives all at
    // once, and there each line is its own prompt, as scripts expect.
    let at_terminal = stdin.is_terminal();
    // Larger than std's own stdin buffer, so reads bypass it and what is
    // buffered here is all that is buffered.
    let mut reader = BufReader::with_capacity(64 * 1024, stdin);
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&raw);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text).to_owned();
        let pasted_with_next =
            at_terminal && (!reader.buffer().is_empty() || input_waiting(PASTE_GAP));
        if tx
            .send(Line {
                text,
                pasted_with_next,
            })
            .is_err()
        {
            return;
        }
    }
}

/// Whether stdin has input to read within `wait`.
fn input_waiting(wait: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    poll(&mut fds, Some(&timeout)).is_ok_and(|ready| ready > 0)
}
