//! Reading a session file back: the header, then every record in order.
//!
//! A torn last line is what a crash leaves (each record is one write, so
//! only the last can be cut short): it is skipped with a warning. Anything
//! wrong before it means the file was changed by something else, and a
//! resume refuses it rather than resume a history with a hole in it;
//! [`Mode::Salvage`] reads past such lines for showing.

use std::path::Path;

use crate::format::{HeaderProbe, read_record};
use crate::{Entry, Header, SCHEMA_VERSION, SessionError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every line must read, in order: what a resume needs.
    Strict,
    /// Whatever reads, with a warning for the rest: what showing needs.
    Salvage,
}

/// A file read back.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub header: Header,
    pub entries: Vec<Entry>,
    pub warnings: Vec<String>,
    /// Bytes up to the end of the last line kept: where a writer resuming
    /// the session goes on from, past a torn line.
    pub whole_len: u64,
}

/// Parses a whole session file, `bytes`, read from `path`.
pub(crate) fn parse(path: &Path, bytes: &[u8], mode: Mode) -> Result<Parsed, SessionError> {
    let corrupt = |line: usize, problem: String| SessionError::Corrupt {
        path: path.to_owned(),
        line,
        problem,
    };
    if bytes.is_empty() {
        return Err(SessionError::Empty {
            path: path.to_owned(),
            what: "empty",
        });
    }
    let Some(header_end) = bytes.iter().position(|&b| b == b'\n') else {
        return Err(SessionError::Empty {
            path: path.to_owned(),
            what: "only part of a header",
        });
    };
    let mut warnings = Vec::new();
    let header = read_header(path, &bytes[..header_end], mode, &mut warnings)?;

    let mut entries: Vec<Entry> = Vec::with_capacity(bytes.len() / 256);
    let mut start = header_end + 1;
    let mut whole_len = start;
    let mut line_no = 1;
    while start < bytes.len() {
        line_no += 1;
        let (line, complete) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(n) => (&bytes[start..start + n], true),
            None => (&bytes[start..], false),
        };
        let next = start + line.len() + 1;
        let last = next >= bytes.len();
        start = next;
        if !complete {
            warnings.push(torn(path, line_no, "has no end"));
            break;
        }
        let parsed = match read_record(line) {
            Ok(parsed) => parsed,
            Err(_) if last => {
                // A line cut short can still end in a newline that the text
                // it lost contained; it is the last, so it is still a tear.
                warnings.push(torn(path, line_no, "does not read"));
                break;
            }
            Err(e) if mode == Mode::Salvage => {
                warnings.push(format!("{}, line {line_no}: skipped: {e}", path.display()));
                continue;
            }
            Err(e) => return Err(corrupt(line_no, format!("the record does not read ({e})"))),
        };
        let previous = entries.last().map_or(0, |e| e.seq);
        if parsed.seq <= previous {
            let problem = format!(
                "sequence number {} does not follow {previous}: records are out of order or \
                 repeated",
                parsed.seq
            );
            if mode == Mode::Strict {
                return Err(corrupt(line_no, problem));
            }
            warnings.push(format!(
                "{}, line {line_no}: skipped: {problem}",
                path.display()
            ));
            continue;
        }
        entries.push(Entry {
            seq: parsed.seq,
            record: parsed.record,
        });
        whole_len = next;
    }
    Ok(Parsed {
        header,
        entries,
        warnings,
        whole_len: whole_len as u64,
    })
}

fn torn(path: &Path, line: usize, how: &str) -> String {
    format!(
        "{}: the last line (line {line}) {how}, as when mecha is stopped while writing it; it \
         was skipped, and the session goes on from the record before it",
        path.display()
    )
}

/// Line 1, checked for its type and schema version before it is read whole.
fn read_header(
    path: &Path,
    line: &[u8],
    mode: Mode,
    warnings: &mut Vec<String>,
) -> Result<Header, SessionError> {
    let corrupt = |problem: String| SessionError::Corrupt {
        path: path.to_owned(),
        line: 1,
        problem,
    };
    let probe: HeaderProbe = serde_json::from_slice(line)
        .map_err(|e| corrupt(format!("this is not a session header ({e})")))?;
    if probe.kind != "header" {
        return Err(corrupt(format!(
            "this is not a session header (its type is `{}`)",
            probe.kind
        )));
    }
    if probe.schema != u64::from(SCHEMA_VERSION) {
        let error = SessionError::Schema {
            path: path.to_owned(),
            found: probe.schema,
            mecha: probe.mecha,
        };
        if mode == Mode::Strict {
            return Err(error);
        }
        warnings.push(format!(
            "{error}; what follows is read as format {SCHEMA_VERSION}"
        ));
    }
    serde_json::from_slice(line).map_err(|e| corrupt(format!("the header does not read ({e})")))
}
