//! `fs_read`: a text file's lines, numbered, from an offset.
//!
//! It also reads the context's spill files, which is how the model follows a
//! truncation marker to the rest of an oversized result.

use std::io::{self, BufRead, BufReader, Read};

use async_trait::async_trait;
use mecha_core::{
    ArgKind, Capabilities, Image, MAX_IMAGE_BYTES, ResolvedPath, Tool, ToolCtx, ToolOutput,
    human_size, over_cap, placeholder, sniff,
};
use serde_json::{Value, json};

use crate::args::{jail_refusal, optional_u64, required_str};
use crate::blocking::off_thread;
use crate::regular;

/// Lines returned when the call names no limit.
const DEFAULT_LIMIT: u64 = 2000;
/// How much of the start of a file is sniffed for NUL bytes.
const SNIFF_BYTES: usize = 8192;
/// Room kept for the closing note within the call's budget.
const NOTE_RESERVE: usize = 200;

pub struct FsRead;

#[async_trait]
impl Tool for FsRead {
    fn name(&self) -> &str {
        "fs_read"
    }

    fn description(&self) -> &str {
        "Read a text file. Lines come back numbered (line number, tab, text). `offset` is the \
         first line to show (1-based), `limit` how many lines (default 2000). Also reads the \
         files a truncation notice points at. A PNG, JPEG, GIF or WebP file comes back as the \
         image."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show, 1-based"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show"}
            },
            "required": ["path"],
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
        off_thread(self.name(), input, ctx, read).await
    }
}

