//! A server's stderr: read continuously, so a chatty server never blocks
//! on a full pipe, into `tracing` at debug level, with the last lines
//! kept for the messages that say why a server did not start.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio::sync::watch;

use crate::spawn::{STDERR_MAX_LINE, STDERR_TAIL_LINES, lock};

/// A server's stderr, read continuously (a full pipe would block a chatty
/// server) into `tracing` at debug level, with the last lines kept.
pub(crate) struct StderrLog {
    tail: Arc<Mutex<VecDeque<String>>>,
    done: watch::Receiver<bool>,
}

impl StderrLog {
    pub(crate) fn drain(mut stderr: ChildStderr, server: String) -> Self {
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_LINES)));
        let (done_tx, done) = watch::channel(false);
        let keep = Arc::clone(&tail);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut line = Vec::new();
            loop {
                let n = match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                for &byte in buf.get(..n).unwrap_or_default() {
                    if byte == b'\n' {
                        emit(&server, &keep, &mut line);
                    } else if line.len() < STDERR_MAX_LINE {
                        line.push(byte);
                    }
                }
            }
            if !line.is_empty() {
                emit(&server, &keep, &mut line);
            }
            let _ = done_tx.send(true);
        });
        Self { tail, done }
    }

    pub(crate) async fn settle(&self, limit: Duration) {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
    }

    pub(crate) fn tail(&self) -> Vec<String> {
        lock(&self.tail).iter().cloned().collect()
    }
}

fn emit(server: &str, tail: &Mutex<VecDeque<String>>, line: &mut Vec<u8>) {
    let text = String::from_utf8_lossy(line)
        .trim_end_matches('\r')
        .to_owned();
    line.clear();
    tracing::debug!(target: "mecha_mcp::stderr", server = %server, "{text}");
    let mut tail = lock(tail);
    if tail.len() == STDERR_TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(text);
}
