//! Appending records to a session file, one write each.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use mecha_core::{Journal, Record};
use rustix::fs::{FlockOperation, flock};

use crate::format::{header_line, record_line};
use crate::store::Loaded;
use crate::syncer::Syncer;
use crate::time::Utc;
use crate::{Header, NewSession, SCHEMA_VERSION, SessionError};

/// How to tell the user that the session file could not be written.
type Report = Box<dyn Fn(&str) + Send + Sync>;

/// Appends a session's records to its file. Each record is serialized whole
/// and written with one `write_all` on an unbuffered file opened for
/// appending, so a crash tears at most the last line. The writer holds an
/// exclusive lock on the file for its life: two mechas appending to one
/// session would interleave their sequences.
pub struct Writer {
    id: String,
    path: PathBuf,
    inner: Mutex<Inner>,
    report: Report,
}

struct Inner {
    file: File,
    /// The last sequence number written.
    seq: u64,
    /// The file's length after the last whole record.
    end: u64,
    /// A write failed: nothing more is written, so the file stays a whole
    /// prefix of the session instead of one with a hole in it.
    failed: bool,
    /// Runs the syncs asked for with `sync_behind`, once there was one.
    syncer: Option<Syncer>,
}

/// Attempts at a fresh id before giving up (ids differ by 24 random bits
/// within a second, so a second attempt is already rare).
const CREATE_ATTEMPTS: usize = 16;

