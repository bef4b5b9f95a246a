//! `fs_list`: what a directory holds, with kinds and sizes, optionally
//! recursive and filtered by a glob.
//!
//! A listing is never external, not even of the session store: it shows
//! names, kinds and sizes, and the store's names are ids mecha made. Only
//! a file's content can be a stranger's (`fs_read` asks
//! `ToolCtx::reads_external`).

use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use cap_std::fs::Dir;
use globset::{Glob, GlobMatcher};
use mecha_core::{ArgKind, Capabilities, Tool, ToolCtx, ToolOutput, system_words};
use serde_json::{Value, json};

use crate::args::{jail_refusal, optional_str, optional_u64};
use crate::blocking::off_thread;

/// How deep a glob search descends when the call names no depth.
const GLOB_DEFAULT_DEPTH: u64 = 8;
const MAX_DEPTH: u64 = 16;
/// Entries listed at most; a listing is for finding things, not for dumping
/// a tree.
const MAX_ENTRIES: usize = 1000;
/// Entries looked at at most, matching or not: a glob that matches nothing
/// must not walk the whole disk.
const MAX_VISITED: usize = 50_000;
/// Directories listed but never descended into: large, and never what the
/// model is looking for.
const NOT_DESCENDED: [&str; 3] = [".git", "node_modules", "target"];

pub struct FsList;

#[async_trait]
impl Tool for FsList {
    fn name(&self) -> &str {
        "fs_list"
    }

    fn description(&self) -> &str {
        "List a directory: one entry a line as kind (file, dir, link), size in bytes, and path. \
         `depth` descends into subdirectories (default 1: just this directory). `glob` keeps only \
         paths matching it, e.g. \"**/*.rs\" (then depth defaults to 8). .git, node_modules and \
         target are listed but not descended into."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory, relative to the workspace (default: the workspace)"},
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels to descend (default 1)"},
                "glob": {"type": "string", "description": "Only paths matching this glob, relative to `path`"}
            },
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    fn argument_kinds(&self) -> &'static [(&'static str, ArgKind)] {
        &[("path", ArgKind::ReadPath)]
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            private_data: true,
            ..Capabilities::NONE
        }
    }

    async fn call(&self, input: Value, ctx: &ToolCtx) -> anyhow::Result<ToolOutput> {
        off_thread(self.name(), input, ctx, list).await
    }
}

