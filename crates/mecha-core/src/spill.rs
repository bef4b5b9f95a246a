//! Output budgets and the spill directory.
//!
//! A result bigger than its share of the turn's budget is saved whole to the
//! context's spill directory and its transcript copy is cut, with a marker
//! that tells the model exactly where the rest is and how to read it.
//! [`SpillingSink`] does this while the bytes stream in, so a gigabyte of
//! shell output costs one budget's worth of memory.

use std::fmt::Write as _;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::jail::Jail;

/// Room kept for the truncation marker inside a result's budget.
const MARKER_RESERVE: usize = 600;

/// A fresh, private directory for one context's oversized outputs.
///
/// Removed when the context is dropped. Each context gets its own, so two
/// contexts (two eval cases, say) cannot read each other's output.
#[derive(Debug)]
pub struct SpillDir {
    _temp: tempfile::TempDir,
    jail: Jail,
    counter: AtomicU64,
}

impl SpillDir {
    /// Creates a new spill directory under the system temp dir.
    pub fn create() -> io::Result<Self> {
        let temp = tempfile::Builder::new().prefix("mecha-spill-").tempdir()?;
        let jail = Jail::open(temp.path())?;
        Ok(Self {
            _temp: temp,
            jail,
            counter: AtomicU64::new(0),
        })
    }

    /// The canonical path of the directory.
    pub fn path(&self) -> &Path {
        self.jail.root()
    }

    pub(crate) fn jail(&self) -> &Jail {
        &self.jail
    }

    /// Creates a new file named after the tool and turn, e.g.
    /// `shell-t1-9f2c1a04.txt`.
    pub fn create_file(&self, tool: &str, turn: u32) -> io::Result<(PathBuf, File)> {
        let seq = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(seq);
        let tag = hasher.finish() as u32;
        let safe_tool: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = self
            .path()
            .join(format!("{safe_tool}-t{turn}-{tag:08x}.txt"));
        let file = File::options().write(true).create_new(true).open(&path)?;
        Ok((path, file))
    }
}

/// Collects a result as it streams in, keeping at most `budget` bytes in
/// memory and spilling the whole of it to disk once it outgrows that.
pub struct SpillingSink<'a> {
    spill: &'a SpillDir,
    tool: &'a str,
    turn: u32,
    budget: usize,
    head: Vec<u8>,
    total: u64,
    file: Option<Result<(PathBuf, File), io::Error>>,
}

impl<'a> SpillingSink<'a> {
    pub fn new(spill: &'a SpillDir, tool: &'a str, turn: u32, budget: usize) -> Self {
        Self {
            spill,
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
        if overflowing && self.file.is_none() {
            let opened =
                self.spill
                    .create_file(self.tool, self.turn)
                    .and_then(|(path, mut file)| {
                        file.write_all(&self.head)?;
                        Ok((path, file))
                    });
            if let Err(e) = &opened {
                tracing::warn!(tool = self.tool, error = %e, "could not create spill file");
            }
            self.file = Some(opened);
        }
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        if let Some(Ok((_, file))) = &mut self.file {
            if let Err(e) = file.write_all(bytes) {
                tracing::warn!(tool = self.tool, error = %e, "spill write failed");
                self.file = Some(Err(e));
            }
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
        let shown_bytes = cut;
        match self.file.and_then(|f| {
            f.and_then(|(path, mut file)| file.flush().map(|()| path))
                .ok()
        }) {
            Some(path) => {
                let next_line = shown.iter().filter(|&&b| b == b'\n').count() + 1;
                let partway = if shown.last().is_some_and(|&b| b != b'\n') {
                    "partway through "
                } else {
                    ""
                };
                let quoted = serde_json::to_string(&path.display().to_string())
                    .unwrap_or_else(|_| format!("\"{}\"", path.display()));
                let _ = write!(
                    text,
                    "[truncated by the harness: showing the first {shown_bytes} of {total} bytes; \
                     the rest begins {partway}on line {next_line}. The full output is saved at {path} \
                     — continue with fs_read {{\"path\": {quoted}, \"offset\": {next_line}}}, \
                     or search it with grep.]",
                    total = self.total,
                    path = path.display(),
                );
            }
            None => {
                let _ = write!(
                    text,
                    "[truncated by the harness: showing the first {shown_bytes} of {total} bytes; \
                     the rest could not be saved and is lost. Re-run the tool with a narrower \
                     request (fewer lines, a filter) to see it.]",
                    total = self.total,
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
pub fn fit_text(text: &str, spill: &SpillDir, tool: &str, turn: u32, budget: usize) -> String {
    if text.len() <= budget {
        return text.to_owned();
    }
    let mut sink = SpillingSink::new(spill, tool, turn, budget);
    sink.push(text.as_bytes());
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_output_stays_within_the_budget() {
        let spill = SpillDir::create().unwrap();
        let mut sink = SpillingSink::new(&spill, "shell", 1, 4096);
        let line: Vec<u8> = [vec![0xffu8; 99], vec![b'\n']].concat();
        sink.push(&line.repeat(500));
        let text = sink.finish();
        assert!(text.len() <= 4096, "{} bytes", text.len());
        assert!(text.contains("of 50000 bytes"), "{text}");
    }

    #[test]
    fn small_output_passes_through_untouched() {
        let spill = SpillDir::create().unwrap();
        let mut sink = SpillingSink::new(&spill, "shell", 1, 4096);
        sink.push(b"hello\n");
        assert_eq!(sink.finish(), "hello\n");
        assert_eq!(
            std::fs::read_dir(spill.path()).unwrap().count(),
            0,
            "nothing spilled"
        );
    }
}
