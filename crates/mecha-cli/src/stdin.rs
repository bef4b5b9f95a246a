//! Lines from stdin, read by one background thread and handed out to
//! whoever asks next: the chat prompt or an approval question.
//!
//! Reading from one place means an abandoned question (the run was
//! interrupted while asking) does not keep a reader blocked on stdin that
//! would swallow the next line the user types; the line simply goes to the
//! next asker.

use std::io::BufRead;
use std::sync::OnceLock;

use tokio::sync::{Mutex, mpsc};

static LINES: OnceLock<Mutex<mpsc::UnboundedReceiver<String>>> = OnceLock::new();

/// The next line typed (without its newline), or `None` at end of input.
/// Cancel-safe: dropping the future consumes nothing.
pub async fn next_line() -> Option<String> {
    let lines = LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        // A plain thread, not the runtime's blocking pool: it outlives any
        // one runtime and never holds up a shutdown.
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mutex::new(rx)
    });
    lines.lock().await.recv().await
}
