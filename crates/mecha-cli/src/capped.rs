//! Text mecha puts into a prompt from a source of any size (the project's
//! instructions file, data piped on stdin): at most so many bytes, cut at a
//! character boundary, and whether it was cut, so the cut can be stated.
//! Nothing past the cap is read: a pipe may never end.

use std::io::{self, Read};

/// What was kept of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    pub text: String,
    /// More followed what was kept.
    pub cut: bool,
}

impl Capped {
    /// The line the first byte left out is on (1-based), for a reader who
    /// wants the rest.
    pub fn next_line(&self) -> usize {
        self.text.matches('\n').count() + 1
    }
}

/// Reads `reader` to its end or to `max` bytes, whichever comes first. A
/// character the cap splits is dropped whole. Text that is not UTF-8 is an
/// error naming the first bad byte; `lossy` replaces such bytes instead.
pub fn read(reader: impl Read, max: usize, lossy: bool) -> io::Result<Capped> {
    let mut kept = Vec::new();
    // One byte past the cap says whether there is more.
    reader.take(max as u64 + 1).read_to_end(&mut kept)?;
    let cut = kept.len() > max;
    if cut {
        kept.truncate(max);
        // Only the cut may split a character: its start stays out.
        if let Err(e) = std::str::from_utf8(&kept)
            && e.error_len().is_none()
        {
            kept.truncate(e.valid_up_to());
        }
    }
    let text = match String::from_utf8(kept) {
        Ok(text) => text,
        Err(e) if lossy => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        Err(e) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it is not UTF-8 text (byte {} is not valid UTF-8)",
                    e.utf8_error().valid_up_to()
                ),
            ));
        }
    };
    Ok(Capped { text, cut })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_cut_never_splits_a_character() {
        // "é" is two bytes; a cap of 2 would split the second one.
        let capped = read("aéb".as_bytes(), 2, false).unwrap();
        assert_eq!(capped.text, "a");
        assert!(capped.cut);
    }

    #[test]
    fn what_fits_is_kept_whole() {
        let capped = read("one\ntwo\n".as_bytes(), 100, false).unwrap();
        assert_eq!(capped.text, "one\ntwo\n");
        assert!(!capped.cut);
        assert_eq!(capped.next_line(), 3);
    }

    #[test]
    fn bad_bytes_are_an_error_unless_lossy() {
        let err = read(&b"ok\xffok"[..], 100, false).unwrap_err();
        assert!(err.to_string().contains("byte 2"), "{err}");
        let lossy = read(&b"ok\xffok"[..], 100, true).unwrap();
        assert_eq!(lossy.text, "ok\u{fffd}ok");
    }
}