fn read(input: &Value, ctx: &ToolCtx) -> Result<ToolOutput, ToolOutput> {
    let requested = required_str(input, "path")?;
    let offset = optional_u64(input, "offset")?.unwrap_or(1).max(1);
    let limit = optional_u64(input, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .max(1);
    let target = ctx.resolve(requested).map_err(jail_refusal)?;
    let cannot = |e: io::Error| regular::failure("read", requested, e);
    let file = regular::open(&target).map_err(cannot)?;
    // A spilled result from outside is still from outside when read back,
    // and so is a stored session's (a fetched page in its JSONL).
    let external = ctx.reads_external(&target, &file);
    let mut reader = BufReader::new(file);
    if let Some(media_type) = sniff(reader.fill_buf().map_err(cannot)?) {
        return read_image(requested, media_type, reader, external).map_err(cannot);
    }
    if looks_binary(&mut reader).map_err(cannot)? {
        let size = target
            .dir()
            .metadata(target.relative())
            .map(|m| m.len())
            .unwrap_or(0);
        return Err(ToolOutput::err(format!(
            "{requested} is a binary file ({size} bytes); fs_read shows text only"
        )));
    }
    let window = Window {
        offset,
        limit,
        byte_budget: ctx.call_budget_bytes.saturating_sub(NOTE_RESERVE),
    };
    let text = window.render(&mut reader).map_err(cannot)?;
    Ok(if external {
        ToolOutput::external(text)
    } else {
        ToolOutput::ok(text)
    })
}

/// An image file, as the image (the batch decides whether the model gets
/// it). One over the cap is never read past the cap: the model learns its
/// size, and that it stays where it is.
fn read_image(
    requested: &str,
    media_type: &str,
    mut reader: BufReader<std::fs::File>,
    external: bool,
) -> io::Result<ToolOutput> {
    let mut bytes = Vec::new();
    (&mut reader)
        .take(MAX_IMAGE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    let image = Image::from_bytes(&bytes).filter(|_| bytes.len() <= MAX_IMAGE_BYTES);
    let Some(image) = image else {
        let size = reader.get_ref().metadata()?.len();
        let location = format!("it stays at {requested}");
        let note = placeholder(media_type, size, &over_cap(size), &location);
        return Ok(ToolOutput::ok(note));
    };
    let text = format!(
        "{requested}: {media_type}, {}",
        human_size(bytes.len() as u64)
    );
    let mut output = if external {
        ToolOutput::external(text)
    } else {
        ToolOutput::ok(text)
    };
    output.images.push(image);
    Ok(output)
}

/// Reads a whole text file through the jail (for fs_edit).
pub(crate) fn read_to_string_beneath(target: &ResolvedPath) -> io::Result<String> {
    let mut text = String::new();
    regular::open(target)?.read_to_string(&mut text)?;
    Ok(text)
}

fn looks_binary(reader: &mut BufReader<std::fs::File>) -> io::Result<bool> {
    let head = reader.fill_buf()?;
    Ok(head[..head.len().min(SNIFF_BYTES)].contains(&0))
}

/// Which lines to show, and how many bytes they may take.
struct Window {
    offset: u64,
    limit: u64,
    byte_budget: usize,
}

impl Window {
    /// Streams the file line by line, keeping only the lines shown and at
    /// most one budget of any single line, so a huge file (or one enormous
    /// line) costs one budget of memory.
    fn render(&self, reader: &mut impl BufRead) -> io::Result<String> {
        let mut out = String::new();
        let mut line = Vec::new();
        let mut number = 0u64;
        let last = self.offset.saturating_add(self.limit - 1);
        loop {
            line.clear();
            let keep = if number + 1 < self.offset {
                0
            } else {
                self.byte_budget + 1
            };
            if !read_capped_line(reader, &mut line, keep)? {
                break;
            }
            number += 1;
            if number < self.offset {
                continue;
            }
            if number > last {
                out.push_str(&format!(
                    "[showing lines {}-{last}; more follow: continue with offset {}]\n",
                    self.offset,
                    last + 1
                ));
                return Ok(out);
            }
            let text = String::from_utf8_lossy(&line);
            let entry = format!("{number:>6}\t{}\n", text.trim_end_matches(['\n', '\r']));
            if out.len() + entry.len() > self.byte_budget {
                if number == self.offset {
                    // One line bigger than the whole budget: show its start
                    // rather than nothing.
                    let cut = floor_char_boundary(&entry, self.byte_budget);
                    out.push_str(&entry[..cut]);
                    out.push_str(&format!(
                        "\n[line {number} is longer than this call's output budget and was cut; \
                         search it with grep or shell instead]\n"
                    ));
                } else {
                    out.push_str(&format!(
                        "[stopped before line {number} to stay within the output budget; \
                         continue with offset {number}]\n"
                    ));
                }
                return Ok(out);
            }
            out.push_str(&entry);
        }
        if number == 0 {
            out.push_str("[empty file]\n");
        } else if number < self.offset {
            out.push_str(&format!(
                "[the file has {number} lines; offset {} is past its end]\n",
                self.offset
            ));
        }
        Ok(out)
    }
}

/// Reads one line (through its newline), appending at most `keep` bytes of
/// it to `buf` and skipping the rest. Returns false at end of file.
fn read_capped_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, keep: usize) -> io::Result<bool> {
    let mut read_any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(read_any);
        }
        read_any = true;
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

fn floor_char_boundary(s: &str, at: usize) -> usize {
    (0..=at.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::Window;

    fn render(text: &str, offset: u64, limit: u64, byte_budget: usize) -> String {
        let w = Window {
            offset,
            limit,
            byte_budget,
        };
        w.render(&mut text.as_bytes()).unwrap()
    }

    #[test]
    fn numbers_lines_from_the_offset() {
        let out = render("a\nb\nc\n", 2, 10, 1000);
        assert_eq!(out, "     2\tb\n     3\tc\n");
    }

    #[test]
    fn limit_says_where_to_continue() {
        let out = render("a\nb\nc\n", 1, 2, 1000);
        assert!(out.ends_with("continue with offset 3]\n"), "{out}");
    }

    #[test]
    fn budget_stops_at_a_whole_line_and_names_the_next() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let out = render(&text, 1, 2000, 100);
        assert!(out.len() < 200);
        assert!(out.contains("continue with offset"), "{out}");
    }

    #[test]
    fn one_enormous_line_is_cut_without_being_held() {
        let text = format!("{}\nnext\n", "x".repeat(1_000_000));
        let out = render(&text, 1, 10, 500);
        assert!(out.len() < 700, "{}", out.len());
        assert!(out.contains("longer than this call's output budget"));
        assert!(render(&text, 2, 10, 500).contains("     2\tnext"));
    }

    #[test]
    fn offset_past_the_end_says_so() {
        assert!(render("a\n", 5, 10, 1000).contains("past its end"));
    }
}
