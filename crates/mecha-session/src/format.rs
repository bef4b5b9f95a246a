//! The file format: line 1 is the header, every later line a record with its
//! sequence number, `{"seq":N,"type":...}`. One line, one JSON object.

use std::path::PathBuf;

use mecha_core::Record;
use serde::{Deserialize, Serialize};

/// The version of the file format. A file of another version is refused
/// whole rather than half-understood.
pub const SCHEMA_VERSION: u32 = 1;

/// Line 1 of a session file: what the session is, and where it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub schema: u32,
    /// The version of mecha that started the session.
    pub mecha: String,
    pub id: String,
    pub workspace: PathBuf,
    pub model: String,
    /// When the session started, RFC 3339 in UTC.
    pub started: String,
    /// `run`, `chat` or `subagent`.
    pub command: String,
    /// For a subagent's conversation: the session of the run that
    /// delegated to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// One record as the file holds it, with its place in the sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub record: Record,
}

#[derive(Serialize)]
struct HeaderLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    header: &'a Header,
}

/// What a first line must have before the rest of it is worth reading:
/// the type, and a schema version of any size (so a future version is named,
/// not misread).
#[derive(Deserialize)]
pub(crate) struct HeaderProbe {
    #[serde(rename = "type")]
    pub kind: String,
    pub schema: u64,
    #[serde(default)]
    pub mecha: String,
}

#[derive(Serialize)]
struct LineOut<'a> {
    seq: u64,
    #[serde(flatten)]
    record: &'a Record,
}

#[derive(Deserialize)]
pub(crate) struct LineIn {
    pub seq: u64,
    #[serde(flatten)]
    pub record: Record,
}

/// Reads one record line. Lines laid out as mecha writes them,
/// `{"seq":N,"type":...}`, skip serde's flatten, which buffers every record
/// twice over (it doubled the time to load a long session); any other layout
/// of the same fields still reads.
pub(crate) fn read_record(line: &[u8]) -> serde_json::Result<LineIn> {
    if let Some(rest) = line.strip_prefix(br#"{"seq":"#) {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let seq = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse::<u64>().ok());
        if let (Some(seq), Some(b',')) = (seq, rest.get(digits)) {
            let mut object = Vec::with_capacity(line.len());
            object.push(b'{');
            object.extend_from_slice(&rest[digits + 1..]);
            let record = serde_json::from_slice(&object)?;
            return Ok(LineIn { seq, record });
        }
    }
    serde_json::from_slice(line)
}

/// The header as its line, newline included.
pub(crate) fn header_line(header: &Header) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&HeaderLine {
        kind: "header",
        header,
    })?;
    line.push(b'\n');
    Ok(line)
}

/// A record as its line, newline included.
pub(crate) fn record_line(seq: u64, record: &Record) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&LineOut { seq, record })?;
    line.push(b'\n');
    Ok(line)
}
