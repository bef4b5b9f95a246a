//! Where a file tool expects a regular file: anything else (a directory, a
//! FIFO, a socket, a device) is refused before it is opened, and the open
//! itself cannot block, so a FIFO swapped in after the check is refused too
//! instead of hanging the call until something writes to it.

use std::fmt;
use std::io;

use cap_std::fs::{FileType, FileTypeExt, Metadata};
use mecha_core::{ResolvedPath, ToolOutput, open_regular_beneath, system_words};

/// Why a path is not a regular file, in mecha's own words. It travels inside
/// an `io::Error` so the atomic writer can report it through its usual
/// signature; [`failure`] turns it back into a refusal.
#[derive(Debug)]
struct NotRegular(&'static str);

impl fmt::Display for NotRegular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for NotRegular {}

/// Refuses whatever `meta` describes unless it is a regular file.
pub(crate) fn check(meta: &Metadata) -> io::Result<()> {
    match meta.file_type() {
        kind if kind.is_file() => Ok(()),
        kind => Err(not_regular(kind)),
    }
}

/// The refusal for what is there instead of a regular file.
fn not_regular(kind: FileType) -> io::Error {
    let why = if kind.is_dir() {
        "it is a directory; use fs_list to see what is in it"
    } else if kind.is_fifo() {
        "it is a named pipe (FIFO), not a regular file; the file tools only read and write \
         regular files"
    } else if kind.is_socket() {
        "it is a socket, not a regular file; the file tools only read and write regular files"
    } else if kind.is_char_device() || kind.is_block_device() {
        "it is a device, not a regular file; the file tools only read and write regular files"
    } else {
        "it is not a regular file; the file tools only read and write regular files"
    };
    io::Error::other(NotRegular(why))
}

/// Opens a regular file beneath the jail for reading; anything else is
/// refused as the file tools refuse it (the CLI reads the project's
/// instructions file through this too).
pub fn open(target: &ResolvedPath) -> io::Result<std::fs::File> {
    check(&target.dir().metadata(target.relative())?)?;
    open_checked(target)
}

/// The open after the check, which cannot block: a FIFO put in the file's
/// place since then fails the second check instead of waiting for a writer.
fn open_checked(target: &ResolvedPath) -> io::Result<std::fs::File> {
    match open_regular_beneath(target.dir(), target.relative())? {
        Ok(file) => Ok(file),
        Err(kind) => Err(not_regular(kind)),
    }
}

/// The result for a file operation that failed: a refusal when the path is
/// not a regular file (the words are all mecha's), otherwise an error that
/// carries what the system said.
pub(crate) fn failure(verb: &str, requested: &str, e: io::Error) -> ToolOutput {
    let text = format!("cannot {verb} {requested}: {}", system_words(&e));
    if e.get_ref().is_some_and(|inner| inner.is::<NotRegular>()) {
        ToolOutput::refusal(text)
    } else {
        ToolOutput::err(text)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::mpsc;
    use std::time::Duration;

    use mecha_core::ToolCtx;

    use super::*;

    /// The race the open guards against, made certain: the check saw a
    /// regular file, and by the open a FIFO nobody writes to is there. A
    /// blocking open would wait forever; this one must refuse at once.
    #[test]
    fn a_fifo_swapped_in_after_the_check_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("pipe"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let ctx = ToolCtx::new(dir.path(), 1 << 16).unwrap();
        let target = ctx.resolve("pipe").unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(open_checked(&target).map(drop));
        });
        let opened = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("opening the FIFO blocked");
        let err = opened.expect_err("a FIFO was opened as a regular file");
        let out = failure("read", "pipe", err);
        assert!(out.harness && out.is_error, "{out:?}");
        assert!(out.content.contains("named pipe (FIFO)"), "{}", out.content);
    }

    #[test]
    fn a_missing_file_is_said_in_the_systems_words() {
        let err = io::Error::from_raw_os_error(2);
        let out = failure("read", "notes/missing.md", err);
        assert!(out.is_error && !out.harness, "{out:?}");
        assert_eq!(
            out.content,
            "cannot read notes/missing.md: No such file or directory"
        );
    }
}
