//! Keeping one result within its budget as it streams in, and the marker
//! that says where the rest went.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use super::{CallSpills, SpillDir};

/// Room kept for the truncation marker inside a result's budget.
const MARKER_RESERVE: usize = 600;

/// A spill file being written, and how much of the result it holds.
struct Saved {
    path: PathBuf,
    file: File,
    bytes: u64,
}

impl Saved {
    /// Appends as much of `bytes` as the spill cap leaves room for; the rest
    /// is dropped, and the marker says so.
    fn append(&mut self, bytes: &[u8], max: u64) -> io::Result<()> {
        let room = usize::try_from(max.saturating_sub(self.bytes)).unwrap_or(usize::MAX);
        let kept = &bytes[..room.min(bytes.len())];
        self.file.write_all(kept)?;
        self.bytes += kept.len() as u64;
        Ok(())
    }
}

/// Collects a result as it streams in, keeping at most `budget` bytes in
/// memory and spilling it to disk, up to the directory's cap, once it
/// outgrows that.
pub struct SpillingSink<'a> {
    spill: &'a SpillDir,
    call: &'a CallSpills,
    tool: &'a str,
    turn: u32,
    budget: usize,
    head: Vec<u8>,
    total: u64,
    file: Option<io::Result<Saved>>,
}

impl<'a> SpillingSink<'a> {
    pub(crate) fn new(
        spill: &'a SpillDir,
        call: &'a CallSpills,
        tool: &'a str,
        turn: u32,
        budget: usize,
    ) -> Self {
        Self {
            spill,
            call,
            tool,
            turn,
            budget,
            head: Vec::new(),
            total: 0,
            file: None,
        }
    }

    /// Appends bytes. Never fails: a spill that cannot be written is
    /// remembered and admitted in the marker instead.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.budget.saturating_sub(self.head.len());
        let overflowing = self.total > self.budget as u64;
        let max = self.spill.max_file_bytes();
        if overflowing && self.file.is_none() {
            let opened = self
                .spill
                .create_file(self.tool, self.turn, self.call, "txt")
                .and_then(|(path, file)| {
                    let mut saved = Saved {
                        path,
                        file,
                        bytes: 0,
                    };
                    saved.append(&self.head, max)?;
                    Ok(saved)
                });
            if let Err(e) = &opened {
                tracing::warn!(tool = self.tool, error = %e, "could not create spill file");
            }
            self.file = Some(opened);
        }
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        if let Some(Ok(saved)) = &mut self.file
            && let Err(e) = saved.append(bytes, max)
        {
            tracing::warn!(tool = self.tool, error = %e, "spill write failed");
            self.file = Some(Err(e));
        }
    }

    /// The text the transcript gets: everything, or a cut with a marker.
    pub fn finish(self) -> String {
        if self.total <= self.budget as u64 {
            return String::from_utf8_lossy(&self.head).into_owned();
        }
        let limit = self
            .budget
            .saturating_sub(MARKER_RESERVE)
            .min(self.head.len());
        let (cut, mut text) = shown_text(&self.head, limit);
        let shown = &self.head[..cut];
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let saved = self.file.and_then(|f| {
            f.and_then(|mut saved| saved.file.flush().map(|()| saved))
                .ok()
        });
        let cut_bytes = cut as u64;
        let start = format!(
            "[truncated by the harness: showing the first {cut} of {total} bytes; ",
            total = self.total
        );
        match saved {
            // The saved copy must reach past what is shown, or the marker
            // would send the model to read lines that are not there.
            Some(saved) if saved.bytes > cut_bytes => {
                let next_line = shown.iter().filter(|&&b| b == b'\n').count() + 1;
                let partway = if shown.last().is_some_and(|&b| b != b'\n') {
                    "partway through "
                } else {
                    ""
                };
                let path = saved.path.display();
                let quoted = serde_json::to_string(&path.to_string())
                    .unwrap_or_else(|_| format!("\"{path}\""));
                let holds = if saved.bytes < self.total {
                    format!(
                        "The saved copy at {path} holds only the first {} bytes (the spill cap); \
                         the rest was not kept",
                        saved.bytes
                    )
                } else {
                    format!("The full output is saved at {path}")
                };
                let _ = write!(
                    text,
                    "{start}the rest begins {partway}on line {next_line}. {holds} \
                     — continue with fs_read {{\"path\": {quoted}, \"offset\": {next_line}}}, \
                     or search it with grep.]"
                );
            }
            Some(_) => {
                let _ = write!(
                    text,
                    "{start}the rest was not kept, because spill files are capped at {} bytes. \
                     Re-run the tool with a narrower request (fewer lines, a filter) to see it.]",
                    self.spill.max_file_bytes()
                );
            }
            None => {
                let _ = write!(
                    text,
                    "{start}the rest could not be saved and is lost. Re-run the tool with a \
                     narrower request (fewer lines, a filter) to see it.]"
                );
            }
        }
        text
    }
}

/// The part of `head` to show: at most `limit` bytes once invalid UTF-8 is
/// replaced (each bad byte becomes a three-byte U+FFFD, so binary output
/// grows in the conversion and the cut has to move back), ending on a whole
/// line where there is one. Returns how many bytes of `head` it shows too.
fn shown_text(head: &[u8], limit: usize) -> (usize, String) {
    let mut window = limit;
    loop {
        let cut = cut_point(&head[..window]);
        let text = String::from_utf8_lossy(&head[..cut]).into_owned();
        if text.len() <= limit || cut == 0 {
            return (cut, text);
        }
        window = window.saturating_sub(text.len() - limit).min(cut - 1);
    }
}

/// Where to cut `head` so the shown part ends on a whole line, or failing
/// that, on a whole UTF-8 character.
fn cut_point(head: &[u8]) -> usize {
    if let Some(pos) = head.iter().rposition(|&b| b == b'\n') {
        return pos + 1;
    }
    match std::str::from_utf8(head) {
        Ok(_) => head.len(),
        Err(e) => e.valid_up_to(),
    }
}

/// Fits an in-memory result into `budget`, spilling it if needed.
pub(crate) fn fit_text(
    text: &str,
    spill: &SpillDir,
    call: &CallSpills,
    tool: &str,
    turn: u32,
    budget: usize,
) -> String {
    if text.len() <= budget {
        return text.to_owned();
    }
    let mut sink = SpillingSink::new(spill, call, tool, turn, budget);
    sink.push(text.as_bytes());
    sink.finish()
}
