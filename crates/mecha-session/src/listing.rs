//! `mecha sessions list`: one line per session, read cheaply. Only the
//! header, the first message and the turn records are parsed; every other
//! line is looked at, not read.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use mecha_core::Record;
use serde::Serialize;

use crate::format::read_record;
use crate::parse::{self, Mode};
use crate::{Header, SessionError};

/// One session, as the listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    pub id: String,
    pub workspace: PathBuf,
    pub started: String,
    pub turns: u32,
    /// The text of the first message, on one line, cut to
    /// [`PROMPT_CHARS`] characters.
    pub first_prompt: String,
    /// Why the file cannot be read, when it cannot: it is listed all the
    /// same, never left out.
    pub problem: Option<String>,
    /// For a subagent's conversation: the session that delegated to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// The most of the first prompt a listing keeps.
pub const PROMPT_CHARS: usize = 200;

/// The most a header line may take; a first line longer than this is no
/// header mecha wrote.
const HEADER_MAX: u64 = 64 * 1024;

/// The header of the session file at `path`, reading nothing else.
pub(crate) fn read_header(path: &Path) -> Result<Header, SessionError> {
    let file = File::open(path).map_err(|e| SessionError::io("read", path, e))?;
    let mut line = Vec::new();
    BufReader::new(file.take(HEADER_MAX))
        .read_until(b'\n', &mut line)
        .map_err(|e| SessionError::io("read", path, e))?;
    Ok(parse::parse(path, &line, Mode::Strict)?.header)
}

/// The listing of the file at `path`, whose id is `id`.
pub(crate) fn listing(path: &Path, id: String) -> Listing {
    match summarize(path) {
        Ok((header, turns, first_prompt)) => Listing {
            id,
            workspace: header.workspace,
            started: header.started,
            turns,
            first_prompt,
            problem: None,
            parent: header.parent,
        },
        Err(e) => Listing {
            id,
            workspace: PathBuf::new(),
            started: String::new(),
            turns: 0,
            first_prompt: String::new(),
            problem: Some(e.to_string()),
            parent: None,
        },
    }
}

fn summarize(path: &Path) -> Result<(Header, u32, String), SessionError> {
    let header = read_header(path)?;
    let file = File::open(path).map_err(|e| SessionError::io("read", path, e))?;
    let (mut turns, mut first_prompt) = (0, None);
    for line in BufReader::new(file).split(b'\n').skip(1) {
        let line = line.map_err(|e| SessionError::io("read", path, e))?;
        let wanted = match record_type(&line) {
            Some(b"turn") => true,
            Some(b"message") => first_prompt.is_none(),
            Some(_) => false,
            // Not laid out as mecha writes it: read it to know.
            None => true,
        };
        if !wanted {
            continue;
        }
        // A line that does not read is the loader's to report, not the
        // listing's: a torn last line is normal.
        match read_record(&line).map(|l| l.record) {
            Ok(Record::Turn { turn, .. }) => turns = turns.max(turn),
            Ok(Record::Message { message, .. }) => first_prompt = Some(one_line(&message.text())),
            _ => {}
        }
    }
    Ok((header, turns, first_prompt.unwrap_or_default()))
}

/// The type of a record laid out as mecha writes it, `{"seq":N,"type":"…"`,
/// read without parsing the line.
fn record_type(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(br#"{"seq":"#)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = rest[digits..].strip_prefix(br#","type":""#)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    Some(&rest[..end])
}

/// `text` on one line: runs of whitespace (newlines included) become one
/// space, cut to [`PROMPT_CHARS`] characters.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(PROMPT_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}