impl Writer {
    pub(crate) fn create(dir: &Path, new: NewSession<'_>) -> Result<Self, SessionError> {
        let (path, mut file, header) = create_file(dir, new)?;
        let line = header_line(&header).map_err(|e| SessionError::io("write", &path, e.into()))?;
        let written = lock(&file, &path)
            .and_then(|()| {
                file.write_all(&line)
                    .map_err(|e| SessionError::io("write", &path, e))
            })
            .and_then(|()| {
                file.sync_data()
                    .map_err(|e| SessionError::io("sync", &path, e))
            });
        if let Err(e) = written {
            // A file without its header is no session; leave nothing behind.
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        // The file's name in the directory is durable too.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(Self::with(header.id, path, file, 0, line.len() as u64))
    }

    /// Appends to an existing session (a resume): the sequence continues
    /// from its last record, after cutting away a torn last line so the next
    /// record does not glue onto it.
    pub fn reopen(loaded: &Loaded) -> Result<Writer, SessionError> {
        let path = &loaded.path;
        if loaded.salvaged {
            return Err(SessionError::Stale { path: path.clone() });
        }
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| SessionError::io("open", path, e))?;
        lock(&file, path)?;
        let meta = file
            .metadata()
            .map_err(|e| SessionError::io("read", path, e))?;
        if meta.len() != loaded.file_len {
            return Err(SessionError::Stale { path: path.clone() });
        }
        if meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(|e| SessionError::io("restrict the permissions of", path, e))?;
        }
        if loaded.whole_len < loaded.file_len {
            file.set_len(loaded.whole_len)
                .and_then(|()| file.sync_data())
                .map_err(|e| SessionError::io("cut the torn last line from", path, e))?;
        }
        let seq = loaded.entries.last().map_or(0, |e| e.seq);
        Ok(Self::with(
            loaded.header.id.clone(),
            path.clone(),
            file,
            seq,
            loaded.whole_len,
        ))
    }

    fn with(id: String, path: PathBuf, file: File, seq: u64, end: u64) -> Self {
        Self {
            id,
            path,
            inner: Mutex::new(Inner {
                file,
                seq,
                end,
                failed: false,
                syncer: None,
            }),
            report: Box::new(|line| {
                let _ = writeln!(io::stderr(), "mecha: warning: {line}");
            }),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Called once, with a sentence for the user, the first time a write
    /// fails (by default, a warning on stderr).
    #[must_use]
    pub fn on_failure(mut self, report: Report) -> Self {
        self.report = report;
        self
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Every change to `Inner` is whole by the time a panic could happen.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the writer failed and says so, once.
    fn fail(&self, inner: &mut Inner, what: &str, error: &dyn std::fmt::Display) {
        inner.failed = true;
        // Cut back a record written in part, so the file ends on a whole line.
        let _ = inner.file.set_len(inner.end);
        (self.report)(&format!(
            "cannot {what} the session file {} ({error}); the session is saved up to its \
             previous record and nothing more of it will be, so a resume starts from there",
            self.path.display()
        ));
    }

    /// Whether writing has ended, now or earlier: a sync running behind
    /// failed since the last look ends it here.
    fn failed_behind(&self, inner: &mut Inner) -> bool {
        if !inner.failed
            && let Some(e) = inner.syncer.as_ref().and_then(Syncer::take_error)
        {
            self.fail(inner, "sync", &e);
        }
        inner.failed
    }
}

impl Journal for Writer {
    fn append(&self, record: &Record) {
        let mut inner = self.inner();
        if inner.failed {
            return;
        }
        let seq = inner.seq + 1;
        let line = match record_line(seq, record) {
            Ok(line) => line,
            Err(e) => return self.fail(&mut inner, "write", &e),
        };
        match inner.file.write_all(&line) {
            Ok(()) => {
                inner.seq = seq;
                inner.end += line.len() as u64;
            }
            Err(e) => self.fail(&mut inner, "write", &e),
        }
    }

    fn sync(&self) {
        let mut inner = self.inner();
        if self.failed_behind(&mut inner) {
            return;
        }
        if let Err(e) = inner.file.sync_data() {
            self.fail(&mut inner, "sync", &e);
        }
    }

    fn sync_behind(&self) {
        let mut inner = self.inner();
        if self.failed_behind(&mut inner) {
            return;
        }
        if inner.syncer.is_none() {
            match inner.file.try_clone().and_then(Syncer::start) {
                Ok(syncer) => inner.syncer = Some(syncer),
                // No thread to spare: the caller waits for the disk.
                Err(_) => {
                    drop(inner);
                    return self.sync();
                }
            }
        }
        if let Some(syncer) = &inner.syncer {
            syncer.ask();
        }
    }
}

impl Drop for Writer {
    /// Waits for the syncs still running behind, and reports one that failed.
    fn drop(&mut self) {
        let mut inner = self.inner();
        if let Some(syncer) = &inner.syncer {
            syncer.wait();
        }
        self.failed_behind(&mut inner);
    }
}

/// A new file with a fresh id, created 0600 and never over another.
fn create_file(dir: &Path, new: NewSession<'_>) -> Result<(PathBuf, File, Header), SessionError> {
    let mut last = None;
    for _ in 0..CREATE_ATTEMPTS {
        let now = Utc::at(SystemTime::now());
        let id = format!("{}-{:06x}", now.compact(), fastrand::u32(..0x100_0000));
        let path = dir.join(format!("{id}.jsonl"));
        match OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                let header = Header {
                    schema: SCHEMA_VERSION,
                    mecha: env!("CARGO_PKG_VERSION").to_owned(),
                    id,
                    workspace: new.workspace.to_owned(),
                    model: new.model.to_owned(),
                    started: now.rfc3339(),
                    command: new.command.to_owned(),
                    parent: new.parent.map(str::to_owned),
                };
                return Ok((path, file, header));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((path, e)),
            Err(e) => return Err(SessionError::io("create", path, e)),
        }
    }
    let (path, e) = last.unwrap_or_else(|| (dir.to_owned(), io::ErrorKind::AlreadyExists.into()));
    Err(SessionError::io("create", path, e))
}

/// Takes the file's exclusive lock, or says who has it.
fn lock(file: &File, path: &Path) -> Result<(), SessionError> {
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(SessionError::Busy {
            path: path.to_owned(),
        }),
        Err(e) => Err(SessionError::io("lock", path, e.into())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use mecha_core::Message;

    use super::*;

    #[test]
    fn a_failing_write_is_reported_once_and_never_panics() {
        // Every write to /dev/full fails with ENOSPC, as on a full disk.
        let file = OpenOptions::new().append(true).open("/dev/full").unwrap();
        let (writer, reports) = reporting(file, "/dev/full");
        let record = Record::Message {
            message: Message::user_text("hi"),
            external: vec![],
        };
        for _ in 0..3 {
            writer.append(&record);
            writer.sync();
        }
        let reports = reports.lock().unwrap_or_else(|p| p.into_inner());
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("/dev/full"), "{}", reports[0]);
        assert!(
            reports[0].contains("a resume starts from there"),
            "{}",
            reports[0]
        );
        assert_eq!(writer.inner().seq, 0, "a failed record takes no number");
    }

    /// A writer on `file`, named `path`, and the reports it makes.
    fn reporting(file: File, path: &str) -> (Writer, Arc<Mutex<Vec<String>>>) {
        let reports = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&reports);
        let writer =
            Writer::with("x".into(), path.into(), file, 0, 0).on_failure(Box::new(move |line| {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(line.into())
            }));
        (writer, reports)
    }

    /// A writer on a pipe, whose syncs fail (EINVAL), with its reports.
    fn unsyncable() -> (Writer, Arc<Mutex<Vec<String>>>, io::PipeReader) {
        let (reader, pipe) = io::pipe().unwrap();
        let (writer, reports) = reporting(File::from(std::os::fd::OwnedFd::from(pipe)), "pipe");
        (writer, reports, reader)
    }

    #[test]
    fn a_sync_behind_that_fails_ends_the_writing_at_the_next_record() {
        let (writer, reports, _reader) = unsyncable();
        writer.append(&Record::Rewind { keep: 1 });
        writer.sync_behind();
        writer
            .inner()
            .syncer
            .as_ref()
            .expect("a sync behind starts the thread")
            .wait();
        assert!(reports.lock().unwrap().is_empty(), "not reported yet");
        writer.sync_behind();
        writer.append(&Record::Rewind { keep: 2 });
        let reports = reports.lock().unwrap();
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("cannot sync"), "{}", reports[0]);
        assert_eq!(writer.inner().seq, 1, "nothing is written after it");
    }

    #[test]
    fn a_sync_behind_that_fails_is_reported_when_the_writer_goes() {
        let (writer, reports, _reader) = unsyncable();
        writer.append(&Record::Rewind { keep: 1 });
        writer.sync_behind();
        drop(writer);
        let reports = reports.lock().unwrap();
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].contains("cannot sync"), "{}", reports[0]);
    }
}
