//! Tab at the prompt: a `/command` at its start completes from the
//! commands mecha answers, and an `@path` from the workspace's entries,
//! listed through mecha-core's [`Jail`] (so nothing outside the workspace
//! is ever offered, however the word climbs). One match is completed; of
//! several, the part they share, with the choices shown under the prompt.

use std::path::Path;

use mecha_core::Jail;

use crate::editor::{Editor, last_word_start};

/// The most choices shown under the prompt.
const SHOWN: usize = 8;

/// What Tab completes from.
#[derive(Debug)]
pub struct Completion {
    /// Every command, with its slash.
    commands: Vec<String>,
    /// `None` when the workspace cannot be opened: no paths are offered.
    workspace: Option<Jail>,
}

impl Completion {
    pub fn new(commands: Vec<String>, workspace: &Path) -> Self {
        Self {
            commands,
            workspace: Jail::open(workspace).ok(),
        }
    }

    /// Completes the word before the cursor; the line to show under the
    /// prompt (the choices, or that there are none), if any.
    pub fn complete(&self, editor: &mut Editor) -> Option<String> {
        let (start, word) = editor.word_before_cursor();
        let word = word.to_owned();
        let choices = self.choices(start, &word)?;
        match choices.as_slice() {
            [] => Some(format!("nothing to complete `{word}` with")),
            [only] => {
                editor.replace_before_cursor(start, &finished(only));
                None
            }
            [first, rest @ ..] => {
                let shared = rest.iter().fold(first.as_str(), |a, b| shared_start(a, b));
                if shared.len() > word.len() {
                    editor.replace_before_cursor(start, shared);
                }
                let mut line = choices[..choices.len().min(SHOWN)].join("  ");
                if choices.len() > SHOWN {
                    line.push_str(&format!("  … {} more", choices.len() - SHOWN));
                }
                Some(line)
            }
        }
    }

    /// What `before_cursor` (the line up to the cursor) can complete to:
    /// where its last word starts, and the words it can become, sorted;
    /// `None` when that word is neither a `/command` at the line's start
    /// nor an `@path`. For a line editor that does the rest itself (chat).
    pub fn candidates(&self, before_cursor: &str) -> Option<(usize, Vec<String>)> {
        let start = last_word_start(before_cursor);
        let mut choices = self.choices(start, &before_cursor[start..])?;
        if let [only] = choices.as_mut_slice() {
            *only = finished(only);
        }
        Some((start, choices))
    }

    /// The words `word`, starting at `start` in the line, can become.
    fn choices(&self, start: usize, word: &str) -> Option<Vec<String>> {
        let mut choices: Vec<String> = match word.strip_prefix('@') {
            Some(path) => self.paths(path),
            None if start == 0 && word.starts_with('/') => self
                .commands
                .iter()
                .filter(|c| c.starts_with(word))
                .cloned()
                .collect(),
            None => return None,
        };
        choices.sort();
        Some(choices)
    }

    /// `@` completions of `partial`: the entries of its directory (in the
    /// workspace) whose names start with its last part; hidden ones only
    /// when that part starts with a dot.
    fn paths(&self, partial: &str) -> Vec<String> {
        let Some(jail) = &self.workspace else {
            return Vec::new();
        };
        let (dir, prefix) = match partial.rfind('/') {
            Some(i) => partial.split_at(i + 1),
            None => ("", partial),
        };
        let Ok(resolved) = jail.resolve(if dir.is_empty() { "." } else { dir }) else {
            return Vec::new();
        };
        let relative = resolved.relative();
        let entries = if relative.as_os_str().is_empty() {
            resolved.dir().entries()
        } else {
            resolved.dir().read_dir(relative)
        };
        let Ok(entries) = entries else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let hidden = name.starts_with('.') && !prefix.starts_with('.');
                if hidden || !name.starts_with(prefix) {
                    return None;
                }
                let slash = if entry.file_type().ok()?.is_dir() {
                    "/"
                } else {
                    ""
                };
                Some(format!("@{dir}{name}{slash}"))
            })
            .collect()
    }
}

/// A lone choice as it goes in the line: a space after it, so the next
/// word can be typed, unless it is a directory to go on into.
fn finished(only: &str) -> String {
    let space = if only.ends_with('/') { "" } else { " " };
    format!("{only}{space}")
}

/// The longest start `a` and `b` share, on a character boundary.
fn shared_start<'a>(a: &'a str, b: &str) -> &'a str {
    let end = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    &a[..end]
}

#[cfg(test)]
#[path = "complete_tests.rs"]
mod tests;