fn list(input: &Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolOutput> {
    let requested = optional_str(input, "path")?.unwrap_or(".");
    let glob = optional_str(input, "glob")?
        .map(|g| {
            Glob::new(g)
                .map(|g| g.compile_matcher())
                .map_err(|e| ToolOutput::err(format!("`glob` is not a valid glob: {e}")))
        })
        .transpose()?;
    let default_depth = if glob.is_some() {
        GLOB_DEFAULT_DEPTH
    } else {
        1
    };
    let depth = optional_u64(input, "depth")?
        .unwrap_or(default_depth)
        .clamp(1, MAX_DEPTH);
    let target = ctx.resolve(requested).map_err(jail_refusal)?;
    let cannot =
        |e: io::Error| ToolOutput::err(format!("cannot list {requested}: {}", system_words(&e)));
    let dir = target.dir().open_dir(target.relative()).map_err(cannot)?;
    let mut listing = Listing {
        glob,
        lines: Vec::new(),
        truncated: false,
        visited: 0,
    };
    listing.walk(&dir, Path::new(""), depth).map_err(cannot)?;
    Ok(ToolOutput::ok(listing.render(requested)))
}

struct Listing {
    glob: Option<GlobMatcher>,
    lines: Vec<String>,
    truncated: bool,
    visited: usize,
}

impl Listing {
    fn walk(&mut self, dir: &Dir, prefix: &Path, depth: u64) -> io::Result<()> {
        // Counted as read, not as shown, so the entries held across every
        // level of the walk at once stay within MAX_VISITED.
        let room = MAX_VISITED - self.visited;
        let (mut entries, more) = read_at_most(dir.entries()?, room)?;
        self.visited += entries.len();
        self.truncated |= more;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if self.lines.len() >= MAX_ENTRIES {
                self.truncated = true;
                return Ok(());
            }
            let name = entry.file_name();
            let path: PathBuf = prefix.join(&name);
            let kind = entry.file_type()?;
            let matches = self.glob.as_ref().is_none_or(|g| g.is_match(&path));
            if kind.is_dir() {
                if matches {
                    self.lines
                        .push(entry_line("dir", "-", &format!("{}/", path.display())));
                }
                let skipped = NOT_DESCENDED.iter().any(|n| name == *n);
                if depth > 1 && !skipped {
                    // A directory that vanished or is unreadable mid-walk is
                    // left out rather than failing the whole listing.
                    if let Ok(sub) = entry.open_dir() {
                        self.walk(&sub, &path, depth - 1)?;
                    }
                }
            } else if matches {
                if kind.is_symlink() {
                    let target = dir
                        .read_link(&name)
                        .map(|t| t.display().to_string())
                        .unwrap_or_else(|_| "?".to_owned());
                    let shown = format!("{} -> {target}", path.display());
                    self.lines.push(entry_line("link", "-", &shown));
                } else {
                    let size = entry.metadata().map(|m| m.len().to_string());
                    let kind = if kind.is_file() { "file" } else { "other" };
                    let size = size.unwrap_or_else(|_| "?".to_owned());
                    self.lines
                        .push(entry_line(kind, &size, &path.display().to_string()));
                }
            }
        }
        Ok(())
    }

    fn render(self, requested: &str) -> String {
        if self.lines.is_empty() && self.truncated {
            return format!(
                "nothing matched among the first {MAX_VISITED} entries under {requested}; list a \
                 subdirectory or narrow the glob"
            );
        }
        if self.lines.is_empty() {
            return if self.glob.is_some() {
                format!("nothing in {requested} matches the glob")
            } else {
                format!("{requested} is empty")
            };
        }
        let mut out = self.lines.join("\n");
        out.push('\n');
        if self.truncated {
            out.push_str(&format!(
                "[stopped early ({MAX_ENTRIES} entries listed or {MAX_VISITED} looked at); list a \
                 subdirectory or narrow with `glob`]\n"
            ));
        }
        out
    }
}

/// One listing line: kind, size in bytes (`-` where none applies) and
/// path, in columns of spaces (a tab shows differently in every terminal
/// and transcript).
fn entry_line(kind: &str, size: &str, path: &str) -> String {
    format!("{kind:<5}{size:>10}  {path}")
}

/// Up to `cap` items of a directory stream, and whether more were left
/// unread: a directory of millions of entries costs `cap` of memory, not
/// the lot.
fn read_at_most<T>(
    entries: impl Iterator<Item = io::Result<T>>,
    cap: usize,
) -> io::Result<(Vec<T>, bool)> {
    let mut taken = Vec::new();
    for entry in entries {
        if taken.len() == cap {
            return Ok((taken, true));
        }
        taken.push(entry?);
    }
    Ok((taken, false))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::read_at_most;

    #[test]
    fn a_huge_directory_is_read_only_up_to_the_cap() {
        let pulled = Cell::new(0usize);
        let endless = std::iter::from_fn(|| {
            pulled.set(pulled.get() + 1);
            (pulled.get() <= 1_000_000).then_some(Ok::<_, std::io::Error>(pulled.get()))
        });
        let (taken, more) = read_at_most(endless, 10).unwrap();
        assert_eq!(taken, (1..=10).collect::<Vec<_>>());
        assert!(more, "the cut must be reported");
        assert_eq!(pulled.get(), 11, "read past the cap");
    }

    #[test]
    fn a_directory_within_the_cap_is_read_whole() {
        let (taken, more) = read_at_most((0..5).map(Ok::<_, std::io::Error>), 5).unwrap();
        assert_eq!(taken.len(), 5);
        assert!(!more);
    }
}
