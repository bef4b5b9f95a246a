//! What a file holds now, for the diff in an approval question: read
//! through the jail, bounded, and never from something that is not a
//! regular file. Opening a FIFO for reading waits for a writer and reading a
//! device may never end; either would hang the question forever.

use std::io::{self, Read};

use cap_std::fs::{Metadata, OpenOptions, OpenOptionsExt};
use mecha_core::ToolCtx;

/// The most of a file read to diff against; beyond it the question says the
/// file is too large and shows its size.
pub const MAX_DIFF_BYTES: u64 = 1024 * 1024;

/// A file's current contents, as far as the question can show them.
#[derive(Debug, PartialEq, Eq)]
pub enum Current {
    /// Nothing there yet.
    Absent,
    Text(String),
    /// Why the contents are not shown (completes "<path> …").
    Unshown(String),
}

pub fn current(ctx: &ToolCtx, path: &str) -> Current {
    match ctx.resolve_in_workspace(path) {
        Ok(target) => read_bounded(target.dir(), target.relative()),
        Err(e) => Current::Unshown(format!("cannot be read here ({e})")),
    }
}

fn read_bounded(dir: &cap_std::fs::Dir, relative: &std::path::Path) -> Current {
    // Looked at through the jail before anything is opened.
    let meta = match dir.metadata(relative) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Current::Absent,
        Err(e) => return Current::Unshown(format!("cannot be read ({e})")),
    };
    if let Some(why) = unshowable(&meta) {
        return Current::Unshown(why);
    }
    // Non-blocking, and checked again once open, in case a FIFO or a device
    // was swapped in after the look.
    let mut options = OpenOptions::new();
    options.read(true);
    options.custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32);
    let read = dir.open_with(relative, &options).and_then(|file| {
        if let Some(why) = unshowable(&file.metadata()?) {
            return Ok(Err(why));
        }
        let mut bytes = Vec::new();
        file.take(MAX_DIFF_BYTES + 1).read_to_end(&mut bytes)?;
        Ok(Ok(bytes))
    });
    match read {
        Err(e) => Current::Unshown(format!("cannot be read ({e})")),
        Ok(Err(why)) => Current::Unshown(why),
        Ok(Ok(bytes)) if bytes.len() as u64 > MAX_DIFF_BYTES => {
            Current::Unshown(too_large(bytes.len() as u64))
        }
        Ok(Ok(bytes)) => match String::from_utf8(bytes) {
            Ok(text) => Current::Text(text),
            Err(e) => Current::Unshown(format!(
                "is not UTF-8 text ({} bytes), so it is not diffed",
                e.as_bytes().len()
            )),
        },
    }
}

fn unshowable(meta: &Metadata) -> Option<String> {
    if meta.is_dir() {
        Some("is a directory".to_owned())
    } else if !meta.is_file() {
        Some("is not a regular file (a FIFO, device or socket), so it was not read".to_owned())
    } else if meta.len() > MAX_DIFF_BYTES {
        Some(too_large(meta.len()))
    } else {
        None
    }
}

fn too_large(size: u64) -> String {
    format!("is {size} bytes, too large to diff here (the limit is {MAX_DIFF_BYTES} bytes)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &std::path::Path) -> ToolCtx {
        ToolCtx::new(dir, 10_000).unwrap()
    }

    /// A FIFO with no writer would block an ordinary open forever; the
    /// question must still be asked.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let root = dir.path().to_owned();
        std::thread::spawn(move || {
            let _ = tx.send(current(&ctx(&root), "pipe"));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading the FIFO blocked the question");
        match got {
            Current::Unshown(why) => assert!(why.contains("not a regular file"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_large_file_is_not_read_and_its_size_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("big")).unwrap();
        file.set_len(MAX_DIFF_BYTES + 1).unwrap();
        assert_eq!(
            current(&ctx(dir.path()), "big"),
            Current::Unshown(format!(
                "is {} bytes, too large to diff here (the limit is {MAX_DIFF_BYTES} bytes)",
                MAX_DIFF_BYTES + 1
            ))
        );
    }

    #[test]
    fn text_absence_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ctx = ctx(dir.path());
        assert_eq!(current(&ctx, "a.txt"), Current::Text("hello\n".into()));
        assert_eq!(current(&ctx, "missing.txt"), Current::Absent);
        assert_eq!(
            current(&ctx, "sub"),
            Current::Unshown("is a directory".into())
        );
    }
}
